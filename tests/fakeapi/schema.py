"""Structural-schema behaviour of custom resources: pruning, defaulting, OpenAPI validation and CEL rules.

Follows apiextensions-apiserver: unknown fields are pruned (reported as warnings or, with
`fieldValidation=Strict`, as an error), `null` in a non-nullable field is dropped before defaults are
applied, defaults apply top-down, and validation errors are converted the way
`kubeOpenAPIResultToFieldErrors` converts go-openapi results.

Updates are ratcheted like kube-apiserver v1.36 (CRDValidationRatcheting, GA): see `Validator`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

from tests.fakeapi import cel
from tests.fakeapi import errors as e
from tests.fakeapi.errors import FieldError
from tests.fakeapi.meta import OBJECT_META_FIELDS
from tests.fakeapi.util import deep_copy, json_equal, json_type

Obj = dict[str, Any]

_ROOT_KEEP: Final = ("apiVersion", "kind")


def child_path(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def index_path(parent: str, index: int) -> str:
    return f"{parent}[{index}]"


def key_path(parent: str, key: str) -> str:
    # A map key after a dot, as kube-apiserver's schema validation prints it (`resources.limits.memory`), unlike
    # apimachinery's field errors elsewhere (`limits[memory]`); seen on v1.36 (scenario modelbooster_whole_list).
    return f"{parent}.{key}"


# ---- pruning ---------------------------------------------------------------------------------------


def prune(obj: Obj, schema: Obj) -> list[str]:
    """Drop fields the schema does not declare; returns their paths (for warnings / strict errors)."""
    unknown: list[str] = []
    for key in list(obj):
        if key in _ROOT_KEEP:
            continue
        if key == "metadata":
            metadata = obj["metadata"]
            if isinstance(metadata, dict):
                for meta_key in list(metadata):
                    if meta_key not in OBJECT_META_FIELDS:
                        unknown.append(f"metadata.{meta_key}")
                        del metadata[meta_key]
            continue
        properties = schema.get("properties") or {}
        if key in properties:
            obj[key] = _prune_value(obj[key], properties[key], key, unknown)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            unknown.append(key)
            del obj[key]
    return unknown


def _prune_value(value: Any, schema: Obj, path: str, unknown: list[str]) -> Any:
    if isinstance(value, dict):
        if schema.get("x-kubernetes-embedded-resource"):
            keep = {k: value[k] for k in ("apiVersion", "kind", "metadata") if k in value}
            rest = {k: v for k, v in value.items() if k not in keep}
            pruned = _prune_object(rest, schema, path, unknown)
            return {**keep, **pruned}
        return _prune_object(value, schema, path, unknown)
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [_prune_value(v, items, index_path(path, i), unknown) for i, v in enumerate(value)]
    return value


def _prune_object(value: Obj, schema: Obj, path: str, unknown: list[str]) -> Obj:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key in list(value):
        if key in properties:
            value[key] = _prune_value(value[key], properties[key], child_path(path, key), unknown)
        elif isinstance(extra, dict):
            value[key] = _prune_value(value[key], extra, child_path(path, key), unknown)
        elif extra is True or preserve:
            continue
        else:
            unknown.append(child_path(path, key))
            del value[key]
    return value


# ---- defaulting ------------------------------------------------------------------------------------


def apply_defaults(obj: Obj, schema: Obj) -> None:
    """Drop nulls from non-nullable fields, then apply `default`s top-down (in place)."""
    properties = schema.get("properties") or {}
    for key, prop in properties.items():
        if key == "metadata":
            continue
        _default_property(obj, key, prop)
    for key, prop in properties.items():
        if key != "metadata" and key in obj:
            _default_value(obj[key], prop)


def _default_property(container: Obj, key: str, prop: Obj) -> None:
    if key in container and container[key] is None and not prop.get("nullable"):
        del container[key]
    if key not in container and "default" in prop:
        container[key] = deep_copy(prop["default"])


def _default_value(value: Any, schema: Obj) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, prop in properties.items():
            _default_property(value, key, prop)
        extra = schema.get("additionalProperties")
        for key in list(value):
            if key in properties:
                _default_value(value[key], properties[key])
            elif isinstance(extra, dict):
                if value[key] is None and not extra.get("nullable"):
                    del value[key]
                    continue
                _default_value(value[key], extra)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                if item is None and "default" in items and not items.get("nullable"):
                    value[index] = deep_copy(items["default"])
                _default_value(value[index], items)


# ---- OpenAPI validation -----------------------------------------------------------------------------


# Where an error comes from decides whether ratcheting may spare it.
_OPENAPI: Final = "openapi"  # an OpenAPI keyword: spared on an unchanged value, dropped outside the scope
_RULE: Final = "rule"  # a failed CEL rule without oldSelf: spared (as a warning) on an unchanged value
_ALWAYS: Final = "always"  # a failed transition rule or a CEL runtime error: never spared


@dataclass
class Validator:
    """Validates one object against a structural schema (and CEL rules), collecting field errors.

    With an old object (an update), errors are ratcheted like kube-apiserver v1.36 does: an OpenAPI error, or a
    failed CEL rule that does not use `oldSelf`, is spared when the value at its node is unchanged — for a
    node that cannot be correlated with the old object (an item of an atomic or set list), when the nearest
    node above it that can be is unchanged. A spared rule failure becomes a warning; a spared OpenAPI error
    disappears. Transition rules (`oldSelf`) and CEL runtime errors are never spared.

    "Unchanged" is what the real server computes (`cached_deep_equal`), not what one would expect: a map that
    reaches a subtree declared `x-kubernetes-preserve-unknown-fields` through maps only never counts as
    unchanged, so ratcheting never spares a rule at such a node or above it (v1.36.2 refused a label change of
    an object whose stored `behavior` broke a rule on its `autoscalingPolicy`); behind an atomic list the
    comparison is whole and such a subtree does not matter.

    `openapi_scope` limits OpenAPI validation to one top-level field (`status` for a status-subresource write,
    as the status strategy validates only the status schema); CEL rules run on the whole object regardless.
    """

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rule_errors: list[FieldError] = field(default_factory=list)  # the errors (also in `errors`) of CEL rules
    openapi_scope: str | None = None
    _unchanged: bool = False
    _in_scope: bool = True

    def value(self, value: Any, schema: Obj, path: str, old: Any, has_old: bool) -> None:
        outer = (self._unchanged, self._in_scope)
        if has_old:
            # An unchanged parent means an unchanged (correlated) child; otherwise compare.
            self._unchanged = self._unchanged or cached_deep_equal(value, old, schema)
        # Without a correlated old value the nearest correlatable ancestor decides (kept as is).
        self._in_scope = self.openapi_scope is None or _within(path, self.openapi_scope)
        try:
            self._node(value, schema, path, old, has_old)
        finally:
            self._unchanged, self._in_scope = outer

    def _add(self, err: FieldError, source: str = _OPENAPI) -> None:
        if source == _OPENAPI and not self._in_scope:
            return
        if source != _ALWAYS and self._unchanged:
            if source == _RULE:
                self.warnings.append(str(err))
            return
        self.errors.append(err)
        if source != _OPENAPI:
            self.rule_errors.append(err)

    def _node(self, value: Any, schema: Obj, path: str, old: Any, has_old: bool) -> None:
        if value is None:
            if schema.get("nullable"):
                return
            expected = _schema_type(schema)
            if expected:
                self._type_error(path, value, expected)
            return
        if not self._check_type(value, schema, path):
            return
        self._check_enum(value, schema, path)
        if isinstance(value, str):
            self._check_string(value, schema, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self._check_number(value, schema, path)
        elif isinstance(value, list):
            self._check_array(value, schema, path, old if has_old else None, has_old)
        elif isinstance(value, dict):
            self._check_object(value, schema, path, old if has_old else None, has_old)
        self._check_combinators(value, schema, path)
        self._check_rules(value, schema, path, old, has_old)

    def _type_error(self, path: str, value: Any, expected: str) -> None:
        actual = json_type(value)
        message = f"{path} in body must be of type {expected}: {e.go_quote(actual)}"
        self._add(e.type_invalid(path, actual, message))

    def _check_type(self, value: Any, schema: Obj, path: str) -> bool:
        if schema.get("x-kubernetes-int-or-string"):
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return True
            self._type_error(path, value, "integer,string")
            return False
        expected = _schema_type(schema)
        if not expected:
            return True
        actual = json_type(value)
        if actual == expected or (expected == "number" and actual == "integer"):
            return True
        self._type_error(path, value, expected)
        return False

    def _check_enum(self, value: Any, schema: Obj, path: str) -> None:
        allowed = schema.get("enum")
        if allowed is None or any(json_equal(value, a) for a in allowed):
            return
        shown = [a if isinstance(a, str) else _json_text(a) for a in allowed]
        self._add(e.not_supported(path, value, shown))

    def _check_string(self, value: str, schema: Obj, path: str) -> None:
        max_length = schema.get("maxLength")
        if isinstance(max_length, int) and len(value) > max_length:
            self._add(e.too_long(path, max_length))
        min_length = schema.get("minLength")
        if isinstance(min_length, int) and len(value) < min_length:
            self._add(e.invalid(path, value, f"{path} in body should be at least {min_length} chars long"))
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, value):
            self._add(e.invalid(path, value, f"{path} in body should match '{pattern}'"))

    def _check_number(self, value: float, schema: Obj, path: str) -> None:
        maximum = schema.get("maximum")
        if isinstance(maximum, (int, float)):
            if schema.get("exclusiveMaximum") and value >= maximum:
                self._add(e.invalid(path, value, f"{path} in body should be less than {_number(maximum)}"))
            elif value > maximum:
                self._add(e.invalid(path, value, f"{path} in body should be less than or equal to {_number(maximum)}"))
        minimum = schema.get("minimum")
        if isinstance(minimum, (int, float)):
            if schema.get("exclusiveMinimum") and value <= minimum:
                self._add(e.invalid(path, value, f"{path} in body should be greater than {_number(minimum)}"))
            elif value < minimum:
                self._add(
                    e.invalid(path, value, f"{path} in body should be greater than or equal to {_number(minimum)}")
                )
        multiple = schema.get("multipleOf")
        if isinstance(multiple, (int, float)) and multiple > 0:
            quotient = value / multiple
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                self._add(e.invalid(path, value, f"{path} in body should be a multiple of {_number(multiple)}"))

    def _check_array(self, value: list[Any], schema: Obj, path: str, old: Any, has_old: bool) -> None:
        max_items = schema.get("maxItems")
        if isinstance(max_items, int) and len(value) > max_items:
            self._add(e.too_many(path, len(value), max_items))
        min_items = schema.get("minItems")
        if isinstance(min_items, int) and len(value) < min_items:
            self._add(e.invalid(path, len(value), f"{path} in body should have at least {min_items} items"))
        items = schema.get("items")
        list_type = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or []
        old_by_key: dict[str, Any] = {}
        if list_type == "map" and has_old and isinstance(old, list):
            for old_item in old:
                if isinstance(old_item, dict):
                    old_by_key[_map_key(old_item, keys)] = old_item
        if isinstance(items, dict):
            for index, item in enumerate(value):
                item_old: Any = None
                item_has_old = False
                if list_type == "map" and isinstance(item, dict):
                    key = _map_key(item, keys)
                    if key in old_by_key:
                        item_old, item_has_old = old_by_key[key], True
                self.value(item, items, index_path(path, index), item_old, item_has_old)
        self._check_list_type(value, schema, path)

    def _check_list_type(self, value: list[Any], schema: Obj, path: str) -> None:
        """Uniqueness of sets (whole items) and maps (key fields), reported at each value's second
        appearance only, like apiextensions' validateListSetsAndMaps."""
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            keys: list[Any] = value
        elif list_type == "map":
            fields = schema.get("x-kubernetes-list-map-keys") or []
            for index, item in enumerate(value):
                if item is not None and not isinstance(item, dict):
                    self._add(
                        e.invalid(index_path(path, index), item, "must be an object for an array of list-type map")
                    )
                    return
            keys = [{k: item[k] for k in fields if k in item} if isinstance(item, dict) else {} for item in value]
        else:
            return
        seen: list[tuple[Any, int]] = []
        for index, key in enumerate(keys):
            found = next((i for i, (k, _) in enumerate(seen) if json_equal(k, key)), None)
            if found is None:
                seen.append((key, 1))
                continue
            previous, times = seen[found]
            seen[found] = (previous, times + 1)
            if times == 1:
                self._add(e.duplicate(index_path(path, index), key))

    def _check_object(self, value: Obj, schema: Obj, path: str, old: Any, has_old: bool) -> None:
        max_props = schema.get("maxProperties")
        if isinstance(max_props, int) and len(value) > max_props:
            self._add(e.too_many(path, len(value), max_props))
        min_props = schema.get("minProperties")
        if isinstance(min_props, int) and len(value) < min_props:
            self._add(e.invalid(path, len(value), f"{path} in body should have at least {min_props} properties"))
        for name in schema.get("required") or []:
            if name not in value:
                self._add(e.required(child_path(path, name), ""))
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        # Maps correlate by key whatever their x-kubernetes-map-type (apiextensions' MapIsCorrelatable).
        old_map = old if isinstance(old, dict) else None
        for key in sorted(value):
            if path == "" and key in ("apiVersion", "kind", "metadata"):
                continue
            sub_old = old_map.get(key) if old_map is not None else None
            sub_has_old = old_map is not None and key in old_map
            if key in properties:
                self.value(value[key], properties[key], child_path(path, key), sub_old, sub_has_old)
            elif isinstance(extra, dict):
                self.value(value[key], extra, key_path(path, key) if path else key, sub_old, sub_has_old)

    def _check_combinators(self, value: Any, schema: Obj, path: str) -> None:
        unchanged = self._unchanged
        self._unchanged = False  # errors under allOf are not ratcheted
        try:
            for sub in schema.get("allOf") or []:
                self.value(value, _nested(sub, schema), path, None, False)
        finally:
            self._unchanged = unchanged
        any_of = schema.get("anyOf")
        if any_of and not any(_valid(value, _nested(sub, schema), path) for sub in any_of):
            self._add(e.invalid(path, e.OMIT, f"{path} in body must validate at least one schema (anyOf)"))
        one_of = schema.get("oneOf")
        if one_of and sum(_valid(value, _nested(sub, schema), path) for sub in one_of) != 1:
            self._add(e.invalid(path, e.OMIT, f"{path} in body must validate one and only one schema (oneOf)"))
        not_schema = schema.get("not")
        if isinstance(not_schema, dict) and _valid(value, _nested(not_schema, schema), path):
            self._add(e.invalid(path, e.OMIT, f"{path} in body must not validate the schema (not)"))

    def _check_rules(self, value: Any, schema: Obj, path: str, old: Any, has_old: bool) -> None:
        rules = schema.get("x-kubernetes-validations")
        if not rules:
            return
        for rule in rules:
            self._check_rule(value, schema, rule, path=path, old=old, has_old=has_old)

    def _check_rule(self, value: Any, schema: Obj, rule: Obj, *, path: str, old: Any, has_old: bool) -> None:
        source = str(rule.get("rule", ""))
        try:
            program = cel.compile_rule(source)
        except cel.CelSyntaxError:
            return  # outside the supported subset: ignored (documented in __init__)
        transition = cel.uses_old_self(program)
        optional_old_self = rule.get("optionalOldSelf") is True
        if transition and not has_old and not optional_old_self:
            return  # transition rules run only where an old value correlates, unless optionalOldSelf
        old_self: Any = old
        if optional_old_self:
            old_self = cel.OptionalValue(True, old) if has_old else cel.NONE
        variables = {"self": value, "oldSelf": old_self}
        message = str(rule.get("message", "")).strip()
        shown = message or source.strip()
        node_type = _schema_type(schema) or "object"
        try:
            result = cel.evaluate(program, variables)
        except cel.CelEvalError as err:
            text = str(err)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function or macro "
                    f"signature for rule: {shown}"
                )
            else:
                detail = f"{text} evaluating rule: {shown}"
            self._add(e.invalid(path, node_type, detail), _ALWAYS)
            return
        if result is True:
            return
        field_path = path
        rule_field = rule.get("fieldPath")
        if isinstance(rule_field, str) and rule_field:
            field_path = path + rule_field if rule_field.startswith(".") or not path else f"{path}.{rule_field}"
            field_path = field_path.lstrip(".")
        detail = message or f"failed rule: {source.strip()}"
        shown_value: Any = e.OMIT if node_type in ("object", "array") else value
        reason = rule.get("reason")
        source = _ALWAYS if transition else _RULE
        if reason == "FieldValueForbidden":
            self._add(e.forbidden(field_path, detail), source)
        elif reason == "FieldValueRequired":
            self._add(e.required(field_path, detail), source)
        elif reason == "FieldValueDuplicate":
            self._add(e.duplicate(field_path, shown_value), source)
        else:
            self._add(e.invalid(field_path, shown_value, detail), source)


