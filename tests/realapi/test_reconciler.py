"""Our reconciler process against a real kube-apiserver v1.36: converges, restores drift, recreates, prunes,
goes idle, and its children are garbage-collected by kube-controller-manager."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.user import (
    CHILD_KINDS,
    children_names,
    create_booster,
    get_object,
    load_example,
    renamed,
    wait_condition,
)
from tests.realapi.controlplane import RealCluster
from tests.realapi.reconciler import running_reconciler
from tests.realapi.session import RealSession


def _children(session: RealSession, namespace: str) -> dict[tuple[str, str], set[str]]:
    from tests.e2e.user import custom

    found = {}
    for group, plural in CHILD_KINDS:
        items = custom(session).list_namespaced_custom_object(group, "v1alpha1", namespace, plural)["items"]
        found[(group, plural)] = {item["metadata"]["name"] for item in items}
    return found


def test_reconciler_converges(
    real_api: RealCluster, real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession, tmp_path: Path
) -> None:
    booster = renamed(load_example("single-vllm-cpu.yaml"), "qwen", real_namespace)
    create_booster(real_user, booster)
    with running_reconciler(real_api, namespace=real_namespace, workdir=tmp_path) as reconciler:
        real_user.processes.append(reconciler.process)
        stored = wait_condition(real_user, real_namespace, "qwen", "Initialized", "True", timeout=30)
        assert _children(real_user, real_namespace) == children_names(stored)
        assert get_object(real_user, CHILD_KINDS[0], real_namespace, "qwen-" + booster["spec"]["backends"][0]["name"])
