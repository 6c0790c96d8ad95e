"""Built-in kinds: secrets, configmaps, namespaces, events (both APIs), leases, pods."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of
from tests.fakeapi.server import FakeApiServer


def test_secret_string_data_is_folded_into_data(core: Any) -> None:
    created = core.create_namespaced_secret(
        "default",
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="s"), string_data={"password": "hunter2"}, data={"a": "YQ=="}
        ),
    )
    assert created.type == "Opaque"
    assert created.string_data is None
    assert created.data == {"a": "YQ==", "password": base64.b64encode(b"hunter2").decode()}


def test_secret_data_must_be_base64(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_secret(
            "default", client.V1Secret(metadata=client.V1ObjectMeta(name="s"), data={"a": "no!"})
        )
    assert caught.value.status == 400
    assert message_of(caught.value) == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 2'
    )


def test_tls_secrets_need_their_keys(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_secret(
            "default", client.V1Secret(metadata=client.V1ObjectMeta(name="s"), type="kubernetes.io/tls", data={})
        )
    assert caught.value.status == 422
    assert message_of(caught.value) == (
        'Secret "s" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]'
    )


def test_secret_type_is_immutable(core: Any) -> None:
    core.create_namespaced_secret("default", client.V1Secret(metadata=client.V1ObjectMeta(name="s")))
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_secret("s", "default", {"type": "Other"})
    assert message_of(caught.value) == 'Secret "s" is invalid: type: Invalid value: "Other": field is immutable'


def test_configmap_keys_are_validated(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"bad key": "v"})
        )
    assert caught.value.status == 422
    assert message_of(caught.value).startswith(
        'ConfigMap "c" is invalid: data[bad key]: Invalid value: "bad key": a valid config key must consist of '
        "alphanumeric characters, '-', '_' or '.'"
    )


def test_immutable_configmaps(core: Any) -> None:
    core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"}, immutable=True)
    )
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map("c", "default", {"data": {"a": "2"}})
    assert (
        message_of(caught.value)
        == 'ConfigMap "c" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    )


def test_namespaces_get_their_label_phase_and_finalizer(core: Any) -> None:
    created = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team")))
    assert created.metadata.labels == {"kubernetes.io/metadata.name": "team"}
    assert created.status.phase == "Active"
    assert created.spec.finalizers == ["kubernetes"]
    names = [n.metadata.name for n in core.list_namespace().items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system", "team"]


def test_namespace_names_are_dns_labels(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="a.b")))
    assert caught.value.status == 422
    assert 'metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of' in message_of(caught.value)


def test_events_v1_and_core_events_are_the_same_objects(kube_client: Any, core: Any) -> None:
    events: Any = client.EventsV1Api(kube_client)
    now = dt.datetime(2025, 1, 2, 3, 4, 5, 600000, tzinfo=dt.UTC)
    created = events.create_namespaced_event(
        "default",
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(name="mb.1"),
            event_time=now,
            reporting_controller="modelbooster.example.com/reconciler",
            reporting_instance="reconciler-0",
            action="Create",
            reason="Created",
            regarding=client.V1ObjectReference(kind="ModelBooster", name="mb", namespace="default"),
            note="created ModelServing mb-a",
            type="Normal",
        ),
    )
    assert created.regarding.name == "mb"
    assert created.note == "created ModelServing mb-a"
    legacy = core.read_namespaced_event("mb.1", "default")
    assert legacy.involved_object.name == "mb"
    assert legacy.message == "created ModelServing mb-a"
    assert legacy.reporting_component == "modelbooster.example.com/reconciler"
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=mb")
    assert [e.metadata.name for e in found.items] == ["mb.1"]
    assert [
        e.metadata.name for e in events.list_namespaced_event("default", field_selector="regarding.name=mb").items
    ] == ["mb.1"]


def test_events_v1_are_validated_strictly(fake_apiserver: FakeApiServer) -> None:
    import json

    import urllib3

    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "R", "type": "Odd"}
    answer = urllib3.PoolManager().request(
        "POST",
        f"{fake_apiserver.url}/apis/events.k8s.io/v1/namespaces/default/events",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 422
    message = json.loads(answer.data)["message"]
    # Validation errors name the stored type: core Event, whichever API the request came through.
    assert message.startswith('Event "e" is invalid: [')
    assert "eventTime: Required value" in message
    assert 'type: Invalid value: "": has invalid value: Odd' in message


def test_leases_for_leader_election(kube_client: Any) -> None:
    leases: Any = client.CoordinationV1Api(kube_client)
    now = dt.datetime.now(dt.UTC)
    created = leases.create_namespaced_lease(
        "default",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="leader"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now),
        ),
    )
    created.spec.holder_identity = "b"
    taken = leases.replace_namespaced_lease("leader", "default", created)
    assert taken.spec.holder_identity == "b"
    created.spec.holder_identity = "c"
    with pytest.raises(ApiException) as caught:
        leases.replace_namespaced_lease("leader", "default", created)  # stale: someone else renewed it
    assert caught.value.status == 409
    with pytest.raises(ApiException) as invalid:
        leases.patch_namespaced_lease("leader", "default", {"spec": {"leaseDurationSeconds": 0}})
    assert message_of(invalid.value) == (
        'Lease.coordination.k8s.io "leader" is invalid: '
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    )


def test_pods_get_defaults_and_a_qos_class(core: Any) -> None:
    created = core.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="p"),
            spec=client.V1PodSpec(
                containers=[
                    client.V1Container(
                        name="c",
                        image="vllm/vllm-openai:v0.9.0",
                        resources=client.V1ResourceRequirements(limits={"cpu": "1", "memory": "1Gi"}),
                    )
                ]
            ),
        ),
    )
    assert created.spec.restart_policy == "Always"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.spec.containers[0].image_pull_policy == "IfNotPresent"
    assert created.status.qos_class == "Guaranteed"


def test_pod_spec_is_mostly_immutable(core: Any) -> None:
    core.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="p"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x:1")]),
        ),
    )
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "c", "image": "x:2"}]}})
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_pod("p", "default", {"spec": {"restartPolicy": "Never"}})
    assert caught.value.status == 422
    assert message_of(caught.value).startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`'
    )


def test_pods_need_containers(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod(
            "default", client.V1Pod(metadata=client.V1ObjectMeta(name="p"), spec=client.V1PodSpec(containers=[]))
        )
    assert message_of(caught.value) == 'Pod "p" is invalid: spec.containers: Required value'


def test_unknown_top_level_fields_of_builtin_kinds_are_dropped_with_a_warning(
    kube_client: Any, fake_apiserver: FakeApiServer
) -> None:
    import json

    import urllib3

    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "spec": {"x": 1}}
    answer = urllib3.PoolManager().request(
        "POST",
        f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 201
    assert "spec" not in json.loads(answer.data)
    assert answer.headers["Warning"] == '299 - "unknown field \\"spec\\""'


# ---- as kube-apiserver v1.36.2 answers (found by tests/realapi's differential suite) -------------------------


def _post(kube_client: Any, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = kube_client.call_api(
        *kube_client.param_serialize("POST", path, header_params={"Content-Type": "application/json"}, body=body)
    )
    response.read()
    return response.status, json.loads(response.data)


LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "renewTime",
            "2026-01-01T00:00:00Z",
            'parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"',
        ),
        (
            "acquireTime",
            "yesterday",
            'parsing time "yesterday" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "yesterday" as "2006"',
        ),
        (
            "leaseDurationSeconds",
            "15",
            "json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32",
        ),
    ],
)
def test_lease_fields_are_decoded_as_their_go_types(kube_client: Any, field: str, value: Any, error: str) -> None:
    """A MicroTime needs its six fraction digits: a client writing RFC 3339 seconds is refused."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {field: value}}
    status, body = _post(kube_client, LEASE_PATH, lease)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == f'Lease in version "v1" cannot be handled as a Lease: {error}'


