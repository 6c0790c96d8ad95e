"""Names of the children a ModelBooster owns (docs/design/synthesis.md §2)."""

from __future__ import annotations

import hashlib
import re

from shared.constants import (
    DNS1123_LABEL_MAX_LENGTH,
    DNS1123_LABEL_PATTERN,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    DNS1123_SUBDOMAIN_REGEX,
)

_DNS1123_LABEL = re.compile(DNS1123_LABEL_PATTERN)
_DNS1123_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_REGEX)
# What kube-apiserver says of an object name that is no DNS-1123 subdomain.
SUBDOMAIN_DETAIL = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    f"and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{DNS1123_SUBDOMAIN_REGEX}')"
)


def backend_resource_name(model: str, backend: str) -> str:
    """ModelServing, ModelServer and backend-level autoscaling objects: `<model>-<backend>`."""
    return f"{model}-{backend}" if backend else model


def route_name(model: str) -> str:
    """The one ModelRoute, and the model-level AutoscalingPolicy and Binding: `<model>`."""
    return model


def is_dns1123_subdomain(value: str) -> bool:
    """A valid object name (metadata.name) for most kinds, a ModelBooster's included."""
    return len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX_LENGTH and _DNS1123_LABEL.match(value) is not None


def model_download_dir_name(uri: str) -> str:
    """The directory a URI is downloaded into: `/` + lowercase hex MD5 of the whole URI."""
    return "/" + hashlib.md5(uri.encode("utf-8"), usedforsecurity=False).hexdigest()


def model_downloader_name(model: str) -> str:
    """The init container that downloads the model weights."""
    return f"{model}-model-downloader"


def lora_downloader_name(model: str, index: int) -> str:
    """The init container that downloads the LoRA adapter at `index` of a backend."""
    return f"{model}-lora-downloader-{index}"


def ray_worker_container_name(backend: str) -> str:
    """The container of a multi-node vLLM backend's worker pods."""
    return f"{backend.lower()}-vllm-worker"
