"""One answer with every error (docs/design/validation.md §10): a field that does not decode no longer hides the
rules' errors about the rest, and no rule speaks about a value the user did not write. With the hint for every
typo of a field name (one edit away from a declared one, or close), unknown or missing.

Expected lines are written by hand from docs/design/validation.md."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import validate as validate_cli
from shared.backend_shape import HALF_RANGE_DETAIL, NEITHER_DETAIL
from shared.defaults import apply_defaults
from shared.errors import MAX_COLLECTED_ERRORS
from shared.partial_decode import MAX_REPAIRED
from shared.validation import validate_modelbooster
from tests.unit.factories import (
    backend,
    modelbooster,
    pd_workers,
    policy,
    range_backend,
    single_modelbooster,
    worker,
)

BEHAVIOR = (
    "spec.autoscalingPolicy.behavior: Forbidden: behavior is not supported; create AutoscalingPolicy + Binding "
    "yourself"
)
RATE_LIMIT = "Forbidden: rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
UNDECLARED = "Forbidden: field not declared in schema"
EIGHT_GB = 'Invalid value: "8GB": did you mean "8G" or "8Gi"? (G is 10^9, Gi is 2^30)'


def lines(obj: dict[str, Any]) -> list[str]:
    """What admission answers for a user's object (defaulted first, as the mutating webhook does)."""
    return [error.render() for error in validate_modelbooster(apply_defaults(obj).obj)]


def model_level(*backends: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return modelbooster(*backends, autoscalingPolicy=policy(), **spec)


def scaled(name: str, **fields: Any) -> dict[str, Any]:
    return backend(name, **{"scalingCost": 1, "maxReplicas": 4, **fields})


def test_a_schema_error_no_longer_hides_the_rules_errors() -> None:
    """The issue's case: `behavior` and `memory: 8GB` in one object, answered in one round."""
    obj = model_level(scaled("a", workers=[worker(resources={"limits": {"memory": "8GB"}})]))
    obj["spec"]["autoscalingPolicy"]["behavior"] = {"scaleUp": {}}
    assert lines(obj) == [f"spec.backends[0].workers[0].resources.limits[memory]: {EIGHT_GB}", BEHAVIOR]


def test_schema_errors_come_first_then_every_rule_on_what_decodes() -> None:
    obj = model_level(scaled("a", minReplicas="one"), scaled("b", workers=[worker(), worker()]))
    obj["spec"]["autoscalingPolicy"]["behavior"] = {"scaleUp": {}}
    assert lines(obj) == [
        'spec.backends[0].minReplicas: Invalid value: "one": must be of type integer',
        "spec.backends[1].workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker",
        BEHAVIOR,
    ]


def test_no_rule_speaks_about_a_value_that_did_not_decode() -> None:
    # minReplicas would differ from maxReplicas, but its value is not known: that rule is not reported.
    assert lines(modelbooster(backend(minReplicas="one", maxReplicas=3))) == [
        'spec.backends[0].minReplicas: Invalid value: "one": must be of type integer'
    ]
    # A stand-in never feeds a sum: 0 + 0 would be "sum of all minReplicas must be >= 1".
    obj = model_level(scaled("a", minReplicas="one"), scaled("b", minReplicas=0))
    assert lines(obj) == ['spec.backends[0].minReplicas: Invalid value: "one": must be of type integer']
    # An unknown backend type: what its workers should be cannot be said.
    assert lines(modelbooster(backend(type="TGI", workers=[worker(), worker()], rateLimit={}))) == [
        'spec.backends[0].type: Unsupported value: "TGI": supported values: "vLLM", "vLLMDisaggregated", "SGLang"',
        f"spec.backends[0].rateLimit: {RATE_LIMIT}",
    ]


def test_a_misspelt_worker_type_is_not_counted_as_a_server() -> None:
    workers = pd_workers()
    workers[0]["type"] = "prefil"
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=workers))) == [
        'spec.backends[0].workers[0].type: Unsupported value: "prefil": supported values: "server", "prefill", '
        '"decode", "controller", "coordinator"; did you mean "prefill"?'
    ]


def test_an_annotation_that_does_not_decode_is_not_read_as_absent() -> None:
    obj = modelbooster(backend(maxReplicas=3))
    obj["metadata"]["annotations"] = {"modelbooster.io/external-replicas": True}  # YAML's true, not "true"
    assert lines(obj) == [
        "metadata.annotations[modelbooster.io/external-replicas]: Invalid value: true: must be of type string"
    ]


def test_a_stand_in_name_is_never_taken_for_a_duplicate() -> None:
    # The first backend's name does not decode; whatever stands in for it, no Duplicate is reported.
    obj = modelbooster(backend("Bad_Name"), backend("stand-in"))
    assert lines(obj) == [
        "spec.backends[0].name: Invalid value: \"Bad_Name\": should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
    ]


