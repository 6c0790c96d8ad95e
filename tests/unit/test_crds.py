"""The generated CRDs (docs/design/api.md §1–§3, §5, §7): identity, schema, structural rules, CEL rules
and their cost bounds, and that the chart's files are exactly the generator's."""

from __future__ import annotations

import argparse
import io
import json
import re
from collections.abc import Mapping
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import crds as crds_cli
from shared import backend_shape
from shared.crds import chart_files, crds
from shared.schema import structural_problems
from shared.unsupported import BEHAVIOR_DETAIL, PANIC_POLICY_DETAIL, RATE_LIMIT_DETAIL, TOPOLOGY_DETAIL
from tests.fakeapi.schema import check_rule_costs, check_rule_placement
from tests.unit.crd_support import crd_by_kind, openapi_schema, schema_at, walk_schema

# libyaml's loader when present: the generated CRDs are over a megabyte of YAML.
YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CHART = Path(__file__).resolve().parents[2] / "charts" / "modelbooster"

IDENTITY = [
    ("ModelBooster", "workload.serving.volcano.sh", "modelboosters"),
    ("ModelServing", "workload.serving.volcano.sh", "modelservings"),
    ("AutoscalingPolicy", "workload.serving.volcano.sh", "autoscalingpolicies"),
    ("AutoscalingPolicyBinding", "workload.serving.volcano.sh", "autoscalingpolicybindings"),
    ("ModelServer", "networking.serving.volcano.sh", "modelservers"),
    ("ModelRoute", "networking.serving.volcano.sh", "modelroutes"),
    ("Accelerator", "inferno.platform.ai", "accelerators"),
    ("Model", "inferno.platform.ai", "models"),
    ("ServiceClass", "inferno.platform.ai", "serviceclasses"),
    ("Server", "inferno.platform.ai", "servers"),
    ("Capacity", "inferno.platform.ai", "capacities"),
    ("Optimizer", "inferno.platform.ai", "optimizers"),
]


def test_the_chart_holds_exactly_the_generated_crds() -> None:
    """Fails when a model changes and `modelbooster crds --chart charts/modelbooster` was not run."""
    expected = chart_files()
    directories = {CHART / relative.rsplit("/", 1)[0] for relative in expected}
    present = {
        str(path.relative_to(CHART)): path.read_text(encoding="utf-8")
        for directory in directories
        for path in directory.glob("*.yaml")
    }
    assert sorted(present) == sorted(expected)
    for name, text in expected.items():
        assert present[name] == text, f"{name} differs from the generator: run modelbooster crds --chart {CHART}"


def test_own_child_and_inferno_crds_live_in_different_chart_directories() -> None:
    files = chart_files()
    assert "crds/workload.serving.volcano.sh_modelboosters.yaml" in files
    assert "charts/inferno-crds/crds/inferno.platform.ai_optimizers.yaml" in files
    assert "charts/child-crds/crds/workload.serving.volcano.sh_modelservings.yaml" in files
    assert "charts/child-crds/crds/networking.serving.volcano.sh_modelroutes.yaml" in files
    assert len(files) == len(IDENTITY)


@pytest.mark.parametrize(("kind", "group", "plural"), IDENTITY)
def test_identity_of_every_crd(kind: str, group: str, plural: str) -> None:
    definition = crd_by_kind(kind)
    assert definition["apiVersion"] == "apiextensions.k8s.io/v1"
    assert definition["kind"] == "CustomResourceDefinition"
    assert definition["metadata"]["name"] == f"{plural}.{group}"
    spec = definition["spec"]
    assert spec["group"] == group
    assert spec["scope"] == "Namespaced"
    names = spec["names"]
    assert (names["kind"], names["plural"], names["singular"], names["listKind"]) == (
        kind,
        plural,
        kind.lower(),
        f"{kind}List",
    )
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    if kind == "ModelServing":  # Kthena v1.0's ModelServing serves /scale, so HPA, KEDA and Inferno can set it
        assert version["subresources"] == {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.labelSelector",
            },
        }
    else:
        assert version["subresources"] == {"status": {}}
    assert structural_problems(version["schema"]["openAPIV3Schema"]) == []
    assert len(crds()) == len(IDENTITY)


