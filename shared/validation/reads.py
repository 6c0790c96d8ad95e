"""The fields a cross-field rule read, named in its error's `reads`: an UPDATE carries an error over only when
none of them changed (shared/ratchet.py). Paths are built only when an error is found: on the common path, a
valid object, no rule formats one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from shared.api.modelbooster import ModelBackend
from shared.errors import FieldError
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS

# The one annotation a rule reads (an error reading it names this path, not all annotations).
EXTERNAL_REPLICAS_PATH: Final = f"metadata.annotations[{ANNOTATION_EXTERNAL_REPLICAS}]"


def reads(error: FieldError, *paths: str) -> FieldError:
    """The error of a cross-field rule, with every field the rule read (see FieldError.reads)."""
    return replace(error, reads=paths)


def backend_fields(index: int, *names: str) -> tuple[str, ...]:
    """The paths of fields of one backend."""
    return tuple(f"spec.backends[{index}].{name}" for name in names)


def autoscaling_switches(backends: Sequence[ModelBackend]) -> tuple[str, ...]:
    """Where autoscaling is switched on: the rules that depend on model- or backend-level read these."""
    return ("spec.autoscalingPolicy", *(f"spec.backends[{i}].autoscalingPolicy" for i in range(len(backends))))