def _schema_type(schema: Obj) -> str:
    kind = schema.get("type")
    return kind if isinstance(kind, str) else ""


def _nested(sub: Obj, parent: Obj) -> Obj:
    # Value validations inside allOf/anyOf/oneOf/not may omit `type`: they apply to the parent's type.
    if "type" not in sub and "type" in parent:
        return {**sub, "type": parent["type"]}
    return sub


def _valid(value: Any, schema: Obj, path: str) -> bool:
    probe = Validator()
    probe.value(value, schema, path, None, False)
    return not probe.errors


def _number(value: float) -> str:
    return e.go_float(float(value))


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


def _map_key(item: Obj, keys: list[str]) -> str:
    return _json_text({k: item.get(k) for k in keys})


def cached_deep_equal(value: Any, old: Any, schema: Obj | None) -> bool:
    """Whether ratcheting calls a value unchanged: apiextensions' CorrelatedObject.CachedDeepEqual. Maps are equal
    key by key through their schema, and a key the schema does not describe (a map declared
    `x-kubernetes-preserve-unknown-fields`) cannot be correlated, so such a map is never unchanged; list-type
    map items are correlated by key; atomic and set lists are compared whole (reflect.DeepEqual), free-form
    values inside them included (seen on v1.36.2: a rule on a worker of an atomic list was spared while one on
    a node holding a free-form `behavior` was not)."""
    schema = schema or {}
    if isinstance(value, list) and isinstance(old, list):
        if len(value) != len(old):
            return False
        if schema.get("x-kubernetes-list-type") != "map":
            return json_equal(value, old)
        keys = schema.get("x-kubernetes-list-map-keys") or []
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        old_by_key = {_map_key(o, keys): o for o in old if isinstance(o, dict)}
        for item in value:
            match = old_by_key.get(_map_key(item, keys)) if isinstance(item, dict) else None
            if match is None or not cached_deep_equal(item, match, items):
                return False
        return True
    if isinstance(value, dict) and isinstance(old, dict):
        if len(value) != len(old):
            return False
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, old_item in old.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if key not in value or not isinstance(sub, dict) or not cached_deep_equal(value[key], old_item, sub):
                return False
        return True
    if isinstance(value, (dict, list)) or isinstance(old, (dict, list)):
        return False
    return json_equal(value, old)


