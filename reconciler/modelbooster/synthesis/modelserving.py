"""One ModelServing per backend (docs/design/synthesis.md §7, §8).

Shapes follow the reference templates, with our fixes: the server worker's own config builds the command
(Q14), `workerReplicas` is never negative (Q12), the spread constraint selects this ModelServing's pods
(Q10), worker affinity and tolerations reach the pods and nothing is pinned to Ascend nodes (Q16), every
engine pod has the `dshm` shared-memory volume, and PD pods carry the same labels as vLLM ones (Q9).
"""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.backend import REQUIRED_WORKERS, BackendPlan, is_disaggregated, require_worker
from reconciler.modelbooster.synthesis.command import launch
from reconciler.modelbooster.synthesis.env import (
    decode_extra_env,
    downloader_env,
    engine_env,
    prefill_extra_env,
    wire_env,
    wire_env_from,
    with_extra,
)
from reconciler.modelbooster.synthesis.errors import SynthesisError
from reconciler.modelbooster.synthesis.labels import pod_labels, stamp_revision
from reconciler.modelbooster.synthesis.owner import child_metadata
from reconciler.modelbooster.synthesis.settings import SynthesisSettings
from shared.api.base import wire_form
from shared.api.modelbooster import DEFAULT_WORKER_PODS, DEFAULT_WORKER_REPLICAS, ModelWorker
from shared.constants import KIND_MODEL_SERVING, LABEL_MODELSERVING_NAME, WORKLOAD_API_VERSION
from shared.engine_config import ConfigError, config_object
from shared.engines.engine import HEALTH_PATH, number_text
from shared.naming import lora_downloader_name, model_downloader_name

DSHM_VOLUME = "dshm"
RESTART_GRACE_PERIOD_SECONDS = 60
TERMINATION_GRACE_PERIOD_SECONDS = 300
ENGINE_READINESS_DELAY_SECONDS = 180
LEADER_ROLE = "leader"

def model_serving(plan: BackendPlan, *, settings: SynthesisSettings, autoscaled: bool) -> dict[str, Any]:
    """`autoscaled`: an autoscaler owns `spec.replicas`, so the revision digest leaves it out."""
    if plan.backend.type not in REQUIRED_WORKERS:
        raise SynthesisError(f"not support model backend type: {plan.backend.type}")
    if is_disaggregated(plan.backend):
        spec = _pd_spec(plan, settings=settings)
    else:
        spec = _server_spec(plan, settings=settings)
    obj = {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": KIND_MODEL_SERVING,
        "metadata": child_metadata(owner=plan.owner, name=plan.resource_name, backend=plan.backend.name),
        "spec": spec,
    }
    return stamp_revision(obj, ignored_spec_fields=("replicas",) if autoscaled else ())


# --- pieces shared by both backend types ------------------------------------------------------------------------


def _config(worker: ModelWorker) -> dict[str, Any] | None:
    try:
        return config_object(worker.config)
    except ConfigError as error:
        raise SynthesisError(f"failed to unmarshal config: {error}") from None


def _replicas(worker: ModelWorker) -> int:
    return DEFAULT_WORKER_REPLICAS if worker.replicas is None else worker.replicas


def _pod_labels(plan: BackendPlan, *, with_uid: bool = True) -> dict[str, str]:
    owner = plan.owner
    return pod_labels(model=owner.name, backend=plan.backend.name, uid=owner.uid if with_uid else None)


def _scheduling(plan: BackendPlan, worker: ModelWorker) -> dict[str, Any]:
    """runtimeClassName, affinity and tolerations, each only when set, at the head of a pod spec."""
    scheduling: dict[str, Any] = {}
    if plan.backend.runtime_class_name:
        scheduling["runtimeClassName"] = plan.backend.runtime_class_name
    if worker.affinity is not None:
        affinity = wire_form(worker.affinity)
        if affinity:
            scheduling["affinity"] = affinity
    if worker.tolerations:
        scheduling["tolerations"] = [wire_form(toleration) for toleration in worker.tolerations]
    return scheduling


def _init_containers(plan: BackendPlan, *, settings: SynthesisSettings) -> list[dict[str, Any]]:
    """The model downloader, then one downloader per LoRA adapter, all writing into the cache volume."""
    backend = plan.backend
    model = plan.owner.name
    downloader: dict[str, Any] = {
        "name": model_downloader_name(model),
        "image": settings.downloader_image,
        "args": ["--source", backend.model_uri, "--output-dir", plan.model_path],
    }
    env = downloader_env(backend.env)
    if env:
        downloader["env"] = env
    if backend.env_from:
        downloader["envFrom"] = wire_env_from(backend.env_from)
    downloader["volumeMounts"] = [plan.cache_mount()]
    containers = [downloader]
    for index, lora in enumerate(plan.loras):
        container: dict[str, Any] = {
            "name": lora_downloader_name(model, index),
            "image": settings.downloader_image,
            "args": ["--source", lora.source, "--output-dir", lora.output_dir],
        }
        if backend.env:
            container["env"] = wire_env(backend.env)
        if backend.env_from:
            container["envFrom"] = wire_env_from(backend.env_from)
        container["volumeMounts"] = [plan.cache_mount()]
        containers.append(container)
    return containers


