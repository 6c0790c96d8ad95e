"""The pure rules behind foreign fields, adoption, terminating namespaces and outage logging
(docs/design/reconciler.md §4, §5, §14)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from reconciler.runtime.apply import adoptable
from reconciler.runtime.client import ApiError
from reconciler.runtime.foreign import (
    MAX_FINDINGS,
    ToleratedFields,
    describe_differences,
    find_foreign,
    readable,
    removal_patch,
)
from reconciler.runtime.namespaces import NamespaceLifecycle, refused_as_terminating
from reconciler.runtime.outage import OutageLog, is_outage


def entry(manager: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"manager": manager, "operation": "Update", "fieldsV1": {"f:spec": spec}, **extra}


def child(spec: dict[str, Any], *entries: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "c", "managedFields": list(entries)}, "spec": spec}


DESIRED = {"metadata": {"name": "c", "labels": {"ours": "1"}},
           "spec": {"replicas": 1, "template": {"containers": [{"name": "engine", "image": "v1"}]}}}  # fmt: skip


def test_defaults_and_our_own_fields_are_never_foreign() -> None:
    live = child({"replicas": 1, "recoveryPolicy": "RoleRecreate", "template": DESIRED["spec"]["template"]},
                 entry("modelbooster", {"f:replicas": {}, "f:recoveryPolicy": {}}),
                 {"manager": "ms-controller", "operation": "Update", "subresource": "status",
                  "fieldsV1": {"f:spec": {"f:x": {}}}})  # fmt: skip
    assert find_foreign(live, DESIRED, manager="modelbooster") == []


def test_a_key_someone_added_is_foreign_and_nulled_in_the_patch() -> None:
    live = child({**DESIRED["spec"], "schedulerName": "theirs"}, entry("kubectl-edit", {"f:schedulerName": {}}))
    (found,) = find_foreign(live, DESIRED, manager="modelbooster")
    assert (found.path, found.manager, found.rendered) == (("spec", "schedulerName"), "kubectl-edit", False)
    patch = removal_patch(DESIRED, [found], leave=[("spec", "replicas")])
    assert patch["spec"]["schedulerName"] is None
    assert "replicas" not in patch["spec"]  # someone else's to set
    assert patch["spec"]["template"] == DESIRED["spec"]["template"]
    assert patch["metadata"] == {"labels": {"ours": "1"}}


def test_an_atomic_list_they_own_is_compared_exactly_and_described_inside() -> None:
    containers = [{"name": "engine", "image": "v1", "securityContext": {"privileged": True}}]
    live = child({"replicas": 1, "template": {"containers": containers}},
                 entry("kubectl-patch", {"f:template": {"f:containers": {}}}))  # fmt: skip
    (found,) = find_foreign(live, DESIRED, manager="modelbooster")
    assert found.rendered
    inside = describe_differences(DESIRED["spec"]["template"]["containers"], containers, found.path)
    assert [readable(path, live) for path in inside] == ["spec.template.containers[engine].securityContext"]
    # An equal value they own is no finding.
    same = child(DESIRED["spec"], entry("kubectl", {"f:template": {"f:containers": {}}}))
    assert find_foreign(same, DESIRED, manager="modelbooster") == []


def test_granular_list_items_are_followed_by_their_keys() -> None:
    containers = [{"name": "engine", "image": "v1", "env": [{"name": "EXTRA", "value": "x"}]},
                  {"name": "sidecar", "image": "evil"}]  # fmt: skip
    owned = {"f:template": {"f:containers": {
        'k:{"name":"engine"}': {".": {}, "f:env": {'k:{"name":"EXTRA"}': {".": {}, "f:value": {}}}},
        'k:{"name":"sidecar"}': {".": {}, "f:image": {}},
    }}}  # fmt: skip
    found = find_foreign(child({"replicas": 1, "template": {"containers": containers}}, entry("x", owned)),
                         DESIRED, manager="modelbooster")  # fmt: skip
    assert sorted(f.path for f in found) == [
        ("spec", "template", "containers", 0, "env"),
        ("spec", "template", "containers", 1),
    ]


def test_ignored_and_tolerated_paths_and_hostile_field_sets() -> None:
    live = child({**DESIRED["spec"], "replicas": 4, "a": 1}, entry("autoscaler", {"f:replicas": {}, "f:a": {}}))
    found = find_foreign(live, DESIRED, manager="modelbooster", ignore=[("spec", "replicas")],
                         tolerated={("spec", "a")})  # fmt: skip
    assert found == []
    hostile = child({**DESIRED["spec"], **{f"k{i}": i for i in range(500)}},
                    entry("x", {**{f"f:k{i}": {} for i in range(500)}, "k:not json": {}, "v:[": {}, 7: {}}),
                    {"manager": "y", "fieldsV1": "not a dict"}, "not an entry")  # fmt: skip
    assert len(find_foreign(hostile, DESIRED, manager="modelbooster")) == MAX_FINDINGS


def test_tolerated_fields_are_bounded() -> None:
    tolerated = ToleratedFields(size=2)
    for uid in ("a", "b", "c"):
        tolerated.add(uid, [("spec", "x")])
    assert tolerated.get("a") == frozenset()
    assert tolerated.get("c") == {("spec", "x")}


OURS = {"workload.serving.volcano.sh/managed-by": "modelbooster", "workload.serving.volcano.sh/model-name": "m"}


@pytest.mark.parametrize(
    ("labels", "refs", "expected"),
    [
        (OURS, [], True),  # an orphan of ours
        ({}, [], False),  # anyone's
        (OURS, [{"uid": "other", "controller": True}], False),  # controlled by something else
        ({}, [{"uid": "u1", "controller": False}], True),  # names us without controller
        (OURS, [{"uid": "other", "controller": False}], True),  # a non-controlling owner does not stop adoption
        ({}, [{"uid": "u1", "controller": False}, {"uid": "other", "controller": True}], False),
    ],
)
def test_adoption_follows_kubernetes_controllers(labels: dict[str, str], refs: list[Any], expected: bool) -> None:
    live = {"metadata": {"labels": labels, "ownerReferences": refs}}
    assert adoptable(live, owner_uid="u1", selector=OURS) is expected


def terminating_error() -> ApiError:
    return ApiError(status=403, reason="Forbidden", message="being terminated",
                    body={"details": {"causes": [{"reason": "NamespaceTerminating"}]}})  # fmt: skip


def test_a_refusal_marks_a_namespace_terminating_until_it_expires() -> None:
    now = [0.0]
    namespaces = NamespaceLifecycle(clock=lambda: now[0])
    assert refused_as_terminating(terminating_error())
    assert not refused_as_terminating(ApiError(status=403, reason="Forbidden", message="rbac"))
    assert not namespaces.terminating("ns")
    namespaces.refused("ns")
    assert namespaces.terminating("ns")
    now[0] = 121.0
    assert not namespaces.terminating("ns")


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    counted: list[int] = []
    log = OutageLog(logging.getLogger("reconciler.test"), "doing it", count=lambda: counted.append(1))
    error = ApiError(status=0, reason="ClientConnectorError", message="refused")
    assert is_outage(error)
    assert is_outage(ApiError(status=503, reason="ServiceUnavailable", message=""))
    assert not is_outage(ApiError(status=422, reason="Invalid", message=""))
    for _ in range(100):
        log.failed(error)
    assert log.succeeded()
    assert not log.succeeded()
    levels = [r.levelno for r in caplog.records]
    assert levels.count(logging.WARNING) == 1
    assert levels.count(logging.INFO) == 1
    assert len(counted) == 100


def test_a_flapping_outage_still_makes_two_lines(caplog: pytest.LogCaptureFixture) -> None:
    """A success in the middle of an outage (a reconcile that needed no request) does not start a new one."""
    caplog.set_level(logging.DEBUG)
    now = [0.0]
    log = OutageLog(logging.getLogger("reconciler.test"), "doing it", grace=30.0, clock=lambda: now[0])
    error = ApiError(status=0, reason="ClientConnectorError", message="refused")
    for _ in range(5):
        log.failed(error)
        log.failed(error)
        assert log.succeeded()
        now[0] += 1.0
    levels = [r.levelno for r in caplog.records]
    assert (levels.count(logging.WARNING), levels.count(logging.INFO)) == (1, 1)
    now[0] += 60.0  # long after: a new outage
    log.failed(error)
    assert [r.levelno for r in caplog.records].count(logging.WARNING) == 2
