"""Cross-object validation of one namespace's Inferno objects (shared/inferno_validation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.api import inferno as api
from shared.inferno_validation import validate_inferno_objects


def acc(meta: str, name: str, acc_type: str | None = None) -> api.Accelerator:
    return api.Accelerator.model_validate(
        {"metadata": {"name": meta}, "spec": {"name": name, "type": acc_type or name, "cost": 10}}
    )


def model(meta: str, name: str, *accs: str) -> api.Model:
    data = [{"acc": a, "accCount": 1, "alpha": 10, "beta": 0.1, "maxBatchSize": 8, "atTokens": 512} for a in accs]
    return api.Model.model_validate({"metadata": {"name": meta}, "spec": {"name": name, "data": data}})


def klass(meta: str, name: str, *models: str) -> api.ServiceClass:
    data = [{"model": m, "slo-itl": 50} for m in models]
    return api.ServiceClass.model_validate({"metadata": {"name": meta}, "spec": {"name": name, "data": data}})


def server(meta: str, name: str, *, cls: str = "Premium", mdl: str = "granite", current: str = "") -> api.Server:
    spec: dict[str, Any] = {"name": name, "class": cls, "model": mdl}
    spec["currentAlloc"] = {"accelerator": current, "numReplicas": 1, "load": {"arrivalRate": 1, "avgLength": 10}}
    return api.Server.model_validate({"metadata": {"name": meta}, "spec": spec})


def capacity(meta: str, **counts: int) -> api.Capacity:
    entries = [{"type": t, "count": c} for t, c in counts.items()]
    return api.Capacity.model_validate({"metadata": {"name": meta}, "spec": {"count": entries}})


@pytest.fixture
def good() -> dict[str, Any]:
    return {
        "accelerators": [acc("a100", "A100"), acc("g2", "G2")],
        "models": [model("granite", "granite", "A100", "G2")],
        "service_classes": [klass("premium", "Premium", "granite")],
        "servers": [server("premium-granite", "Premium-granite", current="A100")],
        "capacities": [capacity("cluster", A100=4, G2=8)],
    }


def test_a_consistent_namespace_has_no_issues(good: dict[str, Any]) -> None:
    report = validate_inferno_objects(**good)
    assert report.ok
    assert report.errors == ()
    assert report.warnings == ()


def test_servers_with_unknown_references_are_errors_naming_object_and_field(good: dict[str, Any]) -> None:
    good["servers"] = [
        server("s1", "S1", cls="Gold"),
        server("s2", "S2", mdl="llama"),
        server("s3", "S3", current="H100"),
    ]
    report = validate_inferno_objects(**good)
    assert [str(issue) for issue in report.errors] == [
        "Server s1: spec.class: unknown service class 'Gold' (known: Premium)",
        "Server s2: spec.model: unknown model 'llama' (known: granite)",
        "Server s3: spec.currentAlloc.accelerator: unknown accelerator 'H100' (known: A100, G2)",
    ]
    assert not report.ok
    assert report.summary().startswith("Server s1: spec.class: unknown service class 'Gold'")


def test_a_class_without_a_target_for_the_servers_model_is_an_error(good: dict[str, Any]) -> None:
    good["models"].append(model("llama", "llama", "A100"))
    good["servers"] = [server("s", "S", mdl="llama")]
    report = validate_inferno_objects(**good)
    assert [str(issue) for issue in report.errors] == [
        "Server s: spec.model: service class 'Premium' has no SLO target for model 'llama'"
    ]


def test_duplicate_names_are_errors_on_the_later_object(good: dict[str, Any]) -> None:
    good["accelerators"].append(acc("a100-copy", "A100"))
    good["servers"].append(server("again", "Premium-granite"))
    report = validate_inferno_objects(**good)
    assert [str(issue) for issue in report.errors] == [
        "Accelerator a100-copy: spec.name: duplicate accelerator name 'A100' (also used by Accelerator a100)",
        "Server again: spec.name: duplicate server name 'Premium-granite' (also used by Server premium-granite)",
    ]


def test_harmless_inconsistencies_are_warnings(good: dict[str, Any]) -> None:
    good["models"] = [model("granite", "granite", "A100", "H100")]
    good["service_classes"] = [klass("premium", "Premium", "granite", "llama")]
    good["capacities"] = [capacity("one", A100=4), capacity("two", A100=2, TPU=8)]
    report = validate_inferno_objects(**good)
    assert report.ok
    assert [str(issue) for issue in report.warnings] == [
        "Model granite: spec.data[1].acc: unknown accelerator 'H100'; this entry is ignored (known: A100, G2)",
        "ServiceClass premium: spec.data[1].model: unknown model 'llama'; this target is unused (known: granite)",
        "Capacity two: spec.count[0].type: type 'A100' is also counted by Capacity one; this later entry wins",
        "Capacity two: spec.count[1].type: no accelerator has type 'TPU'",
    ]


def test_a_model_nothing_can_host_is_a_warning(good: dict[str, Any]) -> None:
    good["models"] = [model("granite", "granite", "H100")]
    report = validate_inferno_objects(**good)
    assert "Server premium-granite: spec.model: model 'granite' has no performance data for any known " in str(
        report.warnings[-1]
    )


def test_a_stale_desired_accelerator_is_only_a_warning(good: dict[str, Any]) -> None:
    stale = server("s", "Premium-granite")
    stale.spec.desired_alloc = api.AllocationData(accelerator="H100", num_replicas=1)
    good["servers"] = [stale]
    report = validate_inferno_objects(**good)
    assert report.ok
    assert [str(issue) for issue in report.warnings] == [
        "Server s: spec.desiredAlloc.accelerator: unknown accelerator 'H100' (known: A100, G2)"
    ]


def test_nothing_defined_says_so() -> None:
    report = validate_inferno_objects(
        accelerators=[], models=[], service_classes=[], servers=[server("s", "S")], capacities=[]
    )
    assert [str(issue) for issue in report.errors] == [
        "Server s: spec.class: unknown service class 'Premium' (none defined)",
        "Server s: spec.model: unknown model 'granite' (none defined)",
    ]


def test_an_unknown_or_missing_field_names_its_likely_typo() -> None:
    from shared.inferno_validation import InfernoObjectError, parse_inferno_object

    obj = {"apiVersion": f"{api.GROUP}/{api.VERSION}", "kind": "Accelerator", "metadata": {"name": "a"},
           "spec": {"nmae": "A100", "type": "A100", "cost": 10}}  # fmt: skip
    with pytest.raises(InfernoObjectError) as raised:
        parse_inferno_object(obj)
    assert [(issue.path, issue.message) for issue in raised.value.issues] == [
        ("spec.name", 'Field required; found "nmae": did you mean "name"?'),
        ("spec.nmae", 'Extra inputs are not permitted; did you mean "name"?'),
    ]
