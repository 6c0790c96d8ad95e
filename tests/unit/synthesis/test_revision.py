"""The revision label: our digest of each child's own desired content (docs/design/synthesis.md §5, Q15 fixed)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisSettings, revision_digest
from shared.constants import LABEL_REVISION
from tests.unit.synthesis.support import load_input, render, revisions

Edit = Callable[[dict[str, Any]], None]


def _changed(edit: Edit, *, name: str = "two-backends-model-autoscaling") -> set[tuple[str, str]]:
    """Which children's revisions change when the input is edited."""
    before = load_input(name)
    after = copy.deepcopy(before)
    edit(after)
    old, new = revisions(render(before)), revisions(render(after))
    assert old.keys() == new.keys()
    return {key for key in old if old[key] != new[key]}


def _backend(doc: dict[str, Any], index: int) -> dict[str, Any]:
    backend: dict[str, Any] = doc["spec"]["backends"][index]
    return backend


def test_route_weight_change_rewrites_only_the_model_route() -> None:
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 0)["routeWeight"] = 60

    assert _changed(edit) == {("ModelRoute", "llama")}


def test_max_replicas_change_rewrites_only_the_binding() -> None:
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 1)["maxReplicas"] = 3

    assert _changed(edit) == {("AutoscalingPolicyBinding", "llama")}


def test_min_replicas_of_an_autoscaled_backend_belongs_to_the_autoscaler() -> None:
    # The ModelServing's replicas are set on creation only; the digest must not make it look changed.
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 0)["minReplicas"] = 2

    assert _changed(edit) == {("AutoscalingPolicyBinding", "llama")}


def test_min_replicas_of_a_fixed_backend_rewrites_its_model_serving() -> None:
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 2)["minReplicas"] = _backend(doc, 2)["maxReplicas"] = 2

    assert _changed(edit, name="backend-autoscaling") == {("ModelServing", "mistral-fixed")}


def test_image_change_rewrites_only_that_backends_model_serving() -> None:
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 1)["workers"][0]["image"] = "vllm-cpu:v0.11.0"

    assert _changed(edit) == {("ModelServing", "llama-cpu")}


def test_policy_change_rewrites_only_the_policy() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["spec"]["autoscalingPolicy"]["tolerancePercent"] = 5

    assert _changed(edit) == {("AutoscalingPolicy", "llama")}


def test_served_model_name_change_rewrites_serving_and_server() -> None:
    def edit(doc: dict[str, Any]) -> None:
        _backend(doc, 1)["workers"][0]["config"] = {"served-model-name": "llama-cpu"}

    assert _changed(edit) == {("ModelServing", "llama-cpu"), ("ModelServer", "llama-cpu")}


def test_settings_change_rewrites_the_model_servings() -> None:
    doc = load_input("single-vllm")
    old = revisions(render(doc))
    new = revisions(render(doc, SynthesisSettings(runtime_image="runtime:2")))
    assert {key for key in old if old[key] != new[key]} == {("ModelServing", "qwen-main")}


def test_the_label_is_the_digest_of_the_object_without_it() -> None:
    for child in render(load_input("pd-nixl")):
        label = child["metadata"]["labels"][LABEL_REVISION]
        assert revision_digest(child) == label
        tampered = copy.deepcopy(child)
        tampered["metadata"]["labels"][LABEL_REVISION] = "something-else"
        assert revision_digest(tampered) == label


@pytest.mark.parametrize("name", ["single-vllm", "pd-nixl", "two-backends-model-autoscaling", "backend-autoscaling"])
def test_digests_are_deterministic_and_distinct(name: str) -> None:
    first, second = render(load_input(name)), render(load_input(name))
    assert first == second
    digests = list(revisions(first).values())
    assert len(set(digests)) == len(digests)
