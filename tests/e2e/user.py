"""What a user (and Kthena's own controllers) do against the cluster, through the real `kubernetes` client.

Any cluster will do (`Session`): the e2e harness's fake-backed `Cluster`, or tests/realapi's real one.

Everything here goes over HTTP with the user's client (User-Agent `USER_AGENT`), so it passes admission
like `kubectl` would. Waiting uses watches, like `kubectl get -w` / `kubectl wait`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Protocol

import yaml

Obj = dict[str, Any]

WORKLOAD: Final = "workload.serving.volcano.sh"
NETWORKING: Final = "networking.serving.volcano.sh"
VERSION: Final = "v1alpha1"
EXAMPLES: Final = Path(__file__).resolve().parents[2] / "examples"

# Child kinds as (group, plural), and how each is named (docs/design/synthesis.md §2).
MODEL_SERVINGS: Final = (WORKLOAD, "modelservings")
MODEL_SERVERS: Final = (NETWORKING, "modelservers")
MODEL_ROUTES: Final = (NETWORKING, "modelroutes")
AUTOSCALING_POLICIES: Final = (WORKLOAD, "autoscalingpolicies")
AUTOSCALING_BINDINGS: Final = (WORKLOAD, "autoscalingpolicybindings")
CHILD_KINDS: Final = (MODEL_SERVINGS, MODEL_SERVERS, MODEL_ROUTES, AUTOSCALING_POLICIES, AUTOSCALING_BINDINGS)


class Session(Protocol):
    """What these helpers need of a cluster: the user's client, and a check that our processes still run."""

    @property
    def user(self) -> Any: ...  # kubernetes.client.ApiClient

    def check_processes(self) -> None: ...

    def logs(self) -> str: ...


def load_example(relative: str) -> Obj:
    (document,) = [doc for doc in yaml.safe_load_all((EXAMPLES / relative).read_text()) if doc]
    return dict(document)


def renamed(document: Obj, name: str, namespace: str | None = None) -> Obj:
    copied = copy.deepcopy(document)
    copied["metadata"]["name"] = name
    if namespace is not None:
        copied["metadata"]["namespace"] = namespace
    return copied


def custom(cluster: Session) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(cluster.user)


def core(cluster: Session) -> Any:
    from kubernetes import client

    return client.CoreV1Api(cluster.user)


def create_booster(cluster: Session, document: Obj, **options: Any) -> Obj:
    namespace = document["metadata"].get("namespace") or "default"
    created: Obj = custom(cluster).create_namespaced_custom_object(
        WORKLOAD, VERSION, namespace, "modelboosters", document, **options
    )
    return created


