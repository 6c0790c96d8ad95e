"""The request scenarios of the differential suite: each runs against the fake and the real API server.

A scenario sends requests through a `Recorder` (tests/realapi/differential.py) in its own namespace and labels
each step; what the two servers answer is compared facet by facet. Objects are the kinds we use (ConfigMaps,
Leases, Events, Namespaces, our ModelBooster and child CRDs) and the fake's test CRD, `Widget`
(tests/apiserver/widgets.py: enum, bounds, pattern, defaults, set and map lists, nullable, CEL rules).
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Final

import yaml

from tests.apiserver.widgets import API_VERSION as WIDGET_API
from tests.e2e.user import EXAMPLES, load_example
from tests.realapi.crds import CRD_PATH
from tests.realapi.differential import Recorder, events_until_name, poll
from tests.unit.test_examples import EXPECTED_REJECTIONS

Obj = dict[str, Any]
Scenario = Callable[[Recorder], None]
SCENARIOS: dict[str, Scenario] = {}

MERGE: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
STRATEGIC: Final = "application/strategic-merge-patch+json"
APPLY: Final = "application/apply-patch+yaml"
WORKLOAD: Final = "/apis/workload.serving.volcano.sh/v1alpha1"


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def configmaps(r: Recorder, name: str = "") -> str:
    base = f"/api/v1/namespaces/{r.namespace}/configmaps"
    return f"{base}/{name}" if name else base


def widgets(r: Recorder, name: str = "") -> str:
    base = f"/apis/{WIDGET_API}/namespaces/{r.namespace}/widgets"
    return f"{base}/{name}" if name else base


def boosters(r: Recorder, name: str = "") -> str:
    base = f"{WORKLOAD}/namespaces/{r.namespace}/modelboosters"
    return f"{base}/{name}" if name else base


def configmap(name: str, **metadata: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}, "data": {"k": "v"}}


def widget(name: str, **spec: Any) -> Obj:
    return {"apiVersion": WIDGET_API, "kind": "Widget", "metadata": {"name": name}, "spec": {"size": "small", **spec}}


def booster(name: str, example: str = "single-vllm-cpu.yaml") -> Obj:
    document = load_example(example)
    document["metadata"] = {"name": name}
    return document


def rv(answer_body: Any) -> str:
    return str(((answer_body or {}).get("metadata") or {}).get("resourceVersion", ""))


# ---- built-in kinds: CRUD, Status bodies, concurrency ---------------------------------------------------------


@scenario
def configmap_crud(r: Recorder) -> None:
    r.request("create", "POST", configmaps(r), body=configmap("a"))
    r.request("create again", "POST", configmaps(r), body=configmap("a"))
    r.request("get", "GET", configmaps(r, "a"))
    r.request("get missing", "GET", configmaps(r, "missing"))
    r.request("list", "GET", configmaps(r))
    r.request("delete", "DELETE", configmaps(r, "a"))
    r.request("delete again", "DELETE", configmaps(r, "a"))


@scenario
def configmap_optimistic_concurrency(r: Recorder) -> None:
    created = r.request("create", "POST", configmaps(r), body=configmap("a")).body
    fresh = copy.deepcopy(created)
    fresh["data"] = {"k": "v2"}
    updated = r.request("update", "PUT", configmaps(r, "a"), body=fresh).body
    r.note("update changes resourceVersion", rv(updated) != rv(created))
    stale = copy.deepcopy(created)
    stale["data"] = {"k": "v3"}
    r.request("stale update", "PUT", configmaps(r, "a"), body=stale)
    unversioned = copy.deepcopy(updated)
    unversioned["metadata"].pop("resourceVersion")
    unversioned["data"] = {"k": "v4"}
    r.request("update without resourceVersion", "PUT", configmaps(r, "a"), body=unversioned)
    same = r.request("no-op update", "PUT", configmaps(r, "a"), body=r.send("GET", configmaps(r, "a")).body).body
    r.note("no-op update keeps resourceVersion", rv(same) == rv(r.send("GET", configmaps(r, "a")).body))
    r.request("update of a missing object", "PUT", configmaps(r, "missing"), body=configmap("missing"))
    r.request("name mismatch", "PUT", configmaps(r, "a"), body={**configmap("b"), "metadata": {"name": "b"}})


@scenario
def create_refusals(r: Recorder) -> None:
    with_rv = configmap("a")
    with_rv["metadata"]["resourceVersion"] = "12"
    r.request("resourceVersion set on create", "POST", configmaps(r), body=with_rv)
    r.request("invalid name", "POST", configmaps(r), body=configmap("Bad_Name"))
    r.request("no name", "POST", configmaps(r), body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    r.request("namespace mismatch", "POST", configmaps(r), body=configmap("a", namespace="elsewhere"))
    r.request("missing namespace", "POST", "/api/v1/namespaces/does-not-exist/configmaps", body=configmap("a"))
    r.request("bad label", "POST", configmaps(r), body=configmap("a", labels={"bad key!": "v"}))
    r.request("bad annotation", "POST", configmaps(r), body=configmap("a", annotations={"": "v"}))
    r.request("bad annotations", "POST", configmaps(r), body=configmap("a", annotations={"/x": "v", "a/": "v"}))
    r.request("not JSON", "POST", configmaps(r), body="{not json")
    r.request("wrong kind", "POST", configmaps(r), body={**configmap("a"), "kind": "Secret"})
    generated = r.send("POST", configmaps(r), body={**configmap(""), "metadata": {"generateName": "gen-"}}).body
    name = generated["metadata"]["name"]
    r.note("generateName", (name.startswith("gen-"), len(name)))


@scenario
def lease_renewal(r: Recorder) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{r.namespace}/leases"
    lease: Obj = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-01T00:00:00.000000Z"},
    }
    created = r.request("create", "POST", path, body=lease).body
    renewed = copy.deepcopy(created)
    renewed["spec"]["renewTime"] = "2026-01-01T00:00:05.000000Z"
    r.request("renew", "PUT", f"{path}/leader", body=renewed)
    taken = copy.deepcopy(created)
    taken["spec"]["holderIdentity"] = "b"
    r.request("stale takeover", "PUT", f"{path}/leader", body=taken)
    for label, field, value in (
        ("bad time", "renewTime", "yesterday"),
        ("time without microseconds", "acquireTime", "2026-01-01T00:00:00Z"),
        ("duration as a string", "leaseDurationSeconds", "15"),
    ):
        bad = copy.deepcopy(lease)
        bad["metadata"]["name"] = "bad"
        bad["spec"][field] = value
        r.request(label, "POST", path, body=bad)


@scenario
def events_and_field_selectors(r: Recorder) -> None:
    path = f"/api/v1/namespaces/{r.namespace}/events"
    for name, involved in (("e1", "a"), ("e2", "b")):
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name},
            "involvedObject": {"kind": "ModelBooster", "name": involved, "namespace": r.namespace},
            "reason": "Synced",
            "message": "children applied",
            "type": "Normal",
            "source": {"component": "modelbooster-reconciler"},
        }
        r.request(f"create {name}", "POST", path, body=event)
    r.request("bad timestamp", "POST", path, body={**event, "metadata": {"name": "e3"}, "firstTimestamp": "nope"})
    r.request("by involvedObject.name", "GET", f"{path}?fieldSelector=involvedObject.name%3Da")
    r.request("by reason", "GET", f"{path}?fieldSelector=reason%3DSynced")
    r.request("events.k8s.io view", "GET", f"/apis/events.k8s.io/v1/namespaces/{r.namespace}/events/e1")


@scenario
def label_and_field_selectors(r: Recorder) -> None:
    for name, labels in (("a", {"tier": "web", "n": "1"}), ("b", {"tier": "db", "n": "5"}), ("c", {})):
        r.send("POST", configmaps(r), body=configmap(name, labels=labels))

    def names(label: str, query: str) -> None:
        answer = r.send("GET", f"{configmaps(r)}?{query}")
        shown = sorted(item["metadata"]["name"] for item in answer.body["items"]) if answer.status == 200 else answer
        r.note(label, shown if isinstance(shown, list) else (answer.status, (answer.body or {}).get("message")))

    names("equals", "labelSelector=tier%3Dweb")
    names("not equals", "labelSelector=tier%21%3Dweb")
    names("in", "labelSelector=tier+in+%28web%2Cdb%29")
    names("notin", "labelSelector=tier+notin+%28web%29")
    names("exists", "labelSelector=tier")
    names("does not exist", "labelSelector=%21tier")
    names("gt", "labelSelector=n+gt+2")
    names("name", "fieldSelector=metadata.name%3Db")
    names("name not", "fieldSelector=metadata.name%21%3Db")
    names("unsupported field", "fieldSelector=data.k%3Dv")
    names("bad selector", "labelSelector=tier+in+web")
    names("bad operator", "labelSelector=a%3D%3D%3Db")
    names("unclosed set", "labelSelector=a+in+%28b")
    names("trailing comma", "labelSelector=a%3Db%2C")
    names("field selector without operator", "fieldSelector=nothing")
    r.request("custom resource field", "GET", f"{widgets(r)}?fieldSelector=spec.size%3Dsmall")
    r.request("event field", "GET", f"/api/v1/namespaces/{r.namespace}/events?fieldSelector=nothing%3Dx")
    r.request("paged list", "GET", f"{configmaps(r)}?limit=2")


@scenario
def deletion_with_finalizers(r: Recorder) -> None:
    r.request("create", "POST", configmaps(r), body=configmap("held", finalizers=["example.com/hold"]))
    r.request("delete", "DELETE", configmaps(r, "held"))
    r.request("get terminating", "GET", configmaps(r, "held"))
    r.request(
        "add finalizer while terminating",
        "PATCH",
        configmaps(r, "held"),
        body={"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
        content_type=MERGE,
    )
    r.request("release", "PATCH", configmaps(r, "held"), body={"metadata": {"finalizers": None}}, content_type=MERGE)
    r.request("gone", "GET", configmaps(r, "held"))
    r.request(
        "create cr",
        "POST",
        widgets(r),
        body={**widget("held"), "metadata": {"name": "held", "finalizers": ["example.com/hold"]}},
    )
    r.request("delete cr", "DELETE", widgets(r, "held"))
    r.request("get terminating cr", "GET", widgets(r, "held"))
    r.request("release cr", "PATCH", widgets(r, "held"), body={"metadata": {"finalizers": None}}, content_type=MERGE)
    r.request("gone cr", "GET", widgets(r, "held"))
    r.send("POST", widgets(r), body={**widget("held2"), "metadata": {"name": "held2", "finalizers": ["example.com/a"]}})
    r.send("DELETE", widgets(r, "held2"))
    r.request(
        "add finalizer to terminating cr",
        "PATCH",
        widgets(r, "held2"),
        content_type=MERGE,
        body={"metadata": {"finalizers": ["example.com/a", "example.com/b"]}},
    )
    r.send("PATCH", widgets(r, "held2"), body={"metadata": {"finalizers": None}}, content_type=MERGE)


@scenario
def delete_preconditions_and_options(r: Recorder) -> None:
    r.send("POST", configmaps(r), body=configmap("a"))
    wrong_uid = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"},
    }
    r.request("wrong uid", "DELETE", configmaps(r, "a"), body=wrong_uid)
    wrong_rv = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": "1"}}
    r.request("wrong resourceVersion", "DELETE", configmaps(r, "a"), body=wrong_rv)
    r.request("bad propagation", "DELETE", configmaps(r, "a"), body={"propagationPolicy": "Sometimes"})
    r.request("orphan", "DELETE", configmaps(r, "a"), body={"propagationPolicy": "Orphan"})
    r.send("POST", widgets(r), body=widget("w"))
    r.request("cr wrong uid", "DELETE", widgets(r, "w"), body=wrong_uid)
    r.request("cr foreground", "DELETE", widgets(r, "w"), body={"propagationPolicy": "Foreground"})
    r.request("cr after foreground", "GET", widgets(r, "w"))


@scenario
def namespace_lifecycle(r: Recorder) -> None:
    name = f"{r.namespace}-x"
    r.request(
        "create",
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    # A finalizer keeps the namespace Terminating on both servers, whoever empties it and how fast.
    r.send("POST", f"/api/v1/namespaces/{name}/configmaps", body=configmap("a", finalizers=["example.com/hold"]))
    r.request("delete", "DELETE", f"/api/v1/namespaces/{name}")
    r.request("create in terminating", "POST", f"/api/v1/namespaces/{name}/configmaps", body=configmap("b"))
    r.request(
        "bad name",
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Not_Valid"}},
    )
    r.send(
        "PATCH", f"/api/v1/namespaces/{name}/configmaps/a", body={"metadata": {"finalizers": None}}, content_type=MERGE
    )


# ---- custom resources: pruning, defaulting, validation ------------------------------------------------------------


@scenario
def widget_pruning_and_defaults(r: Recorder) -> None:
    document = widget("w", parts=[{"name": "p"}], unknown="x", config={"free": {"form": 1}}, note=None)
    document["extra"] = "dropped"
    document["status"] = {"phase": "Ignored"}
    r.request("create", "POST", widgets(r), body=document)
    r.request("get", "GET", widgets(r, "w"))
    r.request("strict", "POST", f"{widgets(r)}?fieldValidation=Strict", body={**widget("s", unknown="x")})
    r.request("warn", "POST", f"{widgets(r)}?fieldValidation=Warn", body={**widget("t", unknown="x")})
    r.request("ignore", "POST", f"{widgets(r)}?fieldValidation=Ignore", body={**widget("u", unknown="x")})
    r.request("v1beta1", "GET", f"/apis/example.fakeapi.io/v1beta1/namespaces/{r.namespace}/widgets/w")


@scenario
def widget_openapi_validation(r: Recorder) -> None:
    cases: dict[str, Obj] = {
        "enum": widget("a", size="huge"),
        "required": {**widget("b"), "spec": {"replicas": 1}},
        "maximum": widget("c", replicas=11),
        "minimum": widget("d", replicas=-1),
        "type": widget("e", replicas="three"),
        "pattern": widget("f", color="Red"),
        "maxLength": widget("g", color="abcdefghijk"),
        "exclusive minimum": widget("h", ratio=0),
        "maxItems": widget("i", tags=["a", "b", "c", "d"]),
        "set duplicates": widget("j", tags=["a", "a"]),
        "map duplicates": widget("k", parts=[{"name": "p"}, {"name": "p"}]),
        "map key missing": widget("l", parts=[{"count": 2}]),
        "null not nullable": widget("m", color=None),
        "several errors": widget("n", size="huge", replicas=11, color="Red"),
    }
    for label, document in cases.items():
        r.request(label, "POST", widgets(r), body=document)


@scenario
def widget_cel_rules(r: Recorder) -> None:
    r.request("forbidden field", "POST", widgets(r), body=widget("a", legacy={"x": 1}))
    r.request("rule without reason", "POST", widgets(r), body=widget("b", primary="p", secondary="s"))
    r.request("both rules", "POST", widgets(r), body=widget("c", legacy={}, primary="p", secondary="s"))
    created = r.request("valid", "POST", widgets(r), body=widget("d")).body
    changed = copy.deepcopy(created)
    changed["spec"]["size"] = "large"
    r.request("transition rule", "PUT", widgets(r, "d"), body=changed)
    r.request("relabel", "PATCH", widgets(r, "d"), body={"metadata": {"labels": {"a": "b"}}}, content_type=MERGE)


@scenario
def widget_generation_and_status(r: Recorder) -> None:
    created = r.request("create", "POST", widgets(r), body=widget("w")).body
    r.request("label", "PATCH", widgets(r, "w"), body={"metadata": {"labels": {"a": "b"}}}, content_type=MERGE)
    r.request("spec", "PATCH", widgets(r, "w"), body={"spec": {"replicas": 3}}, content_type=MERGE)
    r.request(
        "status through main endpoint", "PATCH", widgets(r, "w"), body={"status": {"phase": "Main"}}, content_type=MERGE
    )
    r.request(
        "status",
        "PATCH",
        widgets(r, "w") + "/status",
        body={"status": {"phase": "Ready", "observedGeneration": 2}, "spec": {"replicas": 9}},
        content_type=MERGE,
    )
    r.request(
        "status invalid",
        "PATCH",
        widgets(r, "w") + "/status",
        body={"status": {"conditions": [{"type": "A"}]}},
        content_type=MERGE,
    )
    current = r.send("GET", widgets(r, "w")).body
    unversioned = copy.deepcopy(current)
    unversioned["metadata"].pop("resourceVersion")
    r.request("put without resourceVersion", "PUT", widgets(r, "w"), body=unversioned)
    stale = copy.deepcopy(created)
    stale["spec"]["replicas"] = 4
    r.request("stale put", "PUT", widgets(r, "w"), body=stale)
    r.request("status of missing", "GET", widgets(r, "missing") + "/status")


@scenario
def widget_patch_types(r: Recorder) -> None:
    r.send("POST", widgets(r), body=widget("w", tags=["a"], parts=[{"name": "p", "count": 2}]))
    r.request("merge", "PATCH", widgets(r, "w"), body={"spec": {"color": "blue", "tags": ["b"]}}, content_type=MERGE)
    r.request(
        "json patch",
        "PATCH",
        widgets(r, "w"),
        content_type=JSON_PATCH,
        body=[{"op": "add", "path": "/spec/parts/-", "value": {"name": "q"}}],
    )
    r.request(
        "json patch test fails",
        "PATCH",
        widgets(r, "w"),
        content_type=JSON_PATCH,
        body=[{"op": "test", "path": "/spec/color", "value": "red"}],
    )
    r.request(
        "json patch bad path",
        "PATCH",
        widgets(r, "w"),
        content_type=JSON_PATCH,
        body=[{"op": "replace", "path": "/spec/nothing/here", "value": 1}],
    )
    r.request("strategic on a custom resource", "PATCH", widgets(r, "w"), body={"spec": {}}, content_type=STRATEGIC)
    r.request(
        "merge patch invalid result", "PATCH", widgets(r, "w"), body={"spec": {"replicas": 99}}, content_type=MERGE
    )
    r.request("patch missing", "PATCH", widgets(r, "missing"), body={"spec": {}}, content_type=MERGE)
    # A merge patch carrying metadata.resourceVersion is conditional on it (the template record relies on it).
    current = rv(r.send("GET", widgets(r, "w")).body)
    r.request("merge on the current resourceVersion", "PATCH", widgets(r, "w"), content_type=MERGE,
              body={"metadata": {"resourceVersion": current, "annotations": {"recorded": "yes"}}})  # fmt: skip
    r.request("merge on a stale resourceVersion", "PATCH", widgets(r, "w"), content_type=MERGE,
              body={"metadata": {"resourceVersion": current, "annotations": {"recorded": "again"}}})  # fmt: skip
    r.request("unsupported content type", "PATCH", widgets(r, "w"), body="{}", content_type="text/plain")


@scenario
def widget_server_side_apply(r: Recorder) -> None:
    intent = widget("w", color="blue", tags=["a"], parts=[{"name": "p"}])
    created = r.request(
        "apply creates", "PATCH", f"{widgets(r, 'w')}?fieldManager=alice", body=intent, content_type=APPLY
    ).body
    again = r.request(
        "apply unchanged", "PATCH", f"{widgets(r, 'w')}?fieldManager=alice", body=intent, content_type=APPLY
    ).body
    r.note("unchanged apply keeps resourceVersion", rv(created) == rv(again))
    other = widget("w", color="green")
    r.request("conflict", "PATCH", f"{widgets(r, 'w')}?fieldManager=bob", body=other, content_type=APPLY)
    r.request("forced", "PATCH", f"{widgets(r, 'w')}?fieldManager=bob&force=true", body=other, content_type=APPLY)
    shrunk = widget("w", tags=["a"])
    r.request("alice drops fields", "PATCH", f"{widgets(r, 'w')}?fieldManager=alice", body=shrunk, content_type=APPLY)
    r.request("no field manager", "PATCH", widgets(r, "w"), body=intent, content_type=APPLY)
    r.request("wrong name", "PATCH", f"{widgets(r, 'other')}?fieldManager=alice", body=intent, content_type=APPLY)
    r.request(
        "status apply",
        "PATCH",
        f"{widgets(r, 'w')}/status?fieldManager=carol&force=true",
        body={
            "apiVersion": WIDGET_API,
            "kind": "Widget",
            "metadata": {"name": "w"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
        content_type=APPLY,
    )
    r.request(
        "dry run apply",
        "PATCH",
        f"{widgets(r, 'x')}?fieldManager=alice&dryRun=All",
        body=widget("x"),
        content_type=APPLY,
    )
    r.request("dry run left nothing", "GET", widgets(r, "x"))


# ---- our CRDs, without the webhook ------------------------------------------------------------------------------


@scenario
def modelbooster_stored_as_written(r: Recorder) -> None:
    for example in (
        "single-vllm-cpu.yaml",
        "two-backends-model-autoscaling-lora.yaml",
        "pd-disaggregation-nixl.yaml",
        "single-backend-kthena-v1.yaml",
        "backend-autoscaling.yaml",
    ):
        name = example.removesuffix(".yaml")
        document = booster(name, example)
        document["spec"]["notInSchema"] = True
        r.request(f"create {name}", "POST", boosters(r), body=document)
        r.request(f"get {name}", "GET", boosters(r, name))


@scenario
def modelbooster_cel_rules(r: Recorder) -> None:
    """Every invalid example: the CEL rules refuse the unsupported features, the rest passes the CRD."""
    for example in sorted(EXPECTED_REJECTIONS):
        document = load_example(f"invalid/{example}")
        document["metadata"] = {"name": example.removesuffix(".yaml")}
        r.request(example, "POST", f"{boosters(r)}?dryRun=All", body=document)


@scenario
def modelbooster_schema_errors(r: Recorder) -> None:
    cases: dict[str, Callable[[Obj], None]] = {
        "wrong type": lambda d: d["spec"]["backends"][0].update(minReplicas="one"),
        "unknown backend type": lambda d: d["spec"]["backends"][0].update(type="TGI"),
        "too many backends": lambda d: d["spec"].update(
            backends=[{**d["spec"]["backends"][0], "name": f"b{i}"} for i in range(17)]
        ),
        "duplicate backend names": lambda d: d["spec"].update(backends=d["spec"]["backends"] * 2),
        "no spec": lambda d: d.pop("spec"),
        "spec not an object": lambda d: d.update(spec="x"),
    }
    for label, change in cases.items():
        document = booster(label.replace(" ", "-"))
        change(document)
        r.request(label, "POST", boosters(r), body=document)


def _bent(example: str, *changes: Callable[[Obj], None]) -> Callable[[], Obj]:
    def build() -> Obj:
        document = load_example(example)
        for change in changes:
            change(document)
        return document

    return build


def _first_backend(document: Obj) -> Obj:
    spec = document["spec"]
    backend: Obj = spec["backend"] if "backend" in spec else spec["backends"][0]
    return backend


def _limits(document: Obj) -> Obj:
    worker = _first_backend(document)["workers"][0]
    limits: Obj = worker.setdefault("resources", {}).setdefault("limits", {})
    return limits


def _renamed_key(holder: Callable[[Obj], Obj], old: str, new: str) -> Callable[[Obj], None]:
    def change(document: Obj) -> None:
        target = holder(document)
        target[new] = target.pop(old)

    return change


# Objects with several mistakes at once, each sent without the webhook (the CRD's schema and CEL rules alone):
# the differential suite holds the fake to the real server on them, and tests/realapi/test_differential_validation.py
# holds our validation's one answer to the real server's (every field it reports, we report).
WHOLE_LIST_CASES: Final[dict[str, Callable[[], Obj]]] = {
    # The first case: a quantity the schema refuses beside a feature a CEL rule refuses.
    "behavior and 8GB": _bent(
        "two-backends-model-autoscaling-lora.yaml",
        lambda d: d["spec"]["autoscalingPolicy"].update(behavior={"scaleUp": {}}),
        lambda d: _limits(d).update(memory="8GB"),
    ),
    # A wrong type: kube-apiserver skips its CEL rules then; we still report the rules on the rest.
    "a wrong type, behavior and two workers": _bent(
        "two-backends-model-autoscaling-lora.yaml",
        lambda d: d["spec"]["autoscalingPolicy"].update(behavior={"scaleUp": {}}),
        lambda d: d["spec"]["backends"][0].update(minReplicas="one"),
        lambda d: d["spec"]["backends"][1]["workers"].append({"type": "server"}),
    ),
    # The second case: a typo of a replica field of a single backend.
    "minReplica for minReplicas": _bent(
        "single-backend-kthena-v04.yaml", _renamed_key(_first_backend, "minReplicas", "minReplica")
    ),
    "modelUri for modelURI, and rateLimit": _bent(
        "single-vllm-cpu.yaml",
        _renamed_key(_first_backend, "modelURI", "modelUri"),
        lambda d: d["spec"].update(rateLimit={"tokensPerUnit": 10}),
    ),
    "bakends for backends, and rateLimit": _bent(
        "single-vllm-cpu.yaml",
        _renamed_key(lambda d: d["spec"], "backends", "bakends"),
        lambda d: d["spec"].update(rateLimit={"tokensPerUnit": 10}),
    ),
    # Patterns (not blocking for kube-apiserver) beside a worker's unsupported field.
    "two patterns and a worker's networkTopology": _bent(
        "single-vllm-cpu.yaml",
        lambda d: _first_backend(d).update(modelURI="huggingface://Qwen/Qwen2.5", cacheURI="/models"),
        lambda d: _first_backend(d)["workers"][0].update(networkTopology={"mode": "hard"}),
    ),
    "an unknown backend type, two workers and a backend rateLimit": _bent(
        "single-vllm-cpu.yaml",
        lambda d: _first_backend(d).update(type="TGI", rateLimit={"tokensPerUnit": 1}),
        lambda d: _first_backend(d)["workers"].append({"type": "server"}),
    ),
    # The third case: the CRD admits it; Kubernetes would refuse the pods.
    "half a GPU": _bent("single-vllm-cpu.yaml", lambda d: _limits(d).update({"nvidia.com/gpu": "0.5"})),
    "a bad name and a bad quantity": _bent(
        "single-vllm-cpu.yaml",
        lambda d: d["metadata"].update(name="Qwen_Small"),
        lambda d: _limits(d).update(cpu="two"),
    ),
}


def whole_list_case(index: int, label: str) -> Obj:
    """The object of a case, named `whole-<index>` unless the case is about its name."""
    document = WHOLE_LIST_CASES[label]()
    name = document["metadata"]["name"]
    document["metadata"] = {"name": name if name == "Qwen_Small" else f"whole-{index}"}
    return document


@scenario
def modelbooster_whole_list(r: Recorder) -> None:
    for index, label in enumerate(WHOLE_LIST_CASES):
        r.request(label, "POST", f"{boosters(r)}?dryRun=All", body=whole_list_case(index, label))


@scenario
def modelserving_immutable_rule(r: Recorder) -> None:
    """The child CRD's own rules (ModelServing `gangPolicy.minRoleReplicas` is immutable, and required once set)."""
    path = f"{WORKLOAD}/namespaces/{r.namespace}/modelservings"
    role = {
        "name": "leader",
        "replicas": 1,
        "workerReplicas": 0,
        "entryTemplate": {"spec": {"containers": [{"name": "c", "image": "vllm/vllm-openai:v0.10.1"}]}},
    }
    serving: Obj = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "s"},
        "spec": {
            "schedulerName": "",
            "replicas": 1,
            "template": {"gangPolicy": {"minRoleReplicas": {"leader": 1}}, "roles": [role]},
        },
    }
    r.request("create", "POST", path, body=serving)
    r.request(
        "change immutable",
        "PATCH",
        f"{path}/s",
        content_type=MERGE,
        body={"spec": {"template": {"gangPolicy": {"minRoleReplicas": {"leader": 2}}}}},
    )
    r.request(
        "remove required once set",
        "PATCH",
        f"{path}/s",
        content_type=MERGE,
        body={"spec": {"template": {"gangPolicy": {"minRoleReplicas": None}}}},
    )
    incomplete = copy.deepcopy(serving)
    incomplete["metadata"]["name"] = "incomplete"
    del incomplete["spec"]["schedulerName"]
    incomplete["spec"]["notInSchema"] = 1
    r.request("missing required fields", "POST", path, body=incomplete)


