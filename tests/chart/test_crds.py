"""The chart's CRDs: exactly what `modelbooster crds` generates, split so `crds.installChildCRDs` works, and
valid apiextensions.k8s.io/v1 objects. The one custom object the chart shows users (the admission check in
NOTES.txt) is checked against the ModelBooster CRD schema and the real admission rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; tests only
import kubernetes_validate
import pytest
import yaml

from modelbooster.cli import main as modelbooster_main
from tests.chart.kubectl_errors import kubectl_prints
from tests.chart.render import CHILD_CRDS_DIR, INFERNO_CRDS_DIR, MAIN_CRDS_DIR, Rendered
from tests.webhook.reviews import review
from webhook.admission import validate

# Written from docs/design/api.md §1, §5, §7 and docs/design/inferno.md §2.
MODELBOOSTER_CRDS = {"modelboosters.workload.serving.volcano.sh"}
INFERNO_CRDS = {
    "accelerators.inferno.platform.ai",
    "models.inferno.platform.ai",
    "serviceclasses.inferno.platform.ai",
    "servers.inferno.platform.ai",
    "capacities.inferno.platform.ai",
    "optimizers.inferno.platform.ai",
}
OUR_CRDS = MODELBOOSTER_CRDS | INFERNO_CRDS
CHILD_CRDS = {
    "modelservings.workload.serving.volcano.sh",
    "autoscalingpolicies.workload.serving.volcano.sh",
    "autoscalingpolicybindings.workload.serving.volcano.sh",
    "modelservers.networking.serving.volcano.sh",
    "modelroutes.networking.serving.volcano.sh",
}
KUBE_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())


def _names(crds: list[dict[str, Any]]) -> set[str]:
    return {crd["metadata"]["name"] for crd in crds}


def _files(directory: Path) -> list[dict[str, Any]]:
    return [yaml.load(path.read_text(), Loader=yaml.CSafeLoader) for path in sorted(directory.glob("*.yaml"))]


def test_chart_crds_equal_the_modelbooster_crds_command(capsys: pytest.CaptureFixture[str]) -> None:
    # File-by-file drift (`modelbooster crds --chart charts/modelbooster`) is pinned in tests/unit/test_crds.py;
    # here: what a user gets from the command is what the chart installs.
    assert modelbooster_main(["crds"]) == 0
    printed = [doc for doc in yaml.load_all(capsys.readouterr().out, Loader=yaml.CSafeLoader) if doc]
    in_chart = _files(MAIN_CRDS_DIR) + _files(CHILD_CRDS_DIR) + _files(INFERNO_CRDS_DIR)
    by_name = {crd["metadata"]["name"]: crd for crd in in_chart}
    assert len(by_name) == len(in_chart)
    assert {crd["metadata"]["name"]: crd for crd in printed} == by_name


def test_child_and_inferno_crds_live_in_subcharts_and_ours_in_the_chart() -> None:
    assert _names(_files(MAIN_CRDS_DIR)) == MODELBOOSTER_CRDS
    assert _names(_files(CHILD_CRDS_DIR)) == CHILD_CRDS
    assert _names(_files(INFERNO_CRDS_DIR)) == INFERNO_CRDS


def test_install_creates_every_crd_by_default(defaults: Rendered) -> None:
    assert _names(defaults.crds) == OUR_CRDS | CHILD_CRDS


def test_install_child_crds_false_skips_exactly_the_child_crds(rendered_scenarios: dict[str, Rendered]) -> None:
    assert _names(rendered_scenarios["no-child-crds"].crds) == OUR_CRDS
    assert "crds.installChildCRDs=false" in rendered_scenarios["no-child-crds"].notes


def test_inferno_disabled_skips_exactly_the_inferno_crds(rendered_scenarios: dict[str, Rendered]) -> None:
    assert _names(rendered_scenarios["no-inferno"].crds) == MODELBOOSTER_CRDS | CHILD_CRDS
    assert _names(rendered_scenarios["everything"].crds) == MODELBOOSTER_CRDS
    assert "crds.installChildCRDs=false" in rendered_scenarios["everything"].notes


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_crd_is_a_valid_apiextensions_object(defaults: Rendered, kube_version: str) -> None:
    for crd in defaults.crds:
        try:
            kubernetes_validate.validate(crd, kube_version, strict=True)
        except kubernetes_validate.ValidationError as error:  # pragma: no cover - the message is the point
            pytest.fail(f"{crd['metadata']['name']} at {'/'.join(map(str, error.path))}: {error.message}")


def test_every_crd_is_consistent(defaults: Rendered) -> None:
    for crd in defaults.crds:
        spec = crd["spec"]
        name = crd["metadata"]["name"]
        assert name == f"{spec['names']['plural']}.{spec['group']}"
        assert spec["scope"] == "Namespaced", name
        storage = [v for v in spec["versions"] if v["storage"]]
        assert len(storage) == 1, name
        assert all(v["served"] for v in spec["versions"]), name
        assert storage[0]["subresources"].get("status") == {}, name
        assert storage[0]["schema"]["openAPIV3Schema"]["type"] == "object", name


def test_modelbooster_crd_identity(defaults: Rendered) -> None:
    (crd,) = [c for c in defaults.crds if c["metadata"]["name"] == "modelboosters.workload.serving.volcano.sh"]
    names = crd["spec"]["names"]
    assert (names["kind"], names["plural"], names["shortNames"]) == ("ModelBooster", "modelboosters", ["mb"])
    assert "kthena" in names["categories"]
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1"
    columns = [column["name"] for column in version["additionalPrinterColumns"]]
    assert columns == ["Active", "Failed", "Backends", "Age"]


def _notes_example(notes: str) -> dict[str, Any]:
    match = re.search(r"<<'YAML'.*?\n(.*?)\n\s*YAML\n", notes, flags=re.DOTALL)
    assert match, "NOTES.txt has no example ModelBooster"
    lines = match.group(1).splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    example: dict[str, Any] = yaml.safe_load("\n".join(line[indent:] for line in lines))
    return example


def test_notes_example_passes_the_crd_schema(defaults: Rendered) -> None:
    example = _notes_example(defaults.notes)
    (crd,) = [c for c in defaults.crds if c["spec"]["names"]["kind"] == example["kind"]]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    # Only the spec: metadata is the API server's to check, and jsonschema ignores the x-kubernetes keywords.
    jsonschema.validate(example["spec"], schema["properties"]["spec"])


def test_notes_example_is_refused_by_admission_with_the_message_notes_promise(
    defaults: Rendered, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "example.yaml"
    manifest.write_text(yaml.safe_dump(_notes_example(defaults.notes)))
    assert modelbooster_main(["validate", "-f", str(manifest)]) == 1
    captured = capsys.readouterr()
    message = (captured.err + captured.out).strip()
    promised = (
        'spec.backends[0].type: Invalid value: "MindIE": not supported yet; supported: vLLM, vLLMDisaggregated, SGLang'
    )
    assert promised in message
    assert promised in defaults.notes


def test_notes_promise_what_kubectl_prints_for_the_webhooks_denial(defaults: Rendered) -> None:
    example = _notes_example(defaults.notes)
    request = review(operation="CREATE", obj=example, dry_run=True)["request"]
    response = validate(request)
    assert response["allowed"] is False
    printed = kubectl_prints(response["status"])
    assert printed.startswith('The ModelBooster "check-webhook" is invalid: spec.backends[0].type: Invalid value')
    assert f"Expected: kubectl prints\n     {printed}\n" in defaults.notes
    # What kubectl does not print: the Status message kube-apiserver prefixes with the webhook's name.
    assert "denied the request" not in defaults.notes