def get_object(cluster: Session, kind: tuple[str, str], namespace: str, name: str) -> Obj | None:
    """Read through the API (a 404 is None)."""
    from kubernetes.client import ApiException

    group, plural = kind
    try:
        found: Obj = custom(cluster).get_namespaced_custom_object(group, VERSION, namespace, plural, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


def get_booster(cluster: Session, namespace: str, name: str) -> Obj | None:
    return get_object(cluster, (WORKLOAD, "modelboosters"), namespace, name)


def delete_booster(cluster: Session, namespace: str, name: str) -> None:
    custom(cluster).delete_namespaced_custom_object(WORKLOAD, VERSION, namespace, "modelboosters", name)


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for entry in ((obj or {}).get("status") or {}).get("conditions") or ():
        if entry.get("type") == kind:
            return dict(entry)
    return None


def watch_booster(
    cluster: Session, namespace: str, name: str, until: Callable[[Obj], bool], *, timeout: float = 10.0
) -> Obj:
    """Watch one ModelBooster (like `kubectl get -w`) until `until(obj)` holds; the object that satisfied it."""
    from kubernetes import watch

    deadline = time.monotonic() + timeout
    last: Obj | None = None
    while time.monotonic() < deadline:
        cluster.check_processes()
        stream = watch.Watch()  # type: ignore[no-untyped-call]
        remaining = max(1, int(deadline - time.monotonic()))
        for event in stream.stream(  # type: ignore[no-untyped-call]
            custom(cluster).list_namespaced_custom_object,
            WORKLOAD,
            VERSION,
            namespace,
            "modelboosters",
            field_selector=f"metadata.name={name}",
            timeout_seconds=remaining,
            # "Any version": the watch cache answers at once with what it holds. Without a resourceVersion a real
            # kube-apiserver first waits for its cache to reach etcd's current revision; on an etcd without
            # progress notifications (Debian's 3.4) that fails after 3 s with 504 "Too large resource version"
            # whenever other kinds were written meanwhile (tests/realapi/differential.py).
            resource_version="0",
        ):
            obj = event["object"]
            if event["type"] in ("ADDED", "MODIFIED"):
                last = obj
                if until(obj):
                    stream.stop()  # type: ignore[no-untyped-call]
                    return dict(obj)
    raise TimeoutError(
        f"ModelBooster {namespace}/{name} did not reach the wanted state in {timeout}s; last status: "
        f"{(last or {}).get('status')}\n{cluster.logs()}"
    )


def wait_condition(cluster: Session, namespace: str, name: str, kind: str, status: str, **kwargs: Any) -> Obj:
    def holds(obj: Obj) -> bool:
        found = condition(obj, kind)
        current = (obj.get("status") or {}).get("observedGeneration") == obj["metadata"].get("generation")
        return found is not None and found.get("status") == status and current

    return watch_booster(cluster, namespace, name, holds, **kwargs)


def mark_serving(cluster: Session, namespace: str, name: str, *, available: bool, replicas: int) -> None:
    """What Kthena's ModelServing controller does when the pods are up: status via the status subresource."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = "True" if available else "False"
    body = {
        "status": {
            "replicas": replicas,
            "availableReplicas": replicas if available else 0,
            "conditions": [
                {
                    "type": "Available",
                    "status": status,
                    "reason": "AllGroupsReady" if available else "GroupsNotReady",
                    "message": "" if available else "waiting for pods",
                    "lastTransitionTime": now,
                }
            ],
        }
    }
    custom(cluster).patch_namespaced_custom_object_status(WORKLOAD, VERSION, namespace, "modelservings", name, body)


def wait_gone(cluster: Session, kind: tuple[str, str], namespace: str, name: str, *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while get_object(cluster, kind, namespace, name) is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{kind[1]} {namespace}/{name} still exists after {timeout}s")
        time.sleep(0.05)


def backends_of(booster: Obj) -> list[Obj]:
    """The backends of any shape: the one `spec.backend` (Kthena v0.2 and later), or the list `spec.backends`."""
    spec = booster["spec"]
    return [spec["backend"]] if "backend" in spec else list(spec["backends"])


def children_names(booster: Obj) -> dict[tuple[str, str], set[str]]:
    """The children a ModelBooster must have, named by rule: ModelServing and ModelServer `<model>-<backend>`
    per backend, one ModelRoute `<model>`, AutoscalingPolicy + Binding `<model>` for model-level autoscaling
    over `spec.backends`, or `<model>-<backend>` for each backend with its own policy (a single `spec.backend`'s
    policy is the model-level one, as in Kthena v0.2-v0.4)."""
    model = booster["metadata"]["name"]
    spec = booster["spec"]
    per_backend = {f"{model}-{backend['name']}" for backend in backends_of(booster)}
    if spec.get("autoscalingPolicy") and spec.get("backend"):
        scaled = per_backend
    elif spec.get("autoscalingPolicy"):
        scaled = {model}
    else:
        scaled = {f"{model}-{b['name']}" for b in backends_of(booster) if b.get("autoscalingPolicy")}
    return {
        MODEL_SERVINGS: per_backend,
        MODEL_SERVERS: per_backend,
        MODEL_ROUTES: {model},
        AUTOSCALING_POLICIES: scaled,
        AUTOSCALING_BINDINGS: scaled,
    }