# ---- discovery ---------------------------------------------------------------------------------------------------


@scenario
def discovery_of_our_groups(r: Recorder) -> None:
    for path in (
        "/apis/workload.serving.volcano.sh/v1alpha1",
        "/apis/networking.serving.volcano.sh/v1alpha1",
        f"/apis/{WIDGET_API}",
    ):
        answer = r.send("GET", path)
        resources = sorted((answer.body or {}).get("resources") or [], key=lambda x: x["name"])
        for resource in resources:
            resource.pop("storageVersionHash", None)
            resource["verbs"] = sorted(resource.get("verbs") or [])
        r.note(path, (answer.status, (answer.body or {}).get("groupVersion"), resources))
    for label, path in (
        ("unknown group", "/apis/nothing.example.com"),
        ("unknown group version", "/apis/nothing.example.com/v1"),
        ("unknown version of a group", "/apis/example.fakeapi.io/v9"),
        ("unknown kind list", f"/apis/{WIDGET_API}/namespaces/{r.namespace}/nothings"),
        ("namespaced kind without namespace", f"/apis/{WIDGET_API}/widgets/w"),
        ("no API path", "/nothing"),
        ("unknown core kind", "/api/v1/nothings"),
        ("unknown core kind in a namespace", f"/api/v1/namespaces/{r.namespace}/nothings"),
        ("unknown core version", "/api/v2"),
        ("unknown subresource", f"/api/v1/namespaces/{r.namespace}/configmaps/x/status"),
    ):
        r.request(label, "GET", path)


