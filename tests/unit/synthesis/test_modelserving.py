"""ModelServing rules: replicas, roles, scheduling, env, images, labels, errors (docs/design/synthesis.md §7, §8)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisError, SynthesisSettings, synthesize
from shared.api.modelbooster import ModelBooster
from tests.unit.synthesis.support import container, entry_pod, render, server_worker, vllm_doc

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
TOLERATIONS = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]


def _serving(**backend: Any) -> dict[str, Any]:
    return render(vllm_doc(**backend))[0]


def _pd_workers(**decode: Any) -> list[dict[str, Any]]:
    return [
        {"type": "prefill", "image": "p:1", "replicas": 1, "pods": 1},
        {"type": "decode", "image": "d:1", "replicas": 1, "pods": 1, **decode},
    ]


@pytest.mark.parametrize(("pods", "worker_replicas"), [(0, 0), (1, 0), (2, 1), (8, 7)])
def test_worker_replicas_is_pods_minus_one_never_negative(pods: int, worker_replicas: int) -> None:
    # Q12: the reference produced -1 for pods: 0 (defaulting also turns 0 into 1, with a warning).
    serving = _serving(workers=[server_worker(pods=pods)])
    assert serving["spec"]["template"]["roles"][0]["workerReplicas"] == worker_replicas


def test_replicas_come_from_min_replicas_and_the_server_worker() -> None:
    serving = _serving(minReplicas=3, maxReplicas=3, workers=[server_worker(replicas=2)])
    spec = serving["spec"]
    assert spec["replicas"] == 3
    assert spec["template"]["gangPolicy"] == {"minRoleReplicas": {"leader": 2}}
    assert spec["template"]["roles"][0]["replicas"] == 2


def test_topology_spread_selects_this_model_servings_pods() -> None:
    # Q10: the reference selected on the model name, which no pod carries as its ModelServing name.
    constraint = _serving()["spec"]["topologySpreadConstraints"][0]
    assert constraint["labelSelector"] == {"matchLabels": {"modelserving.volcano.sh/name": "m-b"}}


def test_worker_affinity_tolerations_and_runtime_class_reach_entry_and_worker_pods() -> None:
    # Q16: the reference ignored worker affinity.
    serving = _serving(
        runtimeClassName="nvidia",
        workers=[server_worker(pods=2, affinity=AFFINITY, tolerations=TOLERATIONS)],
    )
    role = serving["spec"]["template"]["roles"][0]
    for pod in (role["entryTemplate"]["spec"], role["workerTemplate"]["spec"]):
        assert pod["runtimeClassName"] == "nvidia"
        assert pod["affinity"] == AFFINITY
        assert pod["tolerations"] == TOLERATIONS


def test_no_affinity_tolerations_or_runtime_class_unless_set() -> None:
    pod = entry_pod(_serving())
    assert not {"affinity", "tolerations", "runtimeClassName"} & set(pod)


def test_pd_roles_use_their_own_worker_scheduling_and_no_ascend_affinity() -> None:
    serving = _serving(type="vLLMDisaggregated", workers=_pd_workers(affinity=AFFINITY, tolerations=TOLERATIONS))
    prefill, decode = (entry_pod(serving, role) for role in (0, 1))
    assert "affinity" not in prefill
    assert "tolerations" not in prefill
    assert decode["affinity"] == AFFINITY
    assert decode["tolerations"] == TOLERATIONS
    assert "Ascend910" not in str(serving)


def test_pd_role_templates_carry_the_pod_labels() -> None:
    # Q9: PD pods carried no labels, so no ModelServer could select them.
    serving = _serving(type="vLLMDisaggregated", workers=_pd_workers())
    for role in serving["spec"]["template"]["roles"]:
        labels = role["entryTemplate"]["metadata"]["labels"]
        assert labels["workload.serving.volcano.sh/model-uid"] == "11111111-2222-4333-8444-555555555555"
        assert labels["workload.serving.volcano.sh/backend-name"] == "b"


def test_pd_commands_come_from_each_roles_config() -> None:
    workers = [
        {"type": "prefill", "image": "p:1", "replicas": 1, "pods": 1, "config": {"role-arg": "prefill"}},
        {"type": "decode", "image": "d:1", "replicas": 1, "pods": 1, "config": {"role-arg": "decode"}},
    ]
    serving = _serving(type="vLLMDisaggregated", workers=workers)
    for role, name in ((0, "prefill"), (1, "decode")):
        vllm = container(entry_pod(serving, role), "vllm")
        assert vllm["command"][5:7] == ["--role-arg", name]


def test_pd_pods_never_go_multi_node() -> None:
    workers = [{**worker, "pods": 4} for worker in _pd_workers()]
    serving = _serving(type="vLLMDisaggregated", workers=workers)
    for role in serving["spec"]["template"]["roles"]:
        assert role["workerReplicas"] == 0
        assert role["workerTemplate"] == {"spec": {"containers": []}}
        vllm = container(role["entryTemplate"]["spec"], "vllm")
        assert vllm["command"][0] == "python3"


def test_only_the_decode_runtime_gets_env_from() -> None:
    env_from = [{"configMapRef": {"name": "cfg"}}]
    serving = _serving(type="vLLMDisaggregated", envFrom=env_from, workers=_pd_workers())
    assert "envFrom" not in container(entry_pod(serving, 0), "runtime")
    assert container(entry_pod(serving, 1), "runtime")["envFrom"] == env_from
    assert "envFrom" not in container(entry_pod(serving, 1), "vllm")


def test_a_backend_env_wins_over_the_default_engine_env() -> None:
    # Kubernetes lets the last duplicate win; the reference appended its defaults after the user's.
    serving = _serving(env=[{"name": "REDIS_PORT", "value": "6380"}])
    env = container(entry_pod(serving), "engine")["env"]
    assert [e for e in env if e["name"] == "REDIS_PORT"] == [{"name": "REDIS_PORT", "value": "6380"}]
    assert [e["name"] for e in env] == [
        "REDIS_PORT",
        "POD_NAME",
        "NAMESPACE",
        "REDIS_HOST",
        "REDIS_PASSWORD",
    ]


def test_no_default_engine_env_is_unknown_to_the_vllm_release_we_render_for() -> None:
    """vLLM warns of every `VLLM_*` variable it does not know at start, and refuses to start with
    `--fail-on-environ-validation`: Kthena's `VLLM_USE_V1` is gone from vLLM 0.33.0 and not a default here."""
    env = container(entry_pod(_serving()), "engine")["env"]
    assert [e["name"] for e in env if e["name"].startswith("VLLM_")] == []


