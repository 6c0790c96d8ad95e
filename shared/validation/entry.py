"""What the webhook, the CLI and the reconciler call: validate an object as given, an UPDATE, or default,
validate and decode a user-written object.

The validating webhook receives the object after the mutating call has defaulted it, so `validate_modelbooster`
does not default; callers holding a user-written object use `parse_modelbooster` (docs/design/validation.md §1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.api.modelbooster import LIST_ONLY_FIELDS, SINGLE_ONLY_FIELDS, ModelBooster
from shared.backend_shape import autoscaling_errors, shape_errors, with_shape_hints
from shared.decoding import decode_details, field_errors, with_missing_hints
from shared.defaults import apply_defaults
from shared.errors import MAX_COLLECTED_ERRORS, FieldError, ValidationFailed
from shared.offered_values import with_offered_values
from shared.partial_decode import Partial, Repair, Trust, decode_partially
from shared.ratchet import Ratcheted, ratchet
from shared.validation.rules import rule_errors
from shared.validation.shapes import SHAPE_CHOICES, SHAPE_FIELDS, booster_schema, normalised, readable_shape
from shared.validation.update import update_errors


def validate_modelbooster(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """All field errors of a ModelBooster as given (not defaulted); empty when it is valid.

    With `old`, the stored object on UPDATE: the errors that UPDATE is refused for (`validate_update`).
    """
    if old is not None:
        return validate_update(obj, old=old).errors
    return _state_errors(normalised(obj))[1]


def validate_update(obj: Mapping[str, Any], *, old: Mapping[str, Any]) -> Ratcheted:
    """An UPDATE from `old` to `obj`: the errors it is refused for, and the errors carried over unchanged.

    Every rule runs on `obj`; an error whose values the update leaves as they were in `old` is carried over
    rather than refused (shared/ratchet.py), so an object stored under older rules stays manageable. The
    stored object is compared in its defaulted form, since the new one comes defaulted by the mutating
    webhook. Not ratcheted: the rules that compare old and new (a worker's `replicas`), and an object that
    does not decode at all, whose other rules cannot run to tell a newly added problem from an old one.
    """
    raw = normalised(obj)
    model, errors = _state_errors(raw)
    if model is None:
        return Ratcheted(errors=errors)
    verdict = Ratcheted()
    if errors:  # the common case, a valid object, needs no defaulted copy of the old one
        verdict = ratchet(errors, new=raw, old=normalised(apply_defaults(old).obj), schema=booster_schema())
    # These rules read a worker's type and replicas with their defaults applied, so the raw old object does.
    verdict.errors.extend(update_errors(model, normalised(old)))
    return verdict


def parse_modelbooster(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> ModelBooster:
    """Default, validate and decode a user-written ModelBooster; raise ValidationFailed with the field errors.

    This is the one entry point for synthesis: the model it returns is defaulted and valid. Nothing is
    carried over here: an object that still holds a value no rule admits is not synthesized.
    """
    return parse_defaulted(apply_defaults(obj).obj, old=old)


def parse_defaulted(defaulted_obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> ModelBooster:
    """`parse_modelbooster` of an object `apply_defaults` has defaulted already (for callers that also need the
    defaulting's warnings: one defaulted copy instead of two)."""
    model, errors = _state_errors(normalised(defaulted_obj))
    if model is not None and old is not None:
        errors.extend(update_errors(model, normalised(apply_defaults(old).obj)))
    if model is None or errors:
        raise ValidationFailed(errors)
    return model


def _state_errors(raw: Mapping[str, Any]) -> tuple[ModelBooster | None, list[FieldError]]:
    """The decoded model (None if it does not decode) and the errors of every rule about the object itself."""
    shape = shape_errors(raw)
    # Reported with the others: a policy beside a fixed count leaves no doubt how the object is read.
    refused_policy = autoscaling_errors(raw)
    if not shape:
        model, details = decode_details(ModelBooster, raw)
        if model is not None:
            return model, [*refused_policy, *rule_errors(model, raw, limit=MAX_COLLECTED_ERRORS)]
        readable: Mapping[str, Any] = raw
        shape_repairs: tuple[Repair, ...] = ()
    else:
        # Which schema applies, and how a single backend is read, depend on the shape: it is made readable first.
        readable, shape_repairs = readable_shape(raw)
        model, details = decode_details(ModelBooster, readable)
    # Every error at once (docs/design/validation.md §10): the schema's, then the rules' on what decodes.
    schema_errors = field_errors(details, model=ModelBooster, limit=MAX_COLLECTED_ERRORS) if details else []
    hinted = with_shape_hints(schema_errors, list_only=LIST_ONLY_FIELDS, single_only=SINGLE_ONLY_FIELDS)
    errors = [*shape, *refused_policy, *with_offered_values(hinted)]
    partial = Partial(model, dict(readable), ()) if model is not None else (
        decode_partially(ModelBooster, readable, details, kept=SHAPE_FIELDS)
    )  # fmt: skip
    if partial.model is not None and len(errors) < MAX_COLLECTED_ERRORS:
        trust = Trust((*shape_repairs, *partial.repairs))
        found = rule_errors(partial.model, partial.obj, limit=MAX_COLLECTED_ERRORS - len(errors))
        errors.extend(error for error in found if trust.trusts(error))
    # A field missing beside its likely typo, whether the schema or a rule requires it (`scalingcost`).
    return None, with_missing_hints(errors, obj=raw, schema=booster_schema(), choices=SHAPE_CHOICES)
