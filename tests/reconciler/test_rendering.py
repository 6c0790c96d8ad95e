"""A ModelBooster turned into its children (reconciler/modelbooster/rendering.py, docs/design/reconciler.md §2):
an invalid one is a message for its user, a valid one the synthesized children with what others own marked."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.modelbooster.kinds import MODEL_SERVING
from reconciler.modelbooster.rendering import Invalid, parse, render, render_with_adapters
from reconciler.modelbooster.synthesis import SynthesisSettings
from reconciler.runtime.apply import REPLICAS_PATH, Desired
from reconciler.runtime.schema_fit import SchemaFit
from shared.api.modelbooster import ModelBooster
from shared.autoscaling_generations import DEFAULT_GENERATION
from shared.constants import LABEL_REVISION
from tests.reconciler.harness import backend, booster

SETTINGS = SynthesisSettings()
UID = "11111111-2222-4333-8444-555555555555"
RUNTIME_LORA = [{"name": "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "value": "true"}]


def stored(document: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(document)
    document["metadata"]["uid"] = UID
    return document


def typed(document: dict[str, Any]) -> ModelBooster:
    parsed = parse(stored(document))
    assert isinstance(parsed, ModelBooster)
    return parsed


def fit() -> SchemaFit:
    return SchemaFit(schema_of=lambda kind: None, revision_label=LABEL_REVISION, on_report=lambda kind, field: None)


def serving(children: list[Desired] | Invalid, name: str) -> Desired:
    assert not isinstance(children, Invalid)
    return next(child for child in children if child.kind == MODEL_SERVING and child.name == name)


def engine_args(child: Desired) -> str:
    return repr(child.obj["spec"]["template"])


def test_an_invalid_spec_is_the_webhook_message_and_what_to_do() -> None:
    document = booster("m", backend("a", minReplicas=3, maxReplicas=1))
    parsed = parse(stored(document))
    assert isinstance(parsed, Invalid)
    assert "minReplicas" in parsed.message
    assert parsed.message.endswith("Change the other fields listed above so that they pass.")  # the remedy


def test_an_autoscaled_serving_leaves_its_replicas_to_the_autoscaler() -> None:
    scaled = backend("a", minReplicas=1, maxReplicas=3, autoscalingPolicy={
        "metrics": [{"metricName": "kthena:num_requests_waiting", "targetValue": 10}]})  # fmt: skip
    children = render(typed(booster("m", scaled, backend("b"))), SETTINGS, generation=DEFAULT_GENERATION)
    assert serving(children, "m-a").foreign_after_create == (REPLICAS_PATH,)
    assert serving(children, "m-b").foreign_after_create == ()


def test_a_serving_rendered_with_other_adapters_differs_only_there() -> None:
    adapters = [{"name": "sql", "artifactURL": "hf://acme/sql"}, {"name": "chat", "artifactURL": "hf://acme/chat"}]
    model = typed(booster("m", backend("a", env=RUNTIME_LORA, loraAdapters=adapters), backend("b")))
    current = serving(render(model, SETTINGS, generation=DEFAULT_GENERATION), "m-a")
    kept = render_with_adapters(model, {"a": [("sql", "hf://acme/sql")]}, SETTINGS, generation=DEFAULT_GENERATION,
                                fit=fit())  # fmt: skip
    assert list(kept) == ["a"]
    assert "hf://acme/chat" in engine_args(current)
    assert "hf://acme/chat" not in engine_args(kept["a"])
    assert "hf://acme/sql" in engine_args(kept["a"])
    assert render_with_adapters(model, {}, SETTINGS, generation=DEFAULT_GENERATION, fit=fit()) == {}
