"""Installing CRDs on the real API server and waiting until they are served.

Server-side apply with one field manager and `force`, so re-installing the same (or a changed) CRD is always
accepted: the API server rewrites some schemas (it drops an empty `properties: {}`), and another manager's
apply of the file would conflict on `.spec.versions` (seen on kube-apiserver v1.36).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e.harness import raw_request

ROOT: Final = Path(__file__).resolve().parents[2]
CHART: Final = ROOT / "charts/modelbooster"
CRD_PATH: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FIELD_MANAGER: Final = "realapi-tests"
APPLY: Final = "application/apply-patch+yaml"


def chart_crd_files() -> list[Path]:
    """The CRDs the chart installs: its own (ModelBooster) and those of the child-crds and inferno-crds subcharts."""
    return [
        *sorted((CHART / "crds").glob("*.yaml")),
        *sorted((CHART / "charts/child-crds/crds").glob("*.yaml")),
        *sorted((CHART / "charts/inferno-crds/crds").glob("*.yaml")),
    ]


@functools.cache
def chart_crds() -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(yaml.load(path.read_text(), Loader=loader) for path in chart_crd_files())


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = {c.get("type"): c.get("status") for c in (crd.get("status") or {}).get("conditions") or ()}
    return conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"


def served_path(crd: Mapping[str, Any]) -> str:
    """The list path of the CRD's storage version (cluster-wide for namespaced kinds)."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    return f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"


def apply_crds(api: Any, documents: Iterable[Mapping[str, Any]], *, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Apply every CRD, then wait until each is Established and its kind answers a list; the stored CRDs."""
    documents = list(documents)
    for crd in documents:
        name = crd["metadata"]["name"]
        raw_request(
            api,
            "PATCH",
            f"{CRD_PATH}/{name}?fieldManager={FIELD_MANAGER}&force=true",
            body=dict(crd),
            content_type=APPLY,
        )
    deadline = time.monotonic() + timeout
    stored: list[dict[str, Any]] = []
    for crd in documents:
        name = crd["metadata"]["name"]
        while True:
            current = raw_request(api, "GET", f"{CRD_PATH}/{name}")
            if _established(current) and _lists(api, served_path(current)):
                stored.append(current)
                break
            if time.monotonic() >= deadline:
                raise TimeoutError(f"CRD {name} not established and served after {timeout}s: {current.get('status')}")
            time.sleep(0.05)
    return stored


def _lists(api: Any, path: str) -> bool:
    from kubernetes.client import ApiException

    try:
        raw_request(api, "GET", f"{path}?limit=1")
    except ApiException as error:
        if error.status == 404:  # Established, but the handler is not installed yet
            return False
        raise
    return True


def delete_crds(api: Any, names: Iterable[str], *, timeout: float = 30.0) -> None:
    """Delete CRDs and wait until they are gone (the API server's finalizer removes their objects first)."""
    from kubernetes.client import ApiException

    names = list(names)
    for name in names:
        try:
            raw_request(api, "DELETE", f"{CRD_PATH}/{name}")
        except ApiException as error:
            if error.status != 404:
                raise
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            try:
                raw_request(api, "GET", f"{CRD_PATH}/{name}")
            except ApiException as error:
                if error.status == 404:
                    break
                raise
            if time.monotonic() >= deadline:
                raise TimeoutError(f"CRD {name} still present after {timeout}s")
            time.sleep(0.05)


@contextmanager
def crds_replaced(
    api: Any, documents: Iterable[Mapping[str, Any]] = (), *, removed: Iterable[str] = ()
) -> Iterator[list[dict[str, Any]]]:
    """Serve other CRDs for a while (another Kthena generation's children, an outdated CRD, a kind gone), then
    the chart's again: `documents` applied and the CRDs named in `removed` deleted; yields the applied CRDs as
    stored. CRDs are cluster-wide, so tests that use this must leave the cluster as they found it — this does."""
    documents = list(documents)
    removed = list(removed)
    touched = {crd["metadata"]["name"] for crd in documents} | set(removed)
    try:
        stored = apply_crds(api, documents) if documents else []
        delete_crds(api, removed)
        yield stored
    finally:
        ours = [crd for crd in chart_crds() if crd["metadata"]["name"] in touched]
        others = sorted(touched - {crd["metadata"]["name"] for crd in ours})
        delete_crds(api, others)
        apply_crds(api, ours)
