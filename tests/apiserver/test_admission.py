"""Admission webhooks called by the fake the way kube-apiserver calls them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of, status_of
from tests.apiserver.webhook_stub import WebhookStub, allow, patch_response, webhook_configuration
from tests.apiserver.widgets import API_VERSION, GROUP, PLURAL, VERSION, widget
from tests.fakeapi.server import FakeApiServer

WIDGET_RULE = {
    "apiGroups": [GROUP],
    "apiVersions": ["v1"],
    "resources": ["widgets"],
    "operations": ["CREATE", "UPDATE"],
}


@pytest.fixture
def stub(widgets: FakeApiServer) -> Iterator[WebhookStub]:
    webhook = WebhookStub()
    webhook.start()
    widgets.route_service(namespace="webhooks", name="stub", port=443, to=("127.0.0.1", webhook.port))
    yield webhook
    webhook.stop()


def configure(server: FakeApiServer, stub: WebhookStub, kind: str, name: str, *, path: str, **options: Any) -> None:
    rules = options.pop("rules", [WIDGET_RULE])
    server.create(webhook_configuration(kind, name, path=path, ca_bundle=stub.ca_bundle, rules=rules, **options))


def create(custom: Any, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    created: dict[str, Any] = custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body, **kwargs)
    return created


def deny(message: str, **status: Any) -> Any:
    def respond(request: dict[str, Any]) -> dict[str, Any]:
        return {"uid": request["uid"], "allowed": False, "status": {"message": message, **status}}

    return respond


def test_a_denial_reaches_the_client_as_an_api_exception_with_the_webhooks_message(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "deny.example.com", path="/validate")
    stub.responders["/validate"] = deny("spec.rateLimit: not supported")
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert caught.value.status == 400
    assert status_of(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'admission webhook "deny.example.com" denied the request: spec.rateLimit: not supported',
        "code": 400,
    }
    assert custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["items"] == []


def test_a_denial_keeps_the_webhooks_code_reason_and_causes(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "deny.example.com", path="/validate")
    causes = [{"reason": "FieldValueForbidden", "message": "not supported", "field": "spec.rateLimit"}]
    stub.responders["/validate"] = deny("validation failed", code=422, reason="Invalid", details={"causes": causes})
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    status = status_of(caught.value)
    assert caught.value.status == 422
    assert status["reason"] == "Invalid"
    assert status["message"] == 'admission webhook "deny.example.com" denied the request: validation failed'
    assert status["details"] == {"causes": causes}


def test_the_admission_review_is_what_kube_apiserver_sends(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "watch.example.com", path="/validate")
    created = create(custom, widget("w1"))
    custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 2}})
    (path, first), (_, second) = stub.received
    assert path == "/validate"
    assert set(first) == {
        "uid",
        "kind",
        "resource",
        "requestKind",
        "requestResource",
        "name",
        "namespace",
        "operation",
        "userInfo",
        "object",
        "oldObject",
        "dryRun",
        "options",
    }
    assert first["kind"] == {"group": GROUP, "version": "v1", "kind": "Widget"}
    assert first["resource"] == {"group": GROUP, "version": "v1", "resource": "widgets"}
    assert first["requestKind"] == first["kind"]
    assert first["requestResource"] == first["resource"]
    assert (first["name"], first["namespace"], first["operation"]) == ("w1", "default", "CREATE")
    assert first["userInfo"]["username"] == "kubernetes-admin"
    assert first["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert first["oldObject"] is None
    assert first["dryRun"] is False
    assert first["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert second["operation"] == "UPDATE"
    assert second["oldObject"]["spec"]["replicas"] == 1
    assert second["object"]["spec"]["replicas"] == 2
    assert second["options"]["kind"] == "PatchOptions"
    assert first["uid"] != second["uid"]


def test_a_mutating_webhook_patch_is_applied_then_defaults_and_validation_run(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "MutatingWebhookConfiguration", "mutate.example.com", path="/mutate")
    stub.responders["/mutate"] = lambda request: patch_response(
        request,
        [
            {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
            {"op": "remove", "path": "/spec/replicas"},
            {"op": "add", "path": "/spec/parts", "value": [{"name": "p"}]},
            {"op": "add", "path": "/spec/unknown", "value": 1},
        ],
    )
    created = create(custom, widget("w1", replicas=3))
    assert created["metadata"]["labels"] == {"mutated": "yes"}
    # Pruned and defaulted again after the patch, as for any object from a webhook.
    assert created["spec"] == {"size": "small", "replicas": 1, "parts": [{"name": "p", "count": 1}]}


def test_mutating_webhooks_run_before_validating_ones(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(widgets, stub, "MutatingWebhookConfiguration", "mutate.example.com", path="/mutate")
    configure(widgets, stub, "ValidatingWebhookConfiguration", "check.example.com", path="/validate")
    stub.responders["/mutate"] = lambda request: patch_response(
        request, [{"op": "add", "path": "/spec/color", "value": "green"}]
    )
    seen: list[str] = []

    def check(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["object"]["spec"].get("color", ""))
        return allow(request)

    stub.responders["/validate"] = check
    create(custom, widget("w1"))
    assert seen == ["green"]


def test_failure_policy_fail_turns_an_unreachable_webhook_into_a_500(custom: Any, widgets: FakeApiServer) -> None:
    config = webhook_configuration(
        "ValidatingWebhookConfiguration", "gone.example.com", path="/validate", ca_bundle="", rules=[WIDGET_RULE]
    )
    config["webhooks"][0]["clientConfig"]["service"]["name"] = "gone"
    widgets.create(config)
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert caught.value.status == 500
    status = status_of(caught.value)
    assert status["reason"] == "InternalError"
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: '
        'Post "https://gone.webhooks.svc:443/validate": dial tcp: lookup gone.webhooks.svc: no such host'
    )


def test_a_webhook_nothing_listens_for_is_refused_in_gos_words(custom: Any, widgets: FakeApiServer) -> None:
    """As kube-apiserver v1.36.2 words it (tests/realapi differential suite): the errno's text, no Python address."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = webhook_configuration(
        "ValidatingWebhookConfiguration", "down.example.com", path="/validate", ca_bundle="", rules=[WIDGET_RULE]
    )
    config["webhooks"][0]["clientConfig"] = {"url": f"https://127.0.0.1:{port}/validate"}
    widgets.create(config)
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert status_of(caught.value)["message"] == (
        'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
        f'Post "https://127.0.0.1:{port}/validate?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


def test_failure_policy_ignore_lets_the_request_through(custom: Any, widgets: FakeApiServer) -> None:
    config = webhook_configuration(
        "ValidatingWebhookConfiguration",
        "gone.example.com",
        path="/validate",
        ca_bundle="",
        rules=[WIDGET_RULE],
        failure_policy="Ignore",
    )
    config["webhooks"][0]["clientConfig"]["service"]["name"] = "gone"
    widgets.create(config)
    assert create(custom, widget("w1"))["metadata"]["name"] == "w1"


def test_the_ca_bundle_is_verified(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    other = WebhookStub()  # a different CA
    widgets.create(
        webhook_configuration(
            "ValidatingWebhookConfiguration",
            "tls.example.com",
            path="/validate",
            ca_bundle=other.ca_bundle,
            rules=[WIDGET_RULE],
        )
    )
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert caught.value.status == 500
    assert "tls: failed to verify certificate" in message_of(caught.value)
    assert stub.received == []


def test_timeout_seconds_bounds_the_call(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "slow.example.com", path="/validate", timeout_seconds=1)
    stub.delay = 1.5
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert caught.value.status == 500
    assert message_of(caught.value).endswith(
        'failed to call webhook: Post "https://stub.webhooks.svc:443/validate?timeout=1s": context deadline exceeded'
    )


def test_a_response_for_another_request_is_a_failure(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "uid.example.com", path="/validate")
    stub.responders["/validate"] = lambda request: {"uid": "someone-else", "allowed": True}
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert caught.value.status == 500
    assert 'expected response.uid="' in message_of(caught.value)


def test_dry_run_is_sent_to_webhooks_and_nothing_is_stored(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "watch.example.com", path="/validate")
    create(custom, widget("w1"), dry_run="All")
    assert stub.received[0][1]["dryRun"] is True
    assert stub.received[0][1]["options"]["dryRun"] == ["All"]
    assert custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)["items"] == []


def test_rules_select_operations_and_resources(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub, core: Any
) -> None:
    rule = dict(WIDGET_RULE, operations=["CREATE"])
    configure(widgets, stub, "ValidatingWebhookConfiguration", "create.example.com", path="/validate", rules=[rule])
    create(custom, widget("w1"))
    custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 2}})
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c")))
    assert [r["operation"] for _, r in stub.received] == ["CREATE"]


