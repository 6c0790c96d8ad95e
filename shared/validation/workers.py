"""A backend's workers: their images and types (the reference's rules, docs/design/validation.md §4), and what
the reconciler or a pod's API server would refuse later: the prefill/decode pair, each engine config, each
worker's resources (§6).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from shared.api.modelbooster import ModelBackend
from shared.engine_config import ConfigError, config_mapping, worker_type
from shared.errors import FieldError, invalid
from shared.resources import all_fine, resource_errors
from shared.validation.reads import backend_fields, reads

_SINGLE_WORKER_TYPES: Final = ("vLLM", "SGLang", "MindIE")
# Go's unicode.IsSpace, which strings.TrimSpace uses (Python's str.isspace also accepts U+001C..U+001F).
_GO_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def worker_images(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        for j, worker in enumerate(backend.workers):
            image = worker.image
            if not image:
                continue
            if _GO_SPACE.isdisjoint(image):  # the common case, decided in C
                continue
            if _GO_SPACE.issuperset(image):
                detail = "image cannot be empty or whitespace only"
            elif " " in image:
                detail = "image cannot contain spaces"
            else:
                detail = "image cannot contain whitespace"
            path = f"spec.backends[{i}].workers[{j}].image"
            yield invalid(path, image, f"invalid container image reference: {detail}")


def worker_types(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        for error in _worker_type_errors(i, backend):
            # The allowed workers depend on the backend's type: changing either re-checks them.
            yield reads(error, *backend_fields(i, "workers", "type"))


def _worker_type_errors(i: int, backend: ModelBackend) -> Iterator[FieldError]:
    kind = backend.type
    workers = backend.workers
    if kind in _SINGLE_WORKER_TYPES:
        if len(workers) != 1:
            detail = f"If backend type is '{kind}', there must be exactly one worker"
            if kind == "vLLM" and {worker_type(worker) for worker in workers} & {"prefill", "decode"}:
                detail += "; for prefill and decode workers use type: vLLMDisaggregated"
            yield invalid(f"spec.backends[{i}].workers", len(workers), detail)
        elif worker_type(workers[0]) != "server":
            yield invalid(
                f"spec.backends[{i}].workers[0].type",
                worker_type(workers[0]),
                f"If backend type is '{kind}', the worker type must be 'server'",
            )
    elif kind == "vLLMDisaggregated":
        for j, worker in enumerate(workers):
            if worker_type(worker) not in ("prefill", "decode"):
                yield invalid(
                    f"spec.backends[{i}].workers[{j}].type",
                    worker_type(worker),
                    "If backend type is 'vLLMDisaggregated', all workers must be type 'prefill' or 'decode'",
                )
    elif kind == "MindIEDisaggregated":
        for j, worker in enumerate(workers):
            if worker_type(worker) not in ("prefill", "decode", "controller", "coordinator"):
                yield invalid(
                    f"spec.backends[{i}].workers[{j}].type",
                    worker_type(worker),
                    "If backend type is 'MindIEDisaggregated', all workers must be type 'prefill', 'decode', "
                    "'controller', or 'coordinator' (not 'server')",
                )


def pd_worker_counts(index: int, backend: ModelBackend) -> FieldError | None:
    if backend.type != "vLLMDisaggregated":
        return None
    prefill = sum(1 for worker in backend.workers if worker_type(worker) == "prefill")
    decode_count = sum(1 for worker in backend.workers if worker_type(worker) == "decode")
    if prefill == 1 and decode_count == 1:
        return None
    error = invalid(
        f"spec.backends[{index}].workers",
        len(backend.workers),
        "a vLLMDisaggregated backend needs exactly one prefill and one decode worker; "
        f"found {prefill} prefill and {decode_count} decode",
    )
    # It counts the workers' types (the ratchet compares the atomic `workers` list as a whole anyway).
    types = (f"{error.path}[{j}].type" for j in range(len(backend.workers)))
    return reads(error, error.path, f"spec.backends[{index}].type", *types)


def worker_configs(index: int, backend: ModelBackend) -> Iterator[FieldError]:
    for j, worker in enumerate(backend.workers):
        try:
            config_mapping(worker.config)
        except ConfigError:
            yield invalid(
                f"spec.backends[{index}].workers[{j}].config",
                worker.config,
                "must be a JSON object of engine arguments",
            )


def container_resources(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    """Each worker's resources become its containers': checked as Kubernetes checks them when a pod is created."""
    for i, backend in enumerate(backends):
        for j, worker in enumerate(backend.workers):
            resources = worker.resources
            if resources is not None and not all_fine(limits := resources.limits, requests := resources.requests):
                path = f"spec.backends[{i}].workers[{j}].resources"
                yield from resource_errors(path, limits=limits, requests=requests)
