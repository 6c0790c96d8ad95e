"""Helpers for the synthesis tests: load hand-written inputs and expectations, mask revision digests."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.api.modelbooster import ModelBooster
from shared.constants import LABEL_REVISION

HERE = Path(__file__).parent
DIGEST = "<digest>"
REVISION = re.compile(r"^[0-9a-f]{16}$")
UID = "11111111-2222-4333-8444-555555555555"


def load_input(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((HERE / "inputs" / f"{name}.yaml").read_text())
    return loaded


def load_expected(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((HERE / "expected" / f"{name}.yaml").read_text()))


def render(doc: dict[str, Any], settings: SynthesisSettings | None = None) -> list[dict[str, Any]]:
    return synthesize(ModelBooster.model_validate(doc), settings or SynthesisSettings())


def masked(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy with each revision label checked for its form and replaced by `<digest>`."""
    result = copy.deepcopy(children)
    for child in result:
        labels = child["metadata"]["labels"]
        assert REVISION.match(labels[LABEL_REVISION]), labels[LABEL_REVISION]
        labels[LABEL_REVISION] = DIGEST
    return result


def revisions(children: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    return {(c["kind"], c["metadata"]["name"]): c["metadata"]["labels"][LABEL_REVISION] for c in children}


def find(children: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [c for c in children if c["kind"] == kind and c["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def vllm_doc(**backend: Any) -> dict[str, Any]:
    """A minimal defaulted single-backend vLLM ModelBooster; keyword arguments replace backend fields."""
    doc: dict[str, Any] = {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "m", "namespace": "ns", "uid": UID},
        "spec": {
            "backends": [
                {
                    "name": "b",
                    "type": "vLLM",
                    "modelURI": "hf://org/model",
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "routeWeight": 100,
                    "workers": [{"type": "server", "image": "vllm:1", "replicas": 1, "pods": 1}],
                }
            ]
        },
    }
    doc["spec"]["backends"][0].update(backend)
    return doc


def server_worker(**fields: Any) -> dict[str, Any]:
    return {"type": "server", "image": "vllm:1", "replicas": 1, "pods": 1, **fields}


def entry_pod(serving: dict[str, Any], role: int = 0) -> dict[str, Any]:
    pod: dict[str, Any] = serving["spec"]["template"]["roles"][role]["entryTemplate"]["spec"]
    return pod


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    matches: list[dict[str, Any]] = [c for c in pod["containers"] if c["name"] == name]
    assert len(matches) == 1
    return matches[0]


def walk(node: object) -> Iterator[object]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)