def test_status_writes_match_only_status_rules(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    rule = dict(WIDGET_RULE, resources=["widgets/status"])
    configure(widgets, stub, "ValidatingWebhookConfiguration", "status.example.com", path="/validate", rules=[rule])
    create(custom, widget("w1"))
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "w1", {"status": {"phase": "Up"}})
    assert [(r["operation"], r.get("subResource")) for _, r in stub.received] == [("UPDATE", "status")]


def test_namespace_and_object_selectors(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    widgets.create_namespace("watched", labels={"admission": "on"})
    configure(
        widgets,
        stub,
        "ValidatingWebhookConfiguration",
        "scoped.example.com",
        path="/validate",
        namespace_selector={"matchLabels": {"admission": "on"}},
        object_selector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
    )
    create(custom, widget("w1"))
    custom.create_namespaced_custom_object(GROUP, VERSION, "watched", PLURAL, widget("w2", namespace="watched"))
    skipped = widget("w3", namespace="watched")
    skipped["metadata"]["labels"] = {"skip": "yes"}
    custom.create_namespaced_custom_object(GROUP, VERSION, "watched", PLURAL, skipped)
    assert [r["name"] for _, r in stub.received] == ["w2"]


def test_url_client_config(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(
        widgets,
        stub,
        "ValidatingWebhookConfiguration",
        "url.example.com",
        path="/validate",
        url=f"https://127.0.0.1:{stub.port}/by-url",
    )
    stub.responders["/by-url"] = deny("from the url webhook")
    with pytest.raises(ApiException) as caught:
        create(custom, widget("w1"))
    assert message_of(caught.value) == 'admission webhook "url.example.com" denied the request: from the url webhook'


def test_webhook_configurations_get_their_defaults(kube_client: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "defaults.example.com", path="/validate")
    api: Any = client.AdmissionregistrationV1Api(kube_client)
    stored = api.read_validating_webhook_configuration("defaults").webhooks[0]
    assert stored.failure_policy == "Fail"
    assert stored.match_policy == "Equivalent"
    assert stored.timeout_seconds == 10
    assert stored.client_config.service.port == 443
    assert stored.rules[0].scope == "*"


def test_invalid_webhook_configuration_is_rejected(fake_apiserver: FakeApiServer) -> None:
    import json

    import urllib3

    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bad"},
        "webhooks": [{"name": "bad", "clientConfig": {"url": "https://x"}, "admissionReviewVersions": ["v1"]}],
    }
    # Posted raw: the generated client would refuse the missing sideEffects itself.
    answer = urllib3.PoolManager().request(
        "POST",
        f"{fake_apiserver.url}/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 422
    assert json.loads(answer.data)["message"] == (
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: '
        '[webhooks[0].name: Invalid value: "bad": should be a domain with at least three segments separated by dots, '
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun]"
    )


def test_warnings_from_webhooks_reach_the_client(custom: Any, widgets: FakeApiServer, stub: WebhookStub) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "warn.example.com", path="/validate")
    stub.responders["/validate"] = lambda request: {"uid": request["uid"], "allowed": True, "warnings": ["careful"]}
    _, _, headers = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, "default", PLURAL, widget("w1")
    )
    assert headers["Warning"] == '299 - "careful"'