def _runtime_container(
    plan: BackendPlan, *, settings: SynthesisSettings, env: list[dict[str, Any]], with_env_from: bool
) -> dict[str, Any]:
    """The runtime sidecar: metrics, LoRA management and readiness on the runtime port."""
    container: dict[str, Any] = {
        "name": "runtime",
        "image": settings.runtime_image,
        "ports": [{"containerPort": plan.runtime_port}],
        "env": env,
    }
    if with_env_from and plan.backend.env_from:
        container["envFrom"] = wire_env_from(plan.backend.env_from)
    container["args"] = [
        "--port",
        str(plan.runtime_port),
        "--engine",
        plan.engine.runtime_names[plan.backend.type],
        "--engine-base-url",
        plan.runtime_url,
        "--engine-metrics-path",
        plan.runtime_metrics_path,
        "--pod",
        "$(POD_NAME).$(NAMESPACE)",
        "--model",
        plan.owner.name,
    ]
    return container


def _quantity_text(value: int | float | str) -> str:
    return value if isinstance(value, str) else number_text(value)


def _resources(worker: ModelWorker) -> dict[str, Any]:
    """The worker's resources with every quantity as text, the form the API server stores for pods."""
    if worker.resources is None:
        return {}
    wire = worker.resources.to_wire()
    for key in ("limits", "requests"):
        if key in wire:
            wire[key] = {name: _quantity_text(amount) for name, amount in wire[key].items()}
    return {"resources": wire}


def _image(plan: BackendPlan, worker: ModelWorker, settings: SynthesisSettings) -> dict[str, Any]:
    """The worker's image, else the settings' image of its engine (none for vLLM: its workers name theirs)."""
    image = worker.image or settings.engine_image(plan.engine.name)
    return {"image": image} if image else {}


def _dshm_volume() -> dict[str, Any]:
    return {"name": DSHM_VOLUME, "emptyDir": {"medium": "Memory"}}


def _engine_mounts(plan: BackendPlan) -> list[dict[str, Any]]:
    return [plan.cache_mount(), {"name": DSHM_VOLUME, "mountPath": "/dev/shm"}]


# --- one server worker (vLLM, SGLang), on one pod or across a group of pods --------------------------------------


def _server_spec(plan: BackendPlan, *, settings: SynthesisSettings) -> dict[str, Any]:
    backend = plan.backend
    server = require_worker(backend, "server")
    pods = DEFAULT_WORKER_PODS if server.pods is None else server.pods
    replicas = _replicas(server)
    return {
        "schedulerName": backend.scheduler_name or "",
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {LABEL_MODELSERVING_NAME: plan.resource_name}},
            }
        ],
        "replicas": backend.min_replicas,
        "template": {
            "restartGracePeriodSeconds": RESTART_GRACE_PERIOD_SECONDS,
            "gangPolicy": {"minRoleReplicas": {LEADER_ROLE: replicas}},
            "roles": [
                {
                    "name": LEADER_ROLE,
                    "replicas": replicas,
                    "entryTemplate": {
                        "metadata": {"labels": _pod_labels(plan)},
                        "spec": _entry_pod(plan, server=server, pods=pods, settings=settings),
                    },
                    "workerReplicas": max(pods - 1, 0),
                    # Worker pods serve no HTTP: without the uid label the ModelServer never routes to them.
                    "workerTemplate": {
                        "metadata": {"labels": _pod_labels(plan, with_uid=False)},
                        "spec": _worker_pod(plan, server=server, pods=pods, settings=settings),
                    },
                }
            ],
        },
    }


