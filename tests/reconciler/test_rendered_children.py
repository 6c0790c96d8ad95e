"""`modelbooster render | kubectl apply -f -` and then the ModelBooster itself (issue 38): children rendered from a
manifest without `metadata.uid` carry no owner reference (one naming a uid no object has is garbage-collected), and
when the ModelBooster is created the reconciler adopts them (docs/design/reconciler.md §4) without changing a
ModelServing's pod template (§16: taken over as it runs), so no pod restarts; its ModelServer selects those pods by
the stand-in uid label they carry until a rollout gives them the real one (§16, "The pods' uid label")."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from reconciler.modelbooster.kinds import MODEL_BOOSTER, MODEL_ROUTE, MODEL_SERVER, MODEL_SERVING
from reconciler.modelbooster.synthesis import unowned_uid
from shared.constants import LABEL_MODEL_UID
from shared.rollout import ANNOTATION_ROLLOUT
from tests.fakeapi.server import FakeApiServer
from tests.reconciler.harness import NS, Cluster, RunningReconciler, booster, eventually, quiet

KINDS = (MODEL_SERVING, MODEL_SERVER, MODEL_ROUTE)


def rendered(obj: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[Any], str]:
    source = tmp_path / "m.yaml"
    source.write_text(yaml.safe_dump(obj), encoding="utf-8")
    parser = argparse.ArgumentParser()
    render_cli.add_arguments(parser)
    assert render_cli.run(parser.parse_args(["-f", str(source)])) == 0
    captured = capsys.readouterr()
    return list(yaml.safe_load_all(captured.out)), captured.err


def test_children_rendered_without_a_uid_have_no_owner_and_a_stand_in_of_their_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    children, err = rendered(booster("m"), tmp_path, capsys)
    others, _ = rendered(booster("other"), tmp_path, capsys)
    assert [child["metadata"].get("ownerReferences") for child in children] == [None, None, None]
    standin = children[0]["metadata"]["labels"][LABEL_MODEL_UID]
    assert standin.startswith("unowned-")
    assert others[0]["metadata"]["labels"][LABEL_MODEL_UID] != standin  # one model's server never selects another's
    assert children[1]["spec"]["workloadSelector"]["matchLabels"][LABEL_MODEL_UID] == standin
    assert "00000000-0000-0000-0000-000000000000" not in yaml.safe_dump_all(children)
    assert "the reconciler adopts them" in err
    # With the uid (`kubectl get mb m -o yaml | modelbooster render -f -`), the children are owned as the
    # reconciler writes them.
    stored = booster("m")
    stored["metadata"]["uid"] = "6f0e4a54-1b1c-4a4e-9f55-0e4bd1b0c0de"
    owned, err = rendered(stored, tmp_path, capsys)
    assert [child["metadata"]["ownerReferences"][0]["uid"] for child in owned] == [stored["metadata"]["uid"]] * 3
    assert "adopts" not in err


def applied_then_created(
    cluster: Cluster, fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], str]:
    """`render | kubectl apply -f -`, then the ModelBooster created: the ModelServing as applied, and the uid."""
    obj = booster("m")
    children, _ = rendered(obj, tmp_path, capsys)
    for child in children:
        fake.create(copy.deepcopy(child))
    applied = cluster.get(MODEL_SERVING, "m-a") or {}
    return applied, str(cluster.create_booster(obj)["metadata"]["uid"])


async def test_the_reconciler_adopts_rendered_children_without_changing_a_pod_template(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    applied, uid = applied_then_created(cluster, fake, tmp_path, capsys)

    def owners() -> list[list[tuple[str, bool]]]:
        refs = [((cluster.get(kind, name) or {})["metadata"].get("ownerReferences") or [])
                for kind in KINDS for name in cluster.names(kind)]  # fmt: skip
        return [[(ref["uid"], bool(ref.get("controller"))) for ref in found] for found in refs]

    await eventually(lambda: owners() == [[(uid, True)]] * 3, message="adopted")
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    await quiet(0.3)
    assert cluster.condition("m", "Failed") == "False"
    serving = cluster.get(MODEL_SERVING, "m-a") or {}
    assert serving["spec"]["template"] == applied["spec"]["template"]  # pods not restarted
    assert serving["metadata"]["generation"] == applied["metadata"]["generation"]
    assert serving["metadata"]["labels"][LABEL_MODEL_UID] == uid
    assert not any(e.verb == "create" for e in reconciler.writes() if e.resource not in ("events", "modelboosters"))
    assert "ModelServing ns/m-a" in cluster.events("Adopted")[0]["message"]
    # Owned now: they go with their ModelBooster.
    await cluster.delete(MODEL_BOOSTER, "m")
    await eventually(lambda: all(cluster.names(kind, NS) == [] for kind in KINDS), message="garbage-collected")


def selected_and_carried(cluster: Cluster) -> tuple[str, str]:
    """The uid label the ModelServer selects by, and the one the ModelServing's entry pods carry."""
    selector = (cluster.get(MODEL_SERVER, "m-a") or {})["spec"]["workloadSelector"]["matchLabels"]
    template = (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["template"]["roles"][0]["entryTemplate"]
    return selector[LABEL_MODEL_UID], template["metadata"]["labels"][LABEL_MODEL_UID]


async def test_the_adopted_model_server_selects_the_running_pods(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    applied, uid = applied_then_created(cluster, fake, tmp_path, capsys)
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    await quiet(0.3)
    # The pods keep the stand-in they were created with (no restart), and the ModelServer routes to them at once.
    assert selected_and_carried(cluster) == (unowned_uid(NS, "m"), unowned_uid(NS, "m"))
    assert (cluster.get(MODEL_SERVING, "m-a") or {})["spec"]["template"] == applied["spec"]["template"]
    assert (cluster.get(MODEL_SERVER, "m-a") or {})["metadata"]["labels"][LABEL_MODEL_UID] == uid
    # A rollout moves the pods to the current rendering, and the ModelServer back to the real uid.
    await cluster.patch(MODEL_BOOSTER, "m", {"metadata": {"annotations": {ANNOTATION_ROLLOUT: "now"}}})
    await eventually(lambda: selected_and_carried(cluster) == (uid, uid), message="selects by the uid again")


async def test_a_template_carrying_another_uid_label_is_not_followed(
    cluster: Cluster, fake: FakeApiServer, reconciler: RunningReconciler, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """Only this model's own stand-in is followed: a template taken over with another model's uid label (copied,
    or another model's stand-in) does not make this model's ModelServer select that model's pods."""
    obj = booster("m")
    children, _ = rendered(obj, tmp_path, capsys)
    other = unowned_uid(NS, "other")
    for child in children:
        fake.create(copy.deepcopy(json.loads(json.dumps(child).replace(unowned_uid(NS, "m"), other))))
    uid = str(cluster.create_booster(obj)["metadata"]["uid"])
    await eventually(lambda: cluster.condition("m", "Initialized") == "True", message="Initialized")
    await quiet(0.3)
    assert selected_and_carried(cluster) == (uid, other)
