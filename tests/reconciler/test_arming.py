"""The pure side of arming (reconciler/certduty/arming.py): reading the wanted entries, telling whether the live
ones are them, and counting ready endpoints."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from reconciler.certduty.arming import (
    ENTRIES_ANNOTATION,
    MAX_ANNOTATION_BYTES,
    ArmingError,
    armed_copy,
    entries_match,
    ready_endpoints,
    wanted_entries,
)
from tests.chart.render import render, webhook_entries

BUNDLE = "LS0tLS1CRUdJTi4uLg=="


def _configuration(annotation: Any) -> dict[str, Any]:
    return {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "mb-modelbooster", "annotations": {ENTRIES_ANNOTATION: annotation}},
    }


def _chart_entries() -> list[dict[str, Any]]:
    return webhook_entries(render({}).one("ValidatingWebhookConfiguration", "mb-modelbooster"))


def test_the_chart_annotation_is_read_back_as_its_entries() -> None:
    rendered = render({}).one("ValidatingWebhookConfiguration", "mb-modelbooster")
    wanted = wanted_entries(rendered)
    assert wanted is not None
    assert [entry["name"] for entry in wanted] == ["validate.modelboosters.workload.serving.volcano.sh"]


def test_no_annotation_means_rendered_entries() -> None:
    assert wanted_entries({"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "x"}}) is None


@pytest.mark.parametrize(
    ("annotation", "why"),
    [
        ("[{", "is not JSON"),
        ("{}", "must be a list of 1 to 16 webhook entries"),
        ("[]", "must be a list of 1 to 16 webhook entries"),
        (json.dumps([{"name": f"w{i}.example.com"} for i in range(17)]), "must be a list of 1 to 16"),
        (json.dumps([{"rules": []}]), "entry 0 is not an object with a name"),
        (json.dumps(["w.example.com"]), "entry 0 is not an object with a name"),
        (json.dumps([{"name": "w.example.com"}, {"name": "w.example.com"}]), "entry names repeat"),
        ("x" * (MAX_ANNOTATION_BYTES + 1), "is not a string of at most"),
        (7, "is not a string of at most"),
    ],
)
def test_an_unreadable_annotation_is_refused_by_name(annotation: Any, why: str) -> None:
    with pytest.raises(ArmingError, match=f"ValidatingWebhookConfiguration mb-modelbooster: annotation .*{why}"):
        wanted_entries(_configuration(annotation))


def test_live_entries_with_server_defaults_match() -> None:
    wanted = _chart_entries()
    live = copy.deepcopy(armed_copy({"kind": "x"}, wanted, BUNDLE)["webhooks"])
    # What kube-apiserver adds on write.
    live[0]["objectSelector"] = {}
    live[0]["matchConditions"] = []
    live[0]["clientConfig"]["service"].setdefault("port", 443)
    assert entries_match(live, wanted, BUNDLE)


@pytest.mark.parametrize(
    "change",
    [
        lambda entry: entry.update(failurePolicy="Ignore"),
        lambda entry: entry.update(timeoutSeconds=30),
        lambda entry: entry["rules"][0]["operations"].append("DELETE"),
        lambda entry: entry["clientConfig"].update(caBundle="b3RoZXI="),
        lambda entry: entry["clientConfig"].pop("caBundle"),
        lambda entry: entry["clientConfig"]["service"].update(path="/elsewhere"),
        lambda entry: entry.update(name="other.example.com"),
    ],
)
def test_any_difference_from_the_wanted_entries_is_drift(change: Any) -> None:
    wanted = _chart_entries()
    live = armed_copy({"kind": "x"}, wanted, BUNDLE)["webhooks"]
    change(live[0])
    assert not entries_match(live, wanted, BUNDLE)


def test_json_types_count_true_is_not_one() -> None:
    wanted = [{"name": "w.example.com", "clientConfig": {}, "flag": True}]
    live = [{"name": "w.example.com", "clientConfig": {"caBundle": BUNDLE}, "flag": 1}]
    assert not entries_match(live, wanted, BUNDLE)


def test_no_entries_are_not_the_wanted_ones() -> None:
    assert not entries_match([], _chart_entries(), BUNDLE)


def test_the_armed_copy_keeps_everything_else() -> None:
    configuration = {"kind": "x", "metadata": {"name": "n", "resourceVersion": "42"}, "webhooks": []}
    wanted = _chart_entries()
    armed = armed_copy(configuration, wanted, BUNDLE)
    assert armed["metadata"] == {"name": "n", "resourceVersion": "42"}  # an optimistic update
    assert [entry["clientConfig"]["caBundle"] for entry in armed["webhooks"]] == [BUNDLE]
    assert "caBundle" not in wanted[0]["clientConfig"]  # the wanted entries are not changed


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [({"ready": True}, 1), ({"ready": False}, 0), ({}, 1), (None, 1), ({"ready": False, "serving": True}, 0)],
)
def test_ready_endpoints_follow_the_api_rule(conditions: Any, ready: int) -> None:
    endpoint: dict[str, Any] = {"addresses": ["10.0.0.1"]}
    if conditions is not None:
        endpoint["conditions"] = conditions
    assert ready_endpoints([{"endpoints": [endpoint]}]) == ready
    assert ready_endpoints([{"endpoints": None}, {}]) == 0