# ---- watches -----------------------------------------------------------------------------------------------------


@scenario
def watch_configmap_events(r: Recorder) -> None:
    start = r.send("GET", configmaps(r)).body["metadata"]["resourceVersion"]
    r.send("POST", configmaps(r), body=configmap("a"))
    r.send("PATCH", configmaps(r, "a"), body={"data": {"k": "v2"}}, content_type=MERGE)
    r.send("PATCH", configmaps(r, "a"), body={"data": {"k": "v2"}}, content_type=MERGE)  # no-op: no event
    r.send("DELETE", configmaps(r, "a"))
    r.watch("events", configmaps(r), since=start, until=events_until_name("a", "DELETED"))


@scenario
def watch_custom_resource_events(r: Recorder) -> None:
    start = r.send("GET", widgets(r)).body["metadata"]["resourceVersion"]
    r.send("POST", widgets(r), body=widget("w"))
    r.send("PATCH", widgets(r, "w") + "/status", body={"status": {"phase": "Ready"}}, content_type=MERGE)
    r.send("PATCH", widgets(r, "w"), body={"metadata": {"labels": {"x": "y"}}}, content_type=MERGE)
    r.send("POST", widgets(r), body=widget("other"))
    r.send("DELETE", widgets(r, "w"))
    r.watch("events", f"{widgets(r)}?labelSelector=x%3Dy", since=start, until=events_until_name("w", "DELETED"))
    r.watch(
        "by name",
        f"{widgets(r)}?fieldSelector=metadata.name%3Dother",
        since=start,
        until=events_until_name("other", "ADDED"),
    )


