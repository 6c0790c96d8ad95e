"""`kubectl get servers` is ambiguous beside Linkerd (servers.policy.linkerd.io): Inferno's Server has a short name
of its own, in the generated CRD and the chart's copy of it (shared/api/inferno.py, shared/crds.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from shared.crds import KINDS, crd

ROOT = Path(__file__).resolve().parents[4]
SERVER_CRD = ROOT / "charts/modelbooster/charts/inferno-crds/crds/inferno.platform.ai_servers.yaml"
# Short names and plurals of kinds often installed beside us: Linkerd's Server (`srv`), core and apps kinds.
TAKEN = {"srv", "servers", "svc", "deploy", "rs", "sts", "po", "ns", "hpa", "so", "mb"}


def test_the_server_crd_has_a_short_name_no_neighbour_uses() -> None:
    server = next(kind for kind in KINDS if kind.kind == "Server")
    names = crd(server)["spec"]["names"]
    assert names["shortNames"] == ["infsrv"]
    assert yaml.safe_load(SERVER_CRD.read_text())["spec"]["names"]["shortNames"] == ["infsrv"]
    every_short_name = [name for kind in KINDS for name in crd(kind)["spec"]["names"].get("shortNames", ())]
    assert len(every_short_name) == len(set(every_short_name))
    assert not set(names["shortNames"]) & TAKEN