def test_modelbooster_names_columns_and_short_name() -> None:
    spec = crd_by_kind("ModelBooster")["spec"]
    assert spec["names"]["shortNames"] == ["mb"]
    assert spec["names"]["categories"] == ["kthena"]
    columns = [(c["name"], c["type"], c["jsonPath"]) for c in spec["versions"][0]["additionalPrinterColumns"]]
    assert columns == [
        ("Active", "string", ".status.conditions[?(@.type=='Active')].status"),
        ("Failed", "string", ".status.conditions[?(@.type=='Failed')].status"),
        ("Backends", "integer", ".status.backendCount"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ]
    assert schema_at(openapi_schema("ModelBooster"), "status.backendCount")["type"] == "integer"


def test_child_crds_have_no_short_names_or_categories() -> None:
    for kind in ("ModelServing", "ModelServer", "ModelRoute", "AutoscalingPolicy", "AutoscalingPolicyBinding"):
        names = crd_by_kind(kind)["spec"]["names"]
        assert "shortNames" not in names
        assert "categories" not in names


def test_modelbooster_fields_types_bounds_and_patterns() -> None:
    schema = openapi_schema("ModelBooster")
    assert schema["required"] == ["spec"]
    backends = schema_at(schema, "spec.backends")
    assert (backends["minItems"], backends["maxItems"]) == (1, 16)
    assert backends["x-kubernetes-list-type"] == "map"
    assert backends["x-kubernetes-list-map-keys"] == ["name"]
    item = backends["items"]
    assert item["required"] == ["name", "type", "modelURI", "minReplicas", "maxReplicas", "workers"]
    assert item["properties"]["type"]["enum"] == [
        "vLLM",
        "vLLMDisaggregated",
        "SGLang",
        "MindIE",
        "MindIEDisaggregated",
    ]
    assert item["properties"]["name"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert item["properties"]["modelURI"]["pattern"] == "^(hf://|s3://|pvc://|obs://|ms://).+"
    assert item["properties"]["cacheURI"]["pattern"] == "^(hostpath://|pvc://).+"

    def bounds(path: str) -> tuple[Any, Any]:
        node = schema_at(schema, path)
        return node.get("minimum"), node.get("maximum")

    assert bounds("spec.backends[].minReplicas") == (0, 1_000_000)
    assert bounds("spec.backends[].maxReplicas") == (1, 1_000_000)
    assert bounds("spec.backends[].routeWeight") == (0, 100)
    assert bounds("spec.backends[].scalingCost") == (0, None)
    assert bounds("spec.backends[].workers[].replicas") == (0, 1_000_000)
    assert bounds("spec.backends[].workers[].pods") == (0, 1_000_000)
    assert bounds("spec.costExpansionRatePercent") == (0, 1000)
    assert bounds("spec.autoscalingPolicy.tolerancePercent") == (0, 100)
    assert schema_at(schema, "spec.name")["maxLength"] == 64
    workers = schema_at(schema, "spec.backends[].workers")
    assert (workers["minItems"], workers["maxItems"]) == (1, 1000)
    assert schema_at(schema, "spec.backends[].workers[].type")["enum"] == [
        "server",
        "prefill",
        "decode",
        "controller",
        "coordinator",
    ]
    limit = schema_at(schema, "spec.backends[].workers[].resources.limits")["additionalProperties"]
    assert limit["x-kubernetes-int-or-string"] is True
    assert limit["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    target = schema_at(schema, "spec.autoscalingPolicy.metrics[].targetValue")
    assert target["x-kubernetes-int-or-string"] is True


def test_list_types() -> None:
    schema = openapi_schema("ModelBooster")
    assert schema_at(schema, "spec.backends[].env")["x-kubernetes-list-map-keys"] == ["name"]
    assert schema_at(schema, "status.conditions")["x-kubernetes-list-map-keys"] == ["type"]
    for path in (
        "spec.backends[].envFrom",
        "spec.backends[].loraAdapters",
        "spec.backends[].workers[].tolerations",
        "status.backendStatuses",
    ):
        assert schema_at(schema, path)["x-kubernetes-list-type"] == "atomic", path


def test_schema_defaults_of_decisions_3() -> None:
    schema = openapi_schema("ModelBooster")
    assert schema_at(schema, "spec.backends[].routeWeight")["default"] == 100
    assert schema_at(schema, "spec.backends[].workers[].type")["default"] == "server"
    assert schema_at(schema, "spec.backends[].workers[].replicas")["default"] == 1
    assert schema_at(schema, "spec.backends[].workers[].pods")["default"] == 1
    assert schema_at(schema, "spec.autoscalingPolicy.tolerancePercent")["default"] == 10
    assert schema_at(schema, "spec.backends[].autoscalingPolicy.tolerancePercent")["default"] == 10
    # Conditional on model-level autoscaling: only the webhook can apply them.
    assert "default" not in schema_at(schema, "spec.backends[].scaleToZeroGracePeriod")
    assert "default" not in schema_at(schema, "spec.costExpansionRatePercent")


def test_preserve_unknown_fields_only_where_the_api_says() -> None:
    paths = sorted(
        path
        for path, node in walk_schema(openapi_schema("ModelBooster"))
        if node.get("x-kubernetes-preserve-unknown-fields")
    )
    assert paths == sorted(
        [
            "spec.rateLimit",
            "spec.autoscalingPolicy.behavior",
            "spec.autoscalingPolicy.behavior.scaleUp",
            "spec.autoscalingPolicy.behavior.scaleUp.panicPolicy",
            "spec.backends[].rateLimit",
            "spec.backends[].networkTopology",
            "spec.backends[].topology",
            "spec.backends[].workers[].config",
            "spec.backends[].workers[].networkTopology",
            "spec.backends[].autoscalingPolicy.behavior",
            "spec.backends[].autoscalingPolicy.behavior.scaleUp",
            "spec.backends[].autoscalingPolicy.behavior.scaleUp.panicPolicy",
            # Kthena v1.0's single backend declares the same unsupported fields as a v0.1.0 backend.
            "spec.backend.rateLimit",
            "spec.backend.networkTopology",
            "spec.backend.topology",
            "spec.backend.workers[].config",
            "spec.backend.workers[].networkTopology",
        ]
    )


def rules_at(schema: Mapping[str, Any], path: str) -> list[tuple[str, str, str, str]]:
    return [
        (rule["rule"], rule["message"], rule.get("fieldPath", ""), rule.get("reason", ""))
        for rule in schema_at(schema, path).get("x-kubernetes-validations", [])
    ]


def test_cel_rules_reject_every_unsupported_feature_with_the_webhook_message() -> None:
    """Each is a presence-based transition rule: refused unless the old object had the field too."""
    schema = openapi_schema("ModelBooster")
    forbidden = "FieldValueForbidden"
    rate_limit = "!has(self.rateLimit) || (oldSelf.hasValue() && has(oldSelf.value().rateLimit))"
    shape_rules = [
        (rule["rule"], rule["message"], rule.get("fieldPath", ""), rule["reason"]) for rule in backend_shape.cel_rules()
    ]
    assert rules_at(schema, "spec") == [*shape_rules, (rate_limit, RATE_LIMIT_DETAIL, ".rateLimit", forbidden)]
    replica_rules = [
        (rule["rule"], rule["message"], rule.get("fieldPath", ""), rule["reason"])
        for rule in backend_shape.single_backend_cel_rules()
    ]
    assert rules_at(schema, "spec.backend") == [*replica_rules, *rules_at(schema, "spec.backends[]")]
    assert rules_at(schema, "spec.backends[]") == [
        (rate_limit, RATE_LIMIT_DETAIL, ".rateLimit", forbidden),
        (
            "!has(self.networkTopology) || (oldSelf.hasValue() && has(oldSelf.value().networkTopology))",
            TOPOLOGY_DETAIL,
            ".networkTopology",
            forbidden,
        ),
        (
            "!has(self.topology) || (oldSelf.hasValue() && has(oldSelf.value().topology))",
            TOPOLOGY_DETAIL,
            ".topology",
            forbidden,
        ),
        # A worker's field is checked on its backend: `workers` is an atomic list, where oldSelf is refused.
        (
            "!(has(self.workers) && self.workers.exists(w, has(w.networkTopology))) || (oldSelf.hasValue() && "
            "has(oldSelf.value().workers) && oldSelf.value().workers.exists(w, has(w.networkTopology)))",
            TOPOLOGY_DETAIL,
            ".workers",
            forbidden,
        ),
    ]
    assert rules_at(schema, "spec.backends[].workers[]") == []
    expected_policy_rules = [
        (
            "!has(self.behavior) || !has(self.behavior.scaleUp) || !has(self.behavior.scaleUp.panicPolicy) || "
            "(oldSelf.hasValue() && has(oldSelf.value().behavior) && has(oldSelf.value().behavior.scaleUp) && "
            "has(oldSelf.value().behavior.scaleUp.panicPolicy))",
            PANIC_POLICY_DETAIL,
            ".behavior.scaleUp.panicPolicy",
            forbidden,
        ),
        (
            "!has(self.behavior) || (oldSelf.hasValue() && has(oldSelf.value().behavior))",
            BEHAVIOR_DETAIL,
            ".behavior",
            forbidden,
        ),
    ]
    assert rules_at(schema, "spec.autoscalingPolicy") == expected_policy_rules
    assert rules_at(schema, "spec.backends[].autoscalingPolicy") == expected_policy_rules
    for path, node in walk_schema(schema):
        transition = [rule for rule in node.get("x-kubernetes-validations", []) if "oldSelf" in rule["rule"]]
        assert all(rule["optionalOldSelf"] is True for rule in transition), path
    # The messages are the ones docs/design/api.md §3 prescribes.
    assert RATE_LIMIT_DETAIL == (
        "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
    )
    assert (
        TOPOLOGY_DETAIL == "topology configuration of ModelServing is not supported; create the ModelServing yourself"
    )
    assert BEHAVIOR_DETAIL == "behavior is not supported; create AutoscalingPolicy + Binding yourself"
    assert PANIC_POLICY_DETAIL.startswith("panicPolicy is not supported")


def test_transition_rules_sit_where_kube_apiserver_can_correlate_old_values() -> None:
    """oldSelf below a list that is not a list-type map makes kube-apiserver refuse the CRD."""
    for definition in crds():
        schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert check_rule_placement(schema, "openAPIV3Schema") == [], definition["metadata"]["name"]


def test_every_cel_field_path_names_a_declared_field() -> None:
    for definition in crds():
        schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in walk_schema(schema):
            for rule in node.get("x-kubernetes-validations", []):
                if "fieldPath" in rule:
                    target = node
                    for name in rule["fieldPath"].strip(".").split("."):
                        assert name in target.get("properties", {}), (definition["metadata"]["name"], path, rule)
                        target = target["properties"][name]


def test_child_cel_rules_of_the_facts() -> None:
    serving = openapi_schema("ModelServing")
    assert rules_at(serving, "spec.template") == [
        ("!has(oldSelf.gangPolicy) || has(self.gangPolicy)", "gangPolicy is required once set", "", "")
    ]
    assert rules_at(serving, "spec.template.gangPolicy") == [
        ("!has(oldSelf.minRoleReplicas) || has(self.minRoleReplicas)", "minRoleReplicas is required once set", "", "")
    ]
    assert rules_at(serving, "spec.template.gangPolicy.minRoleReplicas") == [
        ("self == oldSelf", "minRoleReplicas is immutable", "", "")
    ]
    assert rules_at(serving, "spec.template.roles") == [
        ("self.all(x, self.exists_one(y, y.name == x.name))", "roles name must be unique", "", "")
    ]
    route = openapi_schema("ModelRoute")
    assert rules_at(route, "spec") == [
        (
            'self.modelName != "" || size(self.loraAdapters) > 0',
            "ModelName and LoraAdapters cannot both be empty",
            "",
            "",
        )
    ]
    assert rules_at(route, "spec.modelName") == [("self == oldSelf", "modelName is immutable", "", "")]
    binding = openapi_schema("AutoscalingPolicyBinding")
    assert rules_at(binding, "spec") == [
        (
            "has(self.optimizerConfiguration) != has(self.scalingConfiguration)",
            "Either optimizerConfiguration or scalingConfiguration must be set, but not both.",
            "",
            "",
        )
    ]


def test_child_schema_defaults_and_bounds_of_the_facts() -> None:
    route = openapi_schema("ModelRoute")
    weight = schema_at(route, "spec.rules[].targetModels[].weight")
    assert (weight["default"], weight["minimum"], weight["maximum"]) == (100, 0, 100)
    assert schema_at(route, "spec.rules")["maxItems"] == 16
    assert schema_at(route, "spec.loraAdapters")["maxItems"] == 10
    serving = openapi_schema("ModelServing")
    roles = schema_at(serving, "spec.template.roles")
    assert (roles["minItems"], roles["maxItems"]) == (1, 4)
    assert schema_at(serving, "spec.template.roles[].name")["maxLength"] == 12
    assert schema_at(serving, "spec.replicas")["default"] == 1
    assert schema_at(serving, "spec.recoveryPolicy")["default"] == "RoleRecreate"
    server = openapi_schema("ModelServer")
    assert schema_at(server, "spec.kvConnector.type")["enum"] == ["http", "lmcache", "nixl", "mooncake"]
    assert schema_at(server, "spec.workloadPort.protocol")["default"] == "http"
    policy = openapi_schema("AutoscalingPolicy")
    assert schema_at(policy, "spec.tolerancePercent")["default"] == 10
    binding = openapi_schema("AutoscalingPolicyBinding")
    assert schema_at(binding, "spec.optimizerConfiguration.costExpansionRatePercent")["default"] == 200


def test_quantities_inside_pod_specs_are_int_or_string() -> None:
    serving = openapi_schema("ModelServing")
    limits = schema_at(serving, "spec.template.roles[].entryTemplate.spec.containers[].resources.limits")
    assert limits["additionalProperties"]["x-kubernetes-int-or-string"] is True
    port = schema_at(serving, "spec.template.roles[].entryTemplate.spec.containers[].ports[].containerPort")
    assert port["type"] == "integer"


def cardinality(schema: Mapping[str, Any], path: str) -> float:
    """How many times a node can occur in one object: the product of its enclosing lists' maxItems."""
    total = 1.0
    node = schema
    for segment in path.split("."):
        if not segment:
            continue
        if segment.endswith("[]"):
            node = node["properties"][segment[:-2]]
            total *= node.get("maxItems", float("inf"))
            node = node["items"]
        else:
            node = node["properties"][segment]
    return total


LOOP = re.compile(r"\bself(?:\.([A-Za-z_]\w*))?\.(?:all|exists|exists_one)\(")


def test_cel_rules_stay_within_the_cost_budget() -> None:
    """Every list a rule sits in or loops over, and every map a rule compares, is bounded; otherwise
    the API server estimates the cost from the request size limit and refuses the CRD."""
    for definition in crds():
        schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in walk_schema(schema):
            rules = node.get("x-kubernetes-validations", [])
            if not rules or "[*]" in path:
                continue
            assert cardinality(schema, path) <= 20_000, (definition["metadata"]["name"], path)
            for rule in rules:
                if "==" in rule["rule"] and node.get("type") == "object" and "additionalProperties" in node:
                    assert "maxProperties" in node, (path, rule)
                for looped in LOOP.findall(rule["rule"]):
                    assert "maxItems" in (node["properties"][looped] if looped else node), (path, rule)
        # The fake API server's estimate (per rule and for the whole CRD) refuses nothing either.
        assert check_rule_costs(schema, "openAPIV3Schema") == [], definition["metadata"]["name"]


def run_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    crds_cli.add_arguments(parser)
    out = io.StringIO()
    with redirect_stdout(out):
        code = crds_cli.run(parser.parse_args(argv))
    return code, out.getvalue()


def test_cli_prints_all_crds_as_yaml_or_json() -> None:
    code, text = run_cli()
    assert code == 0
    assert list(yaml.load_all(text, Loader=YamlLoader)) == crds()
    code, text = run_cli("-o", "json")
    assert code == 0
    listing = json.loads(text)
    assert listing["kind"] == "List"
    assert listing["items"] == crds()


def test_cli_writes_the_files_and_removes_stale_ones(tmp_path: Path) -> None:
    (tmp_path / "workload.serving.volcano.sh_gone.yaml").write_text("stale", encoding="utf-8")
    (tmp_path / "someone-else.yaml").write_text("keep", encoding="utf-8")
    code, text = run_cli("--write", str(tmp_path))
    assert code == 0
    assert len(text.splitlines()) == len(IDENTITY)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert "workload.serving.volcano.sh_gone.yaml" not in names
    assert "someone-else.yaml" in names
    written = (tmp_path / "workload.serving.volcano.sh_modelboosters.yaml").read_text(encoding="utf-8")
    assert yaml.load(written, Loader=YamlLoader) == crd_by_kind("ModelBooster")


def test_cli_writes_the_chart_layout(tmp_path: Path) -> None:
    code, text = run_cli("--chart", str(tmp_path))
    assert code == 0
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*.yaml")) == sorted(chart_files())
    assert sorted(text.split()) == sorted(str(tmp_path / relative) for relative in chart_files())


def test_cli_reports_an_unwritable_directory_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    code, _ = run_cli("--write", str(blocker / "sub"))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("modelbooster crds: cannot write ")
    assert err.count("\n") == 1
