"""The CEL subset used for x-kubernetes-validations: parsing, evaluation, errors and cost estimates."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakeapi import cel, schema


def run(rule: str, value: Any, old: Any = None) -> Any:
    return cel.evaluate(cel.compile_rule(rule), {"self": value, "oldSelf": old})


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        ("!has(self.x)", {"y": 1}, True),
        ("!has(self.x)", {"x": None}, False),
        ("has(self.a) != has(self.b)", {"a": 1}, True),
        ("has(self.a) != has(self.b)", {"a": 1, "b": 2}, False),
        ("has(self.a.b)", {"a": {"b": 1}}, True),
        ("size(self.l) <= 2", {"l": [1, 2]}, True),
        ("self.l.size() > 2", {"l": [1, 2]}, False),
        ("self.n >= 3 && self.n < 5", {"n": 4}, True),
        ("self.s == 'a' || self.s == \"b\"", {"s": "b"}, True),
        ("'x' in self.l", {"l": ["x"]}, True),
        ("'k' in self.m", {"m": {"k": 1}}, True),
        ("self['dash-key'] == 1", {"dash-key": 1}, True),
        ("self.l[1] == 'b'", {"l": ["a", "b"]}, True),
        ("self.n + 1 == 3", {"n": 2}, True),
        ("-self.n == -2", {"n": 2}, True),
        ("self.f > 1.5", {"f": 2}, True),
        ("self.x == null", {"x": None}, True),
        ("self.b ? self.n == 1 : self.n == 2", {"b": False, "n": 2}, True),
        ("self.all(x, x > 0)", [1, 2], True),
        ("self.exists(x, x == 2)", [1, 2], True),
        ("self.exists_one(x, x > 0)", [1, 2], False),
        ("self.map(x, x * 2) == [2, 4]", [1, 2], "syntax"),
        ("self.filter(x, x > 1) == [2]", [1, 2], True),
        ("self.all(x, self.exists_one(y, y.name == x.name))", [{"name": "a"}, {"name": "b"}], True),
        ("self.all(x, self.exists_one(y, y.name == x.name))", [{"name": "a"}, {"name": "a"}], False),
    ],
)
def test_rules(rule: str, value: Any, expected: Any) -> None:
    if expected == "syntax":
        with pytest.raises(cel.CelSyntaxError):
            cel.compile_rule(rule)
        return
    assert run(rule, value) is expected


def test_transition_rules_see_old_self() -> None:
    assert run("self == oldSelf", {"a": 1}, {"a": 1}) is True
    assert run("self == oldSelf", {"a": 1}, {"a": 2}) is False
    assert run("!has(oldSelf.g) || has(self.g)", {}, {"g": 1}) is False
    assert cel.uses_old_self(cel.compile_rule("self == oldSelf"))
    assert not cel.uses_old_self(cel.compile_rule("self.a == 1"))


def test_missing_field_is_a_runtime_error_unless_logic_decides() -> None:
    with pytest.raises(cel.CelEvalError, match="no such key: x"):
        run("self.x == 1", {})
    assert run("has(self.x) && self.x == 1", {}) is False
    assert run("self.x == 1 || true", {}) is True


def test_mismatched_types_are_no_such_overload() -> None:
    with pytest.raises(cel.CelEvalError, match="no such overload"):
        run("self.a == 'x'", {"a": 1})


@pytest.mark.parametrize("rule", ["self.matches('^a$')", "self.startsWith('a')", "timestamp(self) > now", "self.?x"])
def test_functions_outside_the_subset_do_not_parse(rule: str) -> None:
    with pytest.raises(cel.CelSyntaxError):
        cel.compile_rule(rule)


def test_unsupported_rules_are_ignored_by_validation() -> None:
    node = {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')", "message": "no"}]}
    assert schema.validate({"spec": "zzz"}, {"type": "object", "properties": {"spec": node}}, None) == []


def test_runtime_errors_are_reported_with_the_rule() -> None:
    node = {"type": "object", "x-kubernetes-validations": [{"rule": "self.x == 1"}]}
    errs = schema.validate({"spec": {}}, {"type": "object", "properties": {"spec": node}}, None)
    assert [str(e) for e in errs] == ['spec: Invalid value: "object": no such key: x evaluating rule: self.x == 1']


def test_default_message_names_the_rule() -> None:
    node = {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1"}]}
    errs = schema.validate({"n": 0}, {"type": "object", "properties": {"n": node}}, None)
    assert [str(e) for e in errs] == ["n: Invalid value: 0: failed rule: self > 1"]


def test_transition_rules_in_map_lists_compare_items_by_key() -> None:
    items = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "v": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "v is immutable"}],
            },
        },
    }
    lst = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": items}
    root = {"type": "object", "properties": {"l": lst}}
    old = {"l": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}
    reordered = {"l": [{"name": "b", "v": 2}, {"name": "a", "v": 1}, {"name": "c", "v": 9}]}
    assert schema.validate(reordered, root, old) == []
    changed = {"l": [{"name": "a", "v": 5}]}
    assert [str(e) for e in schema.validate(changed, root, old)] == ["l[0].v: Invalid value: 5: v is immutable"]


def test_cost_of_equality_depends_on_declared_bounds() -> None:
    bounded = {"type": "string", "maxLength": 100}
    unbounded_list = {"type": "array", "items": {"type": "string"}}
    small = cel.estimate_cost(cel.compile_rule("self == oldSelf"), bounded)
    huge = cel.estimate_cost(cel.compile_rule("self == oldSelf"), unbounded_list)
    assert small < 100
    assert huge > cel.PER_CALL_LIMIT


def test_crd_rules_over_budget_are_refused() -> None:
    root: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                "x-kubernetes-validations": [{"rule": "self.names.all(x, self.names.exists_one(y, y == x))"}],
            }
        },
    }
    errs = schema.check_rule_costs(root, "spec.versions[0].schema.openAPIV3Schema")
    assert errs
    assert str(errs[0]).startswith(
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: "
        "estimated rule cost exceeds budget by factor of more than 100x"
    )
    # Over the total too: the rule is also named as having contributed to it (as kube-apiserver v1.36.2 does).
    assert [str(err).split(": ", 1)[1] for err in errs[1:]] == [
        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
        "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget "
        "by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength "
        "where arrays, maps, and strings are declared)",
    ]
    root["properties"]["spec"]["properties"]["names"].update({"maxItems": 10})
    root["properties"]["spec"]["properties"]["names"]["items"]["maxLength"] = 64
    assert schema.check_rule_costs(root, "x") == []


def test_optional_old_self() -> None:
    rule = "!has(self.x) || (oldSelf.hasValue() && has(oldSelf.value().x))"
    assert run(rule, {"x": 1}, cel.NONE) is False
    assert run(rule, {"x": 1}, cel.OptionalValue(True, {"x": 2})) is True
    assert run(rule, {"x": 1}, cel.OptionalValue(True, {})) is False
    assert run(rule, {}, cel.NONE) is True
    assert run("oldSelf.orValue(3) == 3", {}, cel.NONE) is True
    assert run("oldSelf.orValue(3) == 4", {}, cel.OptionalValue(True, 4)) is True
    with pytest.raises(cel.CelEvalError, match=r"optional.none\(\) dereference"):
        run("oldSelf.value() == 1", 1, cel.NONE)
    with pytest.raises(cel.CelEvalError, match="no such overload"):
        run("oldSelf.hasValue()", 1, 1)  # not an optional: the rule lacks optionalOldSelf
    with pytest.raises(cel.CelSyntaxError):
        cel.compile_rule("oldSelf.value(1)")


def test_equality_never_holds_over_free_form_values() -> None:
    """kube-apiserver v1.36.2 evaluated `oldSelf == self` false for an unchanged value holding a subtree
    declared x-kubernetes-preserve-unknown-fields; plain values compare as usual."""
    free = cel.FreeForm({"a": 1})
    assert run("self == oldSelf", {"b": free}, {"b": cel.FreeForm({"a": 1})}) is False
    assert run("self != oldSelf", {"b": free}, {"b": cel.FreeForm({"a": 1})}) is True
    assert run("self.c == oldSelf.c", {"b": free, "c": [1]}, {"b": free, "c": [1]}) is True


FREE_FORM = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_free_form_view_marks_preserved_maps_at_any_depth() -> None:
    root = {
        "type": "object",
        "properties": {
            "plain": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"cfg": FREE_FORM}},
            },
        },
    }
    view = schema.free_form_view({"plain": {"n": 1}, "items": [{"cfg": {"k": {"deep": 1}}}]}, root)
    assert not cel.contains_free_form(view["plain"])
    assert isinstance(view["items"][0]["cfg"], cel.FreeForm)
    assert cel.contains_free_form(view["items"])


def _rule_schema(rule: dict[str, Any]) -> dict[str, Any]:
    spec = {"type": "object", "properties": {"x": {"type": "integer"}}, "x-kubernetes-validations": [rule]}
    return {"type": "object", "properties": {"spec": spec}}


def test_optional_old_self_rules_run_on_create_and_plain_transition_rules_do_not() -> None:
    plain = _rule_schema({"rule": "!has(self.x) || has(oldSelf.x)", "message": "no new x"})
    optional = _rule_schema(
        {
            "rule": "!has(self.x) || (oldSelf.hasValue() && has(oldSelf.value().x))",
            "message": "no new x",
            "optionalOldSelf": True,
        }
    )
    refused = ["spec: Invalid value: no new x"]
    assert schema.validate({"spec": {"x": 1}}, plain, None) == []
    assert [str(e) for e in schema.validate({"spec": {"x": 1}}, optional, None)] == refused
    assert schema.validate({"spec": {"x": 1}}, optional, {"spec": {"x": 2}}) == []
    assert [str(e) for e in schema.validate({"spec": {"x": 1}}, optional, {"spec": {}})] == refused
