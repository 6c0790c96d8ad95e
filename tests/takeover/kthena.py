"""The children each Kthena generation's own ModelBooster controller writes, for the ModelBoosters of
tests/takeover/boosters (one vLLM backend, one server worker on one pod), as the API server stores them.

Written here from what each release's converter does (the shapes its convert testdata shows; facts checked
against Kthena's source, tags v0.1.0, v0.4.0 — standing for v0.2.0 to v0.4.0 — and v1.0.0), not produced by the
code under test. What all three have in common and we do differently: the revision label in the pod templates,
Kthena's own revision digest, no `registry.volcano.sh/managed-by` label, no annotations of ours. Per release:

- v0.1.0: owner references without `controller` on the ModelServing and the ModelRoute; `python -m vllm...` with
  `--kv-events-config`; the first preStop script (on port 8000); no `dshm` volume; `schedulerName: ""`; the
  topology spread selecting the model's name; readiness after 90 s; the worker template without metadata;
  AutoscalingPolicy and Binding (`scalingConfiguration`) per backend.
- v0.4.0: one `spec.backend` with `minReplicas`/`maxReplicas`, `python3`, the `dshm` volume, the first preStop
  script still, readiness after 180 s, the worker template labelled like the entry template, `schedulerName: ""`,
  AutoscalingPolicy and Binding (`homogeneousTarget`) named `<model>-<backend>` for `spec.autoscalingPolicy`.
- v1.0.0: `spec.backend.replicas`; `affinity: {}` in every pod spec, the second preStop script (it gives up when
  the metrics endpoint is unreachable), no `schedulerName` (the CRD's default, `volcano`, is stored), no
  autoscaling objects. A worker without `replicas` is rendered with 0 (a leader role without pods).

Each controller built its objects as Go structs, so every container carries `resources: {}` and unset optional
fields are left out; the CRD prunes what it does not declare (an embedded object's `creationTimestamp: null`).
The images are those Kthena's chart configures (its `model-booster-controller-config` ConfigMap).
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Final

import yaml

from reconciler.modelbooster.synthesis.labels import stamp_revision

Obj = dict[str, Any]

HERE: Final = Path(__file__).parent
GENERATIONS: Final = ("v0.1.0", "v0.4.0", "v1.0.0")
WORKLOAD: Final = "workload.serving.volcano.sh/v1alpha1"
NETWORKING: Final = "networking.serving.volcano.sh/v1alpha1"
RUNTIME_IMAGE: Final = "ghcr.io/volcano-sh/runtime:latest"
DOWNLOADER_IMAGE: Final = "ghcr.io/volcano-sh/downloader:latest"
KV_EVENTS: Final = '{"enable_kv_cache_events":true,"publisher":"zmq","topic":"kv-events","endpoint":"tcp://*:5557"}'
MULTI_NODE: Final = "/vllm-workspace/vllm/examples/online_serving/multi-node-serving.sh"

FIRST_PRESTOP: Final = """\
while true; do
  RUNNING=$(curl -s http://localhost:8000/metrics | grep 'vllm:num_requests_running' | grep -v '#' | awk '{print $2}')
  WAITING=$(curl -s http://localhost:8000/metrics | grep 'vllm:num_requests_waiting' | grep -v '#' | awk '{print $2}')
  if [ "$RUNNING" = "0.0" ] && [ "$WAITING" = "0.0" ]; then
    echo "Terminating: No active or waiting requests, safe to terminate" >> /proc/1/fd/1
    exit 0
  else
    echo "Terminating: Running: $RUNNING, Waiting: $WAITING" >> /proc/1/fd/1
    sleep 5
  fi
done
"""
SECOND_PRESTOP: Final = """\
while true; do
  METRICS=$(curl -s --max-time 2 http://localhost:8000/metrics)
  RUNNING=$(echo "$METRICS" | grep 'vllm:num_requests_running' | grep -v '#' | awk '{print $2}' || true)
  WAITING=$(echo "$METRICS" | grep 'vllm:num_requests_waiting' | grep -v '#' | awk '{print $2}' || true)
  if [ -z "$RUNNING" ]; then
    echo "Terminating: Metrics endpoint unavailable, exiting preStop" >> /proc/1/fd/1
    exit 0
  fi
  if [ "$RUNNING" = "0.0" ] && [ "$WAITING" = "0.0" ]; then
    echo "Terminating: No active or waiting requests, safe to terminate" >> /proc/1/fd/1
    exit 0
  else
    echo "Terminating: Running: $RUNNING, Waiting: $WAITING" >> /proc/1/fd/1
    sleep 5
  fi
done
"""


def booster(name: str, namespace: str) -> Obj:
    """A ModelBooster of tests/takeover/boosters (`v01`, `v04`, `v1`, `v1-worker-replicas-omitted`)."""
    document: Obj = yaml.safe_load((HERE / "boosters" / f"{name}.yaml").read_text())
    document["metadata"]["namespace"] = namespace
    return document


def rendered_0_2_0(name: str, *, uid: str, namespace: str, model: str | None = None) -> list[Obj]:
    """The children modelbooster 0.2.0 rendered for that ModelBooster (tests/takeover/rendered_0_2_0), for a
    ModelBooster of that uid (and name, `model`): the revision labels are digested again over the substituted
    content with 0.2.0's digest (reconciler/modelbooster/synthesis/labels.py, unchanged since), as 0.2.0 would
    have labelled them."""
    text = (HERE / "rendered_0_2_0" / f"{name}.yaml").read_text()
    text = text.replace("00000000-0000-0000-0000-000000000000", uid)
    text = text.replace("namespace: default", f"namespace: {namespace}")
    documents = [document for document in yaml.safe_load_all(text) if document]
    if model is not None:
        original = documents[0]["metadata"]["ownerReferences"][0]["name"]
        documents = json.loads(json.dumps(documents).replace(f'"{original}', f'"{model}'))
    autoscaled = any(document["kind"] == "AutoscalingPolicy" for document in documents)
    for document in documents:
        if document["kind"] == "ModelBooster":
            continue
        ignored = ("replicas",) if autoscaled and document["kind"] == "ModelServing" else ()
        stamp_revision(document, ignored_spec_fields=ignored)
    return documents


def _kthena_revision(value: Any) -> str:
    """A revision in the form Kthena's labels have (digits of a 32-bit hash spelled with 4-9, b, c, d, f): an
    opaque value that differs from ours, which is all that matters here."""
    number = int(hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8], 16)
    return "".join("456789bcdf"[int(digit)] for digit in str(number))


def _backend(document: Obj) -> Obj:
    spec = document["spec"]
    backend: Obj = spec["backends"][0] if "backends" in spec else spec["backend"]
    workers = backend["workers"]
    if backend["type"] != "vLLM" or len(workers) != 1 or workers[0].get("pods", 1) != 1:
        raise ValueError("these builders render one vLLM backend with one server worker on one pod")
    return backend


def _labels(document: Obj, backend: str, revision: str, uid: str) -> dict[str, str]:
    return {
        "workload.serving.volcano.sh/model-name": document["metadata"]["name"],
        "workload.serving.volcano.sh/backend-name": backend,
        "workload.serving.volcano.sh/managed-by": "workload.serving.volcano.sh",
        "workload.serving.volcano.sh/revision": revision,
        "workload.serving.volcano.sh/model-uid": uid,
    }


def _owner(document: Obj, uid: str, *, controller: bool) -> list[Obj]:
    ref: Obj = {"apiVersion": WORKLOAD, "kind": "ModelBooster", "name": document["metadata"]["name"], "uid": uid}
    if controller:
        ref.update(blockOwnerDeletion=True, controller=True)
    return [ref]


def _cache_path(uri: str, generation: str) -> str:
    after = uri.split("://")[1]
    return after if generation == "v0.1.0" else "/" + after.strip("/")


def _engine_env(backend: Obj) -> list[Obj]:
    def config_map(key: str) -> Obj:
        return {"name": key, "valueFrom": {"configMapKeyRef": {"key": key, "name": "redis-config", "optional": True}}}

    return [
        *copy.deepcopy(backend.get("env") or []),
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "VLLM_USE_V1", "value": "1"},
        config_map("REDIS_HOST"),
        config_map("REDIS_PORT"),
        {"name": "REDIS_PASSWORD",
         "valueFrom": {"secretKeyRef": {"key": "REDIS_PASSWORD", "name": "redis-secret", "optional": True}}},
    ]  # fmt: skip


def _engine_args(config: Obj | None) -> list[str]:
    args: list[str] = []
    for key in sorted(config or {}):
        value = (config or {})[key]
        args.append("--" + key.replace("_", "-"))
        text = value if isinstance(value, str) else json.dumps(value)
        if text:
            args.append(text)
    return args


def model_serving(document: Obj, *, generation: str, uid: str) -> Obj:
    """The ModelServing as that Kthena release's controller wrote it and the API server stored it."""
    backend = _backend(document)
    worker = backend["workers"][0]
    model, name = document["metadata"]["name"], backend["name"]
    revision = _kthena_revision(backend)
    labels = _labels(document, name, revision, uid)
    cache = _cache_path(backend["cacheURI"], generation)
    download = cache + "/" + hashlib.md5(backend["modelURI"].encode()).hexdigest()
    weights: Obj = {"name": f"{name}-weights", "mountPath": cache}
    volumes: list[Obj] = [{"hostPath": {"path": cache, "type": "DirectoryOrCreate"}, "name": f"{name}-weights"}]
    mounts = [weights]
    if generation != "v0.1.0":
        volumes.append({"emptyDir": {"medium": "Memory"}, "name": "dshm"})
        mounts = [weights, {"mountPath": "/dev/shm", "name": "dshm"}]
    endpoints = ("ENDPOINT", "HF_ENDPOINT")
    downloader_env = [e for e in backend.get("env") or [] if e["name"] in endpoints and e.get("value")]
    downloader: Obj = {
        "args": ["--source", backend["modelURI"], "--output-dir", download],
        "image": DOWNLOADER_IMAGE,
        "name": f"{model}-model-downloader",
        "resources": {},
        "volumeMounts": [copy.deepcopy(weights)],
    }
    if downloader_env:
        downloader["env"] = downloader_env
    if backend.get("envFrom"):
        downloader["envFrom"] = copy.deepcopy(backend["envFrom"])
    python = "python" if generation == "v0.1.0" else "python3"
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", download,
               *_engine_args(worker.get("config"))]  # fmt: skip
    if generation == "v0.1.0":
        command += ["--kv-events-config", KV_EVENTS]
    runtime: Obj = {
        "args": ["--port", "8100", "--engine", "vllm", "--engine-base-url", "http://localhost:8000",
                 "--engine-metrics-path", "/metrics", "--pod", "$(POD_NAME).$(NAMESPACE)", "--model", model],
        "env": _engine_env(backend),
        "image": RUNTIME_IMAGE,
        "name": "runtime",
        "ports": [{"containerPort": 8100}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8100}, "initialDelaySeconds": 5, "periodSeconds": 10},
        "resources": {},
    }  # fmt: skip
    if backend.get("envFrom"):
        runtime["envFrom"] = copy.deepcopy(backend["envFrom"])
    engine: Obj = {
        "command": command,
        "env": _engine_env(backend),
        "image": worker["image"],
        "lifecycle": {"preStop": {"exec": {"command": [
            "/bin/sh", "-c", SECOND_PRESTOP if generation == "v1.0.0" else FIRST_PRESTOP]}}},
        "name": "engine",
        "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/health", "port": 8000, "scheme": "HTTP"},
                           "initialDelaySeconds": 90 if generation == "v0.1.0" else 180, "periodSeconds": 5,
                           "successThreshold": 1, "timeoutSeconds": 1},
        "resources": copy.deepcopy(worker.get("resources") or {}),
        "volumeMounts": copy.deepcopy(mounts),
    }  # fmt: skip
    entry: Obj = {"containers": [runtime, engine], "initContainers": [downloader],
                  "terminationGracePeriodSeconds": 300, "volumes": volumes}  # fmt: skip
    ray = {
        "command": ["bash", "-c", f"chmod u+x {MULTI_NODE} && {MULTI_NODE} worker --ray_address=$(ENTRY_ADDRESS)"],
        "image": worker["image"],
        "name": f"{name.lower()}-vllm-worker",
        "resources": copy.deepcopy(worker.get("resources") or {}),
        "volumeMounts": copy.deepcopy(mounts),
    }
    if backend.get("env"):
        ray["env"] = copy.deepcopy(backend["env"])
    worker_pod: Obj = {"containers": [ray], "initContainers": [copy.deepcopy(downloader)],
                       "volumes": copy.deepcopy(volumes)}  # fmt: skip
    if generation == "v1.0.0":
        entry["affinity"] = {}
        worker_pod["affinity"] = {}
    role_replicas = worker.get("replicas", 0)
    role: Obj = {
        "entryTemplate": {"metadata": {"labels": dict(labels)}, "spec": entry},
        "name": "leader",
        "replicas": role_replicas,
        "workerReplicas": 0,
        "workerTemplate": {"spec": worker_pod},
    }
    if generation != "v0.1.0":
        role["workerTemplate"]["metadata"] = {"labels": dict(labels)}
    spec: Obj = {
        "replicas": backend["replicas"] if "replicas" in backend else backend["minReplicas"],
        "template": {"gangPolicy": {"minRoleReplicas": {"leader": role_replicas}}, "restartGracePeriodSeconds": 60,
                     "roles": [role]},
    }  # fmt: skip
    if generation == "v0.1.0":
        spec["topologySpreadConstraints"] = [{
            "labelSelector": {"matchLabels": {"modelserving.volcano.sh/name": model}}, "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}]  # fmt: skip
    if generation != "v1.0.0":
        spec["schedulerName"] = backend.get("schedulerName", "")
    return {
        "apiVersion": WORKLOAD,
        "kind": "ModelServing",
        "metadata": {"labels": labels, "name": f"{model}-{name}", "namespace": document["metadata"]["namespace"],
                     "ownerReferences": _owner(document, uid, controller=generation != "v0.1.0")},
        "spec": spec,
    }  # fmt: skip


def model_server(document: Obj, *, generation: str, uid: str) -> Obj:
    backend = _backend(document)
    model, name = document["metadata"]["name"], backend["name"]
    spec = {
        "inferenceEngine": "vLLM",
        "model": (backend["workers"][0].get("config") or {}).get("served-model-name", model),
        "trafficPolicy": {"retry": {"attempts": 5, "retryInterval": "0s"}},
        "workloadPort": {"port": 8000},
        "workloadSelector": {"matchLabels": {"workload.serving.volcano.sh/model-uid": uid}},
    }
    return {
        "apiVersion": NETWORKING,
        "kind": "ModelServer",
        "metadata": {"labels": _labels(document, name, _kthena_revision(spec), uid), "name": f"{model}-{name}",
                     "namespace": document["metadata"]["namespace"],
                     "ownerReferences": _owner(document, uid, controller=True)},
        "spec": spec,
    }  # fmt: skip


def model_route(document: Obj, *, generation: str, uid: str) -> Obj:
    backend = _backend(document)
    model = document["metadata"]["name"]
    target: Obj = {"modelServerName": f"{model}-{backend['name']}"}
    if generation == "v0.1.0":
        target["weight"] = backend.get("routeWeight", 100)
    rules = [{"name": "default", "targetModels": [target]}]
    spec = {"modelName": document["spec"].get("name") or model, "rules": rules}
    return {
        "apiVersion": NETWORKING,
        "kind": "ModelRoute",
        "metadata": {"labels": _labels(document, "", _kthena_revision(spec), uid), "name": model,
                     "namespace": document["metadata"]["namespace"],
                     "ownerReferences": _owner(document, uid, controller=generation != "v0.1.0")},
        "spec": spec,
    }  # fmt: skip


def autoscaling(document: Obj, *, generation: str, uid: str) -> list[Obj]:
    """The AutoscalingPolicy and Binding of a backend-level (v0.1.0) or model-level (v0.4.0) policy."""
    backend = _backend(document)
    model, name = document["metadata"]["name"], backend["name"]
    policy = backend.get("autoscalingPolicy") if generation == "v0.1.0" else document["spec"].get("autoscalingPolicy")
    if generation == "v1.0.0" or policy is None:
        return []
    target: Obj = {"targetRef": {"kind": "ModelServing", "name": f"{model}-{name}"}}
    leader = {"modelserving.volcano.sh/role": "leader"}
    bounds = {"maxReplicas": backend["maxReplicas"], "minReplicas": backend["minReplicas"]}
    if generation == "v0.1.0":
        target.update(additionalMatchLabels=leader, metricEndpoint={})
        scaling = {"target": target, **bounds}
        binding_spec: Obj = {"policyRef": {"name": f"{model}-{name}"}, "scalingConfiguration": scaling}
    else:
        target["metricEndpoint"] = {"labelSelector": {"matchLabels": leader}}
        binding_spec = {"homogeneousTarget": {"target": target, **bounds}, "policyRef": {"name": f"{model}-{name}"}}

    def child(kind: str, spec: Obj) -> Obj:
        return {
            "apiVersion": WORKLOAD,
            "kind": kind,
            "metadata": {"labels": _labels(document, name, _kthena_revision(spec), uid), "name": f"{model}-{name}",
                         "namespace": document["metadata"]["namespace"],
                         "ownerReferences": _owner(document, uid, controller=True)},
            "spec": spec,
        }  # fmt: skip

    return [child("AutoscalingPolicy", copy.deepcopy(policy)), child("AutoscalingPolicyBinding", binding_spec)]


def children(document: Obj, *, generation: str, uid: str) -> list[Obj]:
    """Every child that Kthena release's controller writes for the ModelBooster, in the order it writes them."""
    return [
        model_serving(document, generation=generation, uid=uid),
        model_server(document, generation=generation, uid=uid),
        model_route(document, generation=generation, uid=uid),
        *autoscaling(document, generation=generation, uid=uid),
    ]