@scenario
def watch_from_a_future_resource_version(r: Recorder) -> None:
    current = int(r.send("GET", configmaps(r)).body["metadata"]["resourceVersion"])
    r.watch("far future", configmaps(r), since=str(current + 1_000_000), until=bool, timeout=4)


# ---- objects stored before their CRD's rules (tests/apiserver/test_carried_over.py) ----------------------------


def _install_rig_schema(r: Recorder, schema: Obj, *, strict: bool) -> None:
    """Apply the Rig CRD with `schema` and wait until the server validates with it: a probe object (replicas 7,
    a `behavior`, a worker `topology`) is admitted by the loose schema and refused by every strict one."""
    from tests.apiserver.test_carried_over import LEGACY_SPEC, NAME, rig, rig_crd

    r.send("PATCH", f"{CRD_PATH}/{NAME}?fieldManager=differential&force=true", body=rig_crd(schema), content_type=APPLY)
    probe = rig("probe", replicas=7, **LEGACY_SPEC)

    def effective() -> bool:
        answer = r.send("POST", f"{rigs(r)}?dryRun=All", body=probe)
        return (answer.status == 201) != strict

    if not poll(effective, timeout=15):
        raise TimeoutError(f"the Rig CRD's {'strict' if strict else 'loose'} schema did not take effect")