def _entry_pod(plan: BackendPlan, *, server: ModelWorker, pods: int, settings: SynthesisSettings) -> dict[str, Any]:
    backend = plan.backend
    command = plan.engine.entry_command(launch(plan, worker=server, config=_config(server), pods=pods))
    engine: dict[str, Any] = {
        "name": "engine",
        **_image(plan, server, settings),
        "command": command,
        "env": engine_env(backend.env, settings=settings),
        **_resources(server),
        "volumeMounts": _engine_mounts(plan),
        "readinessProbe": {
            "failureThreshold": 3,
            "httpGet": {"path": HEALTH_PATH, "port": plan.engine_port, "scheme": "HTTP"},
            "initialDelaySeconds": ENGINE_READINESS_DELAY_SECONDS,
            "periodSeconds": 5,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        },
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", plan.engine.drain_script(plan.engine_port)]}}},
    }
    runtime = _runtime_container(
        plan, settings=settings, env=engine_env(backend.env, settings=settings), with_env_from=True
    )
    runtime["readinessProbe"] = {
        "httpGet": {"path": "/health", "port": plan.runtime_port},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }
    return {
        **_scheduling(plan, server),
        "initContainers": _init_containers(plan, settings=settings),
        "terminationGracePeriodSeconds": TERMINATION_GRACE_PERIOD_SECONDS,
        "volumes": [plan.cache_volume(), _dshm_volume()],
        "containers": [runtime, engine],
    }


def _worker_pod(plan: BackendPlan, *, server: ModelWorker, pods: int, settings: SynthesisSettings) -> dict[str, Any]:
    backend = plan.backend
    worker: dict[str, Any] = {
        "name": plan.engine.worker_container(backend.name),
        **_image(plan, server, settings),
        "command": plan.engine.worker_command(launch(plan, worker=server, config=_config(server), pods=pods)),
    }
    if backend.env:
        worker["env"] = wire_env(backend.env)
    worker.update(_resources(server))
    worker["volumeMounts"] = _engine_mounts(plan)
    return {
        **_scheduling(plan, server),
        "volumes": [plan.cache_volume(), _dshm_volume()],
        "initContainers": _init_containers(plan, settings=settings),
        "containers": [worker],
    }


# --- vLLM disaggregated (prefill/decode) ------------------------------------------------------------------------


def _pd_spec(plan: BackendPlan, *, settings: SynthesisSettings) -> dict[str, Any]:
    backend = plan.backend
    prefill = require_worker(backend, "prefill")
    decode = require_worker(backend, "decode")
    return {
        "schedulerName": backend.scheduler_name or "",
        "replicas": backend.min_replicas,
        "template": {
            "restartGracePeriodSeconds": RESTART_GRACE_PERIOD_SECONDS,
            "gangPolicy": {"minRoleReplicas": {"prefill": _replicas(prefill), "decode": _replicas(decode)}},
            "roles": [
                _pd_role(plan, role="prefill", worker=prefill, settings=settings),
                _pd_role(plan, role="decode", worker=decode, settings=settings),
            ],
        },
    }


def _pd_role(plan: BackendPlan, *, role: str, worker: ModelWorker, settings: SynthesisSettings) -> dict[str, Any]:
    return {
        "name": role,
        "replicas": _replicas(worker),
        "entryTemplate": {
            "metadata": {"labels": _pod_labels(plan)},
            "spec": _pd_pod(plan, role=role, worker=worker, settings=settings),
        },
        "workerReplicas": 0,
        # Kthena's ModelServing controller reads the worker template even when it starts no workers.
        "workerTemplate": {"spec": {"containers": []}},
    }


def _pd_env(plan: BackendPlan, *, role: str, settings: SynthesisSettings) -> list[dict[str, Any]]:
    extra = prefill_extra_env() if role == "prefill" else decode_extra_env()
    return with_extra(engine_env(plan.backend.env, settings=settings), extra)


def _pd_pod(plan: BackendPlan, *, role: str, worker: ModelWorker, settings: SynthesisSettings) -> dict[str, Any]:
    port = plan.engine_port
    # Only the decode runtime gets envFrom, as in the reference: it is the one that manages LoRA downloads.
    runtime = _runtime_container(
        plan, settings=settings, env=_pd_env(plan, role=role, settings=settings), with_env_from=role == "decode"
    )
    engine: dict[str, Any] = {
        "name": "vllm",
        **_image(plan, worker, settings),
        "ports": [{"containerPort": port}],
        "env": _pd_env(plan, role=role, settings=settings),
        "command": plan.engine.entry_command(launch(plan, worker=worker, config=_config(worker))),
        "imagePullPolicy": "IfNotPresent",
        **_resources(worker),
        "readinessProbe": {
            "initialDelaySeconds": 5,
            "periodSeconds": 5,
            "failureThreshold": 3,
            "httpGet": {"path": HEALTH_PATH, "port": port},
        },
        "livenessProbe": {
            "initialDelaySeconds": ENGINE_READINESS_DELAY_SECONDS,
            "periodSeconds": 5,
            "failureThreshold": 3,
            "httpGet": {"path": HEALTH_PATH, "port": port},
        },
        "volumeMounts": _engine_mounts(plan),
    }
    return {
        **_scheduling(plan, worker),
        "initContainers": _init_containers(plan, settings=settings),
        "containers": [runtime, engine],
        "volumes": [plan.cache_volume(), _dshm_volume()],
    }
