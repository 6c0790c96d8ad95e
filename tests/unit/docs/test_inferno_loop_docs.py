"""The closed-loop walkthrough of docs/inferno.md is usable as written: the ModelBooster passes admission, the
Inferno objects form a valid system with examples/inferno/, the controller takes the flags, and the KEDA,
prometheus-adapter and HPA snippets parse (PromQL with a real parser, the HPA strictly against Kubernetes'
schema)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser as promql
import pytest
import yaml

from reconciler.inferno.settings import add_arguments, settings_from_args
from shared.api import inferno as api
from shared.external_scaling import ANNOTATION_EXTERNAL_REPLICAS
from shared.inferno_validation import parse_inferno_object, validate_inferno_objects
from shared.scaling_consent import servers_named
from shared.validation import validate_modelbooster
from tests.chart.render import container_args, render

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "inferno.md"
EXAMPLES = ROOT / "examples" / "inferno"


def _section(start: str = "## Closing the loop", end: str = "## When the model is wrong") -> str:
    text = DOC.read_text()
    return text[text.index(start) : text.index(end)]


def _blocks(language: str, section: str | None = None) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section or _section(), flags=re.DOTALL)


def _documents() -> list[dict[str, Any]]:
    return [doc for block in _blocks("yaml") for doc in yaml.safe_load_all(block) if doc]


def test_the_prefill_decode_example_targets_the_example_backend_with_its_consent() -> None:
    text = DOC.read_text()
    section = text[text.index("## Prefill and decode, scaled apart") :]
    snippets = [yaml.safe_load(block) for block in _blocks("yaml", section)]
    (server,) = [doc for doc in snippets if doc.get("kind") == "Server"]
    parsed = parse_inferno_object(server)
    assert isinstance(parsed, api.Server)
    assert parsed.spec.disaggregation is not None
    assert parsed.spec.actuation == api.ACTUATION_SCALE
    booster = yaml.safe_load((ROOT / "examples" / "pd-disaggregation-nixl.yaml").read_text())
    (metadata,) = [doc["metadata"] for doc in snippets if "kind" not in doc and "metadata" in doc]
    assert metadata["name"] == booster["metadata"]["name"]
    booster["metadata"]["annotations"] = metadata["annotations"]
    assert validate_modelbooster(booster) == []
    assert servers_named(metadata["annotations"]) == {server["metadata"]["name"]}
    (backend,) = booster["spec"]["backends"]
    assert parsed.spec.target_ref is not None
    assert parsed.spec.target_ref.name == f"{booster['metadata']['name']}-{backend['name']}"
    floor = {worker["type"]: worker["replicas"] for worker in backend["workers"]}
    assert f"never below its minRoleReplicas ({floor['prefill']} here)" in section


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in _documents() if doc.get("kind") == kind]


def test_the_model_booster_opts_in_and_passes_admission() -> None:
    (booster,) = _of_kind("ModelBooster")
    names = {server["metadata"]["name"] for server in _of_kind("Server")}
    assert booster["metadata"]["annotations"][ANNOTATION_EXTERNAL_REPLICAS] == "true"
    assert servers_named(booster["metadata"]["annotations"]) == names  # consent for exactly the two Servers
    assert any(b["minReplicas"] < b["maxReplicas"] for b in booster["spec"]["backends"])
    assert validate_modelbooster(booster) == []


def test_the_servers_and_optimizer_form_a_valid_system_with_the_examples() -> None:
    examples = [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
    walkthrough = [parse_inferno_object(doc) for doc in _of_kind("Server") + _of_kind("Optimizer")]
    parsed = [parse_inferno_object(doc) for doc in examples if doc["kind"] not in ("Server", "Optimizer")]
    servers = [obj for obj in walkthrough if isinstance(obj, api.Server)]
    assert {s.spec.target_ref.name for s in servers if s.spec.target_ref} == {"granite-a100", "granite-g2"}
    report = validate_inferno_objects(
        accelerators=[o for o in parsed if isinstance(o, api.Accelerator)],
        models=[o for o in parsed if isinstance(o, api.Model)],
        service_classes=[o for o in parsed if isinstance(o, api.ServiceClass)],
        servers=servers,
        capacities=[o for o in parsed if isinstance(o, api.Capacity)],
    )
    assert report.ok, report.summary()
    (optimizer,) = [obj for obj in walkthrough if isinstance(obj, api.Optimizer)]
    assert optimizer.spec.interval == "60s"


def test_the_chart_values_are_taken_and_the_default_queries_select_each_backend() -> None:
    (values,) = [doc for doc in _documents() if "inferno" in doc]
    rendered = render(values)
    assert rendered.of_kind("PodMonitor")
    argv = container_args(rendered.deployment("reconciler"), "reconciler")[1:]
    parser = argparse.ArgumentParser()
    add_arguments(parser, environ={})
    settings = settings_from_args(parser.parse_known_args(argv)[0], environ={})
    assert settings.prometheus is not None
    queries = settings.load_queries
    for template in (queries.arrival, queries.length):
        rendered_query = queries.render(template, namespace="serving", model="granite-13b", server="s",
                                        target="granite-g2")  # fmt: skip
        promql.parse(rendered_query)
        assert 'modelserving="granite-g2"' in rendered_query


def test_the_keda_scaled_object_scales_the_model_serving_to_the_decision() -> None:
    (scaled,) = _of_kind("ScaledObject")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "name": "granite-g2",
    }
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "prometheus"
    assert (trigger["metadata"]["threshold"], trigger["metadata"]["metricType"]) == ("1", "AverageValue")
    promql.parse(trigger["metadata"]["query"])
    assert "inferno_desired_replicas" in trigger["metadata"]["query"]


def test_the_adapter_rule_and_the_hpa_parse() -> None:
    (adapter,) = [doc for doc in _documents() if "externalRules" in doc]
    (rule,) = adapter["externalRules"]
    promql.parse(rule["seriesQuery"])
    query = rule["metricsQuery"].replace("<<.Series>>", "inferno_desired_replicas")
    promql.parse(query.replace("<<.LabelMatchers>>", 'server="granite-g2"').replace("<<.GroupBy>>", "server"))
    (hpa,) = _of_kind("HorizontalPodAutoscaler")
    kubernetes_validate.validate(hpa, "1.30.0", strict=True)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] == rule["name"]["as"]
    assert metric["external"]["target"] == {"type": "AverageValue", "averageValue": "1"}


@pytest.mark.parametrize("kind", ["ScaledObject", "HorizontalPodAutoscaler"])
def test_the_bounds_of_keda_and_the_hpa_are_the_backends(kind: str) -> None:
    (booster,) = _of_kind("ModelBooster")
    backend = next(b for b in booster["spec"]["backends"] if b["name"] == "g2")
    (obj,) = _of_kind(kind)
    spec = obj["spec"]
    low, high = (spec["minReplicaCount"], spec["maxReplicaCount"]) if kind == "ScaledObject" else (
        spec["minReplicas"], spec["maxReplicas"])  # fmt: skip
    assert (low, high) == (backend["minReplicas"], backend["maxReplicas"])
