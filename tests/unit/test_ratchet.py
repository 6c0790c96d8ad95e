"""Update ratcheting: which errors an UPDATE is refused for, and which are carried over from the stored object."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.defaults import apply_defaults
from shared.errors import FieldError, ValidationFailed, forbidden, invalid
from shared.fieldpath import BadFieldPath, json_pointer, parse
from shared.ratchet import MAX_FIELD_WARNINGS, MAX_WARNING_CHARS, carried_warnings, ratchet, same_json
from shared.validation import parse_modelbooster, validate_modelbooster, validate_update
from tests.unit.factories import backend, modelbooster, policy, worker

# A schema with the three kinds of node the correlation knows: a list-map, an atomic list, a free-form map.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "size": {"type": "integer"},
                            "parts": {"type": "array", "items": {"type": "object"}},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        },
                    },
                },
            },
        }
    },
}


def doc(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"items": list(items)}}


def split(errors: list[FieldError], new: dict[str, Any], old: dict[str, Any]) -> tuple[list[str], list[str]]:
    result = ratchet(errors, new=new, old=old, schema=SCHEMA)
    return [e.path for e in result.errors], [e.path for e in result.carried]


# --- field paths ----------------------------------------------------------------------------------------------


def test_field_paths_parse_into_names_indices_and_keys() -> None:
    assert parse("spec.backends[0].resources.limits[nvidia.com/gpu]") == (
        "spec", "backends", 0, "resources", "limits", "nvidia.com/gpu",
    )  # fmt: skip
    assert json_pointer("spec.backends[2].x[a/b~c]") == "/spec/backends/2/x/a~1b~0c"


@pytest.mark.parametrize("path", ["a..b", "a[0", "a]", "."])
def test_a_malformed_field_path_is_refused_by_name(path: str) -> None:
    with pytest.raises(BadFieldPath, match="cannot parse field path"):
        parse(path)


def test_json_equality_keeps_booleans_apart_from_numbers() -> None:
    assert same_json({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not same_json(True, 1)
    assert not same_json({"a": 1}, {"a": True})
    assert not same_json([1], [1, 2])
    assert not same_json({"a": 1}, {"b": 1})
    assert not same_json("1", 1)


# --- correlation ------------------------------------------------------------------------------------------------


def test_list_map_items_are_correlated_by_key_not_position() -> None:
    error = invalid("spec.items[1].size", 5, "too big")
    old = doc({"name": "b", "size": 5}, {"name": "a", "size": 1})
    assert split([error], doc({"name": "a", "size": 1}, {"name": "b", "size": 5}), old) == ([], ["spec.items[1].size"])
    assert split([error], doc({"name": "a", "size": 1}, {"name": "b", "size": 6}), old) == (["spec.items[1].size"], [])
    # A new key is a new item, whatever sat at its position before.
    assert split([error], doc({"name": "a", "size": 1}, {"name": "c", "size": 5}), old) == (["spec.items[1].size"], [])


def test_a_list_map_compared_whole_ignores_order_but_not_content() -> None:
    error = invalid("spec.items", 8, "the sizes add up to too much")
    old = doc({"name": "a", "size": 5}, {"name": "b", "size": 3})
    assert split([error], doc({"name": "b", "size": 3}, {"name": "a", "size": 5}), old) == ([], ["spec.items"])
    assert split([error], doc({"name": "b", "size": 4}, {"name": "a", "size": 5}), old) == (["spec.items"], [])
    assert split([error], doc({"name": "a", "size": 5}), old) == (["spec.items"], [])
    # Duplicate keys (which the API server refuses) leave only the order to go by.
    twice = doc({"name": "a", "size": 5}, {"name": "a", "size": 3})
    assert split([error], copy.deepcopy(twice), twice) == ([], ["spec.items"])
    assert split([error], doc({"name": "a", "size": 3}, {"name": "a", "size": 5}), twice) == (["spec.items"], [])


def test_an_atomic_list_is_compared_whole() -> None:
    error = forbidden("spec.items[0].parts[1].bad", "no")
    old = doc({"name": "a", "parts": [{"ok": 1}, {"bad": 1}]})
    unchanged = doc({"name": "a", "size": 9, "parts": [{"ok": 1}, {"bad": 1}]})
    sibling_changed = doc({"name": "a", "parts": [{"ok": 2}, {"bad": 1}]})
    assert split([error], unchanged, old) == ([], [error.path])
    assert split([error], sibling_changed, old) == ([error.path], [])


def test_a_free_form_map_is_followed_by_key() -> None:
    error = invalid("spec.items[0].labels[team]", "x y", "no spaces")
    old = doc({"name": "a", "labels": {"team": "x y", "tier": "1"}})
    assert split([error], doc({"name": "a", "labels": {"team": "x y", "tier": "2"}}), old) == ([], [error.path])


def test_absent_and_null_are_the_same_and_a_new_value_is_a_change() -> None:
    required = FieldError(path="spec.items[0].size", type="Required", detail="")
    assert split([required], doc({"name": "a", "size": None}), doc({"name": "a"})) == ([], [required.path])
    assert split([required], doc({"name": "a"}), doc({"name": "a", "size": 1})) == ([required.path], [])


def test_an_error_with_reads_is_carried_only_when_all_of_them_are_unchanged() -> None:
    error = invalid("spec.items[0].size", 5, "size cannot exceed the other's")
    error = FieldError(path=error.path, type=error.type, detail=error.detail, value=error.value,
                       reads=("spec.items[0].size", "spec.items[1].size"))  # fmt: skip
    old = doc({"name": "a", "size": 5}, {"name": "b", "size": 3})
    assert split([error], copy.deepcopy(old), old) == ([], [error.path])
    assert split([error], doc({"name": "a", "size": 5}, {"name": "b", "size": 2}), old) == ([error.path], [])


@pytest.mark.parametrize("path", ["<root>", "spec..items"])
def test_the_root_and_an_unreadable_path_are_never_carried(path: str) -> None:
    error = invalid(path, None, "bad")
    assert split([error], doc(), doc()) == ([path], [])


# --- validate_update ----------------------------------------------------------------------------------------------


def carried_over(*backends: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """As stored under Kthena v0.1.0: never defaulted by our mutating webhook."""
    return modelbooster(*backends, **spec)


def edited(old: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The update as the validating webhook receives it: edited, then defaulted by the mutating webhook."""
    new = copy.deepcopy(old)
    edit(new["spec"])
    return apply_defaults(new).obj


