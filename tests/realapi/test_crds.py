"""The chart's CRDs on a real kube-apiserver v1.36: accepted, Established, served, and stored as written."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client import ApiException

from tests.realapi.crds import chart_crds, served_path


def test_every_chart_crd_is_established_and_served(real_crds: list[dict[str, Any]], real_client: Any) -> None:
    from tests.e2e.harness import raw_request

    assert [crd["metadata"]["name"] for crd in real_crds] == [crd["metadata"]["name"] for crd in chart_crds()]
    for crd in real_crds:
        assert raw_request(real_client, "GET", served_path(crd))["kind"] == f"{crd['spec']['names']['kind']}List"


@pytest.mark.parametrize("index", range(len(chart_crds())), ids=[c["metadata"]["name"] for c in chart_crds()])
def test_crd_spec_round_trips_unchanged(index: int, real_crds: list[dict[str, Any]]) -> None:
    """The server stores our CRD spec as we wrote it (server defaults aside), so a server-side apply by another
    manager (Helm's, then kubectl's) does not conflict on `.spec.versions`."""
    written = chart_crds()[index]["spec"]
    stored = real_crds[index]["spec"]
    # The generator writes nothing the server drops (shared/schema.py, apiserver_form).
    assert _differences(stored, written, "spec") == []


EMPTY_PROPERTIES_DROPPED = ".properties: {} written, dropped by the server"


def _differences(stored: Any, written: Any, path: str) -> list[str]:
    """Where `stored` differs from `written`, by path. Keys only the server has (defaults such as
    `conversion.strategy`) are not differences; keys it dropped and values it changed are."""
    if isinstance(stored, dict) and isinstance(written, dict):
        found: list[str] = []
        for key, value in written.items():
            if key not in stored:
                found.append(
                    path + (EMPTY_PROPERTIES_DROPPED if key == "properties" and value == {} else f".{key}: dropped")
                )
            else:
                found += _differences(stored[key], value, f"{path}.{key}")
        return found
    if isinstance(stored, list) and isinstance(written, list) and len(stored) == len(written):
        return [
            d for i, (s, w) in enumerate(zip(stored, written, strict=True)) for d in _differences(s, w, f"{path}[{i}]")
        ]
    return [] if stored == written else [f"{path}: wrote {written!r}, stored {stored!r}"]


def test_crds_replaced_serves_other_crds_for_a_while(real_crds: list[dict[str, Any]], real_client: Any) -> None:
    """A kind gone (404 page not found on list, as an informer sees it) and an outdated CRD, then the chart's."""
    from tests.e2e.harness import raw_exchange
    from tests.realapi.crds import crds_replaced

    bindings, routes = (
        "autoscalingpolicybindings.workload.serving.volcano.sh",
        "modelroutes.networking.serving.volcano.sh",
    )
    by_name = {crd["metadata"]["name"]: crd for crd in chart_crds()}
    outdated = copy.deepcopy(by_name[routes])
    outdated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    with crds_replaced(real_client, [outdated], removed=[bindings]) as stored:
        assert (
            stored[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            == outdated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        )
        with pytest.raises(ApiException) as gone:
            raw_exchange(real_client, "GET", served_path(by_name[bindings]))
        assert (gone.value.status, gone.value.body) == (404, "404 page not found\n")
    for name in (bindings, routes):
        assert raw_exchange(real_client, "GET", served_path(by_name[name]))[0]["items"] is not None
    restored = raw_exchange(real_client, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{routes}")[0]
    assert (
        restored["spec"]["versions"][0]["schema"]
        == next(crd for crd in real_crds if crd["metadata"]["name"] == routes)["spec"]["versions"][0]["schema"]
    )
