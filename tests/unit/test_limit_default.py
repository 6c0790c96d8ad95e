"""An accelerator or huge pages requested without a limit (issue 38): Kthena admits such a worker and Kubernetes
refuses its pods; defaulting gives it the only limit Kubernetes allows, the request, for every path that defaults
(the mutating webhook: tests/webhook/test_mutate.py; the CLI and the reconciler here)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelbooster import render as render_cli
from modelbooster import validate as validate_cli
from reconciler.modelbooster.synthesis import synthesize
from shared.defaults import apply_defaults
from shared.validation import parse_modelbooster
from tests.unit.factories import modelbooster, single_backend, single_modelbooster, worker

ASCEND = "huawei.com/ascend-1980"
WARNING = (
    "Warning: spec.backend.workers[0].resources.limits[huawei.com/ascend-1980]: set to the request, 1: Kubernetes "
    "does not overcommit extended resources and huge pages, so a container that requests one needs a limit equal to "
    "the request\n"
)


def kthena_v1_manifest() -> dict[str, Any]:
    return single_modelbooster(single_backend(workers=[worker(resources={"requests": {ASCEND: "1"}})]), name="m")


def engine_resources(serving: dict[str, Any]) -> Any:
    """The resources of the engine container of the ModelServing's first role (the runtime sidecar has none)."""
    containers = serving["spec"]["template"]["roles"][0]["entryTemplate"]["spec"]["containers"]
    (engine,) = [container for container in containers if "resources" in container]
    return engine["resources"]


def run(module: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    code = module.run(parser.parse_args(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_validate_admits_it_with_the_webhooks_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "m.yaml"
    source.write_text(yaml.safe_dump(kthena_v1_manifest()), encoding="utf-8")
    code, out, err = run(validate_cli, ["-f", str(source), "-o", "yaml"], capsys)
    assert (code, err) == (0, WARNING)
    assert yaml.safe_load(out)["spec"]["backend"]["workers"][0]["resources"]["limits"] == {ASCEND: "1"}


def test_render_and_the_reconciler_give_the_pod_the_limit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "m.yaml"
    source.write_text(yaml.safe_dump(kthena_v1_manifest()), encoding="utf-8")
    code, out, err = run(render_cli, ["-f", str(source)], capsys)
    assert code == 0
    assert WARNING in err
    serving = next(yaml.safe_load_all(out))
    assert engine_resources(serving) == {"requests": {ASCEND: "1"}, "limits": {ASCEND: "1"}}
    # The reconciler parses a stored object (one the webhook never saw) with the same defaulting.
    stored = kthena_v1_manifest()
    stored["metadata"]["uid"] = "11111111-2222-4333-8444-555555555555"
    children = synthesize(parse_modelbooster(stored))
    assert engine_resources(children[0]) == {"requests": {ASCEND: "1"}, "limits": {ASCEND: "1"}}


def test_the_default_is_idempotent_and_leaves_overcommitable_resources_alone() -> None:
    obj = modelbooster()
    obj["spec"]["backends"][0]["workers"][0]["resources"] = {"requests": {"cpu": "1", "nvidia.com/gpu": 2}}
    once = apply_defaults(obj)
    assert once.obj["spec"]["backends"][0]["workers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert once.ops[-1] == {"op": "add", "path": "/spec/backends/0/workers/0/resources/limits/nvidia.com~1gpu",
                            "value": 2}  # fmt: skip
    twice = apply_defaults(once.obj)
    assert (twice.obj, twice.ops, twice.warnings) == (once.obj, [], [])
