"""Fault injection and the request log."""

from __future__ import annotations

import time
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import status_of
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, widget
from tests.fakeapi.faults import Faults, RequestFacts
from tests.fakeapi.server import FakeApiServer


def cm(name: str) -> Any:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))


def test_fail_next_n_matching_requests(core: Any, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.faults.fail_next(2, status=500, verb="create", resource="configmaps")
    for _ in range(2):
        with pytest.raises(ApiException) as caught:
            core.create_namespaced_config_map("default", cm("c"))
        assert caught.value.status == 500
        assert status_of(caught.value)["reason"] == "InternalError"
        assert status_of(caught.value)["message"] == "injected fault"
    assert core.create_namespaced_config_map("default", cm("c")).metadata.name == "c"


def test_faults_match_only_what_they_name(core: Any, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.faults.fail_next(1, status=409, verb="update", name="other")
    core.create_namespaced_config_map("default", cm("c"))
    core.read_namespaced_config_map("c", "default")
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("other", "default", cm("other"))
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"


def test_throttling_with_retry_after(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.faults.fail_next(1, status=429, path=r"/configmaps$", retry_after=2)
    answer = urllib3.PoolManager(retries=False).request(
        "GET", f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps"
    )
    assert answer.status == 429
    assert answer.headers["Retry-After"] == "2"


def test_delay_holds_requests(core: Any, fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.faults.delay(0.3, count=1, verb="list")
    started = time.monotonic()
    core.list_namespaced_config_map("default")
    assert time.monotonic() - started >= 0.3


def test_reset_drops_the_connection(fake_apiserver: FakeApiServer) -> None:
    fake_apiserver.faults.reset_next(1, verb="list")
    http = urllib3.PoolManager(retries=False)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        http.request("GET", f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps")
    assert http.request("GET", f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps").status == 200


def test_rule_budgets_and_removal() -> None:
    faults = Faults()
    facts = RequestFacts("get", "pods", "default", "p", "/api/v1/namespaces/default/pods/p")
    forever = faults.fail_next(None, verb="get")
    assert [r.action for r in faults.take(facts)] == ["fail"]
    assert [r.action for r in faults.take(facts)] == ["fail"]
    faults.remove(forever)
    assert faults.take(facts) == []
    faults.delay(0.1, resource="pods")
    faults.fail_next(1, resource="pods")
    assert [r.action for r in faults.take(facts)] == ["delay", "fail"]
    assert [r.action for r in faults.take(facts)] == ["delay"]


def test_request_log_counts_verbs(custom: Any, widgets: FakeApiServer) -> None:
    widgets.requests.clear()
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w1"))
    custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1")
    custom.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    custom.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w1", {"spec": {"replicas": 2}})
    assert widgets.requests.verbs() == {"create": 1, "get": 1, "list": 1, "patch": 1}
    assert [r.verb for r in widgets.requests.writes()] == ["create", "patch"]
    patch = widgets.requests.matching(verb="patch")[0]
    assert (patch.group, patch.resource, patch.namespace, patch.name) == (GROUP, PLURAL, "default", "w1")
    assert patch.content_type == "application/merge-patch+json"
    assert patch.status == 200
    assert widgets.requests.count(verb="create", resource=PLURAL) == 1


def test_aborting_watches_cuts_the_connection(fake_apiserver: FakeApiServer) -> None:
    http = urllib3.PoolManager(retries=False)
    response = http.request(
        "GET",
        f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps?watch=true",
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=5),
    )
    deadline = time.monotonic() + 5
    while fake_apiserver.watch_count("configmaps") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_apiserver.close_watches("configmaps", abort=True) == 1
    with pytest.raises(urllib3.exceptions.ProtocolError):
        response.read()
    response.release_conn()


def test_closing_watches_ends_the_stream_cleanly(fake_apiserver: FakeApiServer) -> None:
    http = urllib3.PoolManager(retries=False)
    response = http.request(
        "GET",
        f"{fake_apiserver.url}/api/v1/namespaces/default/configmaps?watch=true",
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=5),
    )
    deadline = time.monotonic() + 5
    while fake_apiserver.watch_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_apiserver.close_watches() == 1
    assert response.read() == b""
    response.release_conn()
