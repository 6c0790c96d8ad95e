"""Properties every synthesized child has, checked on every fixture."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from shared.api.children import CHILD_MODELS
from shared.constants import LABEL_REVISION
from tests.unit.synthesis.support import load_input, render, walk

FIXTURES = ["single-vllm", "pd-nixl", "two-backends-model-autoscaling", "backend-autoscaling"]
LABEL_KEYS = [
    "workload.serving.volcano.sh/model-name",
    "workload.serving.volcano.sh/backend-name",
    "workload.serving.volcano.sh/managed-by",
    "workload.serving.volcano.sh/revision",
    "workload.serving.volcano.sh/model-uid",
    "registry.volcano.sh/managed-by",
]


@pytest.fixture(params=FIXTURES)
def fixture(request: pytest.FixtureRequest) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    doc = load_input(request.param)
    return doc, render(doc)


def _pod_templates(child: dict[str, Any]) -> list[dict[str, Any]]:
    if child["kind"] != "ModelServing":
        return []
    templates = []
    for role in child["spec"]["template"]["roles"]:
        templates.append(role["entryTemplate"])
        templates.append(role["workerTemplate"])
    return templates


def test_every_child_has_one_controller_owner(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    doc, children = fixture
    meta = doc["metadata"]
    for child in children:
        assert child["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "workload.serving.volcano.sh/v1alpha1",
                "kind": "ModelBooster",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert child["metadata"]["namespace"] == meta["namespace"]


def test_every_child_has_both_label_sets(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    doc, children = fixture
    for child in children:
        labels = child["metadata"]["labels"]
        assert list(labels) == LABEL_KEYS
        assert labels["workload.serving.volcano.sh/model-name"] == doc["metadata"]["name"]
        assert labels["workload.serving.volcano.sh/managed-by"] == "workload.serving.volcano.sh"
        assert labels["registry.volcano.sh/managed-by"] == "registry.volcano.sh"
        assert labels["workload.serving.volcano.sh/model-uid"] == doc["metadata"]["uid"]


def test_pod_templates_never_carry_the_revision(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, children = fixture
    templates = [t for child in children for t in _pod_templates(child)]
    assert templates
    for template in templates:
        labels = template.get("metadata", {}).get("labels", {})
        assert LABEL_REVISION not in labels


def test_every_child_parses_as_its_kind(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    # Faithful to the child CRD schemas, including the full core/v1 PodSpec inside ModelServing.
    _, children = fixture
    for child in children:
        model = CHILD_MODELS[child["kind"]]
        parsed = model.model_validate(child)
        assert parsed.to_wire()["spec"].keys() == child["spec"].keys()


def test_no_object_is_shared_between_places(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    # Shared objects would print as YAML anchors and alias any later in-place edit.
    _, children = fixture
    seen: set[int] = set()
    for node in walk(children):
        if isinstance(node, (dict, list)):
            assert id(node) not in seen
            seen.add(id(node))


def test_children_are_plain_json(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, children = fixture
    assert json.loads(json.dumps(children)) == children
    assert list(yaml.safe_load_all(yaml.safe_dump_all(children))) == children


def test_synthesis_does_not_change_its_input(fixture: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    from reconciler.modelbooster.synthesis import synthesize
    from shared.api.modelbooster import ModelBooster

    doc, _ = fixture
    booster = ModelBooster.model_validate(doc)
    before = copy.deepcopy(booster.model_dump())
    synthesize(booster)
    assert booster.model_dump() == before
