"""Which uid label a ModelServer selects by (reconciler/modelbooster/pod_selection.py, docs/design/reconciler.md
§16): the one the ModelServing as written gives its pods, when that is this model's stand-in; else the uid."""

from __future__ import annotations

import json
from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVER, child_kind_of
from reconciler.modelbooster.pod_selection import selecting_running_pods, template_uid
from reconciler.modelbooster.synthesis import revision_digest, unowned_uid
from reconciler.runtime.apply import Desired
from shared.constants import LABEL_MODEL_UID, LABEL_REVISION
from tests.unit.synthesis.support import UID, render, vllm_doc

STANDIN = unowned_uid("ns", "m")


def pd_doc() -> dict[str, Any]:
    workers = [{"type": kind, "replicas": 1, "pods": 1} for kind in ("prefill", "decode")]
    return vllm_doc(type="vLLMDisaggregated", workers=workers)


def desired(doc: dict[str, Any], *, pods: str = UID) -> list[Desired]:
    """The children of `doc`, with the ModelServing's pod templates carrying the uid label `pods` (as kept)."""
    children = []
    for rendered in render(doc):
        kind = child_kind_of(rendered)
        assert kind is not None
        obj = rendered
        if rendered["kind"] == "ModelServing":
            obj = {**rendered, "spec": json.loads(json.dumps(rendered["spec"]).replace(UID, pods))}
        children.append(Desired(kind=kind, obj=obj))
    return children


def selected(children: list[Desired]) -> dict[str, Any]:
    (server,) = [child.obj for child in children if child.kind == MODEL_SERVER]
    return dict(server["spec"]["workloadSelector"])


def test_a_kept_template_with_the_stand_in_is_selected_by_it_in_every_role() -> None:
    for doc in (vllm_doc(), pd_doc()):
        children = desired(doc, pods=STANDIN)
        serving = next(child.obj for child in children if child.obj["kind"] == "ModelServing")
        assert template_uid(serving) == STANDIN
        before = selected(desired(doc))
        after = selecting_running_pods(doc, children)
        assert selected(after) == {**before, "matchLabels": {**before["matchLabels"], LABEL_MODEL_UID: STANDIN}}
        server = next(child.obj for child in after if child.kind == MODEL_SERVER)
        assert server["metadata"]["labels"][LABEL_MODEL_UID] == UID  # the ModelServer itself is the ModelBooster's
        assert server["metadata"]["labels"][LABEL_REVISION] == revision_digest(server)  # names what it holds
        # Nothing else changes, and the desired objects given are left as they were.
        assert [child.obj for child in after if child.kind != MODEL_SERVER] == [
            child.obj for child in children if child.kind != MODEL_SERVER
        ]
        assert selected(children)["matchLabels"][LABEL_MODEL_UID] == UID


def test_the_current_rendering_and_any_other_label_are_selected_by_the_uid() -> None:
    doc = vllm_doc()
    assert selecting_running_pods(doc, desired(doc)) == desired(doc)
    for foreign in (unowned_uid("ns", "other"), unowned_uid("other-ns", "m"), "6f0e4a54-1b1c-4a4e-9f55-0e4bd1b0c0de"):
        assert selected(selecting_running_pods(doc, desired(doc, pods=foreign)))["matchLabels"][LABEL_MODEL_UID] == UID


def test_roles_that_disagree_are_selected_by_the_uid() -> None:
    doc = pd_doc()
    children = desired(doc)
    serving = next(child.obj for child in children if child.obj["kind"] == "ModelServing")
    serving["spec"]["template"]["roles"][0]["entryTemplate"]["metadata"]["labels"][LABEL_MODEL_UID] = STANDIN
    assert template_uid(serving) is None
    assert selected(selecting_running_pods(doc, children))["matchLabels"][LABEL_MODEL_UID] == UID
