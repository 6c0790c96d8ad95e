"""Which rendering a ModelServing runs (reconciler/modelbooster/rollout.py, docs/design/reconciler.md §16):
taken over as it is, kept, rolled on intent, held back on an immutable field; and the pieces it stands on."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.rollout import (
    Memo,
    decide,
    pod_shaping,
    rendering_input,
    stored_digest,
    template_digest,
)
from reconciler.modelbooster.synthesis import synthesize
from reconciler.runtime.apply import Desired
from reconciler.runtime.defaulting import with_defaults
from reconciler.runtime.immutable import immutable_paths
from shared.constants import LABEL_REVISION
from shared.rollout import ANNOTATION_ROLLOUT, ANNOTATION_TEMPLATE, ANNOTATION_TEMPLATE_INPUT, NOT_POD_SHAPING
from shared.validation import parse_modelbooster
from tests.reconciler.harness import crd_documents
from tests.takeover import kthena

Obj = dict[str, Any]
UID = "11111111-2222-4333-8444-555555555555"
MANAGER = "modelbooster"
GANG = ("spec", "template", "gangPolicy", "minRoleReplicas")


def serving_schema() -> Obj:
    crd = next(d for d in crd_documents() if d["spec"]["names"]["kind"] == "ModelServing")
    schema: Obj = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def booster(**changes: Any) -> Obj:
    document = kthena.booster("v01", "ns")
    document["metadata"]["uid"] = UID
    document["spec"]["backends"][0].update(changes)
    return document


def desired_serving(document: Obj) -> Desired:
    typed = parse_modelbooster(copy.deepcopy(document))
    serving = next(o for o in synthesize(typed) if o["kind"] == "ModelServing")
    return Desired(MODEL_SERVING, serving)


def stored(obj: Obj, *, annotations: dict[str, str] | None = None, managed: list[Obj] | None = None) -> Obj:
    """`obj` as the API server would hand it back: with the CRD's defaults, and the given metadata."""
    live = copy.deepcopy(obj)
    live["spec"] = with_defaults({"spec": live["spec"]}, serving_schema())["spec"]
    meta = live["metadata"]
    meta["annotations"] = {**meta.get("annotations", {}), **(annotations or {})}
    meta["managedFields"] = managed or [{"manager": MANAGER, "operation": "Apply", "time": "2026-01-01T00:00:10Z",
                                         "fieldsV1": {"f:metadata": {}}}]  # fmt: skip
    return live


def run(desired: Desired, live: Obj | None, source: str = "s1") -> Any:
    return decide(desired, live, source=source, schema=serving_schema(), immutable=[GANG], manager=MANAGER)


def test_a_new_serving_records_the_digest_of_what_the_server_stores() -> None:
    desired = desired_serving(booster())
    result = run(desired, None)
    assert result.written == stored_digest(desired, serving_schema()) == template_digest(stored(desired.obj))
    assert result.written != template_digest(desired.obj)  # the CRD's defaults count (recoveryPolicy, ...)
    annotations = result.desired.obj["metadata"]["annotations"]
    assert annotations == {ANNOTATION_TEMPLATE: result.written, ANNOTATION_TEMPLATE_INPUT: "s1"}
    assert not result.older


def test_a_serving_without_our_annotation_is_taken_over_as_it_runs() -> None:
    document = booster()
    uid = UID
    live = kthena.model_serving(document, generation="v0.1.0", uid=uid)
    desired = desired_serving(document)
    result = run(desired, live)
    assert result.older
    assert result.written is None
    assert not result.conflicts
    assert result.desired.obj["spec"] == {**live["spec"], "replicas": desired.obj["spec"]["replicas"]}
    meta = result.desired.obj["metadata"]
    assert meta["annotations"] == {ANNOTATION_TEMPLATE: template_digest(live), ANNOTATION_TEMPLATE_INPUT: "s1"}
    assert meta["labels"][LABEL_REVISION] == live["metadata"]["labels"][LABEL_REVISION]  # names what it runs
    assert meta["ownerReferences"] == desired.obj["metadata"]["ownerReferences"]  # ownership converges


def test_a_kept_serving_stays_while_the_input_is_the_same_and_rolls_when_it_changes() -> None:
    document = booster()
    old = kthena.model_serving(document, generation="v0.1.0", uid=UID)
    live = stored(old, annotations={ANNOTATION_TEMPLATE: template_digest(stored(old)), ANNOTATION_TEMPLATE_INPUT: "s1"})
    desired = desired_serving(document)
    kept = run(desired, live, source="s1")
    assert kept.older
    assert kept.written is None
    assert pod_shaping(kept.desired.obj) == pod_shaping(live)
    rolled = run(desired, live, source="s2")
    assert not rolled.older
    assert rolled.written == stored_digest(desired, serving_schema())
    assert pod_shaping(rolled.desired.obj) == pod_shaping(desired.obj)


