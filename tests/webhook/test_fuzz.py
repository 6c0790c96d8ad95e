"""Property tests: no body, however odd, makes the webhook answer 5xx or fail internally.

The server runs in a thread with its own event loop and is driven with a blocking HTTPS client, so
hypothesis can generate examples synchronously against one real listener.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import logging
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from certs.authority import create_ca, issue_serving_cert
from shared.defaults import apply_defaults
from shared.ratchet import same_json
from tests.webhook.reviews import review
from webhook.app import MUTATE_PATH, VALIDATE_PATH
from webhook.main import WebhookServer
from webhook.settings import Settings

FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Target:
    port: int
    context: ssl.SSLContext
    errors: _Errors
    connection: http.client.HTTPSConnection | None = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        # One keep-alive connection, as kube-apiserver keeps; reopened when the server closed it (after a 413).
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=10)
            try:
                self.connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionError):
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.will_close:
                self.close()
            return response.status, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    directory = tmp_path_factory.mktemp("fuzz-certs")
    ca = create_ca()
    pair = issue_serving_cert(ca=ca, service="svc", namespace="ns", extra_sans=["127.0.0.1"])
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    (directory / "tls.key").write_bytes(pair.key_pem)
    server = WebhookServer(
        Settings(
            bind_address="127.0.0.1",
            port=0,
            metrics_bind_address="127.0.0.1",
            metrics_port=0,
            tls_cert_file=directory / "tls.crt",
            tls_private_key_file=directory / "tls.key",
            max_request_bytes=256 * 1024,
            shutdown_timeout=2.0,
        )
    )
    errors = _Errors()
    for name in ("webhook", "certs", "aiohttp"):
        logging.getLogger(name).addHandler(errors)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzz-webhook", daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=10)
        client = Target(
            port=server.https_port, context=ssl.create_default_context(cadata=ca.cert_pem.decode()), errors=errors
        )
        yield client
        client.close()
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=10)
        # Let the server finish closing its TLS transports before the loop stops.
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0.1), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        for name in ("webhook", "certs", "aiohttp"):
            logging.getLogger(name).removeHandler(errors)


def _check(status: int, body: bytes, target: Target) -> dict[str, Any] | None:
    """Never a 5xx, never an internal-error denial, never a logged error; the response when HTTP 200."""
    assert status in (200, 400, 413, 415), (status, body[:300])
    assert b"Traceback" not in body
    assert not target.errors.records, [record.getMessage() for record in target.errors.records]
    if status != 200:
        assert body.endswith(b"\n")
        assert b"\n" not in body[:-1]
        return None
    answer = json.loads(body)
    response: dict[str, Any] = answer["response"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        assert response["status"]["code"] in (400, 422), response["status"]
    return response


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(body=st.binary(max_size=300) | json_values.map(lambda value: json.dumps(value).encode()))
def test_arbitrary_bodies(target: Target, body: bytes) -> None:
    for path in (MUTATE_PATH, VALIDATE_PATH):
        _check(*target.post(path, body), target)


@FUZZ
@given(
    request=st.dictionaries(
        st.sampled_from(
            ["uid", "operation", "object", "oldObject", "kind", "name", "namespace", "dryRun", "subResource"]
        ),
        json_values,
    ),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT", "PATCH"]),
)
def test_arbitrary_requests_in_a_valid_envelope(target: Target, request: dict[str, Any], operation: str) -> None:
    request.setdefault("operation", operation)
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    for path in (MUTATE_PATH, VALIDATE_PATH):
        _check(*target.post(path, body), target)


# ModelBooster-shaped objects: the real field names with plausible or arbitrary values.
names = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True) | st.text(max_size=8)
counts = st.integers(min_value=-2, max_value=5) | st.sampled_from([1_000_001, 2**31, "1"]) | st.none()
durations = st.sampled_from(["30s", "31m", "-1s", "1h", "bogus", "", "0s"]) | st.none()
policies = st.none() | st.fixed_dictionaries(
    {
        "metrics": st.lists(
            st.fixed_dictionaries({"metricName": names, "targetValue": st.sampled_from(["10", "0", "x", 5])}),
            max_size=2,
        )
    },
    optional={
        "tolerancePercent": counts,
        "behavior": st.dictionaries(
            st.sampled_from(["scaleUp", "scaleDown"]), st.fixed_dictionaries({}, optional={"panicPolicy": json_values})
        ),
    },
)
workers = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["server", "prefill", "decode", "controller", "bogus"]) | st.none(),
        "image": st.sampled_from(["vllm/vllm-openai:v0.8.5", " ", "a b", ""]),
        "replicas": counts,
        "pods": counts,
        "config": json_values,
        "resources": st.fixed_dictionaries(
            {}, optional={"limits": st.dictionaries(names, st.sampled_from(["1", "2Gi", "x", 3]))}
        ),
        "networkTopology": json_values,
    },
)
backends = st.fixed_dictionaries(
    {
        "name": names,
        "type": st.sampled_from(["vLLM", "vLLMDisaggregated", "SGLang", "MindIE", "bogus"]),
        "modelURI": st.sampled_from(["hf://a/b", "s3://bucket/m", "pvc://claim/m", "ftp://x", ""]),
        "minReplicas": counts,
        "maxReplicas": counts,
        "workers": st.lists(workers, max_size=3),
    },
    optional={
        "cacheURI": st.sampled_from(["hostpath:///mnt", "pvc://claim/cache", "bogus"]),
        "scalingCost": counts,
        "routeWeight": counts,
        "scaleToZeroGracePeriod": durations,
        "autoscalingPolicy": policies,
        "env": st.lists(st.fixed_dictionaries({"name": names, "value": st.text(max_size=5)}), max_size=3),
        "loraAdapters": st.lists(
            st.fixed_dictionaries({"name": names, "artifactURL": st.sampled_from(["hf://l/a", "x"])}), max_size=3
        ),
        "rateLimit": json_values,
        "topology": json_values,
    },
)
model_boosters = st.fixed_dictionaries(
    {
        "apiVersion": st.just("workload.serving.volcano.sh/v1alpha1"),
        "kind": st.just("ModelBooster"),
        "metadata": st.fixed_dictionaries({"name": names, "namespace": st.just("default")}),
        "spec": st.fixed_dictionaries(
            {"backends": st.lists(backends, max_size=3)},
            optional={
                "autoscalingPolicy": policies,
                "costExpansionRatePercent": counts,
                "modelMatch": json_values,
                "rateLimit": json_values,
            },
        ),
    }
)


@settings(FUZZ, max_examples=60)
@given(obj=model_boosters, old=st.none() | model_boosters)
def test_model_booster_shaped_objects(target: Target, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    sent = review(operation="CREATE" if old is None else "UPDATE", obj=obj, old=old)
    body = json.dumps(sent).encode()
    validated = _check(*target.post(VALIDATE_PATH, body), target)
    assert validated is not None
    mutated = _check(*target.post(MUTATE_PATH, body), target)
    assert mutated is not None
    assert mutated["allowed"] is True
    if old is not None and same_json(obj["spec"], old["spec"]):
        # A metadata-only update is never patched (and never refused), whatever the stored spec holds.
        assert "patch" not in mutated
        assert validated["allowed"] is True
        return
    ops = json.loads(base64.b64decode(mutated["patch"]))
    # The patch, applied the way kube-apiserver does, produces exactly the defaulted object.
    assert jsonpatch.apply_patch(obj, ops) == apply_defaults(obj).obj
