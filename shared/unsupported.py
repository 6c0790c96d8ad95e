"""The features ModelBooster declares but does not support (DECISIONS §2), and how each is refused.

One table feeds both the webhook's rule (shared/validation.py) and the CRD's CEL rule (via the models'
`x-kubernetes-validations`), so the API server says the same thing when the webhook is down: the CEL rule
carries `fieldPath` and `reason: FieldValueForbidden`, which makes kube-apiserver print exactly the line the
webhook prints, `<path>: Forbidden: <detail>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

RATE_LIMIT_DETAIL: Final = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
TOPOLOGY_DETAIL: Final = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
PANIC_POLICY_DETAIL: Final = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"
BEHAVIOR_DETAIL: Final = "behavior is not supported; create AutoscalingPolicy + Binding yourself"


@dataclass(frozen=True)
class UnsupportedField:
    """A field, relative to the object that holds it, e.g. `behavior.scaleUp.panicPolicy`."""

    path: str
    detail: str
    # Split once: `present_in` runs for every field on every admission.
    segments: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "segments", tuple(self.path.split(".")))

    def cel_rule(self) -> dict[str, Any]:
        """`!has(self.a) || !has(self.a.b)`: absent at any level passes; costs a constant, whatever the list sizes."""
        segments = self.segments
        terms = ["!has(self." + ".".join(segments[: depth + 1]) + ")" for depth in range(len(segments))]
        return {
            "rule": " || ".join(terms),
            "message": self.detail,
            "fieldPath": "." + self.path,
            "reason": "FieldValueForbidden",
        }

    def present_in(self, obj: object) -> bool:
        """Whether the raw JSON object sets this field (a JSON null counts as absent, as the API server prunes it)."""
        current = obj
        for segment in self.segments:
            if not isinstance(current, dict):
                return False
            current = current.get(segment)
            if current is None:
                return False
        return True


# Per object that can hold them, in the order the webhook reports them (a panicPolicy before its behavior).
SPEC_UNSUPPORTED: Final = (UnsupportedField("rateLimit", RATE_LIMIT_DETAIL),)
BACKEND_UNSUPPORTED: Final = (
    UnsupportedField("rateLimit", RATE_LIMIT_DETAIL),
    UnsupportedField("networkTopology", TOPOLOGY_DETAIL),
    UnsupportedField("topology", TOPOLOGY_DETAIL),
)
WORKER_UNSUPPORTED: Final = (UnsupportedField("networkTopology", TOPOLOGY_DETAIL),)
AUTOSCALING_UNSUPPORTED: Final = (
    UnsupportedField("behavior.scaleUp.panicPolicy", PANIC_POLICY_DETAIL),
    UnsupportedField("behavior", BEHAVIOR_DETAIL),
)


def cel_rules(fields: Sequence[UnsupportedField]) -> dict[str, Any]:
    """The `json_schema_extra` that puts these rejections on a model's CRD schema."""
    return {"x-kubernetes-validations": [field.cel_rule() for field in fields]}