def test_event_timestamps_are_decoded_and_zero_fields_are_served(kube_client: Any) -> None:
    path = "/api/v1/namespaces/default/events"
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "ModelBooster", "name": "m", "namespace": "default"},
        "reason": "Synced",
        "source": {"component": "c"},
    }
    status, body = _post(kube_client, path, {**event, "firstTimestamp": "nope"})
    assert status == 400
    assert body["message"] == (
        'Event in version "v1" cannot be handled as a Event: parsing time "nope" as "2006-01-02T15:04:05Z07:00": '
        'cannot parse "nope" as "2006"'
    )
    status, created = _post(kube_client, path, {**event, "firstTimestamp": "2026-01-01T00:00:00Z"})
    assert status == 201
    # Fields of the Go struct without omitempty are always there.
    assert {k: created[k] for k in ("eventTime", "lastTimestamp", "reportingComponent", "reportingInstance")} == {
        "eventTime": None,
        "lastTimestamp": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }
    # involvedObject is an atomic struct, source a struct that always exists: no `.` entries for them.
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:firstTimestamp": {},
        "f:involvedObject": {},
        "f:reason": {},
        "f:source": {"f:component": {}},
    }


def test_lease_spec_is_a_struct_in_managed_fields(kube_client: Any) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"holderIdentity": "a"}}  # fmt: skip
    status, created = _post(kube_client, LEASE_PATH, lease)
    assert status == 201
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {"f:holderIdentity": {}}}


def test_a_namespace_label_set_by_defaulting_belongs_to_its_creator(core: Any) -> None:
    created = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team")))
    (entry,) = created.metadata.managed_fields
    assert entry.fields_v1 == {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}
    deleted = core.delete_namespace("team", _preload_content=False)
    metadata = json.loads(deleted.data)["metadata"]
    assert metadata["deletionTimestamp"]
    assert "deletionGracePeriodSeconds" not in metadata  # a namespace's deletion sets no grace period
