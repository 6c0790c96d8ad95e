"""The digest every generated CRD carries, the verdict on a served CRD, and the generator's promise that its
CRDs hold nothing the API server would drop (so they round-trip; tests/apiserver/test_crd_storage.py)."""

from __future__ import annotations

import copy
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from shared.crd_digest import (
    DIGEST_ANNOTATION,
    DIGEST_TABLE_FILE,
    judge,
    outdated_message,
    recorded_chart_directories,
    recorded_digests,
    spec_digest,
)
from shared.crds import CHILD_CRDS_DIRECTORY, KINDS, chart_directories, crds, expected_digests
from shared.schema import apiserver_form

# Written from kube-apiserver's JSONSchemaProps (apiextensions/v1 types.go): omitempty fields.
EMPTY_WHEN_OMITTED = {"properties": {}, "required": [], "enum": [], "x-kubernetes-validations": [], "description": ""}


def _walk(node: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in EMPTY_WHEN_OMITTED and value == EMPTY_WHEN_OMITTED[key]:
                found.append(f"{path}.{key}")
            if key in ("nullable", "uniqueItems", "x-kubernetes-int-or-string") and value is False:
                found.append(f"{path}.{key}")
            found.extend(_walk(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found.extend(_walk(item, f"{path}[{index}]"))
    return found


@pytest.mark.parametrize("definition", crds(), ids=lambda d: d["metadata"]["name"])
def test_no_generated_crd_holds_a_piece_the_api_server_drops(definition: dict[str, Any]) -> None:
    assert _walk(definition["spec"]["versions"][0]["schema"]) == []


def test_apiserver_form_drops_empty_pieces_at_every_depth_and_keeps_defaults() -> None:
    schema = {
        "type": "object",
        "description": "",
        "properties": {
            "status": {"type": "object", "properties": {}},
            "list": {"type": "array", "items": {"type": "object", "required": [], "properties": {}}},
            "text": {"type": "string", "default": "", "nullable": False},
        },
    }
    assert apiserver_form(schema) == {
        "type": "object",
        "properties": {
            "status": {"type": "object"},
            "list": {"type": "array", "items": {"type": "object"}},
            "text": {"type": "string", "default": ""},
        },
    }


def test_every_crd_carries_the_digest_of_its_spec() -> None:
    for definition in crds():
        assert definition["metadata"]["annotations"][DIGEST_ANNOTATION] == spec_digest(definition["spec"])
    assert len(set(expected_digests().values())) == len(KINDS)


def test_the_digest_moves_with_the_schema() -> None:
    (definition,) = [d for d in crds() if d["spec"]["names"]["kind"] == "ModelBooster"]
    changed = copy.deepcopy(definition["spec"])
    changed["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"] = "other"
    assert spec_digest(changed) != spec_digest(definition["spec"])


def test_expected_digests_without_the_child_kinds_or_inferno() -> None:
    children = {kind.name for kind in KINDS if kind.chart_directory == CHILD_CRDS_DIRECTORY}
    assert set(expected_digests()) - set(expected_digests(include_children=False)) == children
    inferno = {kind.name for kind in KINDS if kind.group == "inferno.platform.ai"}
    assert len(inferno) == 6
    assert set(expected_digests()) - set(expected_digests(include_inferno=False)) == inferno


@pytest.mark.parametrize("include_children", [True, False])
@pytest.mark.parametrize("include_inferno", [True, False])
def test_the_recorded_table_is_what_is_generated(include_children: bool, include_inferno: bool) -> None:
    # The reconciler reads the recorded table (shared/crd_digests.json) instead of building the CRDs; when this
    # fails, run `python scripts/crd_digests.py --write`.
    flags = {"include_children": include_children, "include_inferno": include_inferno}
    assert recorded_digests(**flags) == expected_digests(**flags)
    assert recorded_chart_directories() == chart_directories()


def test_the_recorded_table_is_packaged() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert DIGEST_TABLE_FILE.name in pyproject["tool"]["setuptools"]["package-data"]["shared"]


def test_the_reconciler_judges_without_building_the_crds() -> None:
    # Building the CRDs keeps ~10 MB of the reconciler's memory; it imports only the recorded table's reader.
    code = "import reconciler.assembly, reconciler.crdcheck.wiring, sys; print('shared.crds' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_verdicts() -> None:
    name = "modelboosters.workload.serving.volcano.sh"
    assert judge(name, expected="sha256:a", served_annotations=None).verdict == "absent"
    assert judge(name, expected="sha256:a", served_annotations={DIGEST_ANNOTATION: "sha256:a"}).verdict == "current"
    unmarked = judge(name, expected="sha256:a", served_annotations={})
    assert unmarked.outdated
    assert "no digest annotation" in unmarked.reason
    other = judge(name, expected="sha256:aaaa", served_annotations={DIGEST_ANNOTATION: "sha256:bbbb"})
    assert other.outdated
    assert "bbbb" in other.reason
    message = outdated_message(unmarked, version="9.9.9")
    assert message.startswith(f"CustomResourceDefinition {name} is not the one modelbooster 9.9.9 generates")
    assert "kubectl apply --server-side --force-conflicts -f charts/modelbooster/crds/ " in message
    child = outdated_message(unmarked, version="9.9.9", chart_directory=CHILD_CRDS_DIRECTORY)
    assert "kubectl apply --server-side --force-conflicts -f charts/modelbooster/charts/child-crds/crds/ " in child