def test_settings_choose_images_and_default_engine_env() -> None:
    settings = SynthesisSettings(
        runtime_image="registry.local/runtime:1.2",
        downloader_image="registry.local/downloader:1.2",
        engine_env=({"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"},),
    )
    pod = entry_pod(render(vllm_doc(), settings)[0])
    assert pod["initContainers"][0]["image"] == "registry.local/downloader:1.2"
    runtime = container(pod, "runtime")
    assert runtime["image"] == "registry.local/runtime:1.2"
    assert runtime["env"] == [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"},
    ]


def test_runtime_reads_its_port_url_and_metrics_path_from_backend_env() -> None:
    env = [
        {"name": "RUNTIME_PORT", "value": "9100"},
        {"name": "RUNTIME_URL", "value": "http://127.0.0.1:8000"},
        {"name": "RUNTIME_METRICS_PATH", "value": "/stats"},
    ]
    runtime = container(entry_pod(_serving(env=env)), "runtime")
    assert runtime["ports"] == [{"containerPort": 9100}]
    assert runtime["args"][:8] == [
        "--port",
        "9100",
        "--engine",
        "vllm",
        "--engine-base-url",
        "http://127.0.0.1:8000",
        "--engine-metrics-path",
        "/stats",
    ]
    assert runtime["readinessProbe"]["httpGet"] == {"path": "/health", "port": 9100}


def test_engine_port_follows_config_port() -> None:
    pod = entry_pod(_serving(workers=[server_worker(config={"port": 9000})]))
    engine = container(pod, "engine")
    assert engine["readinessProbe"]["httpGet"]["port"] == 9000
    assert "http://localhost:9000/metrics" in engine["lifecycle"]["preStop"]["exec"]["command"][2]
    assert container(pod, "runtime")["args"][5] == "http://localhost:9000"


def test_downloader_gets_only_literal_endpoint_variables() -> None:
    env = [
        {"name": "MS_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "HF_TOKEN", "value": "t"},
        {"name": "HF_ENDPOINT", "value": "https://mirror"},
        {"name": "ENDPOINT", "value": "https://s3"},
        {"name": "MS_REVISION", "value": ""},
    ]
    downloader = entry_pod(_serving(env=env))["initContainers"][0]
    assert downloader["env"] == [
        {"name": "ENDPOINT", "value": "https://s3"},
        {"name": "HF_ENDPOINT", "value": "https://mirror"},
    ]


def test_resource_quantities_are_text() -> None:
    worker = server_worker(resources={"limits": {"nvidia.com/gpu": 2, "memory": "8Gi"}, "requests": {"cpu": 1}})
    engine = container(entry_pod(_serving(workers=[worker])), "engine")
    assert engine["resources"] == {"limits": {"nvidia.com/gpu": "2", "memory": "8Gi"}, "requests": {"cpu": "1"}}


def test_scheduler_name_is_always_present() -> None:
    assert _serving()["spec"]["schedulerName"] == ""
    assert _serving(schedulerName="volcano")["spec"]["schedulerName"] == "volcano"


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        ({"workers": [{"type": "prefill"}]}, "server worker not found in backend: b"),
        ({"type": "vLLMDisaggregated", "workers": [{"type": "decode"}]}, "prefill worker not found in backend: b"),
        ({"type": "vLLMDisaggregated", "workers": [{"type": "prefill"}]}, "decode worker not found in backend: b"),
        ({"type": "MindIE"}, "not support model backend type: MindIE"),
        (
            {"workers": [server_worker(config=["--dtype", "half"])]},
            "failed to get port for worker server: "
            "json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        (
            # The worker check comes before the port check, as in the reference.
            {"workers": [{"type": "prefill", "config": {"port": 0}}]},
            "server worker not found in backend: b",
        ),
        (
            {"cacheURI": "pvc://c", "workers": [server_worker(config={"port": "http"})]},
            'invalid port "http" for worker server',
        ),
        (
            {"workers": [server_worker(config={"port": 70000})]},
            'invalid port "70000" for worker server',
        ),
    ],
)
def test_backends_synthesis_cannot_build(backend: dict[str, Any], message: str) -> None:
    booster = ModelBooster.model_validate(vllm_doc(**backend))
    with pytest.raises(SynthesisError) as caught:
        synthesize(booster)
    assert str(caught.value) == message
