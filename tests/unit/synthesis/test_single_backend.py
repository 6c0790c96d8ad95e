"""Children of a ModelBooster written in Kthena v1.0's single-backend shape (docs/design/api.md §8).

Expected values are the facts of the newer line written down by hand — one ModelServing and one ModelServer
named `<model>-<backend>`, one ModelRoute named `<model>` whose modelName is `spec.name` (else the model's
name) and whose one `default` rule carries `modelMatch` verbatim, `replicas` as the ModelServing's replicas,
the scheduling fields in every pod template, no autoscaling objects — with our fixes to the reference's
defects applied (docs/design/quirks.md), which the multi-backend shape renders identically.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.constants import (
    LABEL_BACKEND_NAME,
    LABEL_MANAGED_BY,
    LABEL_MODEL_NAME,
    LABEL_MODEL_UID,
    LABEL_REVISION,
    MANAGED_BY_VALUE,
)
from shared.defaults import apply_defaults
from shared.validation import parse_modelbooster
from tests.unit.synthesis.support import UID, container, entry_pod, find, load_input, masked

GPU_IMAGE = "vllm/vllm-openai:v0.10.1"
OWNER = {
    "apiVersion": "workload.serving.volcano.sh/v1alpha1",
    "kind": "ModelBooster",
    "name": "m",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def single_doc(*, workers: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """ModelBooster `m` with `spec.backend` named `b`; `spec_*` keywords are spec fields, the rest backend ones."""
    spec = {key.removeprefix("spec_"): value for key, value in fields.items() if key.startswith("spec_")}
    backend: dict[str, Any] = {
        "name": "b",
        "type": "vLLM",
        "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "cacheURI": "hostpath://var/cache",
        "replicas": 1,
        "workers": workers if workers is not None else [{"type": "server", "image": GPU_IMAGE}],
    }
    backend.update({key: value for key, value in fields.items() if not key.startswith("spec_")})
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "m", "namespace": "ns", "uid": UID},
        "spec": {**spec, "backend": backend},
    }


def rendered(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """What the reconciler creates: defaulted and validated like admission, then synthesized."""
    return synthesize(parse_modelbooster(doc), SynthesisSettings())


def pd_workers(prefill_connector: str | None, decode_connector: str | None) -> list[dict[str, Any]]:
    def worker(kind: str, role: str, connector: str | None) -> dict[str, Any]:
        config: dict[str, Any] = {"port": 8100}
        if connector is not None:
            config["kv-transfer-config"] = f'{{"kv_connector": "{connector}", "kv_role": "{role}"}}'
        return {"type": kind, "image": GPU_IMAGE, "replicas": 1, "resources": {"limits": {"nvidia.com/gpu": 1}},
                "config": config}  # fmt: skip

    return [worker("prefill", "kv_producer", prefill_connector), worker("decode", "kv_consumer", decode_connector)]


# --- children, names, labels ------------------------------------------------------------------------------------


def test_one_serving_and_one_server_per_backend_one_route_and_no_autoscaling() -> None:
    children = rendered(single_doc())
    assert [(child["kind"], child["metadata"]["name"]) for child in children] == [
        ("ModelServing", "m-b"),
        ("ModelServer", "m-b"),
        ("ModelRoute", "m"),
    ]


@pytest.mark.parametrize(("kind", "name", "backend"), [("ModelServing", "m-b", "b"), ("ModelServer", "m-b", "b"),
                                                       ("ModelRoute", "m", "")])  # fmt: skip
def test_every_child_carries_the_five_labels_and_a_controller_reference(kind: str, name: str, backend: str) -> None:
    child = find(rendered(single_doc()), kind, name)
    labels = child["metadata"]["labels"]
    assert labels[LABEL_MODEL_NAME] == "m"
    assert labels[LABEL_BACKEND_NAME] == backend
    assert labels[LABEL_MANAGED_BY] == MANAGED_BY_VALUE
    assert labels[LABEL_MODEL_UID] == UID
    assert labels[LABEL_REVISION]
    assert child["metadata"]["namespace"] == "ns"
    assert child["metadata"]["ownerReferences"] == [OWNER]


# --- the route ----------------------------------------------------------------------------------------------------

MATCH = {"headers": {"x-tenant": {"exact": "blue"}}, "uri": {"prefix": "/v1"}, "body": {"model": "user-value"}}


def default_rule(match: dict[str, Any] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"name": "default"}
    if match is not None:
        rule["modelMatch"] = match
    rule["targetModels"] = [{"modelServerName": "m-b"}]
    return rule


@pytest.mark.parametrize(
    ("spec", "model_name", "rule"),
    [
        ({}, "m", default_rule()),
        ({"spec_name": "qwen-chat"}, "qwen-chat", default_rule()),
        # modelMatch is copied verbatim into the one rule, a user's body.model included.
        ({"spec_modelMatch": MATCH}, "m", default_rule(MATCH)),
        (
            {"spec_name": "chat", "spec_owner": "team-a", "spec_modelMatch": {"uri": {"exact": "/v1/chat"}}},
            "chat",
            default_rule({"uri": {"exact": "/v1/chat"}}),
        ),
    ],
    ids=["metadata-name", "spec-name", "model-match", "all-three"],
)
def test_route_model_name_and_rule(spec: dict[str, Any], model_name: str, rule: dict[str, Any]) -> None:
    route = find(rendered(single_doc(**spec)), "ModelRoute", "m")["spec"]
    # No weight: a single backend has no routeWeight, and the route CRD's default (100) applies.
    assert route == {"modelName": model_name, "rules": [rule]}


def test_spec_name_names_the_route_only_not_the_served_model_nor_the_runtime() -> None:
    children = rendered(single_doc(spec_name="chat"))
    assert find(children, "ModelServer", "m-b")["spec"]["model"] == "m"
    runtime = container(entry_pod(find(children, "ModelServing", "m-b")), "runtime")
    assert runtime["args"][-2:] == ["--model", "m"]


# --- replicas and workers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("replicas", [0, 1, 3, 1_000_000])
def test_backend_replicas_are_the_serving_replicas(replicas: int) -> None:
    serving = find(rendered(single_doc(replicas=replicas)), "ModelServing", "m-b")
    assert serving["spec"]["replicas"] == replicas


@pytest.mark.parametrize(
    ("worker", "role_replicas", "worker_replicas"),
    [
        ({}, 1, 0),  # the newer line leaves both unset (0); we default them to 1 (docs/design/api.md §8)
        ({"replicas": 2, "pods": 1}, 2, 0),
        ({"replicas": 0, "pods": 1}, 0, 0),
        ({"pods": 0}, 1, 0),  # defaulted to 1 with a warning: never workerReplicas -1
        ({"pods": 3, "resources": {"limits": {"nvidia.com/gpu": 2}}}, 1, 2),
    ],
    ids=["omitted", "two-replicas", "zero-replicas", "zero-pods", "multi-node"],
)
def test_worker_replicas_and_pods(worker: dict[str, Any], role_replicas: int, worker_replicas: int) -> None:
    doc = single_doc(workers=[{"type": "server", "image": GPU_IMAGE, **worker}])
    template = find(rendered(doc), "ModelServing", "m-b")["spec"]["template"]
    assert template["gangPolicy"] == {"minRoleReplicas": {"leader": role_replicas}}
    (role,) = template["roles"]
    assert (role["name"], role["replicas"], role["workerReplicas"]) == ("leader", role_replicas, worker_replicas)
    command = " ".join(container(role["entryTemplate"]["spec"], "engine")["command"])
    assert ("--ray_cluster_size=3 --num-gpus=2" in command) == (worker_replicas == 2)


def test_a_zero_pod_count_is_defaulted_with_a_warning_naming_the_single_backend_path() -> None:
    doc = single_doc(workers=[{"type": "server", "image": GPU_IMAGE, "pods": 0}])
    assert apply_defaults(doc).warnings == [
        "spec.backend.workers[0].pods: 0 is not a valid pod count (every replica has at least its entry pod); set to 1"
    ]


# --- scheduling ---------------------------------------------------------------------------------------------------

AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "gpu.class", "operator": "In", "values": ["h100"]}]}]}}}  # fmt: skip
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_scheduling_fields_reach_every_pod_template() -> None:
    worker = {"type": "server", "image": GPU_IMAGE, "pods": 2, "affinity": AFFINITY, "tolerations": TOLERATIONS}
    doc = single_doc(workers=[worker], schedulerName="volcano", runtimeClassName="nvidia")
    spec = find(rendered(doc), "ModelServing", "m-b")["spec"]
    assert spec["schedulerName"] == "volcano"
    role = spec["template"]["roles"][0]
    for template in (role["entryTemplate"], role["workerTemplate"]):
        pod = template["spec"]
        assert (pod["runtimeClassName"], pod["affinity"], pod["tolerations"]) == ("nvidia", AFFINITY, TOLERATIONS)


def test_without_scheduling_fields_the_pods_name_none_and_the_scheduler_is_volcano() -> None:
    """Kthena v1.0 leaves the scheduler to the ModelServing CRD's default, Volcano; we default the backend's
    (the ModelServing's is always written), and an explicit "" still means the cluster's default scheduler."""
    spec = find(rendered(single_doc()), "ModelServing", "m-b")["spec"]
    assert spec["schedulerName"] == "volcano"
    pod = entry_pod({"spec": spec})
    assert not {"runtimeClassName", "affinity", "tolerations"} & set(pod)
    assert find(rendered(single_doc(schedulerName="")), "ModelServing", "m-b")["spec"]["schedulerName"] == ""


# --- prefill/decode disaggregation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefill", "decode", "kv_type"),
    [
        ("MooncakeConnectorV1", "MooncakeConnectorV1", "mooncake"),
        ("MooncakeConnector", "MooncakeConnectorV1", "mooncake"),  # the two Mooncake names are compatible
        ("NixlConnector", "NixlConnector", "nixl"),
        ("LMCacheConnectorV1", "LMCacheConnectorV1", "lmcache"),
        (None, None, None),
    ],
)
def test_pd_roles_group_and_kv_connector(prefill: str | None, decode: str | None, kv_type: str | None) -> None:
    doc = single_doc(type="vLLMDisaggregated", replicas=2, workers=pd_workers(prefill, decode))
    children = rendered(doc)
    serving = find(children, "ModelServing", "m-b")["spec"]
    assert serving["replicas"] == 2
    assert [role["name"] for role in serving["template"]["roles"]] == ["prefill", "decode"]
    assert serving["template"]["gangPolicy"] == {"minRoleReplicas": {"prefill": 1, "decode": 1}}
    server = find(children, "ModelServer", "m-b")["spec"]
    assert server["workloadSelector"]["pdGroup"] == {
        "groupKey": "modelserving.volcano.sh/group-name",
        "prefillLabels": {"modelserving.volcano.sh/role": "prefill"},
        "decodeLabels": {"modelserving.volcano.sh/role": "decode"},
    }
    assert server["workloadPort"] == {"port": 8100}
    assert server.get("kvConnector") == ({"type": kv_type} if kv_type else None)


def test_kv_connector_packages_are_not_installed_at_engine_start() -> None:
    """The newer line pip-installs Mooncake or NIXL before a GPU engine starts; we do not, in either shape
    (docs/design/synthesis.md §9): the image carries its dependencies."""
    doc = single_doc(type="vLLMDisaggregated", workers=pd_workers("MooncakeConnector", "MooncakeConnectorV1"))
    roles = find(rendered(doc), "ModelServing", "m-b")["spec"]["template"]["roles"]
    for role in roles:
        command = container(role["entryTemplate"]["spec"], "vllm")["command"]
        assert command[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        assert "--kv-transfer-config" in command


# --- one code path ----------------------------------------------------------------------------------------------


def as_single(multi: dict[str, Any]) -> dict[str, Any]:
    """The same one-backend ModelBooster written in the single shape: `replicas` for the range, no weight."""
    doc = copy.deepcopy(multi)
    (backend,) = doc["spec"].pop("backends")
    replicas = backend.pop("minReplicas")
    assert backend.pop("maxReplicas") == replicas
    backend.pop("routeWeight", None)
    # An unset scheduler is "" in the list (the cluster's default) and Volcano for a single backend: say "".
    backend.setdefault("schedulerName", "")
    doc["spec"]["backend"] = {**backend, "replicas": replicas}
    return doc


@pytest.mark.parametrize("name", ["single-vllm", "pd-nixl"])
def test_the_single_shape_renders_what_the_list_of_one_renders(name: str) -> None:
    """The table inputs of the multi-backend shape, rewritten in the single shape: every child is the same
    but for the route target's weight (the single shape has none; the CRD defaults it to the same 100)."""
    multi = load_input(name)
    expected = masked(rendered(multi))
    route = find(expected, "ModelRoute", multi["metadata"]["name"])
    for target in route["spec"]["rules"][0]["targetModels"]:
        assert target.pop("weight") == 100
    assert masked(rendered(as_single(multi))) == expected
