"""Fields Kthena defines and this implementation does not act on, refused rather than silently ignored
(docs/design/validation.md §5; the table is shared/unsupported.py). Checked on the raw object, exactly as the
CRD's CEL rules see it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from shared.backend_shape import backend_objects
from shared.errors import FieldError, forbidden
from shared.unsupported import AUTOSCALING_UNSUPPORTED, BACKEND_UNSUPPORTED, SPEC_UNSUPPORTED, WORKER_UNSUPPORTED


def unsupported_features(raw: Mapping[str, Any]) -> Iterator[FieldError]:
    # Paths are formatted only for a field that is set: nearly every holder sets none. The object decoded, so
    # every backend is an object at its own index; a single `spec.backend` is the list of one, reported at the
    # path the user wrote like every other rule's errors (`on_wire`).
    spec = raw["spec"]
    for field in SPEC_UNSUPPORTED.present_in(spec):
        yield forbidden(f"spec.{field.path}", field.detail)
    for field in AUTOSCALING_UNSUPPORTED.present_in(spec.get("autoscalingPolicy")):
        yield forbidden(f"spec.autoscalingPolicy.{field.path}", field.detail)
    for i, backend in enumerate(backend_objects(spec)):
        for field in BACKEND_UNSUPPORTED.present_in(backend):
            yield forbidden(f"spec.backends[{i}].{field.path}", field.detail)
        for j, worker in enumerate(backend["workers"]):
            for field in WORKER_UNSUPPORTED.present_in(worker):
                yield forbidden(f"spec.backends[{i}].workers[{j}].{field.path}", field.detail)
        for field in AUTOSCALING_UNSUPPORTED.present_in(backend.get("autoscalingPolicy")):
            yield forbidden(f"spec.backends[{i}].autoscalingPolicy.{field.path}", field.detail)
