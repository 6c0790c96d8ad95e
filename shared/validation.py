"""Validation of a ModelBooster: the validating webhook's rules, also run by the CLI and the reconciler.

`validate_modelbooster` checks the object exactly as given and does **not** default it: the webhook's
validating call receives the object after the mutating call has defaulted it, so validating the given
object is what admission does. Callers holding a user-written object (the CLI, the reconciler, anyone
synthesizing) use `parse_modelbooster`, which defaults first, validates, and returns the typed model.
The rules that only matter when defaulting was skipped (e.g. "scaleToZeroGracePeriod must be provided
when model-level autoscaling is set") therefore fire only when the mutating webhook was bypassed.
`validate_update` is what admission does on UPDATE: the same rules, with the errors whose values the update
leaves unchanged carried over instead of refused (shared/ratchet.py); a rule that compares several fields
lists them in its errors' `reads`.

Order of the errors (all are collected up to `MAX_COLLECTED_ERRORS`, in one answer; none short-circuits): an
object that does not choose one backend shape, or whose single backend names no replica form or two, gets that
first (shared/backend_shape.py), then a `spec.autoscalingPolicy` refused beside a fixed `replicas`, then the
errors of what does not decode; then the rules run on what can be read (shared/partial_decode.py,
docs/design/validation.md §10), in this order:
  1. the reference's rules, docs/design/validation.md §4 (with the real JSON paths);
  2. the unsupported features, docs/design/validation.md §5;
  3. the additional rules, docs/design/validation.md §6 (including the newer line's engine-port, PVC and KV checks).
The rules read the single backend of `spec.backend` as the list of one it decodes to; its errors are reported
at the paths the user wrote (`spec.backend...`).
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import chain, islice
from typing import Any, Final

from shared.api.modelbooster import (
    LIST_ONLY_FIELDS,
    SINGLE_ONLY_FIELDS,
    SUPPORTED_BACKEND_TYPES,
    ModelBackend,
    ModelBooster,
    ModelWorker,
)
from shared.backend_shape import (
    COUNT_FIELD,
    LIST_FIELD,
    REPLICA_FIELDS,
    SINGLE_FIELD,
    autoscaling_errors,
    backend_objects,
    on_wire,
    shape_errors,
    with_shape_hints,
)
from shared.constants import (
    MAX_REPLICAS,
    MAX_ROUTE_LORA_ADAPTERS,
    MAX_ROUTE_RULES,
    MAX_SCALE_TO_ZERO_GRACE_SECONDS,
)
from shared.decoding import decode, decode_details, field_errors, with_missing_hints
from shared.defaults import apply_defaults
from shared.durations import format_duration, parse_duration
from shared.engine_config import (
    ConfigError,
    EnginePortError,
    KvConnectorError,
    config_mapping,
    engine_port,
    kv_connector,
)
from shared.errors import (
    MAX_COLLECTED_ERRORS,
    FieldError,
    ValidationFailed,
    duplicate,
    forbidden,
    invalid,
    required,
)
from shared.external_scaling import (
    ACCEPTED_VALUES as EXTERNAL_REPLICAS_VALUES,
)
from shared.external_scaling import (
    ANNOTATION_EXTERNAL_REPLICAS,
    EXTERNAL_WITH_POLICY_DETAIL,
    NO_AUTOSCALING_DETAIL,
    replicas_set_externally,
)
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
from shared.offered_values import with_offered_values
from shared.partial_decode import Partial, Repair, Trust, decode_partially, json_copy, stand_in_at
from shared.quantity import PATTERN_MESSAGE, check_quantity, pattern_message
from shared.ratchet import Ratcheted, ratchet
from shared.resources import all_fine, resource_errors
from shared.schema import structural_schema
from shared.unsupported import (
    AUTOSCALING_UNSUPPORTED,
    BACKEND_UNSUPPORTED,
    SPEC_UNSUPPORTED,
    WORKER_UNSUPPORTED,
)
from shared.uris import HOSTPATH_SCHEME, PVC_SCHEME

# The one annotation a rule reads (an error reading it names this path, not all annotations).
_EXTERNAL_REPLICAS_PATH: Final = f"metadata.annotations[{ANNOTATION_EXTERNAL_REPLICAS}]"
_MAX_GRACE_NANOS: Final = MAX_SCALE_TO_ZERO_GRACE_SECONDS * 1_000_000_000
_SINGLE_WORKER_TYPES: Final = ("vLLM", "SGLang", "MindIE")
_ENGINE_PORT_TYPES: Final = ("vLLM", "vLLMDisaggregated", "SGLang")
# Go's unicode.IsSpace, which strings.TrimSpace uses (Python's str.isspace also accepts U+001C..U+001F).
_GO_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

COST_EXPANSION_WITHOUT_MODEL_LEVEL: Final = (
    "costExpansionRatePercent must not be provided when model-level autoscaling is not set"
)
MIN_ONE_WITH_BACKEND_LEVEL: Final = "minReplicas must be >= 1 when backend-level autoscaling is set"
# How those rules read for a single `spec.backend`, whose `spec.autoscalingPolicy` (Kthena v0.2-v0.4) is that
# backend's own (docs/design/api.md §8): "model-level" and "backend-level" name the list's two kinds.
_SINGLE_WORDING: Final = {
    COST_EXPANSION_WITHOUT_MODEL_LEVEL: "costExpansionRatePercent must not be provided with a single spec.backend: "
    "it weighs the costs of several spec.backends under model-level autoscaling",
    MIN_ONE_WITH_BACKEND_LEVEL: "minReplicas must be >= 1 when spec.autoscalingPolicy is set: the autoscaler "
    "reads its metric from the backend's pods, and at zero there is none to scale up on",
}


def validate_modelbooster(obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[FieldError]:
    """All field errors of a ModelBooster as given (see the module docstring); empty when it is valid.

    With `old`, the stored object on UPDATE: the errors that UPDATE is refused for (`validate_update`).
    """
    if old is not None:
        return validate_update(obj, old=old).errors
    return _state_errors(_normalised(obj))[1]


def validate_update(obj: Mapping[str, Any], *, old: Mapping[str, Any]) -> Ratcheted:
    """An UPDATE from `old` to `obj`: the errors it is refused for, and the errors carried over unchanged.

    Every rule runs on `obj`; an error whose values the update leaves as they were in `old` is carried over
    rather than refused (shared/ratchet.py), so an object stored under older rules stays manageable. The
    stored object is compared in its defaulted form, since the new one comes defaulted by the mutating
    webhook. Not ratcheted: the rules that compare old and new (a worker's `replicas`), and an object that
    does not decode at all, whose other rules cannot run to tell a newly added problem from an old one.
    """
    raw = _normalised(obj)
    model, errors = _state_errors(raw)
    if model is None:
        return Ratcheted(errors=errors)
    verdict = Ratcheted()
    if errors:  # the common case, a valid object, needs no defaulted copy of the old one
        verdict = ratchet(errors, new=raw, old=_normalised(apply_defaults(old).obj), schema=_booster_schema())
    # These rules read a worker's type and replicas with their defaults applied, so the raw old object does.
    verdict.errors.extend(_update_errors(model, _normalised(old)))
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
    model, errors = _state_errors(_normalised(defaulted_obj))
    if model is not None and old is not None:
        errors.extend(_update_errors(model, _normalised(apply_defaults(old).obj)))
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
            return model, [*refused_policy, *_rule_errors(model, raw, limit=MAX_COLLECTED_ERRORS)]
        readable: Mapping[str, Any] = raw
        shape_repairs: tuple[Repair, ...] = ()
    else:
        # Which schema applies, and how a single backend is read, depend on the shape: it is made readable first.
        readable, shape_repairs = _readable_shape(raw)
        model, details = decode_details(ModelBooster, readable)
    # Every error at once (docs/design/validation.md §10): the schema's, then the rules' on what decodes.
    schema_errors = field_errors(details, model=ModelBooster, limit=MAX_COLLECTED_ERRORS) if details else []
    hinted = with_shape_hints(schema_errors, list_only=LIST_ONLY_FIELDS, single_only=SINGLE_ONLY_FIELDS)
    errors = [*shape, *refused_policy, *with_offered_values(hinted)]
    partial = Partial(model, dict(readable), ()) if model is not None else (
        decode_partially(ModelBooster, readable, details, kept=_SHAPE_FIELDS)
    )  # fmt: skip
    if partial.model is not None and len(errors) < MAX_COLLECTED_ERRORS:
        trust = Trust((*shape_repairs, *partial.repairs))
        found = _rule_errors(partial.model, partial.obj, limit=MAX_COLLECTED_ERRORS - len(errors))
        errors.extend(error for error in found if trust.trusts(error))
    # A field missing beside its likely typo, whether the schema or a rule requires it (`scalingcost`).
    return None, with_missing_hints(errors, obj=raw, schema=_booster_schema(), choices=_SHAPE_CHOICES)


def _rule_errors(model: ModelBooster, raw: Mapping[str, Any], *, limit: int) -> list[FieldError]:
    """Every rule's errors on a decoded object, at the paths the user wrote (the first `limit` of them)."""
    # Lazily, so that an object with tens of thousands of mistakes stops costing at the collection limit.
    found = chain(
        _core_quantity_errors(model), _reference_rules(model), _unsupported_features(raw), _additional_rules(model)
    )
    errors = list(islice(found, max(limit, 0)))
    return on_wire(errors, single=model.spec.backend is not None, wording=_SINGLE_WORDING)


# The fields whose presence says how an object is read (shared/backend_shape.py): a repair stands in for them
# rather than leave them out, and the object-level Required errors of the shape name them.
_SHAPE_FIELDS: Final = frozenset(
    {f"spec.{SINGLE_FIELD}", f"spec.{LIST_FIELD}", *(f"spec.{SINGLE_FIELD}.{name}" for name in REPLICA_FIELDS)}
)
_SHAPE_CHOICES: Final = {"spec": (SINGLE_FIELD, LIST_FIELD), f"spec.{SINGLE_FIELD}": REPLICA_FIELDS}


def _readable_shape(raw: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Repair, ...]]:
    """A copy of an object whose shape leaves open how it is read (`shape_errors`), made to choose one: the
    list of backends when it names none (a stand-in), the single backend when it names both, and a single
    backend's replica form; with the repairs made, so that no rule's error about them is reported."""
    readable = json_copy(raw)
    spec = readable["spec"]
    schema = _booster_schema()
    single, listed = spec.get(SINGLE_FIELD) is not None, spec.get(LIST_FIELD) is not None
    if not single and not listed:
        spec[LIST_FIELD] = stand_in_at(schema, ("spec", LIST_FIELD))
        return readable, (Repair(f"spec.{LIST_FIELD}", stand_in=True),)
    if single and listed:
        del spec[LIST_FIELD]
        return readable, (Repair(f"spec.{LIST_FIELD}", stand_in=False),)
    backend = spec[SINGLE_FIELD]
    given = {name for name in REPLICA_FIELDS if backend.get(name) is not None}
    path = f"spec.{SINGLE_FIELD}"
    # The internal form's replica range stands for any of the three fields: a repair of one is a repair of all.
    every = tuple(Repair(f"{path}.{name}", stand_in=True) for name in REPLICA_FIELDS)
    if COUNT_FIELD in given:  # a count and a range: read as the count
        for name in given - {COUNT_FIELD}:
            del backend[name]
    else:  # nothing, or half a range: the count, or the other half, stood in for
        missing = [COUNT_FIELD] if not given else [name for name in REPLICA_FIELDS[1:] if name not in given]
        for name in missing:
            backend[name] = stand_in_at(schema, ("spec", SINGLE_FIELD, name))
    return readable, every


