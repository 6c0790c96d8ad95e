"""Label and field selectors on list (and the errors for bad ones)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from tests.apiserver.helpers import message_of
from tests.apiserver.widgets import GROUP, PLURAL, VERSION, widget
from tests.fakeapi.selectors import parse_label_selector


@pytest.fixture
def labelled(core: Any) -> Any:
    for name, labels in {
        "a": {"app": "web", "tier": "front", "rank": "3"},
        "b": {"app": "web", "tier": "back", "rank": "7"},
        "c": {"app": "db"},
        "d": {},
    }.items():
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels))
        )
    return core


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("tier in (front, middle)", ["a"]),
        ("tier notin (front)", ["b", "c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("rank>5", ["b"]),
        ("rank<5", ["a"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
def test_label_selectors(labelled: Any, selector: str, expected: list[str]) -> None:
    items = labelled.list_namespaced_config_map("default", label_selector=selector).items
    assert [i.metadata.name for i in items] == expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        # As kube-apiserver v1.36.2 words them (tests/realapi differential suite).
        ("tier in front", "unable to parse requirement: found 'front' expected: '('"),
        ("n gt 2", "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"),
        ("a===b", "unable to parse requirement: found '=', expected: identifier"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a=b,", "found '', expected: identifier after ','"),
    ],
)
def test_a_malformed_label_selector_is_400(labelled: Any, selector: str, message: str) -> None:
    with pytest.raises(ApiException) as caught:
        labelled.list_namespaced_config_map("default", label_selector=selector)
    assert caught.value.status == 400
    assert message_of(caught.value) == message


def test_field_selector_on_name_and_namespace(custom: Any, widgets: Any) -> None:
    widgets.create_namespace("other")
    for namespace in ("default", "other"):
        for name in ("w1", "w2"):
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget(name, namespace=namespace))
    by_name = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, field_selector="metadata.name=w1")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in by_name["items"]] == [
        ("default", "w1"),
        ("other", "w1"),
    ]
    by_namespace = custom.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, field_selector="metadata.namespace=other,metadata.name!=w1"
    )
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in by_namespace["items"]] == [("other", "w2")]


def test_unknown_field_selector_on_a_custom_resource_is_400(custom: Any) -> None:
    with pytest.raises(ApiException) as caught:
        custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, field_selector="spec.size=small")
    assert caught.value.status == 400
    assert message_of(caught.value) == "field label not supported: spec.size"


def test_unknown_field_selector_on_a_builtin_kind_is_400(core: Any) -> None:
    """ConfigMaps have only the metadata labels: apimachinery's default conversion words the refusal."""
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_config_map("default", field_selector="data.x=1")
    assert caught.value.status == 400
    assert message_of(caught.value) == (
        '"data.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_unknown_field_selector_on_a_kind_with_its_own_labels_is_400(core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_event("default", field_selector="nothing=x")
    assert caught.value.status == 400
    assert message_of(caught.value) == "field label not supported: nothing"


def test_event_field_selectors(core: Any) -> None:
    for name, target in (("e1", "w1"), ("e2", "w2")):
        core.create_namespaced_event(
            "default",
            client.CoreV1Event(
                metadata=client.V1ObjectMeta(name=name),
                involved_object=client.V1ObjectReference(kind="Widget", name=target, namespace="default"),
                reason="Made",
                message="hello",
            ),
        )
    found = core.list_namespaced_event("default", field_selector="involvedObject.name=w2,involvedObject.kind=Widget")
    assert [e.metadata.name for e in found.items] == ["e2"]


def test_selector_parser_keeps_operators_apart() -> None:
    parsed = parse_label_selector("a=b,c!=d,e in (x,y),!f,g")
    assert [(r.key, r.op, r.values) for r in parsed] == [
        ("a", "=", ("b",)),
        ("c", "!=", ("d",)),
        ("e", "in", ("x", "y")),
        ("f", "!", ()),
        ("g", "exists", ()),
    ]
