"""Manifests written for Kthena v1.0 apply here unchanged (docs/migrating-from-kthena.md, "Coming from Kthena v1.0").

The objects in tests/unit/kthena_v1/ are our own, shaped like the examples Kthena v1.0.0 publishes (a single
`spec.backend` with `replicas`, `spec.name`, `spec.owner`, `modelMatch`, scheduling fields). Each must pass
every gate a `kubectl apply` meets — the CRD schema without a pruned field, its CEL rules, the webhook's
defaults and rules — and both commands, and render the children the newer line would create, by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from shared.defaults import apply_defaults
from shared.validation import validate_modelbooster
from tests.unit.kthena_manifests import assert_passes_the_crd, only_document, run

MANIFESTS = sorted((Path(__file__).parent / "kthena_v1").glob("*.yaml"))


def test_there_are_manifests_of_every_kind_the_newer_line_publishes() -> None:
    documents = [only_document(path) for path in MANIFESTS]
    types = {document["spec"]["backend"]["type"] for document in documents}
    assert types == {"vLLM", "vLLMDisaggregated"}
    assert all("backends" not in document["spec"] for document in documents)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_a_v1_manifest_passes_the_crd_and_the_webhook(path: Path) -> None:
    document = only_document(path)
    assert_passes_the_crd(document)
    defaulted = apply_defaults(document)
    assert defaulted.warnings == []
    assert [error.render() for error in validate_modelbooster(defaulted.obj)] == []
    # Defaulting fills the scheduler Kthena v1.0 would have used and worker fields; the shape stays as written.
    assert set(defaulted.obj["spec"]) == set(document["spec"])
    assert set(defaulted.obj["spec"]["backend"]) == set(document["spec"]["backend"]) | {"schedulerName"}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_a_v1_manifest_validates_and_renders_its_children(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(validate_cli, ["-f", str(path)], capsys)
    assert (code, err) == (0, "")
    code, out, err = run(render_cli, ["-f", str(path)], capsys)
    assert code == 0, err
    document = only_document(path)
    model, backend = document["metadata"]["name"], document["spec"]["backend"]
    children = list(yaml.safe_load_all(out))
    assert [(child["kind"], child["metadata"]["name"]) for child in children] == [
        ("ModelServing", f"{model}-{backend['name']}"),
        ("ModelServer", f"{model}-{backend['name']}"),
        ("ModelRoute", model),
    ]
    serving, server, route = (child["spec"] for child in children)
    assert serving["replicas"] == backend["replicas"]
    assert route["modelName"] == document["spec"].get("name", model)
    assert route["rules"][0].get("modelMatch") == document["spec"].get("modelMatch")
    assert server["inferenceEngine"] == "vLLM"