def _update_errors(model: ModelBooster, old_raw: Mapping[str, Any]) -> list[FieldError]:
    old_model, old_errors = decode(ModelBooster, old_raw)
    if old_model is None or old_errors:
        return []
    return on_wire(_update_rules(model, old_model), single=model.spec.backend is not None)


@functools.cache
def _booster_schema() -> dict[str, Any]:
    """The ModelBooster's structural schema, which says how old and new values correlate (read-only)."""
    return structural_schema(ModelBooster)


def _reads(error: FieldError, *paths: str) -> FieldError:
    """The error of a cross-field rule, with every field the rule read (see FieldError.reads)."""
    return replace(error, reads=paths)


def _backend_fields(index: int, *names: str) -> tuple[str, ...]:
    """The paths of fields of one backend, for the `reads` of a cross-field error. Built only when an error is
    found: on the common path, a valid object, no rule formats a path."""
    return tuple(f"spec.backends[{index}].{name}" for name in names)


def _autoscaling_switches(backends: Sequence[ModelBackend]) -> tuple[str, ...]:
    """Where autoscaling is switched on: the rules that depend on model- or backend-level read these."""
    return ("spec.autoscalingPolicy", *(f"spec.backends[{i}].autoscalingPolicy" for i in range(len(backends))))


# ---------------------------------------------------------------------------------------------------------
# Decoding helpers