def renders(errors: list[FieldError]) -> list[str]:
    return [error.render() for error in errors]


def test_an_unchanged_unsupported_field_is_carried_while_the_rest_changes() -> None:
    old = carried_over(backend(workers=[worker(networkTopology={"mode": "hard"})]))
    new = edited(old, lambda spec: spec.update(modelMatch={"headers": {"x": {"exact": "y"}}}))
    verdict = validate_update(new, old=old)
    assert verdict.errors == []
    assert [e.path for e in verdict.carried] == ["spec.backends[0].workers[0].networkTopology"]
    # Without the old object (a CREATE) it is refused as ever.
    assert [e.path for e in validate_modelbooster(new)] == ["spec.backends[0].workers[0].networkTopology"]


def test_removing_a_backends_autoscaling_re_checks_the_others() -> None:
    # With backend-level autoscaling somewhere, minReplicas != maxReplicas is fine on every backend.
    old = apply_defaults(carried_over(backend("a", autoscalingPolicy=policy(), maxReplicas=3),
                                      backend("b", maxReplicas=2))).obj  # fmt: skip
    assert validate_modelbooster(old) == []
    new = edited(old, lambda spec: spec["backends"][0].pop("autoscalingPolicy"))
    verdict = validate_update(new, old=old)
    # Backend b did not change, but the rule reads where autoscaling is set, which did.
    assert [e.path for e in verdict.errors] == ["spec.backends[0]", "spec.backends[1]"]
    assert verdict.carried == []


def test_the_update_rules_are_never_carried() -> None:
    old = carried_over(backend(workers=[worker(replicas=1)], rateLimit={"tokensPerUnit": 1}))
    new = edited(old, lambda spec: spec["backends"][0]["workers"][0].update(replicas=2))
    verdict = validate_update(new, old=old)
    assert [e.path for e in verdict.errors] == ["spec.backends[0].workers[0].replicas"]
    assert [e.path for e in verdict.carried] == ["spec.backends[0].rateLimit"]


def test_an_object_that_does_not_decode_is_not_ratcheted() -> None:
    old = carried_over(backend(maxReplicas="many", rateLimit={"tokensPerUnit": 1}))
    new = edited(old, lambda spec: spec.update(modelMatch={"headers": {"x": {"exact": "y"}}}))
    verdict = validate_update(new, old=old)
    # Every error at once, the rules' on what decodes too; none carried over (which rules the update breaks
    # cannot be told while the object does not decode).
    assert [e.path for e in verdict.errors] == ["spec.backends[0].maxReplicas", "spec.backends[0].rateLimit"]
    assert verdict.carried == []


def test_synthesis_carries_nothing_over() -> None:
    old = carried_over(backend(rateLimit={"tokensPerUnit": 1}))
    with pytest.raises(ValidationFailed) as raised:
        parse_modelbooster(copy.deepcopy(old), old=old)
    assert [e.path for e in raised.value.errors] == ["spec.backends[0].rateLimit"]


# --- every carried-over error was already there ----------------------------------------------------------------

