"""values.yaml, values.schema.json and the configuration table in docs/chart.md stay one story."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.chart.render import CHART_DIR, REPO_ROOT
from tests.chart.scripts import load_script

DOC = REPO_ROOT / "docs" / "chart.md"


@pytest.fixture(scope="module")
def values_table() -> ModuleType:
    return load_script("values_table")


@pytest.fixture(scope="module")
def values_text() -> str:
    return (CHART_DIR / "values.yaml").read_text()


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CHART_DIR / "values.schema.json").read_text())
    return schema


def test_configuration_table_in_the_docs_is_up_to_date(values_table: ModuleType) -> None:
    assert values_table.main(["--check", str(DOC)]) == 0, "run `python scripts/values_table.py --write docs/chart.md`"


def test_every_value_is_documented(values_table: ModuleType, values_text: str) -> None:
    assert values_table.undocumented(values_text) == []


def test_every_documented_value_is_in_the_schema(values_table: ModuleType, values_text: str) -> None:
    schema = _schema()
    for row in values_table.rows(values_text):
        node = schema
        for part in row.key.split("."):
            assert part in node.get("properties", {}), f"values.schema.json does not describe {row.key}"
            node = node["properties"][part]


def test_every_schema_property_exists_in_values(values_table: ModuleType, values_text: str) -> None:
    values = yaml.safe_load(values_text)
    # A documented key is one value (a Kubernetes object such as `resources` may have optional fields).
    documented = {row.key for row in values_table.rows(values_text)}
    # Keys Helm adds itself: `global`, and one entry per subchart.
    helm_keys = {"global", "child-crds", "inferno-crds"}

    def walk(schema: dict[str, Any], node: Any, path: str) -> None:
        for key, child in schema.get("properties", {}).items():
            where = f"{path}.{key}" if path else key
            if not path and key in helm_keys:
                continue
            assert isinstance(node, dict), f"{path} is not a map in values.yaml"
            assert key in node, f"values.schema.json describes {where}, which values.yaml does not set"
            if where not in documented:
                walk(child, node[key], where)

    walk(_schema(), values, "")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"webhook": {"failurePolicy": "fail"}}, "/webhook/failurePolicy"),
        ({"webhook": {"timeoutSeconds": 31}}, "/webhook/timeoutSeconds"),
        ({"webhook": {"tlsMinVersion": "1.1"}}, "/webhook/tlsMinVersion"),
        ({"webhok": {"enabled": False}}, "webhok"),
        ({"crds": {"installChildCRD": False}}, "installChildCRD"),
        ({"reconciler": {"watchNamespaces": ["Team_A"]}}, "/reconciler/watchNamespaces/0"),
        ({"reconciler": {"workers": 0}}, "/reconciler/workers"),
        ({"logging": {"level": "verbose"}}, "/logging/level"),
        ({"image": {"digest": "latest"}}, "/image/digest"),
        ({"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}}, "name"),
        ({"engine": {"env": [{"value": "1"}]}}, "/engine/env/0"),
        ({"metrics": {"serviceMonitor": {"interval": "30 seconds"}}}, "/metrics/serviceMonitor/interval"),
    ],
)
def test_schema_refuses_wrong_values_naming_the_key(values: dict[str, Any], message: str) -> None:
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmValuesError) as caught:
        chart.validate_schema(values)
    assert message in str(caught.value)


def test_schema_accepts_the_defaults_and_every_documented_example(values_text: str) -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema({})
        chart.validate_schema(yaml.safe_load(values_text))
        chart.validate_schema({"webhook": {"pdb": {"minAvailable": "50%"}}})
        chart.validate_schema({"image": {"digest": "sha256:" + "0" * 64}})


# --- the generator itself, on small hand-written inputs ------------------------------------------------------


def test_table_rows_follow_the_comments(values_table: ModuleType) -> None:
    text = (
        "# file header, not a key comment\n"
        "\n"
        "# -- Top level.\n"
        "# Second line.\n"
        "top: 1\n"
        "group:\n"
        "  # -- Nested | with a pipe.\n"
        '  leaf: "x"\n'
        "  # a plain comment documents nothing\n"
        "  other: true\n"
        "# -- A documented map.\n"
        "map:\n"
        "  a: {b: 1}\n"
    )
    rows = values_table.rows(text)
    assert [(r.key, r.type, r.default, r.description) for r in rows] == [
        ("top", "int", "`1`", "Top level. Second line."),
        ("group.leaf", "string", '`"x"`', "Nested | with a pipe."),
        ("map", "object", '`{"a": {"b": 1}}`', "A documented map."),
    ]
    assert values_table.undocumented(text) == ["group.other"]
    table = values_table.table(text)
    assert '| `group.leaf` | string | `"x"` | Nested \\| with a pipe. |' in table


def test_a_dangling_key_comment_is_an_error(values_table: ModuleType) -> None:
    with pytest.raises(values_table.ValuesDocError, match="blank line"):
        values_table.rows("# -- Describes nothing.\n\nkey: 1\n")


def test_stale_table_is_reported(values_table: ModuleType, tmp_path: Path, values_text: str) -> None:
    stale = tmp_path / "chart.md"
    stale.write_text(f"intro\n{values_table.BEGIN}\n| old |\n{values_table.END}\noutro\n")
    assert values_table.main(["--check", str(stale)]) == 1
    assert values_table.main(["--write", str(stale)]) == 0
    assert values_table.main(["--check", str(stale)]) == 0
    written = stale.read_text()
    assert written.startswith("intro\n")
    assert written.endswith("outro\n")
    assert values_table.table(values_text) in written


def test_missing_markers_are_reported(values_table: ModuleType, tmp_path: Path) -> None:
    document = tmp_path / "no-markers.md"
    document.write_text("no table here\n")
    assert values_table.main(["--check", str(document)]) == 2
