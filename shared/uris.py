"""Model and cache URIs: where a backend's weights are cached and how that cache is mounted.

We follow the newer line's normalisation (docs/design/synthesis.md §6, Q11): a cache path is
always absolute (`pvc://my-pvc` -> `/my-pvc`), and an empty cacheURI means an emptyDir mounted at `/cache`.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from shared.naming import model_download_dir_name

PVC_SCHEME = "pvc://"
HOSTPATH_SCHEME = "hostpath://"
EMPTY_CACHE_MOUNT = "/cache"


def cache_path(uri: str | None) -> str:
    """Absolute directory named by a cache URI, or "" when the URI names none."""
    if not uri or "://" not in uri:
        return ""
    parts = urlsplit(uri)
    if not parts.scheme:
        return ""
    inner = (parts.netloc + unquote(parts.path)).strip("/")
    return "/" + inner if inner else ""


def cache_mount_path(cache_uri: str | None) -> str:
    """Where the cache volume is mounted in every container that uses it."""
    return cache_path(cache_uri) if cache_uri else EMPTY_CACHE_MOUNT


def claim_name(uri: str) -> str:
    """The PVC claim of a `pvc://` URI, without surrounding slashes."""
    return uri.removeprefix(PVC_SCHEME).strip("/")


def download_path(*, cache_uri: str | None, source_uri: str) -> str:
    """The directory a model or LoRA adapter is downloaded to: cache mount + MD5 of the source URI."""
    return download_path_under(cache_mount_path(cache_uri), source_uri=source_uri)


def download_path_under(mount_path: str, *, source_uri: str) -> str:
    """`download_path` for a cache whose mount path is already known (`cache_mount_path`)."""
    return mount_path + model_download_dir_name(source_uri)