POLICY = policy()
_EDITS: list[tuple[str, Callable[[dict[str, Any], Any], None], st.SearchStrategy[Any]]] = [
    ("minReplicas", lambda b, v: b.update(minReplicas=v), st.integers(0, 3)),
    ("maxReplicas", lambda b, v: b.update(maxReplicas=v), st.integers(1, 3)),
    ("backend policy", lambda b, v: b.update(autoscalingPolicy=POLICY) if v else b.pop("autoscalingPolicy", None),
     st.booleans()),
    ("scalingCost", lambda b, v: b.update(scalingCost=v), st.sampled_from([None, 10])),
    ("grace", lambda b, v: b.update(scaleToZeroGracePeriod=v), st.sampled_from([None, "30s", "40m"])),
    ("type", lambda b, v: b.update(type=v), st.sampled_from(["vLLM", "SGLang", "vLLMDisaggregated"])),
    ("workers", lambda b, v: b.update(workers=[worker(type=t) for t in v]),
     st.sampled_from([("server",), ("server", "server"), ("prefill", "decode"), ("decode",)])),
    ("uris", lambda b, v: b.update(modelURI=v[0], cacheURI=v[1]),
     st.sampled_from([("hf://q/m", None), ("pvc:///c/m", "pvc://c"), ("pvc:///c/m", "pvc://d"), ("pvc:///c/m", None)])),
    ("lora", lambda b, v: b.update(loraAdapters=[{"name": n, "artifactURL": "hf://a/b"} for n in v]),
     st.sampled_from([(), ("x",), ("m",), ("x", "x")])),
    ("unsupported", lambda b, v: b.update(rateLimit={"tokensPerUnit": 1}) if v else b.pop("rateLimit", None),
     st.booleans()),
]  # fmt: skip
_SPEC_EDITS: list[tuple[str, Callable[[dict[str, Any], Any], None], st.SearchStrategy[Any]]] = [
    ("model policy", lambda s, v: s.update(autoscalingPolicy=POLICY) if v else s.pop("autoscalingPolicy", None),
     st.booleans()),
    ("costExpansionRatePercent", lambda s, v: s.update(costExpansionRatePercent=v), st.sampled_from([None, 200])),
    ("behavior", lambda s, v: s.update(autoscalingPolicy={**POLICY, "behavior": {"scaleDown": {}}}) if v else None,
     st.booleans()),
]  # fmt: skip


Edit = Callable[[dict[str, Any]], None]


def _on_spec(apply: Callable[[dict[str, Any], Any], None], value: Any) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        apply(spec, value)

    return edit


def _on_backend(apply: Callable[[dict[str, Any], Any], None], value: Any, index: int) -> Edit:
    def edit(spec: dict[str, Any]) -> None:
        apply(spec["backends"][index], value)

    return edit


@st.composite
def edit_lists(draw: st.DrawFn) -> list[Edit]:
    edits: list[Edit] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()):
            _, apply, values = draw(st.sampled_from(_SPEC_EDITS))
            edits.append(_on_spec(apply, draw(values)))
        else:
            _, apply, values = draw(st.sampled_from(_EDITS))
            edits.append(_on_backend(apply, draw(values), draw(st.integers(0, 1))))
    return edits


@settings(max_examples=300, deadline=None)
@given(before=edit_lists(), change=edit_lists())
def test_a_carried_over_error_was_already_an_error_of_the_stored_object(
    before: list[Edit], change: list[Edit]
) -> None:
    stored = modelbooster(backend("a"), backend("b"), name="m")
    for edit in before:
        edit(stored["spec"])
    new = copy.deepcopy(stored)
    for edit in change:
        edit(new["spec"])
    new = apply_defaults(new).obj
    verdict = validate_update(new, old=stored)
    # Rules that read fields beyond their path must say so, or a new problem would pass as an old one.
    assert set(renders(verdict.carried)) <= set(renders(validate_modelbooster(apply_defaults(stored).obj)))
    # Nothing is lost: what is neither refused nor carried is not an error.
    assert sorted(renders(verdict.errors + verdict.carried)) == sorted(
        renders(validate_modelbooster(new)) + [e.render() for e in verdict.errors if "cannot change from" in e.detail]
    )


# --- warnings ---------------------------------------------------------------------------------------------------


def test_warnings_name_the_field_and_are_one_bounded_printable_line() -> None:
    long_value = invalid("spec.backends[0].workers[0].config", "x\n" * 400, "must be a JSON object")
    unsupported = forbidden("spec.rateLimit", "rate limiting of the generated ModelRoute is not supported; "
                                              "manage a ModelRoute yourself")  # fmt: skip
    first, second, summary = carried_warnings([unsupported, long_value])
    # Not "ignored": the field stays, and the reconciler does not act on the object while it does.
    assert first == (
        "unchanged, so admitted: spec.rateLimit: Forbidden: rate limiting of the generated ModelRoute is not "
        "supported; manage a ModelRoute yourself"
    )
    assert second.startswith('unchanged, so admitted: spec.backends[0].workers[0].config: Invalid value: "x\\nx')
    assert len(second) == MAX_WARNING_CHARS
    assert second.endswith("…")
    assert "Failed" in summary
    weird = forbidden("spec.backends[0].x\x07\ny", "bad")
    assert carried_warnings([weird])[0] == "unchanged, so admitted: spec.backends[0].x  y: Forbidden: bad"


def test_many_carried_errors_are_summarised_after_the_first_few() -> None:
    errors = [forbidden(f"spec.backends[{i}].topology", "no") for i in range(MAX_FIELD_WARNINGS + 5)]
    warnings = carried_warnings(errors)
    assert len(warnings) == MAX_FIELD_WARNINGS + 2
    assert warnings[-2] == "and 5 more fields carried over unchanged"
    assert carried_warnings([]) == []
