"""Objects stored before the rules of their CRD existed, and what kube-apiserver v1.36 does with them.

Seen on a real v1.36.2 server (CRDValidationRatcheting on): CRD validation, CEL rules included, runs on every
write — a label change, a status write, the garbage collector's removal of `foregroundDeletion` — and its
ratcheting spared no value holding an `x-kubernetes-preserve-unknown-fields` subtree (`oldSelf == self` over
such a value was false too). A rule that refuses a field with `!has(self.x)` therefore blocks every later
write of an object that already had it; a transition rule with `optionalOldSelf` that asks whether the old
object had it passes a carried-over value and still refuses a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of
from tests.fakeapi.server import FakeApiServer

GROUP: Final = "example.fakeapi.io"
VERSION: Final = "v1"
PLURAL: Final = "rigs"
NAME: Final = f"{PLURAL}.{GROUP}"
INVALID: Final = 'Rig.example.fakeapi.io "{name}" is invalid: {errors}'
FREE_FORM: Final = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
BEHAVIOR: Final = "behavior is not supported"
RULES_NOT_CHECKED: Final = (
    "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
TOPOLOGY: Final = "topology is not supported"


def forbid(field: str, message: str, *, unless_kept: bool = False) -> dict[str, Any]:
    """`field` refused (always, or unless the old object had it) with `message`, reported at the field."""
    rule: dict[str, Any] = {"message": message, "reason": "FieldValueForbidden", "fieldPath": f".{field}"}
    if not unless_kept:
        return {"rule": f"!has(self.{field})", **rule}
    kept = f"(oldSelf.hasValue() && has(oldSelf.value().{field}))"
    return {"rule": f"!has(self.{field}) || {kept}", **rule, "optionalOldSelf": True}


FORBID_NEW_WORKER_TOPOLOGY: Final = {
    "rule": "!self.workers.exists(w, has(w.topology)) "
    "|| (oldSelf.hasValue() && oldSelf.value().workers.exists(w, has(w.topology)))",
    "message": TOPOLOGY,
    "reason": "FieldValueForbidden",
    "fieldPath": ".workers",
    "optionalOldSelf": True,
}


def rig_schema(
    *,
    policy_rules: Sequence[dict[str, Any]] = (),
    unit_rules: Sequence[dict[str, Any]] = (),
    worker_rules: Sequence[dict[str, Any]] = (),
    tightened: bool = False,
) -> dict[str, Any]:
    """The Rig schema: a policy with a free-form `behavior`, units keyed by name holding an atomic list of
    workers with a free-form `topology`. `tightened` adds bounds (OpenAPI and CEL) an old object may break."""
    worker: dict[str, Any] = {
        "type": "object",
        "properties": {"image": {"type": "string", "maxLength": 20}, "topology": FREE_FORM},
    }
    unit: dict[str, Any] = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "workers": {"type": "array", "maxItems": 8, "items": worker},
        },
    }
    policy: dict[str, Any] = {
        "type": "object",
        "properties": {
            "metrics": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 20}},
            "behavior": FREE_FORM,
        },
    }
    replicas: dict[str, Any] = {"type": "integer"}
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "replicas": replicas,
            "policy": policy,
            "units": {
                "type": "array",
                "maxItems": 4,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": unit,
            },
        },
    }
    for node, rules in ((policy, policy_rules), (unit, unit_rules), (worker, worker_rules)):
        if rules:
            node["x-kubernetes-validations"] = list(rules)
    if tightened:
        replicas["maximum"] = 5
        replicas["x-kubernetes-validations"] = [{"rule": "self != 7", "message": "seven is unlucky"}]
        spec["x-kubernetes-validations"] = [
            {"rule": "!has(self.replicas) || self.replicas != 7", "message": "seven is unlucky here too"}
        ]
        policy["properties"]["metrics"]["items"]["maxLength"] = 3
        policy["required"] = ["metrics"]
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }


OLD_STYLE: Final = rig_schema(policy_rules=[forbid("behavior", BEHAVIOR)], worker_rules=[forbid("topology", TOPOLOGY)])
CARRIED_OVER: Final = rig_schema(
    policy_rules=[forbid("behavior", BEHAVIOR, unless_kept=True)], unit_rules=[FORBID_NEW_WORKER_TOPOLOGY]
)


def rig_crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "names": {"plural": PLURAL, "singular": "rig", "kind": "Rig"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def rig(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Rig", "metadata": {"name": name}, "spec": spec}


LEGACY_SPEC: Final[dict[str, Any]] = {
    "policy": {"metrics": ["m"], "behavior": {"scaleUp": {"panicPolicy": {"window": "1m"}}}},
    "units": [{"name": "a", "workers": [{"image": "img", "topology": {"rack": "r1"}}]}],
}


class Rigs:
    """The Rig CRD installed (and replaced) through the API, and its objects."""

    def __init__(self, kube_client: Any, server: FakeApiServer) -> None:
        self.extensions: Any = client.ApiextensionsV1Api(kube_client)
        self.api: Any = client.CustomObjectsApi(kube_client)
        self.server = server

    def install(self, schema: dict[str, Any]) -> None:
        body = rig_crd(schema)
        current = self.server.get("apiextensions.k8s.io/v1", "customresourcedefinitions", NAME)
        if current is None:
            self.extensions.create_custom_resource_definition(body)
            return
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        self.extensions.replace_custom_resource_definition(NAME, body)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.api.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
        return created

    def carried_over(self, schema: dict[str, Any], name: str = "legacy", **spec: Any) -> dict[str, Any]:
        """An object created while the CRD had no rules, then the CRD replaced by one with `schema`."""
        self.install(rig_schema())
        created = self.create(rig(name, **(spec or LEGACY_SPEC)))
        self.install(schema)
        return created

    def get(self, name: str) -> dict[str, Any] | None:
        return self.server.get(f"{GROUP}/{VERSION}", PLURAL, name, "default")

    def patch(self, name: str, body: Any) -> tuple[dict[str, Any], list[str]]:
        """A patch (JSON merge patch for a dict, JSON patch for a list); the result and its warnings."""
        content_type = "application/json-patch+json" if isinstance(body, list) else "application/merge-patch+json"
        data, _, headers = self.api.patch_namespaced_custom_object_with_http_info(
            GROUP, VERSION, "default", PLURAL, name, body, _content_type=content_type
        )
        return data, warnings_of(headers)

    def label(self, name: str) -> tuple[dict[str, Any], list[str]]:
        return self.patch(name, {"metadata": {"labels": {"team": "a"}}})

    def patch_status(self, name: str, status: dict[str, Any]) -> dict[str, Any]:
        patched: dict[str, Any] = self.api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "default", PLURAL, name, {"status": status}
        )
        return patched

    def delete_foreground(self, name: str) -> None:
        self.api.delete_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, name, propagation_policy="Foreground"
        )


def warnings_of(headers: Any) -> list[str]:
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    return [value.split('"', 1)[1].rsplit('"', 1)[0] for value in values if value]


def refused(call: Callable[[], Any]) -> str:
    with pytest.raises(ApiException) as caught:
        call()
    assert caught.value.status == 422
    return message_of(caught.value)


@pytest.fixture
def rigs(kube_client: Any, fake_apiserver: FakeApiServer) -> Rigs:
    return Rigs(kube_client, fake_apiserver)


# Only the policy's rule: `policy` holds a free-form `behavior`, so it never counts as unchanged. The worker's
# rule is spared (unchanged, so a warning): its nearest correlatable node, the unit, compares its atomic
# `workers` list whole, free-form `topology` included (seen on v1.36.2 through tests/realapi's differential suite).
OLD_STYLE_REFUSAL: Final = INVALID.format(name="legacy", errors=f"spec.policy.behavior: Forbidden: {BEHAVIOR}")


def test_an_old_style_rule_refuses_a_label_change_of_an_object_that_already_broke_it(rigs: Rigs) -> None:
    rigs.carried_over(OLD_STYLE)
    assert refused(lambda: rigs.label("legacy")) == OLD_STYLE_REFUSAL
    assert "labels" not in (rigs.get("legacy") or {})["metadata"]


def test_an_old_style_rule_refuses_a_status_write(rigs: Rigs) -> None:
    rigs.carried_over(OLD_STYLE)
    assert refused(lambda: rigs.patch_status("legacy", {"phase": "Failed"})) == OLD_STYLE_REFUSAL


def test_a_rule_below_an_atomic_list_is_spared_with_a_warning_when_its_unit_is_unchanged(rigs: Rigs) -> None:
    """Ratcheting compares an atomic list whole, so a free-form value inside it does not stop the sparing."""
    rigs.carried_over(rig_schema(worker_rules=[forbid("topology", TOPOLOGY)]))
    labelled, warnings = rigs.label("legacy")
    assert labelled["metadata"]["labels"] == {"team": "a"}
    assert warnings == [f"spec.units[0].workers[0].topology: Forbidden: {TOPOLOGY}"]


def test_an_old_style_rule_leaves_foreground_deletion_stuck_until_the_rules_spare_the_object(
    rigs: Rigs, fake_apiserver: FakeApiServer
) -> None:
    rigs.carried_over(OLD_STYLE)
    rigs.delete_foreground("legacy")
    fake_apiserver.settle()
    stuck = rigs.get("legacy")
    assert stuck is not None
    assert stuck["metadata"]["deletionTimestamp"]
    assert stuck["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert fake_apiserver.gc_failures() == {f"{NAME}/default/legacy": OLD_STYLE_REFUSAL}
    # Rules that spare carried-over values let the garbage collector's next attempt through.
    rigs.install(CARRIED_OVER)
    fake_apiserver.settle()
    assert rigs.get("legacy") is None
    assert fake_apiserver.gc_failures() == {}


def test_transition_rules_spare_carried_over_values_on_every_kind_of_write(
    rigs: Rigs, fake_apiserver: FakeApiServer
) -> None:
    rigs.carried_over(CARRIED_OVER)
    labelled, warnings = rigs.label("legacy")
    assert labelled["metadata"]["labels"] == {"team": "a"}
    assert warnings == []
    assert rigs.patch_status("legacy", {"phase": "Failed"})["status"] == {"phase": "Failed"}
    rigs.delete_foreground("legacy")
    fake_apiserver.settle()
    assert rigs.get("legacy") is None


def test_transition_rules_refuse_a_new_value_on_create_with_the_rules_message_reason_and_field_path(
    rigs: Rigs,
) -> None:
    rigs.install(CARRIED_OVER)
    message = refused(lambda: rigs.create(rig("fresh", **LEGACY_SPEC)))
    errors = f"[spec.policy.behavior: Forbidden: {BEHAVIOR}, spec.units[0].workers: Forbidden: {TOPOLOGY}]"
    assert message == INVALID.format(name="fresh", errors=errors)
    assert rigs.get("fresh") is None


def test_transition_rules_refuse_a_value_an_update_adds_and_admit_one_it_keeps(rigs: Rigs) -> None:
    rigs.install(CARRIED_OVER)
    rigs.create(rig("plain", policy={"metrics": ["m"]}, units=[{"name": "a", "workers": [{"image": "i"}]}]))
    add_behavior: dict[str, Any] = {"spec": {"policy": {"behavior": {"scaleUp": {}}}}}
    assert refused(lambda: rigs.patch("plain", add_behavior)) == INVALID.format(
        name="plain", errors=f"spec.policy.behavior: Forbidden: {BEHAVIOR}"
    )
    add_topology = [{"op": "add", "path": "/spec/units/0/workers/0/topology", "value": {"rack": "r2"}}]
    assert refused(lambda: rigs.patch("plain", add_topology)) == INVALID.format(
        name="plain", errors=f"spec.units[0].workers: Forbidden: {TOPOLOGY}"
    )
    # A new unit (its key did not exist) has no old value: it may not bring a topology either.
    new_unit = [{"op": "add", "path": "/spec/units/-", "value": {"name": "b", "workers": [{"topology": {}}]}}]
    assert refused(lambda: rigs.patch("plain", new_unit)) == INVALID.format(
        name="plain", errors=f"spec.units[1].workers: Forbidden: {TOPOLOGY}"
    )

    rigs.carried_over(CARRIED_OVER, name="legacy")
    # Presence is what the rules check: a kept (even edited) value passes, and so does dropping it.
    kept, _ = rigs.patch("legacy", {"spec": {"policy": {"behavior": {"scaleUp": {"panicPolicy": {"window": "2m"}}}}}})
    assert kept["spec"]["policy"]["behavior"]["scaleUp"]["panicPolicy"] == {"window": "2m"}
    dropped, _ = rigs.patch("legacy", {"spec": {"policy": {"behavior": None}}})
    assert "behavior" not in dropped["spec"]["policy"]
    assert refused(lambda: rigs.patch("legacy", add_behavior)) == INVALID.format(
        name="legacy", errors=f"spec.policy.behavior: Forbidden: {BEHAVIOR}"
    )


def test_equality_over_a_free_form_value_never_holds(rigs: Rigs) -> None:
    """`oldSelf == self` was false on v1.36.2 for an unchanged `behavior`: such a rule spares nothing."""
    equality = {
        "rule": "(oldSelf.hasValue() && oldSelf.value() == self) || !has(self.behavior)",
        "message": BEHAVIOR,
        "optionalOldSelf": True,
    }
    rigs.carried_over(rig_schema(policy_rules=[equality]))
    assert refused(lambda: rigs.label("legacy")) == INVALID.format(
        name="legacy", errors=f"spec.policy: Invalid value: {BEHAVIOR}"
    )


def test_ratcheting_spares_unchanged_values_and_warns_about_spared_rules(rigs: Rigs) -> None:
    rigs.carried_over(rig_schema(tightened=True), name="plain", replicas=7, policy={"metrics": ["long"]})
    labelled, warnings = rigs.label("plain")
    assert labelled["metadata"]["labels"] == {"team": "a"}
    assert sorted(warnings) == [
        "spec.replicas: Invalid value: 7: seven is unlucky",
        "spec: Invalid value: seven is unlucky here too",
    ]
    # A changed value is validated in full.
    assert refused(lambda: rigs.patch("plain", {"spec": {"replicas": 8}})) == INVALID.format(
        name="plain", errors="spec.replicas: Invalid value: 8: spec.replicas in body should be less than or equal to 5"
    )


def test_ratcheting_never_spares_a_node_holding_a_free_form_value(rigs: Rigs) -> None:
    policy = {"metrics": ["long"], "behavior": {"scaleUp": {}}}
    rigs.carried_over(rig_schema(tightened=True), name="mixed", replicas=7, policy=policy)
    # spec holds behavior: its rule is not spared; replicas and the metrics list hold none: they are.
    message = refused(lambda: rigs.label("mixed"))
    assert message == INVALID.format(name="mixed", errors="spec: Invalid value: seven is unlucky here too")


def test_a_status_write_validates_the_status_schema_only_but_every_cel_rule(rigs: Rigs) -> None:
    # policy lacks the metrics the tightened schema requires, and holds behavior, so it is never spared.
    rigs.carried_over(rig_schema(tightened=True), name="old", policy={"behavior": {"scaleUp": {}}})
    # A missing required field blocks the CEL rules (they are not run, and one error says so).
    assert refused(lambda: rigs.label("old")) == INVALID.format(
        name="old", errors=f"[spec.policy.metrics: Required value, {RULES_NOT_CHECKED}]"
    )
    assert rigs.patch_status("old", {"phase": "Failed"})["status"] == {"phase": "Failed"}
    # The status schema is validated on its own: its messages name the path below `status`.
    wrong_type = 'status.phase: Invalid value: "integer": phase in body must be of type string: "integer"'
    assert refused(lambda: rigs.patch_status("old", {"phase": 3})) == INVALID.format(
        name="old", errors=f"[{wrong_type}, {RULES_NOT_CHECKED}]"
    )


def test_old_self_below_an_atomic_list_is_refused_when_the_crd_is_created(rigs: Rigs) -> None:
    rule = forbid("topology", TOPOLOGY, unless_kept=True)
    message = refused(lambda: rigs.install(rig_schema(worker_rules=[rule])))
    workers = "spec.validation.openAPIV3Schema.properties[spec].properties[units].items.properties[workers]"
    assert message == (
        f'CustomResourceDefinition.apiextensions.k8s.io "{NAME}" is invalid: '
        f'{workers}.items.x-kubernetes-validations[0].rule: Invalid value: "{rule["rule"]}": '
        f"oldSelf cannot be used on the uncorrelatable portion of the schema within {workers}"
    )
    # Under the units list (a list-type map keyed by name) the same rule is fine.
    rigs.install(rig_schema(unit_rules=[forbid("name", "no", unless_kept=True)]))


def test_optional_old_self_on_a_rule_without_old_self_is_refused(rigs: Rigs) -> None:
    rule = {**forbid("behavior", BEHAVIOR), "optionalOldSelf": True}
    message = refused(lambda: rigs.install(rig_schema(policy_rules=[rule])))
    assert message.endswith(
        "properties[policy].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: "
        "may not be set if oldSelf is not used in rule"
    )
