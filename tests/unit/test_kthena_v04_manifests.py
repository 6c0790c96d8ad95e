"""Manifests written for Kthena v0.2-v0.4 apply here unchanged (docs/migrating-from-kthena.md, "Coming from
Kthena v0.2 to v0.4").

The objects in tests/unit/kthena_v04/ are our own, shaped like the examples Kthena v0.4.0 publishes (one
`spec.backend` with `minReplicas`/`maxReplicas`, `spec.name`, `spec.owner`, S3 and ModelScope models, Ascend
devices, prefill/decode with Mooncake) and one autoscaled by the model-level policy. Each valid one passes every
gate a `kubectl apply` meets — the CRD schema without a pruned field, its CEL rules, the webhook's defaults and
rules — and both commands, and renders the children Kthena v0.4.0 creates, by name. The one refused is refused
for the reason Kthena v0.4.0's own webhook gives: a range without autoscaling.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from shared.defaults import apply_defaults
from shared.external_scaling import NO_AUTOSCALING_DETAIL
from shared.validation import validate_modelbooster
from tests.unit.kthena_manifests import assert_passes_the_crd, only_document, run

MANIFESTS = sorted((Path(__file__).parent / "kthena_v04").glob("*.yaml"))
# Refused, and why (a line of the webhook's denial).
REFUSED = {
    "coder-s3-npu.yaml": f'spec.backend: Invalid value: "minReplicas=1, maxReplicas=3": {NO_AUTOSCALING_DETAIL}',
}
ADMITTED = [path for path in MANIFESTS if path.name not in REFUSED]


def test_there_are_manifests_of_every_kind_the_line_published() -> None:
    documents = [only_document(path) for path in MANIFESTS]
    assert {document["spec"]["backend"]["type"] for document in documents} == {"vLLM", "vLLMDisaggregated"}
    assert all({"minReplicas", "maxReplicas"} <= set(document["spec"]["backend"]) for document in documents)
    assert any("autoscalingPolicy" in document["spec"] for document in documents)
    assert not any("backends" in document["spec"] or "replicas" in document["spec"]["backend"]
                   for document in documents)  # fmt: skip


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_a_v04_manifest_passes_the_crd(path: Path) -> None:
    document = only_document(path)
    assert_passes_the_crd(document)


@pytest.mark.parametrize("path", ADMITTED, ids=lambda path: path.name)
def test_a_v04_manifest_passes_the_webhook_in_its_shape(path: Path) -> None:
    document = only_document(path)
    defaulted = apply_defaults(document)
    assert defaulted.warnings == []
    assert [error.render() for error in validate_modelbooster(defaulted.obj)] == []
    # Defaulting fills the scheduler and, with a policy, its tolerance; the shape stays as written.
    assert set(defaulted.obj["spec"]) == set(document["spec"])
    assert set(defaulted.obj["spec"]["backend"]) == set(document["spec"]["backend"]) | {"schedulerName"}


@pytest.mark.parametrize("path", ADMITTED, ids=lambda path: path.name)
def test_a_v04_manifest_validates_and_renders_kthena_v04s_children(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(validate_cli, ["-f", str(path)], capsys)
    assert (code, err) == (0, "")
    code, out, err = run(render_cli, ["-f", str(path)], capsys)
    assert code == 0, err
    document = only_document(path)
    model, backend = document["metadata"]["name"], document["spec"]["backend"]
    resource = f"{model}-{backend['name']}"
    expected = [("ModelServing", resource), ("ModelServer", resource), ("ModelRoute", model)]
    if "autoscalingPolicy" in document["spec"]:
        expected += [("AutoscalingPolicy", resource), ("AutoscalingPolicyBinding", resource)]
    children = list(yaml.safe_load_all(out))
    assert [(child["kind"], child["metadata"]["name"]) for child in children] == expected
    serving, route = children[0]["spec"], children[2]["spec"]
    assert serving["replicas"] == backend["minReplicas"]
    assert route["modelName"] == document["spec"].get("name", model)
    if "autoscalingPolicy" in document["spec"]:
        scaling = children[4]["spec"]["homogeneousTarget"]  # Kthena v0.2-v0.4's Binding: the input's shape
        assert (scaling["minReplicas"], scaling["maxReplicas"]) == (backend["minReplicas"], backend["maxReplicas"])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_v04_manifest_says_why(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).parent / "kthena_v04" / name
    assert [error.render() for error in validate_modelbooster(apply_defaults(only_document(path)).obj)] == [
        REFUSED[name]
    ]
    code, out, err = run(validate_cli, ["-f", str(path)], capsys)
    assert code == 1
    assert REFUSED[name] in out + err