def test_api_version_of_the_object_follows_the_request_version(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(
        widgets,
        stub,
        "ValidatingWebhookConfiguration",
        "watch.example.com",
        path="/validate",
        rules=[dict(WIDGET_RULE, apiVersions=["*"])],
    )
    body = widget("w1")
    body["apiVersion"] = f"{GROUP}/v1beta1"
    custom.create_namespaced_custom_object(GROUP, "v1beta1", "default", PLURAL, body)
    request = stub.received[0][1]
    assert request["kind"]["version"] == "v1beta1"
    assert request["object"]["apiVersion"] == f"{GROUP}/v1beta1"
    stored = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    assert stored["apiVersion"] == API_VERSION


GC_USER = "system:serviceaccount:kube-system:generic-garbage-collector"


def test_the_garbage_collectors_finalizer_removal_is_an_update_webhooks_see(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "watch.example.com", path="/validate")
    create(custom, widget("w1"))
    stub.received.clear()
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", propagation_policy="Foreground")
    widgets.settle()
    assert widgets.get(API_VERSION, PLURAL, "w1", "default") is None
    ((_, request),) = stub.received
    assert (request["operation"], request["userInfo"]["username"]) == ("UPDATE", GC_USER)
    assert request["oldObject"]["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert "finalizers" not in request["object"]["metadata"]
    assert request["options"] == {"kind": "PatchOptions", "apiVersion": "meta.k8s.io/v1"}


def test_a_denied_finalizer_removal_keeps_the_object_until_a_retry_is_admitted(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    configure(widgets, stub, "ValidatingWebhookConfiguration", "deny.example.com", path="/validate")
    create(custom, widget("w1"))
    stub.responders["/validate"] = deny("not now")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", propagation_policy="Foreground")
    widgets.settle()
    stuck = widgets.get(API_VERSION, PLURAL, "w1", "default")
    assert stuck is not None
    assert stuck["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert widgets.gc_failures() == {
        f"{PLURAL}.{GROUP}/default/w1": 'admission webhook "deny.example.com" denied the request: not now'
    }
    # No write happens anywhere: the collector comes back on its own, backing off between attempts.
    stub.responders["/validate"] = allow
    deadline = time.monotonic() + 5
    while widgets.get(API_VERSION, PLURAL, "w1", "default") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert widgets.get(API_VERSION, PLURAL, "w1", "default") is None
    assert widgets.gc_failures() == {}


def test_the_garbage_collectors_deletion_of_a_dependent_is_a_delete_webhooks_see(
    custom: Any, widgets: FakeApiServer, stub: WebhookStub
) -> None:
    rule = dict(WIDGET_RULE, operations=["DELETE"])
    configure(widgets, stub, "ValidatingWebhookConfiguration", "watch.example.com", path="/validate", rules=[rule])
    owner = create(custom, widget("owner"))
    child = widget("child")
    owner_ref = {"apiVersion": API_VERSION, "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    child["metadata"]["ownerReferences"] = [owner_ref]
    create(custom, child)
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "owner")
    widgets.settle()
    assert widgets.get(API_VERSION, PLURAL, "child", "default") is None
    by_name = {request["name"]: request for _, request in stub.received}
    assert by_name["child"]["operation"] == "DELETE"
    assert by_name["child"]["userInfo"]["username"] == GC_USER
    assert by_name["owner"]["userInfo"]["username"] != GC_USER