def _normalised(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object with the one wire form the `kubernetes` models reject although Kubernetes accepts it:
    a numeric `resourceFieldRef.divisor` (a quantity, which the client types as a string)."""
    if not _numeric_divisors(obj):
        # The common case: nothing to rewrite, so no copy (validation runs on every admission request).
        return obj if isinstance(obj, dict) else dict(obj)
    copy: dict[str, Any] = _deep_copy(obj)
    for selector in _numeric_divisors(copy):
        selector["divisor"] = str(selector["divisor"])
    return copy


def _numeric_divisors(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for backend in backend_objects(obj.get("spec")):
        env = backend.get("env")
        for entry in env if isinstance(env, list) else ():
            value_from = entry.get("valueFrom") if isinstance(entry, dict) else None
            if value_from is None:  # most entries hold a `value`
                continue
            selector = value_from.get("resourceFieldRef") if isinstance(value_from, dict) else None
            if not isinstance(selector, dict):
                continue
            divisor = selector.get("divisor")
            if isinstance(divisor, int) and not isinstance(divisor, bool):
                found.append(selector)
    return found


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _deep_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep_copy(item) for item in value]
    return value


def _core_quantity_errors(model: ModelBooster) -> Iterator[FieldError]:
    for i, backend in enumerate(model.spec.backends):
        for j, entry in enumerate(backend.env or ()):
            value_from = entry.value_from  # a property of the client's model: read once
            selector = value_from.resource_field_ref if value_from else None
            if selector is None or selector.divisor is None:
                continue
            try:
                check_quantity(selector.divisor)
            except ValueError as error:
                path = f"spec.backends[{i}].env[{j}].valueFrom.resourceFieldRef.divisor"
                reason = pattern_message(selector.divisor) if str(error) == PATTERN_MESSAGE else str(error)
                yield invalid(path, selector.divisor, reason)


# ---------------------------------------------------------------------------------------------------------
# 1. The reference's rules (docs/design/validation.md §4), in its order


def _reference_rules(model: ModelBooster) -> Iterator[FieldError]:
    backends = model.spec.backends
    yield from _grace_periods(backends)
    yield from _replica_bounds(backends)
    yield from _worker_images(backends)
    yield from _autoscaling_scope(model)
    yield from _worker_types(backends)
    yield from _lora_names(model.metadata.name or "", backends)


def _grace_periods(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        if backend.scale_to_zero_grace_period is None:
            continue
        nanos = parse_duration(backend.scale_to_zero_grace_period)
        if nanos > _MAX_GRACE_NANOS:
            detail = "scaleToZeroGracePeriod cannot exceed 1800 seconds"
        elif nanos < 0:
            detail = "scaleToZeroGracePeriod cannot be negative"
        else:
            continue
        yield invalid(f"spec.backends[{i}].scaleToZeroGracePeriod", format_duration(nanos), detail)


def _replica_bounds(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    total = 0
    for i, backend in enumerate(backends):
        total += backend.max_replicas
        if backend.min_replicas > backend.max_replicas:
            error = invalid(
                f"spec.backends[{i}].minReplicas",
                backend.min_replicas,
                "minReplicas cannot be greater than maxReplicas",
            )
            yield _reads(error, f"spec.backends[{i}].minReplicas", f"spec.backends[{i}].maxReplicas")
    if total > MAX_REPLICAS:
        yield invalid(
            "spec.backends", total, f"sum of maxReplicas across all backends ({total}) cannot exceed {MAX_REPLICAS}"
        )


def _worker_images(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
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


def _autoscaling_scope(model: ModelBooster) -> Iterator[FieldError]:
    spec = model.spec
    backends = spec.backends
    model_level = spec.autoscaling_policy is not None
    backend_level = any(backend.autoscaling_policy is not None for backend in backends)
    # Every rule here depends on where autoscaling is set, so each error also reads those switches
    # (`_autoscaling_switches`).
    if not model_level:
        for i, backend in enumerate(backends):
            if backend.scaling_cost:
                error = forbidden(
                    f"spec.backends[{i}].scalingCost",
                    "cost must not be provided when model-level autoscaling is not set",
                )
                yield _reads(error, error.path, "spec.autoscalingPolicy")
            if backend.scale_to_zero_grace_period is not None:
                error = forbidden(
                    f"spec.backends[{i}].scaleToZeroGracePeriod",
                    "scaleToZeroGracePeriod must not be provided when model-level autoscaling is not set",
                )
                yield _reads(error, error.path, "spec.autoscalingPolicy")
        if spec.cost_expansion_rate_percent is not None:
            error = forbidden("spec.costExpansionRatePercent", COST_EXPANSION_WITHOUT_MODEL_LEVEL)
            yield _reads(error, error.path, "spec.autoscalingPolicy")
        # A single backend's `spec.autoscalingPolicy` (Kthena v0.2-v0.4) may start from zero, as Kthena v0.4.0's
        # webhook admitted: the warning says what keeps it there (shared/external_scaling.py).
        single = spec.backend is not None
        for i, backend in enumerate(backends):
            if backend.autoscaling_policy is not None and backend.min_replicas < 1 and not single:
                error = invalid(
                    f"spec.backends[{i}].minReplicas",
                    backend.min_replicas,
                    MIN_ONE_WITH_BACKEND_LEVEL,
                )
                yield _reads(error, error.path, *_autoscaling_switches(backends))
        # With the external-replicas opt-in something outside sets replicas between the bounds
        # (shared/external_scaling.py); the bounds must then only be in order, which the schema rule
        # minReplicas <= maxReplicas already says.
        if not backend_level and not replicas_set_externally(model.metadata.annotations):
            for i, backend in enumerate(backends):
                if backend.min_replicas != backend.max_replicas:
                    value = f"minReplicas={backend.min_replicas}, maxReplicas={backend.max_replicas}"
                    error = invalid(f"spec.backends[{i}]", value, NO_AUTOSCALING_DETAIL)
                    bounds = (f"{error.path}.minReplicas", f"{error.path}.maxReplicas")
                    yield _reads(error, *bounds, *_autoscaling_switches(backends), _EXTERNAL_REPLICAS_PATH)
    elif not backend_level:
        total = 0
        for i, backend in enumerate(backends):
            total += backend.min_replicas
            if backend.min_replicas < 0:
                error = invalid(
                    f"spec.backends[{i}].minReplicas",
                    backend.min_replicas,
                    "minReplicas must be >= 0 when model-level autoscaling is set",
                )
                yield _reads(error, error.path, *_autoscaling_switches(backends))
            if not backend.scaling_cost:
                error = required(
                    f"spec.backends[{i}].scalingCost", "cost must be provided when model-level autoscaling is set"
                )
                yield _reads(error, error.path, *_autoscaling_switches(backends))
            if backend.scale_to_zero_grace_period is None:
                error = required(
                    f"spec.backends[{i}].scaleToZeroGracePeriod",
                    "scaleToZeroGracePeriod must be provided when model-level autoscaling is set",
                )
                yield _reads(error, error.path, *_autoscaling_switches(backends))
        if total < 1:
            error = invalid(
                "spec.backends", total, "sum of all minReplicas must be >= 1 when model-level autoscaling is set"
            )
            yield _reads(error, error.path, "spec.autoscalingPolicy")
        if spec.cost_expansion_rate_percent is None:
            error = required(
                "spec.costExpansionRatePercent",
                "costExpansionRatePercent must be provided and > 0 when model-level autoscaling is set",
            )
            yield _reads(error, error.path, *_autoscaling_switches(backends))
    else:
        # The reference named the fields `autoscalingPolicyRef` here; we use the real JSON names.
        error = forbidden(
            "spec.autoscalingPolicy",
            "spec.autoscalingPolicy and spec.backends[].autoscalingPolicy cannot both be set; "
            "choose model-level or backend-level autoscaling, not both",
        )
        yield _reads(error, *_autoscaling_switches(backends))


def _worker_type(worker: ModelWorker) -> str:
    return worker.type or "server"


def _worker_types(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        for error in _worker_type_errors(i, backend):
            # The allowed workers depend on the backend's type: changing either re-checks them.
            yield _reads(error, *_backend_fields(i, "workers", "type"))


def _worker_type_errors(i: int, backend: ModelBackend) -> Iterator[FieldError]:
    kind = backend.type
    workers = backend.workers
    if kind in _SINGLE_WORKER_TYPES:
        if len(workers) != 1:
            yield invalid(
                f"spec.backends[{i}].workers",
                len(workers),
                f"If backend type is '{kind}', there must be exactly one worker",
            )
        elif _worker_type(workers[0]) != "server":
            yield invalid(
                f"spec.backends[{i}].workers[0].type",
                _worker_type(workers[0]),
                f"If backend type is '{kind}', the worker type must be 'server'",
            )
    elif kind == "vLLMDisaggregated":
        for j, worker in enumerate(workers):
            if _worker_type(worker) not in ("prefill", "decode"):
                yield invalid(
                    f"spec.backends[{i}].workers[{j}].type",
                    _worker_type(worker),
                    "If backend type is 'vLLMDisaggregated', all workers must be type 'prefill' or 'decode'",
                )
    elif kind == "MindIEDisaggregated":
        for j, worker in enumerate(workers):
            if _worker_type(worker) not in ("prefill", "decode", "controller", "coordinator"):
                yield invalid(
                    f"spec.backends[{i}].workers[{j}].type",
                    _worker_type(worker),
                    "If backend type is 'MindIEDisaggregated', all workers must be type 'prefill', 'decode', "
                    "'controller', or 'coordinator' (not 'server')",
                )


def _lora_names(model_name: str, backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    for i, backend in enumerate(backends):
        if not backend.lora_adapters:
            continue
        seen: dict[str, int] = {}
        for j, adapter in enumerate(backend.lora_adapters):
            path = f"spec.backends[{i}].loraAdapters[{j}].name"
            if adapter.name == model_name:
                error = invalid(path, adapter.name, "lora name cannot be the same as model name")
                yield _reads(error, path, "metadata.name")
            first = seen.setdefault(adapter.name, j)
            if first != j:
                error = invalid(path, adapter.name, "lora name must be unique within the backend")
                yield _reads(error, path, f"spec.backends[{i}].loraAdapters[{first}].name")


# ---------------------------------------------------------------------------------------------------------
# 2. Unsupported features (docs/design/validation.md §5): checked on the raw object, exactly as the CEL rules see it


def _unsupported_features(raw: Mapping[str, Any]) -> Iterator[FieldError]:
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


# ---------------------------------------------------------------------------------------------------------
# 3. Additional rules (docs/design/validation.md §6): what would otherwise fail later, in the reconciler or a
#    child's API


def _additional_rules(model: ModelBooster) -> Iterator[FieldError]:
    name = model.metadata.name
    named = not name or is_dns1123_subdomain(name)
    if not named:  # kube-apiserver refuses it before any webhook; the CLI must say so too
        yield invalid("metadata.name", name, SUBDOMAIN_DETAIL)
    external = (model.metadata.annotations or {}).get(ANNOTATION_EXTERNAL_REPLICAS)
    if external is not None and external not in EXTERNAL_REPLICAS_VALUES:
        yield invalid(
            _EXTERNAL_REPLICAS_PATH,
            external,
            f"must be {' or '.join(repr(value) for value in EXTERNAL_REPLICAS_VALUES)}",
        )
    if replicas_set_externally(model.metadata.annotations):
        policies = _autoscaling_switches(model.spec.backends)
        if model.spec.autoscaling_policy is not None or any(b.autoscaling_policy for b in model.spec.backends):
            both = forbidden(f"metadata.annotations[{ANNOTATION_EXTERNAL_REPLICAS}]", EXTERNAL_WITH_POLICY_DETAIL)
            yield _reads(both, "metadata.annotations", *policies)
    backends = model.spec.backends
    pd_counts_ok = [True] * len(backends)
    configs_ok = [True] * len(backends)
    for i, backend in enumerate(backends):
        if backend.type not in SUPPORTED_BACKEND_TYPES:
            yield invalid(
                f"spec.backends[{i}].type",
                backend.type,
                "not supported yet; supported: " + ", ".join(SUPPORTED_BACKEND_TYPES),
            )
    for i, backend in enumerate(backends):
        error = _pd_worker_counts(i, backend)
        if error is not None:
            pd_counts_ok[i] = False
            # It counts the workers' types (the ratchet compares the atomic `workers` list as a whole anyway).
            types = (f"{error.path}[{j}].type" for j in range(len(backend.workers)))
            yield _reads(error, error.path, f"spec.backends[{i}].type", *types)
    for i, backend in enumerate(backends):
        for j, worker in enumerate(backend.workers):
            try:
                config_mapping(worker.config)
            except ConfigError:
                configs_ok[i] = False
                yield invalid(
                    f"spec.backends[{i}].workers[{j}].config",
                    worker.config,
                    "must be a JSON object of engine arguments",
                )
    for i, backend in enumerate(backends):
        if configs_ok[i] and backend.type in _ENGINE_PORT_TYPES:
            try:
                engine_port(backend.workers)
            except EnginePortError as port_error:
                path = f"spec.backends[{i}].workers[{port_error.worker_index}].config.port"
                error = invalid(path, port_error.value, str(port_error))
                yield _reads(error, *_backend_fields(i, "workers", "type"))
    for i, backend in enumerate(backends):
        error = _cache_uri_error(i, backend)
        if error is not None:
            # Each of these compares modelURI with cacheURI.
            yield _reads(error, *_backend_fields(i, "modelURI", "cacheURI"))
    for i, backend in enumerate(backends):
        if configs_ok[i] and pd_counts_ok[i]:
            try:
                kv_connector(backend.name, backend.workers)
            except KvConnectorError as kv_error:
                yield invalid(
                    f"spec.backends[{i}].workers", backend.name, f"invalid kv connector configuration: {kv_error}"
                )
    if named:  # else the names made of it are wrong for the same reason, said once
        yield from _generated_names(model.metadata.name or "", backends)
    yield from _route_model_name_clashes(model)
    yield from _route_limits(backends)
    yield from _duplicates(backends)
    yield from _container_resources(backends)


def _pd_worker_counts(index: int, backend: ModelBackend) -> FieldError | None:
    if backend.type != "vLLMDisaggregated":
        return None
    prefill = sum(1 for worker in backend.workers if _worker_type(worker) == "prefill")
    decode_count = sum(1 for worker in backend.workers if _worker_type(worker) == "decode")
    if prefill == 1 and decode_count == 1:
        return None
    return invalid(
        f"spec.backends[{index}].workers",
        len(backend.workers),
        "a vLLMDisaggregated backend needs exactly one prefill and one decode worker; "
        f"found {prefill} prefill and {decode_count} decode",
    )


def _cache_uri_error(index: int, backend: ModelBackend) -> FieldError | None:
    """The newer line's PVC reachability checks, then the cache URI shapes its synthesis would refuse, so that
    both are answered at admission (docs/design/validation.md §6, item 5). One error at most: a `pvc://`
    modelURI that passes the first has a cacheURI naming a claim, which passes the second."""
    cache_uri = backend.cache_uri or ""
    if backend.model_uri.startswith(PVC_SCHEME):
        error = _pvc_reachability(f"spec.backends[{index}]", model_uri=backend.model_uri, cache_uri=cache_uri)
        if error is not None:
            return error
    if cache_uri.startswith(PVC_SCHEME) and not cache_uri.removeprefix(PVC_SCHEME).strip("/"):
        detail = f"invalid cacheURI {go_quote(cache_uri)}: must include a PVC claim name"
    elif cache_uri.startswith(HOSTPATH_SCHEME) and not cache_uri.removeprefix(HOSTPATH_SCHEME).strip("/"):
        detail = f"invalid cacheURI {go_quote(cache_uri)}: must include a host path"
    else:
        return None
    return invalid(f"spec.backends[{index}].cacheURI", cache_uri, detail)


def _pvc_reachability(path: str, *, model_uri: str, cache_uri: str) -> FieldError | None:
    if not cache_uri.startswith(PVC_SCHEME):
        return invalid(
            f"{path}.cacheURI",
            cache_uri,
            "when modelURI uses pvc://, cacheURI must also use pvc://. The downloader only has access to the "
            "volume mounted via cacheURI. Set cacheURI to the PVC that holds the model (e.g. pvc://<claimName>) "
            "and set modelURI to the path within that PVC (e.g. pvc:///<claimName>/<path-to-model>)",
        )
    model_path = model_uri.removeprefix(PVC_SCHEME)
    if ".." in model_path.split("/"):
        return invalid(f"{path}.modelURI", model_uri, "pvc:// modelURI must not contain '..' path segments")
    claim = cache_uri.removeprefix(PVC_SCHEME).strip("/")
    if not claim or "/" in claim:
        return invalid(
            f"{path}.cacheURI",
            cache_uri,
            "pvc:// cacheURI must contain a single PVC claim name with no path separator (e.g. pvc://<claimName>); "
            "claim names cannot contain '/'",
        )
    # Go's path.Clean; POSIX normpath keeps a leading "//", Go does not.
    source = posixpath.normpath("/" + model_path.lstrip("/"))
    mount = "/" + claim
    if source != mount and not source.startswith(mount + "/"):
        return invalid(
            f"{path}.modelURI",
            model_uri,
            f"PVC source path {go_quote(source)} is not reachable via cacheURI mount {go_quote(mount)}. "
            "The downloader only has access to PVCs mounted via cacheURI. If the source model and the cache are "
            "on the same PVC, set cacheURI to the PVC name and include that name as the first path segment of "
            "modelURI. Example: cacheURI: pvc://<claimName>, modelURI: pvc:///<claimName>/<path-to-model>",
        )
    return None


def _generated_names(model_name: str, backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    if not model_name:  # generateName: the name is not known yet
        return
    # Every backend's pods hold the model downloader, named after the model alone: checked once for all.
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
            yield _container_name_error("metadata.name", downloader, reads=("metadata.name",))
        adapters = backend.lora_adapters
        if adapters:
            container = lora_downloader_name(model_name, len(adapters) - 1)
            if not is_dns1123_label(container):
                made_of = ("metadata.name", f"spec.backends[{i}].loraAdapters")
                yield _container_name_error("metadata.name", container, reads=made_of)
        if backend.type == "vLLM":
            container = ray_worker_container_name(backend.name)
            if not is_dns1123_label(container):
                reads = _backend_fields(i, "name", "type")
                yield _container_name_error(reads[0], container, reads=reads)


def _container_name_error(path: str, container: str, *, reads: tuple[str, ...]) -> FieldError:
    """`container`, a generated container name made of the fields `reads`, is no DNS-1123 label."""
    error = invalid(
        path,
        container,
        f"the generated container name {container!r} must be a DNS-1123 label of at most 63 characters; "
        "shorten the name",
    )
    return _reads(error, *reads)


def _route_model_name_clashes(model: ModelBooster) -> Iterator[FieldError]:
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


def _route_limits(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
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


def _duplicates(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    # Each error reads the name it repeats too: both are the user's, or neither is reported (partial_decode.py).
    seen_backends: dict[str, int] = {}
    for i, backend in enumerate(backends):
        first = seen_backends.setdefault(backend.name, i)
        if first != i:
            path = f"spec.backends[{i}].name"
            yield _reads(duplicate(path, backend.name), path, f"spec.backends[{first}].name")
    for i, backend in enumerate(backends):
        seen_env: dict[str, int] = {}
        for j, entry in enumerate(backend.env or ()):
            name = entry.name  # a property of the client's model: read once
            first = seen_env.setdefault(name, j)
            if first != j:
                path = f"spec.backends[{i}].env[{j}].name"
                yield _reads(duplicate(path, name), path, f"spec.backends[{i}].env[{first}].name")


def _container_resources(backends: Sequence[ModelBackend]) -> Iterator[FieldError]:
    """Each worker's resources become its containers': checked as Kubernetes checks them when a pod is created."""
    for i, backend in enumerate(backends):
        for j, worker in enumerate(backend.workers):
            resources = worker.resources
            if resources is not None and not all_fine(limits := resources.limits, requests := resources.requests):
                path = f"spec.backends[{i}].workers[{j}].resources"
                yield from resource_errors(path, limits=limits, requests=requests)


# ---------------------------------------------------------------------------------------------------------
# UPDATE rules


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
            old_replicas.setdefault(_worker_type(worker), _effective_replicas(worker))
        compared: set[str] = set()
        for j, worker in enumerate(backend.workers):
            kind = _worker_type(worker)
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
