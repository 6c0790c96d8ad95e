"""`modelbooster rollout` against the fake API server (in a thread): the annotation it writes, what it prints, and
its exit codes (docs/design/reconciler.md §16). What the reconciler does with the request:
tests/reconciler/test_takeover.py and tests/reconciler/test_settings.py."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from modelbooster import rollout
from shared.rollout import ANNOTATION_ROLLOUT
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import crd_documents
from tests.takeover import kthena

Obj = dict[str, Any]


@pytest.fixture
def cluster(fake_apiserver: FakeApiServer, tmp_path: Path) -> tuple[FakeApiServer, str]:
    """The fake with our CRDs, two ModelBoosters in `team` (its kubeconfig's namespace) and one in `other`."""
    for document in crd_documents():
        fake_apiserver.register_crd(copy.deepcopy(document))
    for namespace in ("team", "other"):
        fake_apiserver.create_namespace(namespace)
    fake_apiserver.create(kthena.booster("v04", "team"))
    fake_apiserver.create(kthena.booster("v1", "team"))
    status = {"conditions": [{"type": "UpToDate", "status": "False", "reason": "OlderRendering",
                              "lastTransitionTime": "2026-11-27T10:00:00Z",
                              "message": "1 of 1 ModelServing runs an older rendering than this version of "
                              "modelbooster renders (takeover-v1-cpu); it is kept, so that no pod restarts, until "
                              "..."}]}  # fmt: skip
    with client.ApiClient(fake_apiserver.configuration()) as api:
        client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "workload.serving.volcano.sh", "v1alpha1", "team", "modelboosters", "takeover-v1", {"status": status}
        )
    fake_apiserver.create(kthena.booster("v01", "other"))
    kubeconfig = fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig", namespace="team")
    return fake_apiserver, str(kubeconfig)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="modelbooster rollout")
    rollout.add_arguments(parser)
    code = rollout.run(parser.parse_args(list(argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def annotation(fake: FakeApiServer, namespace: str, name: str) -> str | None:
    stored = fake.get("workload.serving.volcano.sh/v1alpha1", "modelboosters", name, namespace) or {}
    value = (stored["metadata"].get("annotations") or {}).get(ANNOTATION_ROLLOUT)
    return value if isinstance(value, str) else None


def test_a_named_booster_gets_the_request_in_the_context_namespace(
    cluster: tuple[FakeApiServer, str], capsys: pytest.CaptureFixture[str]
) -> None:
    fake, kubeconfig = cluster
    fake.requests.clear()
    code, out, err = run(capsys, "takeover-v1", "--kubeconfig", kubeconfig)
    assert (code, err) == (0, "")
    assert out == (
        "modelbooster.workload.serving.volcano.sh/takeover-v1 -n team: rollout requested (UpToDate=False: 1 of 1 "
        "ModelServing runs an older rendering than this version of modelbooster renders (takeover-v1-cpu))\n"
    )
    stamp = annotation(fake, "team", "takeover-v1")
    assert stamp is not None
    assert len(stamp) == len("2026-11-27T10:00:00Z")
    assert annotation(fake, "team", "takeover-v04") is None
    writes = [e for e in fake.requests.writes() if e.resource == "modelboosters"]
    assert [(e.verb, e.name, e.content_type) for e in writes] == [
        ("patch", "takeover-v1", "application/merge-patch+json")
    ]
    assert writes[0].query.get("fieldManager") == "modelbooster-rollout"


def test_dry_run_writes_nothing_and_all_namespaces_lists_every_booster(
    cluster: tuple[FakeApiServer, str], capsys: pytest.CaptureFixture[str]
) -> None:
    fake, kubeconfig = cluster
    fake.requests.clear()
    code, out, _ = run(capsys, "-A", "--dry-run", "--kubeconfig", kubeconfig)
    assert code == 0
    assert out.splitlines() == [
        "modelbooster.workload.serving.volcano.sh/takeover-v01 -n other: would roll out (no UpToDate condition yet)",
        "modelbooster.workload.serving.volcano.sh/takeover-v04 -n team: would roll out (no UpToDate condition yet)",
        "modelbooster.workload.serving.volcano.sh/takeover-v1 -n team: would roll out (UpToDate=False: 1 of 1 "
        "ModelServing runs an older rendering than this version of modelbooster renders (takeover-v1-cpu))",
    ]
    assert fake.requests.writes() == []
    code, out, _ = run(capsys, "--all", "-n", "other", "--kubeconfig", kubeconfig)
    assert code == 0
    assert annotation(fake, "other", "takeover-v01") is not None
    assert annotation(fake, "team", "takeover-v04") is None


def test_a_missing_booster_is_one_line_and_exit_1_and_bad_arguments_exit_2(
    cluster: tuple[FakeApiServer, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, kubeconfig = cluster
    code, out, err = run(capsys, "takeover-v1", "nope", "--kubeconfig", kubeconfig)
    assert code == 1
    assert out.startswith("modelbooster.workload.serving.volcano.sh/takeover-v1 -n team: rollout requested")
    assert err.startswith("modelbooster.workload.serving.volcano.sh/nope -n team: 404 NotFound")
    assert err.count("\n") == 1
    assert run(capsys, "--kubeconfig", kubeconfig)[0] == 2
    assert run(capsys, "x", "--all", "--kubeconfig", kubeconfig)[0] == 2
    code, _, err = run(capsys, "x", "--kubeconfig", str(tmp_path / "missing"))
    assert code == 2
    assert err.startswith("modelbooster rollout: no cluster to talk to: ")


@pytest.mark.parametrize("given", ["--kubeconfig", "$KUBECONFIG"])
def test_a_missing_kubeconfig_is_one_clear_line(
    given: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not "Config not found" from the client library, then "Invalid kube-config file. Expected key current-context".
    missing = str(tmp_path / "missing")
    monkeypatch.setenv("KUBECONFIG", missing)
    code, out, err = run(capsys, "x", *(["--kubeconfig", missing] if given == "--kubeconfig" else []))
    assert (code, out) == (2, "")
    assert err == (
        f"modelbooster rollout: no cluster to talk to: {given}: no such file: {missing} (--kubeconfig or $KUBECONFIG "
        "names the cluster's kubeconfig)\n"
    )