def rigs(r: Recorder, name: str = "") -> str:
    base = f"/apis/example.fakeapi.io/v1/namespaces/{r.namespace}/rigs"
    return f"{base}/{name}" if name else base


@scenario
def carried_over_objects(r: Recorder) -> None:
    """Objects created under a loose Rig CRD, then the CRD tightened: what relabels, status writes and spec edits
    get (the fake's ratcheting emulation against the real thing)."""
    from tests.apiserver.test_carried_over import CARRIED_OVER, LEGACY_SPEC, OLD_STYLE, rig, rig_schema

    tightened = rig_schema(tightened=True)
    cases: list[tuple[str, Obj, Obj]] = [
        ("old-style", OLD_STYLE, LEGACY_SPEC),
        ("carried-over", CARRIED_OVER, LEGACY_SPEC),
        ("tightened-required", tightened, {"policy": {"behavior": {"scaleUp": {}}}}),
        ("tightened-mixed", tightened, {"replicas": 7, "policy": {"metrics": ["long"], "behavior": {"scaleUp": {}}}}),
    ]
    for name, schema, spec in cases:
        _install_rig_schema(r, rig_schema(), strict=False)
        r.request(f"{name}: create", "POST", rigs(r), body=rig(name, **spec))
        _install_rig_schema(r, schema, strict=True)
        r.request(
            f"{name}: relabel", "PATCH", rigs(r, name), body={"metadata": {"labels": {"team": "a"}}}, content_type=MERGE
        )
        r.request(
            f"{name}: status",
            "PATCH",
            f"{rigs(r, name)}/status",
            body={"status": {"phase": "Failed"}},
            content_type=MERGE,
        )
        r.request(
            f"{name}: status of the wrong type",
            "PATCH",
            f"{rigs(r, name)}/status",
            body={"status": {"phase": 3}},
            content_type=MERGE,
        )
        r.request(
            f"{name}: new worker with topology",
            "PATCH",
            rigs(r, name),
            content_type=MERGE,
            body={"spec": {"units": [{"name": "b", "workers": [{"image": "i", "topology": {"r": 1}}]}]}},
        )
        r.request(f"{name}: delete", "DELETE", rigs(r, name))
    _install_rig_schema(r, rig_schema(), strict=False)


