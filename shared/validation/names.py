"""Names: the object's, the names generated from it (which Kubernetes checks when the children and their pods
are created), and the LoRA adapter names a backend and the generated ModelRoute serve
(docs/design/validation.md §4, §6).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from shared.api.modelbooster import ModelBackend, ModelBooster
from shared.constants import MAX_ROUTE_LORA_ADAPTERS, MAX_ROUTE_RULES
from shared.errors import FieldError, invalid, required
from shared.gotext import go_quote
from shared.naming import (
    SUBDOMAIN_DETAIL,
    backend_resource_name,
    is_dns1123_label,
    is_dns1123_subdomain,
    lora_downloader_name,
    model_downloader_name,
    ray_worker_container_name,
)
from shared.validation.reads import backend_fields, reads


def object_name_fits(name: str) -> bool:
    """`metadata.name` is absent (generateName) or a DNS-1123 subdomain."""
    return not name or is_dns1123_subdomain(name)


def name_given(metadata: Mapping[str, Any]) -> Iterator[FieldError]:
    """The API server's own check on CREATE, made before any webhook sees the object (so only the CLI needs it): a
    name, or a generateName to make one of. Its words."""
    if not metadata.get("name") and not metadata.get("generateName"):
        yield required("metadata.name", "name or generateName is required")


def object_name(name: str) -> Iterator[FieldError]:
    if not object_name_fits(name):  # kube-apiserver refuses it before any webhook; the CLI must say so too
        yield invalid("metadata.name", name, SUBDOMAIN_DETAIL)


def lora_names(model_name: str, backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        if not backend.lora_adapters:
            continue
        seen: dict[str, int] = {}
        for j, adapter in enumerate(backend.lora_adapters):
            path = f"spec.backends[{i}].loraAdapters[{j}].name"
            if adapter.name == model_name:
                error = invalid(path, adapter.name, "lora name cannot be the same as model name")
                yield reads(error, path, "metadata.name")
            first = seen.setdefault(adapter.name, j)
            if first != j:
                error = invalid(path, adapter.name, "lora name must be unique within the backend")
                yield reads(error, path, f"spec.backends[{i}].loraAdapters[{first}].name")


def generated_names(model_name: str, backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    if not model_name:  # generateName: the name is not known yet
        return
    # Every backend's pods hold the model downloader, named after the model alone: checked once for all.
    if "." in model_name:  # a valid object name, but no part of a label: every child name would fail for it
        yield _dotted_name(model_name, backends)
        return
    downloader = model_downloader_name(model_name)
    downloader_ok = is_dns1123_label(downloader)
    for i, backend in enumerate(backends):
        name = backend_resource_name(model_name, backend.name)
        if not is_dns1123_label(name):
            yield invalid(
                f"spec.backends[{i}].name",
                name,
                "the generated ModelServing and ModelServer name <metadata.name>-<backend name> must be a DNS-1123 "
                "label of at most 63 characters (it is also a pod label value); shorten metadata.name or the "
                "backend name",
            )
            continue  # the container names share the cause; one error says it
        # Generated container names are DNS-1123 labels too, or the pods of the ModelServing are refused.
        if not downloader_ok:
            yield _container_name_error("metadata.name", downloader, made_of=("metadata.name",))
        adapters = backend.lora_adapters
        if adapters:
            container = lora_downloader_name(model_name, len(adapters) - 1)
            if not is_dns1123_label(container):
                made_of = ("metadata.name", f"spec.backends[{i}].loraAdapters")
                yield _container_name_error("metadata.name", container, made_of=made_of)
        if backend.type == "vLLM":
            container = ray_worker_container_name(backend.name)
            if not is_dns1123_label(container):
                fields = backend_fields(i, "name", "type")
                yield _container_name_error(fields[0], container, made_of=fields)


def _dotted_name(model_name: str, backends: Sequence[ModelBackend]) -> FieldError:
    child = backend_resource_name(model_name, backends[0].name) if backends else model_name
    error = invalid(
        "metadata.name",
        model_name,
        f"a '.' is not allowed: the name begins every child's name (the ModelServing and ModelServer "
        f"<metadata.name>-<backend name>, here {go_quote(child)}, and the names Kthena makes of it for their pods), "
        f"which must be DNS-1035 labels: lowercase letters, digits and '-'; use e.g. "
        f"{go_quote(model_name.replace('.', '-'))}",
    )
    return reads(error, "metadata.name", *(f"spec.backends[{i}].name" for i in range(len(backends))))


def _container_name_error(path: str, container: str, *, made_of: tuple[str, ...]) -> FieldError:
    """`container`, a generated container name made of the fields `made_of`, is no DNS-1123 label."""
    error = invalid(
        path,
        container,
        f"the generated container name {container!r} must be a DNS-1123 label of at most 63 characters; "
        "shorten the name",
    )
    return reads(error, *made_of)


def route_model_name_clashes(model: ModelBooster) -> Iterator[FieldError]:
    """With `spec.name` the route serves that name, so no adapter may take it (the reference's own rule
    compares adapters with metadata.name only)."""
    name = model.spec.name
    if not name or name == model.metadata.name:
        return
    for i, backend in enumerate(model.spec.backends):
        for j, adapter in enumerate(backend.lora_adapters or ()):
            if adapter.name == name:
                yield invalid(
                    f"spec.backends[{i}].loraAdapters[{j}].name",
                    adapter.name,
                    "lora name cannot be the same as the model name clients send (spec.name)",
                )


def route_limits(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    names = {adapter.name for backend in backends for adapter in backend.lora_adapters or ()}
    if len(names) > MAX_ROUTE_LORA_ADAPTERS:
        yield invalid(
            "spec.backends",
            len(names),
            f"at most {MAX_ROUTE_LORA_ADAPTERS} distinct LoRA adapter names are supported across all backends "
            "(the generated ModelRoute lists them all)",
        )
    # One default rule; with several backends, one more rule per LoRA adapter name (docs/design/synthesis.md §12).
    rules = 1 + (len(names) if len(backends) > 1 else 0)
    if rules > MAX_ROUTE_RULES:
        yield invalid(
            "spec.backends",
            rules,
            f"the generated ModelRoute would have {rules} rules (a default rule plus one per LoRA adapter name); "
            f"at most {MAX_ROUTE_RULES} are allowed",
        )
