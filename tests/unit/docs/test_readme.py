"""The README is read by a newcomer in minutes: at most 2,500 words, starting from a clone, with the two commands
CI runs verbatim (.ci/run), the Kubernetes version the chart needs, and the maintainers' matter in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL_AND_RENDER = "pip install . && modelbooster render -f examples/single-vllm-cpu.yaml"
TEST = 'pip install -e ".[dev]" && python -m pytest -q'


def _headings() -> list[str]:
    return re.findall(r"^## (.+)$", README, flags=re.MULTILINE)


def test_it_is_read_in_minutes() -> None:
    assert len(README.split()) <= 2_500


def test_try_it_starts_from_a_clone_and_keeps_the_commands_ci_runs() -> None:
    try_it = README[README.index("## Try it") :]
    assert try_it.index("git clone ") < try_it.index(INSTALL_AND_RENDER) < try_it.index(TEST)
    assert TEST in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_it_says_what_it_is_how_to_try_install_and_migrate_and_its_limits_in_that_order() -> None:
    wanted = ["Try it", "Install it", "Migrate", "Limitations"]
    found = [next(i for i, h in enumerate(_headings()) if h.startswith(w)) for w in wanted]
    assert found == sorted(found)


def test_the_kubernetes_version_is_the_charts() -> None:
    chart = yaml.safe_load((ROOT / "charts" / "modelbooster" / "Chart.yaml").read_text(encoding="utf-8"))
    minimum = re.match(r">=(\d+\.\d+)", chart["kubeVersion"])
    assert minimum is not None
    assert f"Kubernetes {minimum.group(1)} or newer" in README


def test_benchmarks_test_tiers_and_the_code_map_live_in_docs() -> None:
    assert not {"Performance", "Testing", "Code map"} & set(_headings())
    for page in ("performance.md", "testing.md", "code-map.md"):
        assert (ROOT / "docs" / page).exists()
        assert f"(docs/{page})" in README