# ---- the reconciler's writes: server-side apply of synthesized children -------------------------------------------


@functools.cache
def rendered_children(example: str) -> tuple[Obj, ...]:
    """The children `modelbooster render` synthesizes for an example (owner references left out: an owner that
    does not exist would have them collected where a garbage collector runs)."""
    shown = subprocess.run(
        [sys.executable, "-m", "modelbooster", "render", "-f", str(EXAMPLES / example), "-o", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    parsed = json.loads(shown)
    children = parsed.get("items", parsed) if isinstance(parsed, dict) else parsed
    for child in children:
        child["metadata"].pop("ownerReferences", None)
        child["metadata"].pop("namespace", None)
    return tuple(children)


def child_path(r: Recorder, child: Obj) -> str:
    group_version = child["apiVersion"]
    plural = {
        "ModelServing": "modelservings",
        "ModelServer": "modelservers",
        "ModelRoute": "modelroutes",
        "AutoscalingPolicy": "autoscalingpolicies",
        "AutoscalingPolicyBinding": "autoscalingpolicybindings",
    }[child["kind"]]
    return f"/apis/{group_version}/namespaces/{r.namespace}/{plural}/{child['metadata']['name']}"


@scenario
def children_server_side_apply(r: Recorder) -> None:
    """What the reconciler relies on to stay idle: an unchanged apply writes nothing; and what it sees otherwise."""
    for example in ("two-backends-model-autoscaling-lora.yaml", "pd-disaggregation-nixl.yaml"):
        for child in rendered_children(example):
            label = f"{child['kind']} {child['metadata']['name']}"
            path = child_path(r, child)
            applied = r.request(
                f"{label}: apply",
                "PATCH",
                f"{path}?fieldManager=modelbooster&force=true",
                body=child,
                content_type=APPLY,
            ).body
            again = r.send("PATCH", f"{path}?fieldManager=modelbooster&force=true", body=child, content_type=APPLY)
            r.note(f"{label}: unchanged apply", (again.status, rv(again.body) == rv(applied)))
        serving = next(c for c in rendered_children(example) if c["kind"] == "ModelServing")
        path = child_path(r, serving)
        hand = copy.deepcopy(serving)
        hand["spec"]["replicas"] = 3
        r.request(
            f"{example}: another manager's conflicting apply",
            "PATCH",
            f"{path}?fieldManager=kubectl",
            body=hand,
            content_type=APPLY,
        )
        r.request(f"{example}: a hand edit", "PATCH", path, body={"spec": {"replicas": 3}}, content_type=MERGE)
        r.request(
            f"{example}: the reconciler takes it back",
            "PATCH",
            f"{path}?fieldManager=modelbooster&force=true",
            body=serving,
            content_type=APPLY,
        )


# ---- our webhook behind each server --------------------------------------------------------------------------------


@scenario
def modelbooster_admission(r: Recorder) -> None:
    """Our webhook registered by URL with the cluster CA: how each server passes its answers on (denials, patches,
    warnings), and what an object stored before the registration can still have done to it."""
    from tests.realapi.webhook import register_webhook

    carried = load_example("invalid/pd-without-decode.yaml")
    carried["metadata"] = {"name": "carried"}
    r.request("stored before the webhook", "POST", boosters(r), body=carried)
    registration = register_webhook(r.api, r.webhook, namespace=r.namespace)
    try:
        for example in sorted(EXPECTED_REJECTIONS):
            document = load_example(f"invalid/{example}")
            document["metadata"] = {"name": example.removesuffix(".yaml")}
            r.request(example, "POST", boosters(r), body=document)
        zero_pods = booster("zero-pods")
        zero_pods["spec"]["backends"][0]["workers"][0]["pods"] = 0
        r.request("defaults and a warning", "POST", boosters(r), body=zero_pods)
        r.request("dry run", "POST", f"{boosters(r)}?dryRun=All", body=booster("dry"))
        r.request(
            "dry-run apply",
            "PATCH",
            f"{boosters(r, 'applied')}?fieldManager=kubectl&dryRun=All",
            body=booster("applied"),
            content_type=APPLY,
        )
        r.request(
            "replicas change",
            "PATCH",
            boosters(r, "zero-pods"),
            content_type=JSON_PATCH,
            body=[{"op": "replace", "path": "/spec/backends/0/workers/0/replicas", "value": 2}],
        )
        r.request(
            "carried over: relabel",
            "PATCH",
            boosters(r, "carried"),
            body={"metadata": {"labels": {"team": "a"}}},
            content_type=MERGE,
        )
        r.request(
            "carried over: unrelated edit",
            "PATCH",
            boosters(r, "carried"),
            content_type=MERGE,
            body={"spec": {"backends": [{**carried["spec"]["backends"][0], "modelURI": "hf://Qwen/Q"}]}},
        )
        r.request(
            "carried over: status",
            "PATCH",
            f"{boosters(r, 'carried')}/status",
            content_type=MERGE,
            body={
                "status": {
                    "conditions": [
                        {
                            "type": "Failed",
                            "status": "True",
                            "reason": "Invalid",
                            "message": "m",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ]
                }
            },
        )
        r.request("carried over: delete", "DELETE", boosters(r, "carried"))
    finally:
        registration.remove(r.api)


@scenario
def modelbooster_status_writes(r: Recorder) -> None:
    """The reconciler's status write (a merge patch of the whole status to /status) and what it leaves stored."""
    r.send("POST", boosters(r), body=booster("statused", "two-backends-model-autoscaling-lora.yaml"))
    condition = {"status": "True", "reason": "Synced", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    status = {
        "observedGeneration": 1,
        "conditions": [{"type": "Initialized", **condition}, {"type": "Active", **condition, "status": "False"}],
        "backendStatuses": [{"name": "a100", "replicas": 1}, {"name": "l4", "replicas": 0}],
    }
    path = f"{boosters(r, 'statused')}/status"
    r.request("status", "PATCH", path, body={"status": status}, content_type=MERGE)
    r.request("same status again", "PATCH", path, body={"status": status}, content_type=MERGE)
    r.request("a field the status does not declare", "PATCH", path, body={"status": {"extra": 1}}, content_type=MERGE)
    r.request("a wrong type", "PATCH", path, body={"status": {"observedGeneration": "one"}}, content_type=MERGE)
    r.request("stored", "GET", boosters(r, "statused"))


@scenario
def inferno_objects_stored_as_written(r: Recorder) -> None:
    kinds = {
        "Accelerator": "accelerators",
        "Capacity": "capacities",
        "Model": "models",
        "Optimizer": "optimizers",
        "Server": "servers",
        "ServiceClass": "serviceclasses",
    }
    for path in sorted((EXAMPLES / "inferno").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not document:
                continue
            document["metadata"].pop("namespace", None)
            name = document["metadata"]["name"]
            base = f"/apis/inferno.platform.ai/v1alpha1/namespaces/{r.namespace}/{kinds[document['kind']]}"
            r.request(f"{path.name} {name}", "POST", base, body=document)
            r.request(f"{path.name} {name} stored", "GET", f"{base}/{name}")


@scenario
def informer_list_then_watch(r: Recorder) -> None:
    """The reconciler's informer: a paged list (`limit`/`continue`), then a watch from the list's resourceVersion."""
    for index in range(5):
        r.send("POST", widgets(r), body=widget(f"w{index}"))
    pages: list[Any] = []
    token = ""
    version = ""
    while True:
        query = f"?limit=2&continue={token}" if token else "?limit=2"
        page = r.send("GET", widgets(r) + query).body
        meta = page["metadata"]
        pages.append(
            ([i["metadata"]["name"] for i in page["items"]], meta.get("remainingItemCount"), "continue" in meta)
        )
        token, version = meta.get("continue", ""), meta["resourceVersion"]
        if not token:
            break
    r.note("pages", pages)
    r.send("PATCH", widgets(r, "w1"), body={"spec": {"replicas": 2}}, content_type=MERGE)
    r.send("DELETE", widgets(r, "w2"))
    r.watch(
        "watch from the list",
        f"{widgets(r)}?allowWatchBookmarks=true",
        since=version,
        until=events_until_name("w2", "DELETED"),
    )


@functools.cache
def closed_port() -> int:
    """One loopback port nothing listens on, the same for both servers' runs (it appears in the message)."""
    from tests.e2e.processes import free_port

    return free_port()


@scenario
def webhook_down(r: Recorder) -> None:
    """Our webhook configurations pointing at a port nothing listens on (the webhook down): failurePolicy Fail."""
    from dataclasses import replace

    from tests.realapi.webhook import ADMISSION, KINDS, configurations_for

    down = replace(r.webhook, https_port=closed_port())
    documents = configurations_for(down, namespace=r.namespace, suffix=r.namespace)
    for document in documents:
        r.send("POST", f"{ADMISSION}/{KINDS[document['kind']]}", body=document)
    try:
        # The API server picks configurations up with a lag: wait until a dry run is refused.
        poll(lambda: r.send("POST", f"{boosters(r)}?dryRun=All", body=booster("probe")).status != 201, timeout=15)
        r.request("create while the webhook is down", "POST", boosters(r), body=booster("down"))
    finally:
        for document in documents:
            r.send("DELETE", f"{ADMISSION}/{KINDS[document['kind']]}/{document['metadata']['name']}")


# ---- CRDs the API server refuses at creation ----------------------------------------------------------------------


def _crd_with(name: str, spec_schema: Obj) -> Obj:
    """A namespaced CRD `<name>s.differential.example.com` whose spec has `spec_schema`."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}s.differential.example.com"},
        "spec": {
            "group": "differential.example.com",
            "names": {"plural": f"{name}s", "singular": name, "kind": name.capitalize()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
                }
            ],
        },
    }


@scenario
def crd_rules_refused_at_creation(r: Recorder) -> None:
    """CEL rules the API server refuses when the CRD is created (dry runs: nothing is installed)."""
    worker = {
        "type": "object",
        "properties": {"topology": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    cases: dict[str, Obj] = {
        "oldSelf under an atomic list": {
            "type": "object",
            "properties": {
                "workers": {
                    "type": "array",
                    "maxItems": 4,
                    "items": {
                        **worker,
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}],
                    },
                }
            },
        },
        "optionalOldSelf without oldSelf": {
            "type": "object",
            "properties": {"a": {"type": "string", "maxLength": 8}},
            "x-kubernetes-validations": [{"rule": "has(self.a)", "optionalOldSelf": True}],
        },
        "a rule over an unbounded list": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.items.all(x, self.items.all(y, x == y))"}],
        },
        "a transition rule under a map list": {
            "type": "object",
            "properties": {
                "units": {
                    "type": "array",
                    "maxItems": 4,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string", "maxLength": 8}, "size": {"type": "integer"}},
                        "x-kubernetes-validations": [{"rule": "self.size == oldSelf.size", "message": "size is fixed"}],
                    },
                }
            },
        },
    }
    for index, (label, schema) in enumerate(cases.items()):
        crd = _crd_with(f"case{index}", schema)
        r.request(label, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All", body=crd)
