"""Two ModelBoosters of one input whose children would have the same name (shared/name_collisions.py): the later
one is refused by `render` and `validate`, naming the other, instead of failing only in the cluster."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from reconciler.modelbooster.synthesis import synthesize
from shared.api.modelbooster import ModelBooster
from shared.name_collisions import Member, child_names, collisions
from shared.validation import parse_modelbooster
from tests.unit.factories import backend, modelbooster, policy, range_backend, single_modelbooster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COLLISION = (
    'spec.backends[0].name: Invalid value: "qwen-fixed-cpu": the generated ModelServing and ModelServer '
    '"qwen-fixed-cpu" would also be the child of ModelBooster "qwen-fixed" (its backend "cpu"), earlier in this '
    "input; a name belongs to one ModelBooster of a namespace, so this one, applied after it, would fail: rename "
    "this backend or the other ModelBooster"
)


def parsed(obj: dict[str, Any]) -> ModelBooster:
    return parse_modelbooster(obj)


def model_level(name: str, *backend_names: str) -> dict[str, Any]:
    backends = [backend(n, maxReplicas=2, scalingCost=1) for n in backend_names]
    return modelbooster(*backends, name=name, autoscalingPolicy=policy())


def backend_level(name: str, backend_name: str) -> dict[str, Any]:
    return modelbooster(backend(backend_name, maxReplicas=2, autoscalingPolicy=policy()), name=name)


@pytest.mark.parametrize(
    "obj",
    [
        *(yaml.safe_load(path.read_text()) for path in sorted(EXAMPLES.glob("*.yaml"))),
        model_level("m", "a", "b"),
        backend_level("m", "a"),
        single_modelbooster(range_backend(minReplicas=1, maxReplicas=3), autoscalingPolicy=policy()),
    ],
    ids=lambda obj: str(obj["metadata"]["name"]),
)
def test_child_names_are_the_children_synthesis_builds(obj: dict[str, Any]) -> None:
    obj["metadata"] = {**obj["metadata"], "uid": "00000000-0000-0000-0000-000000000001"}  # the API server's
    booster = parsed(obj)
    built = {(child["kind"], child["metadata"]["name"]) for child in synthesize(booster)}
    assert {(child.kind, child.name) for child in child_names(booster)} == built


def _members(*objs: dict[str, Any], namespaces: tuple[str, ...] = ()) -> list[Member]:
    return [
        Member(
            namespace=namespaces[i] if namespaces else "default",
            display=f'ModelBooster "{obj["metadata"]["name"]}"',
            booster=parsed(obj),
        )
        for i, obj in enumerate(objs)
    ]


def test_the_later_of_two_boosters_generating_one_name_is_refused() -> None:
    first, second = modelbooster(backend("cpu"), name="qwen-fixed"), modelbooster(backend("fixed-cpu"), name="qwen")
    assert [[e.render() for e in errors] for errors in collisions(_members(first, second))] == [[], [COLLISION]]


def test_a_model_level_policy_can_take_the_name_of_anothers_backend() -> None:
    found = collisions(_members(model_level("qwen-fixed-cpu", "a"), backend_level("qwen", "fixed-cpu")))
    assert [[e.render() for e in errors] for errors in found] == [
        [],
        [
            'spec.backends[0].name: Invalid value: "qwen-fixed-cpu": the generated AutoscalingPolicy and '
            'AutoscalingPolicyBinding "qwen-fixed-cpu" would also be the child of ModelBooster "qwen-fixed-cpu", '
            "earlier in this input; a name belongs to one ModelBooster of a namespace, so this one, applied after "
            "it, would fail: rename this backend or the other ModelBooster"
        ],
    ]
    # The other way round, the model's own name is what collides.
    found = collisions(_members(backend_level("qwen", "fixed-cpu"), model_level("qwen-fixed-cpu", "a")))
    assert [error.path for errors in found for error in errors] == ["metadata.name"]


def test_a_single_backend_is_named_at_its_own_path() -> None:
    one = single_modelbooster(range_backend("fixed-cpu"), name="qwen")
    found = collisions(_members(modelbooster(backend("cpu"), name="qwen-fixed"), one))
    assert [error.path for errors in found for error in errors] == ["spec.backend.name"]


def test_other_namespaces_and_the_same_booster_twice_do_not_collide() -> None:
    first, second = modelbooster(backend("cpu"), name="qwen-fixed"), modelbooster(backend("fixed-cpu"), name="qwen")
    assert collisions(_members(first, second, namespaces=("a", "b"))) == [[], []]
    assert collisions(_members(first, first)) == [[], []]


def _run(capsys: pytest.CaptureFixture[str], module: Any, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    code = module.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def colliding(tmp_path: Path) -> str:
    path = tmp_path / "two.yaml"
    documents = [modelbooster(backend("cpu"), name="qwen-fixed"), modelbooster(backend("fixed-cpu"), name="qwen")]
    for document in documents:
        del document["metadata"]["namespace"]  # as most manifests are written: for `kubectl apply -n`
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    return str(path)


def test_render_refuses_the_input_and_prints_nothing(capsys: pytest.CaptureFixture[str], colliding: str) -> None:
    code, out, err = _run(capsys, render_cli, "-f", colliding)
    assert (code, out) == (1, "")
    assert err == f'document 2 (ModelBooster "qwen"):\nvalidation failed:\n  - {COLLISION}\n'


def test_validate_refuses_the_later_one(capsys: pytest.CaptureFixture[str], colliding: str) -> None:
    code, out, err = _run(capsys, validate_cli, "-f", colliding)
    assert (code, out) == (1, 'ModelBooster "qwen-fixed": valid\n')
    assert err == f'document 2 (ModelBooster "qwen"):\nvalidation failed:\n  - {COLLISION}\n'
