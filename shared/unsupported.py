"""The features ModelBooster declares but does not support (docs/design/api.md §3), and how each is refused.

One table feeds both the webhook's rule (shared/validation/unsupported_features.py) and the CRD's CEL rule
(via the models' `x-kubernetes-validations`), so the API server says the same thing when the webhook is down:
the CEL rule carries `fieldPath` and `reason: FieldValueForbidden`, which makes kube-apiserver print the line
the webhook prints, `<path>: Forbidden: <detail>` (for a worker's field the path stops at the backend's
`workers`: a `fieldPath` cannot index a list).

The CEL rules must spare objects stored before they existed (a cluster that ran Kthena v0.1.0 holds
ModelBoosters with `behavior`, ...): kube-apiserver runs them on every write, a label change, a status write and
the garbage collector's finalizer removal included, and its own ratcheting did not spare such values (v1.36.2:
values holding `x-kubernetes-preserve-unknown-fields` subtrees never compared equal, not even with
`oldSelf == self`). So each rule is a transition rule with `optionalOldSelf: true` that refuses the field only
when the old object did not have it: it runs on create (no old value: refused) and passes a carried-over one.
Such rules must sit where kube-apiserver can correlate old and new values (no atomic list above them), which
is why a worker's field is checked on its backend, whose list is keyed by name. That the carried-over value is
also unchanged is the webhook's check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

    def presence(self, holder: str) -> list[str]:
        """CEL terms that together say `holder` (a CEL expression of the holding object) sets this field."""
        segments = self.segments
        return [f"has({holder}.{'.'.join(segments[: depth + 1])})" for depth in range(len(segments))]

    def cel_rule(self) -> dict[str, Any]:
        """On the holding object: absent now, or present in the old object too. Costs a constant."""
        absent = " || ".join("!" + term for term in self.presence("self"))
        carried = " && ".join(["oldSelf.hasValue()", *self.presence("oldSelf.value()")])
        return self._rule(f"{absent} || ({carried})", "." + self.path)

    def cel_rule_on_list_owner(self, list_field: str) -> dict[str, Any]:
        """On the object owning an atomic list of holders (`workers`): no holder sets it now, or some holder
        in the old list did. Its cost grows with the list's maxItems."""
        item = list_field[0]

        def any_sets(owner: str) -> str:
            terms = " && ".join(self.presence(item))
            return f"has({owner}.{list_field}) && {owner}.{list_field}.exists({item}, {terms})"

        rule = f"!({any_sets('self')}) || (oldSelf.hasValue() && {any_sets('oldSelf.value()')})"
        return self._rule(rule, "." + list_field)

    def _rule(self, rule: str, field_path: str) -> dict[str, Any]:
        return {
            "rule": rule,
            "message": self.detail,
            "fieldPath": field_path,
            "reason": "FieldValueForbidden",
            "optionalOldSelf": True,
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


class UnsupportedFields(tuple[UnsupportedField, ...]):
    """The unsupported fields of one kind of holding object, in the order the webhook reports them."""

    top_keys: frozenset[str]

    def __new__(cls, *fields: UnsupportedField) -> UnsupportedFields:
        self = super().__new__(cls, fields)
        # The key of the holder each field lies under: a holder with none of them sets none of the fields.
        self.top_keys = frozenset(field.segments[0] for field in fields)
        return self

    def present_in(self, holder: object) -> tuple[UnsupportedField, ...]:
        """The fields the raw JSON object `holder` sets (`UnsupportedField.present_in`), in order."""
        # Nearly every holder sets none of its unsupported fields: testing its keys (in C) settles that.
        if not isinstance(holder, dict) or holder.keys().isdisjoint(self.top_keys):
            return ()
        return tuple(field for field in self if field.present_in(holder))


# Per object that can hold them, in the order the webhook reports them (a panicPolicy before its behavior).
SPEC_UNSUPPORTED: Final = UnsupportedFields(UnsupportedField("rateLimit", RATE_LIMIT_DETAIL))
BACKEND_UNSUPPORTED: Final = UnsupportedFields(
    UnsupportedField("rateLimit", RATE_LIMIT_DETAIL),
    UnsupportedField("networkTopology", TOPOLOGY_DETAIL),
    UnsupportedField("topology", TOPOLOGY_DETAIL),
)
WORKER_UNSUPPORTED: Final = UnsupportedFields(UnsupportedField("networkTopology", TOPOLOGY_DETAIL))
AUTOSCALING_UNSUPPORTED: Final = UnsupportedFields(
    UnsupportedField("behavior.scaleUp.panicPolicy", PANIC_POLICY_DETAIL),
    UnsupportedField("behavior", BEHAVIOR_DETAIL),
)


def cel_rules(
    fields: Sequence[UnsupportedField], *, in_lists: Mapping[str, Sequence[UnsupportedField]] | None = None
) -> dict[str, Any]:
    """The `json_schema_extra` that puts these rejections on a model's CRD schema: its own fields, and the
    fields of the items of its atomic lists (`in_lists`: list field -> the items' fields)."""
    rules = [field.cel_rule() for field in fields]
    for list_field, item_fields in (in_lists or {}).items():
        rules.extend(field.cel_rule_on_list_owner(list_field) for field in item_fields)
    return {"x-kubernetes-validations": rules}


# How the validation's error for an unsupported feature is recognised (its detail is the feature's own).
UNSUPPORTED_DETAILS: Final = frozenset(
    field.detail for field in (*SPEC_UNSUPPORTED, *BACKEND_UNSUPPORTED, *WORKER_UNSUPPORTED, *AUTOSCALING_UNSUPPORTED)
)