def test_the_shape_errors_come_with_the_others() -> None:
    """The issue's typo: `minReplica` for `minReplicas` gets its hint twice, where it is missing and where the
    unknown field is, and the rest of the object is still checked."""
    one = range_backend(maxReplicas=2, rateLimit={})
    one["minReplica"] = one.pop("minReplicas")
    assert lines(single_modelbooster(one)) == [
        "spec.backend.minReplicas: Required value: "
        + HALF_RANGE_DETAIL.format(given="maxReplicas", missing="minReplicas")
        + '; found "minReplica": did you mean "minReplicas"?',
        f'spec.backend.minReplica: {UNDECLARED}; did you mean "minReplicas"?',
        f"spec.backend.rateLimit: {RATE_LIMIT}",
    ]
    obj = modelbooster(rateLimit={})
    obj["spec"]["bakends"] = obj["spec"].pop("backends")
    assert lines(obj) == [
        f'spec: Required value: {NEITHER_DETAIL}; found "bakends": did you mean "backends"?',
        f'spec.bakends: {UNDECLARED}; did you mean "backends"?',
        f"spec.rateLimit: {RATE_LIMIT}",
    ]


@pytest.mark.parametrize(
    ("typed", "declared", "where"),
    [
        ("modelUri", "modelURI", "spec.backends[0]"),  # letter case
        ("minReplica", "minReplicas", "spec.backends[0]"),  # one dropped
        ("worker", "workers", "spec.backends[0]"),
        ("nme", "name", "spec.backends[0]"),  # short: one edit, though not close by ratio
    ],
)
def test_a_missing_field_names_its_likely_typo(typed: str, declared: str, where: str) -> None:
    one = backend()
    one[typed] = one.pop(declared)
    found = lines(modelbooster(one))
    assert f'{where}.{declared}: Required value: found "{typed}": did you mean "{declared}"?' in found
    assert f'{where}.{typed}: {UNDECLARED}; did you mean "{declared}"?' in found


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("tpye", "type"), ("replica", "replicas"), ("Image", "image"), ("resource", "resources"), ("pod", "pods")],
)
def test_an_unknown_field_one_edit_from_a_declared_one_is_named(typed: str, meant: str) -> None:
    assert lines(modelbooster(backend(workers=[worker(**{typed: 1})]))) == [
        f'spec.backends[0].workers[0].{typed}: {UNDECLARED}; did you mean "{meant}"?'
    ]


def test_a_hostile_object_is_answered_with_its_schema_errors_alone() -> None:
    """Past MAX_REPAIRED failures nothing is repaired: the answer costs what it cost before."""
    env = [{"value": "x"} for _ in range(MAX_REPAIRED + 1)]
    found = lines(modelbooster(backend(env=env), rateLimit={}))
    assert len(found) == min(MAX_REPAIRED + 1, MAX_COLLECTED_ERRORS)
    assert all(line.endswith(".name: Required value") for line in found)


def test_the_cli_and_its_status_report_list_them_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    obj = model_level(scaled("a", workers=[worker(resources={"limits": {"memory": "8GB"}})]), name="m")
    obj["spec"]["autoscalingPolicy"]["behavior"] = {"scaleUp": {}}
    source = tmp_path / "m.yaml"
    source.write_text(yaml.safe_dump(obj), encoding="utf-8")
    parser = argparse.ArgumentParser()
    validate_cli.add_arguments(parser)
    assert validate_cli.run(parser.parse_args(["-f", str(source)])) == 1
    assert capsys.readouterr().err == (
        'ModelBooster "m":\n'
        f"validation failed:\n  - spec.backends[0].workers[0].resources.limits[memory]: {EIGHT_GB}\n  - {BEHAVIOR}\n"
    )
    assert validate_cli.run(parser.parse_args(["-f", str(source), "-o", "json"])) == 1
    status = json.loads(capsys.readouterr().out)
    assert [cause["field"] for cause in status["details"]["causes"]] == [
        "spec.backends[0].workers[0].resources.limits[memory]",
        "spec.autoscalingPolicy.behavior",
    ]


def test_a_short_name_one_edit_off_is_named_though_not_close_by_ratio() -> None:
    # `enw` shares two letters of three with `env`: below difflib's ratio, one edit away.
    assert lines(modelbooster(backend(enw=[]))) == [f'spec.backends[0].enw: {UNDECLARED}; did you mean "env"?']


def test_an_object_name_kube_apiserver_refuses_is_refused_once() -> None:
    """kube-apiserver refuses it before any webhook; offline, the CLI says it (and not again through every name
    made of it)."""
    assert lines(modelbooster(name="Qwen_Small")) == [
        'metadata.name: Invalid value: "Qwen_Small": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]


def test_a_field_a_rule_requires_names_its_likely_typo_too() -> None:
    misspelt = scaled("a", scaleToZeroGracePeriod="30s")
    misspelt["scalingcost"] = misspelt.pop("scalingCost")
    assert lines(model_level(misspelt)) == [
        f'spec.backends[0].scalingcost: {UNDECLARED}; did you mean "scalingCost"?',
        "spec.backends[0].scalingCost: Required value: cost must be provided when model-level autoscaling is set; "
        'found "scalingcost": did you mean "scalingCost"?',
    ]