def _within(path: str, scope: str) -> bool:
    return path == scope or path.startswith((scope + ".", scope + "["))


def free_form_view(value: Any, schema: Obj) -> Any:
    """A copy of a value in which every map declared `x-kubernetes-preserve-unknown-fields` is a `cel.FreeForm`."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        copied = {}
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            copied[key] = free_form_view(item, sub) if isinstance(sub, dict) else item
        return cel.FreeForm(copied) if schema.get("x-kubernetes-preserve-unknown-fields") else copied
    if isinstance(value, list):
        items = schema.get("items")
        return [free_form_view(item, items) if isinstance(items, dict) else item for item in value]
    return value


# OpenAPI errors after which kube-apiserver does not run CEL rules (apiextensions' hasBlockingErr): the rules'
# type assumptions and cost bounds may not hold for such an object.
BLOCKING_ERROR_TYPES: Final = frozenset(
    {"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"}
)
RULES_NOT_CHECKED: Final = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)


def check(obj: Obj, schema: Obj, old: Obj | None, *, openapi_scope: str | None = None) -> Validator:
    """OpenAPI and CEL validation of a whole custom resource (metadata is validated elsewhere), ratcheted
    against `old` on an update; the result holds the errors and the warnings of spared rule failures.

    Like kube-apiserver, CEL rules run only when the OpenAPI errors leave the object safe to evaluate: after a
    blocking error (wrong type, missing required field, enum, too long, too many) the rules' results are dropped
    and one `<nil>: Invalid value: null: some validation rules were not checked ...` error is added instead —
    for schemas that have rules at all."""
    validator = Validator(openapi_scope=openapi_scope)
    old_view = free_form_view(old, schema) if old is not None else None
    validator.value(free_form_view(obj, schema), schema, "", old_view, old is not None)
    if openapi_scope:
        # The status strategy validates `status` on its own: field paths keep the prefix, the "<path> in body"
        # of OpenAPI messages does not (v1.36.2: `status.phase: ...: phase in body must be of type string`).
        validator.errors = [_relative_message(err, openapi_scope) for err in validator.errors]
    from_rules = {id(err) for err in validator.rule_errors}
    openapi_errors = [err for err in validator.errors if id(err) not in from_rules]
    if any(err.type in BLOCKING_ERROR_TYPES for err in openapi_errors) and has_rules(schema):
        validator.errors = openapi_errors
        validator.warnings = []
        validator.errors.append(e.invalid("<nil>", None, RULES_NOT_CHECKED))
    return validator


def _relative_message(err: FieldError, scope: str) -> FieldError:
    prefix = scope + "."
    if err.field.startswith(prefix) and f"{err.field} in body" in err.detail:
        return replace(err, detail=err.detail.replace(f"{err.field} in body", f"{err.field[len(prefix) :]} in body"))
    return err


def has_rules(schema: Any) -> bool:
    """Whether any node of the schema carries `x-kubernetes-validations`."""
    if isinstance(schema, dict):
        return bool(schema.get("x-kubernetes-validations")) or any(has_rules(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_rules(v) for v in schema)
    return False


def validate(obj: Obj, schema: Obj, old: Obj | None) -> list[FieldError]:
    return check(obj, schema, old).errors


# ---- CRD-time checks ----------------------------------------------------------------------------------


@dataclass
class RuleCost:
    path: str
    cost: int
    cardinality: int


def rule_costs(schema: Obj, path: str, cardinality: int = 1) -> list[RuleCost]:
    """Estimated cost of each supported rule in a schema, with how many times it can run per object."""
    found: list[RuleCost] = []
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        try:
            program = cel.compile_rule(str(rule.get("rule", "")))
        except cel.CelSyntaxError:
            continue
        found.append(
            RuleCost(f"{path}.x-kubernetes-validations[{index}].rule", cel.estimate_cost(program, schema), cardinality)
        )
    for name, prop in (schema.get("properties") or {}).items():
        found.extend(rule_costs(prop, f"{path}.properties[{name}]", cardinality))
    items = schema.get("items")
    if isinstance(items, dict):
        found.extend(rule_costs(items, f"{path}.items", cardinality * cel.max_items(schema)))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        found.extend(rule_costs(extra, f"{path}.additionalProperties", cardinality * cel.max_items(schema)))
    return found


def cost_factor(cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        return "more than 100x"
    if factor < 1.5:
        return f"{factor:f}x"
    return f"{factor:.1f}x"


def check_rule_costs(schema: Obj, path: str) -> list[FieldError]:
    """Refuse rules whose estimated cost is over the per-rule or per-CRD budget (approximation)."""
    errs: list[FieldError] = []
    total = 0
    costs = rule_costs(schema, path)
    for item in costs:
        if item.cost > cel.PER_CALL_LIMIT:
            errs.append(
                e.forbidden(
                    item.path,
                    "estimated rule cost exceeds budget by factor of "
                    + cost_factor(item.cost, cel.PER_CALL_LIMIT)
                    + " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, "
                    "maps, and strings are declared)",
                )
            )
        total += item.cost * item.cardinality
    if total > cel.CRD_COST_LIMIT:
        # apiextensions names the (up to four) most expensive rules too.
        for item in sorted(costs, key=lambda c: c.cost * c.cardinality, reverse=True)[:4]:
            errs.append(
                e.forbidden(
                    item.path,
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                )
            )
        errs.append(
            e.forbidden(
                path,
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by "
                "factor of " + cost_factor(total, cel.CRD_COST_LIMIT) + " (try simplifying the rule, or adding "
                "maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            )
        )
    return errs


def check_rule_placement(schema: Obj, path: str, uncorrelatable: str | None = None) -> list[FieldError]:
    """Refuse `oldSelf` where no old value can be correlated (below a list that is not a list-type map), and
    `optionalOldSelf` on a rule that does not use `oldSelf`, with apiextensions' messages."""
    errs: list[FieldError] = []
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        source = str(rule.get("rule", ""))
        try:
            program = cel.compile_rule(source)
        except cel.CelSyntaxError:
            continue
        rule_path = f"{path}.x-kubernetes-validations[{index}]"
        if cel.uses_old_self(program):
            if uncorrelatable is not None:
                errs.append(
                    e.invalid(
                        f"{rule_path}.rule",
                        source,
                        f"oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}",
                    )
                )
        elif "optionalOldSelf" in rule:
            errs.append(
                e.invalid(
                    f"{rule_path}.optionalOldSelf",
                    rule["optionalOldSelf"],
                    "may not be set if oldSelf is not used in rule",
                )
            )
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict):
            errs.extend(check_rule_placement(prop, f"{path}.properties[{name}]", uncorrelatable))
    items = schema.get("items")
    if isinstance(items, dict):
        # Only list-type map items correlate; the first uncorrelatable list is the one named.
        below = uncorrelatable
        if below is None and schema.get("x-kubernetes-list-type") != "map":
            below = path
        errs.extend(check_rule_placement(items, f"{path}.items", below))
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        errs.extend(check_rule_placement(extra, f"{path}.additionalProperties", uncorrelatable))
    return errs