def test_a_current_serving_only_takes_the_new_input() -> None:
    desired = desired_serving(booster())
    live = stored(desired.obj, annotations={ANNOTATION_TEMPLATE: stored_digest(desired, serving_schema()),
                                            ANNOTATION_TEMPLATE_INPUT: "s1"})  # fmt: skip
    result = run(desired, live, source="s2")
    assert not result.older
    assert result.written is None
    assert result.desired.obj["metadata"]["annotations"][ANNOTATION_TEMPLATE_INPUT] == "s2"
    assert result.desired.obj["metadata"]["labels"] == desired.obj["metadata"]["labels"]


def test_a_template_written_by_someone_since_is_rolled_and_one_the_server_reshaped_is_recorded() -> None:
    document = booster()
    old = kthena.model_serving(document, generation="v0.1.0", uid=UID)
    recorded = template_digest(stored(old))
    tampered = stored(old, annotations={ANNOTATION_TEMPLATE: recorded, ANNOTATION_TEMPLATE_INPUT: "s1"}, managed=[
        {"manager": MANAGER, "operation": "Apply", "time": "2026-01-01T00:00:10Z", "fieldsV1": {}},
        {"manager": "kubectl-patch", "operation": "Update", "time": "2026-01-01T00:00:20Z",
         "fieldsV1": {"f:spec": {"f:template": {}}}},
    ])  # fmt: skip
    tampered["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["hostNetwork"] = True
    desired = desired_serving(document)
    assert run(desired, tampered).written is not None  # rolled to the current rendering

    # The same difference with no write of the spec since ours (the predecessor's entry is older): a CRD change
    # reshaped what is stored. Recorded anew, not rolled.
    reshaped = copy.deepcopy(tampered)
    reshaped["metadata"]["managedFields"][1] = {"manager": "kthena", "operation": "Update",
                                                "time": "2026-01-01T00:00:05Z", "fieldsV1": {"f:spec": {}}}
    result = run(desired, reshaped)
    assert result.written is None
    assert result.older
    assert result.desired.obj["metadata"]["annotations"][ANNOTATION_TEMPLATE] == template_digest(reshaped)
    # ...but our own time is no excuse for a spec written in the same second.
    same_second = copy.deepcopy(tampered)
    same_second["metadata"]["managedFields"][1]["time"] = "2026-01-01T00:00:10Z"
    assert run(desired, same_second).written is not None


def test_an_immutable_field_holds_the_roll_back() -> None:
    document = booster()
    old = kthena.model_serving(document, generation="v0.1.0", uid=UID)
    old["spec"]["template"]["gangPolicy"]["minRoleReplicas"] = {"leader": 0}
    live = stored(old, annotations={ANNOTATION_TEMPLATE: template_digest(stored(old)), ANNOTATION_TEMPLATE_INPUT: "s1"})
    result = run(desired_serving(document), live, source="s2")
    assert result.older
    assert result.written is None
    [conflict] = result.conflicts
    assert (conflict.path, conflict.live, conflict.desired) == (GANG, {"leader": 0}, {"leader": 1})
    assert conflict.describe(live) == (
        'spec.template.gangPolicy.minRoleReplicas is {"leader":0}, the ModelBooster now renders {"leader":1}'
    )
    # The recorded input stays, so the next reconcile sees the same wish (and says so), not a settled one.
    assert result.desired.obj["metadata"]["annotations"][ANNOTATION_TEMPLATE_INPUT] == "s1"
    assert pod_shaping(result.desired.obj) == pod_shaping(live)


def test_the_input_is_what_the_user_wrote_and_asked() -> None:
    base = rendering_input(booster(), "cpu")
    assert rendering_input(booster(), "cpu") == base
    assert rendering_input(booster(routeWeight=30), "cpu") == base
    assert rendering_input(booster(maxReplicas=9), "cpu") == base
    assert rendering_input(booster(cacheURI="hostpath:///srv/models"), "cpu") != base  # any pod-shaping field
    asked = booster()
    asked["metadata"]["annotations"] = {ANNOTATION_ROLLOUT: "2026-11-27T10:00:00Z"}
    assert rendering_input(asked, "cpu") != base
    single = kthena.booster("v04", "ns")
    listed = copy.deepcopy(single)
    listed["spec"] = {"backends": [single["spec"]["backend"]]}
    assert rendering_input(single, "cpu") == rendering_input(listed, "cpu")  # the shape is not the input
    adapters = [("sql", "hf://acme/sql")]
    with_runtime = rendering_input(booster(loraAdapters=[{"name": "b", "artifactURL": "hf://b"}]), "cpu",
                                   runtime_adapters=adapters)  # fmt: skip
    assert with_runtime == rendering_input(booster(), "cpu", runtime_adapters=adapters)


def model_level() -> Obj:
    """The backend scaled by a model-level policy, so that it may carry a cost and a grace period."""
    document = booster(scalingCost=10, scaleToZeroGracePeriod="30s")
    document["spec"]["autoscalingPolicy"] = document["spec"]["backends"][0].pop("autoscalingPolicy")
    return document


@pytest.mark.parametrize(
    ("field", "value", "start"),
    [("minReplicas", 2, booster), ("maxReplicas", 9, booster), ("routeWeight", 30, booster),
     ("scalingCost", 7, model_level), ("scaleToZeroGracePeriod", "45s", model_level),
     ("autoscalingPolicy", None, booster)],
)
def test_the_fields_left_out_of_the_input_shape_no_pod(field: str, value: Any, start: Any) -> None:
    """NOT_POD_SHAPING is honest: changing one of its fields leaves the pod-shaping spec as it was."""
    document = start()
    changed = copy.deepcopy(document)
    if value is None:  # no policy: the replicas are then set from outside (a range needs a scaler)
        del changed["spec"]["backends"][0][field]
        changed["metadata"]["annotations"] = {"modelbooster.io/external-replicas": "true"}
    else:
        changed["spec"]["backends"][0][field] = value
    assert field in NOT_POD_SHAPING
    before = desired_serving(document).obj
    after = desired_serving(changed).obj
    assert pod_shaping(after) == pod_shaping(before)


def test_replicas_of_the_v1_shape_shape_no_pod() -> None:
    document = kthena.booster("v1", "ns")
    document["metadata"]["uid"] = UID
    changed = copy.deepcopy(document)
    changed["spec"]["backend"]["replicas"] = 5
    before = synthesize(parse_modelbooster(document))
    after = synthesize(parse_modelbooster(changed))
    assert pod_shaping(before[0]) == pod_shaping(after[0])
    assert before[0]["spec"] != after[0]["spec"]


def test_immutable_paths_are_read_off_the_served_schema() -> None:
    assert immutable_paths(serving_schema()) == (GANG,)
    assert immutable_paths(None) == ()
    schema = {"properties": {"spec": {"properties": {
        "a": {"x-kubernetes-validations": [{"rule": " oldSelf ==  self "}]},
        "b": {"x-kubernetes-validations": [{"rule": "self == oldSelf || true"}]},
        "c": {"items": {"x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
    }}}}  # fmt: skip
    assert immutable_paths(schema) == (("spec", "a"),)


def test_defaults_fill_what_is_left_out_and_nothing_else() -> None:
    schema = {"properties": {
        "a": {"type": "integer", "default": 1},
        "b": {"type": "object", "properties": {"c": {"type": "string", "default": "x"}}, "default": {}},
        "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"default": 2}}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"f": {"default": 3}}}},
    }}  # fmt: skip
    value = {"a": 5, "d": [{}, {"e": 4}], "m": {"k": {}}}
    assert with_defaults(value, schema) == {"a": 5, "b": {"c": "x"}, "d": [{"e": 2}, {"e": 4}], "m": {"k": {"f": 3}}}
    assert value == {"a": 5, "d": [{}, {"e": 4}], "m": {"k": {}}}  # not changed in place


def test_the_memo_answers_for_one_version_of_a_live_object_only() -> None:
    """What a live ModelServing gives depends on its content, which one resourceVersion fixes: a new version (or
    another desired rendering, named by its revision label) is worked out again."""
    document = booster()
    desired = desired_serving(document)
    live = stored(desired.obj)
    live["metadata"].update(uid="u1", resourceVersion="5")
    memo = Memo()
    assert memo.digest(live) == template_digest(live)
    assert memo.current(desired, live, serving_schema())
    changed = copy.deepcopy(live)
    changed["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["hostNetwork"] = True
    assert memo.digest(changed) == template_digest(live)  # the same version: the memo's answer
    changed["metadata"]["resourceVersion"] = "6"
    assert memo.digest(changed) == template_digest(changed) != template_digest(live)
    other = desired_serving(booster(cacheURI="hostpath:///srv/models"))
    assert other.obj["metadata"]["labels"][LABEL_REVISION] != desired.obj["metadata"]["labels"][LABEL_REVISION]
    assert not memo.current(other, changed, serving_schema())
    small = Memo(size=1)
    small.digest(live)
    small.digest(changed)
    assert len(small._digests) == 1
