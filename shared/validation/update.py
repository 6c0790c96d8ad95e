"""The rules that compare an UPDATE's new object with the stored one (docs/design/validation.md §7). Never
carried over: they are about the change itself, not about values an older rule admitted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from shared.api.modelbooster import ModelBooster, ModelWorker
from shared.backend_shape import on_wire
from shared.decoding import decode
from shared.engine_config import worker_type
from shared.errors import FieldError, forbidden


def update_errors(model: ModelBooster, old_raw: Mapping[str, Any]) -> list[FieldError]:
    old_model, old_errors = decode(ModelBooster, old_raw)
    if old_model is None or old_errors:
        return []
    return on_wire(_update_rules(model, old_model), single=model.spec.backend is not None)


def _update_rules(new: ModelBooster, old: ModelBooster) -> Iterator[FieldError]:
    """A worker's replicas become the ModelServing's `gangPolicy.minRoleReplicas`, which Kthena's CRD makes
    immutable: refuse the change here rather than let every later ModelServing update fail."""
    old_backends = {backend.name: backend for backend in old.spec.backends}
    for i, backend in enumerate(new.spec.backends):
        before = old_backends.get(backend.name)
        if before is None:
            continue
        old_replicas: dict[str, int] = {}
        for worker in before.workers:
            old_replicas.setdefault(worker_type(worker), _effective_replicas(worker))
        compared: set[str] = set()
        for j, worker in enumerate(backend.workers):
            kind = worker_type(worker)
            if kind in compared or kind not in old_replicas:
                continue
            compared.add(kind)
            now = _effective_replicas(worker)
            if now != old_replicas[kind]:
                yield forbidden(
                    f"spec.backends[{i}].workers[{j}].replicas",
                    f"cannot change from {old_replicas[kind]} to {now}: the generated ModelServing's "
                    "gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster "
                    "(or give the backend a new name) to change it",
                )


def _effective_replicas(worker: ModelWorker) -> int:
    return 1 if worker.replicas is None else worker.replicas
