"""The image: multi-stage, slim, non-root, runtime dependencies only, `modelbooster` as the entrypoint.

No Docker engine runs on the build machines, so the structure is checked by parsing the Dockerfile; the build
itself runs only where `docker info` answers. Where no registry is reachable either, set
MODELBOOSTER_TEST_PYTHON_IMAGE to a local stand-in for the Python base image (a Debian bookworm with
`python` and pip on the PATH).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.chart.dockerfile import (
    arg_default,
    copy_sources,
    exec_form,
    final_stage_user,
    in_build_context,
    parser_directives,
    shell_commands,
    stages,
)
from tests.chart.render import REPO_ROOT, render

DEV_TOOLS = {
    "pytest",
    "pytest-aiohttp",
    "hypothesis",
    "mypy",
    "ruff",
    "import-linter",
    "helm-python-sdk",
    "kubernetes-validate",
    "dockerfile-parse",
    "jsonschema",
    "types-pyyaml",
    "grafana-foundation-sdk",
    "promql-parser",
}


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.\-]+", requirement)
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def test_build_is_multi_stage_on_a_slim_python_base() -> None:
    found = stages()
    assert len(found) >= 2
    final = found[-1]
    repository, _, tag = final.base.partition(":")
    assert repository in ("python", "docker.io/library/python"), final.base
    assert "slim" in tag, f"final stage {final.base} is not a slim image"
    # Builder and runtime share the interpreter, so the copied virtualenv's python links resolve.
    assert found[0].base == final.base


def test_runs_as_a_numeric_non_root_user() -> None:
    uid, gid = final_stage_user()
    assert uid != 0
    assert gid != 0
    # That user exists in the image (a uid with no passwd entry confuses tools that look up $HOME).
    created = " ".join(stages()[-1].all("RUN"))
    assert f"--uid {uid}" in created
    assert f"--gid {gid}" in created


# Debian's /etc/login.defs (shadow 4.13, in the python:3.11-slim-bookworm base): the id ranges useradd and
# groupadd warn outside of ("uid 65532 is greater than SYS_UID_MAX 999").
LOGIN_DEFS = {
    "SYS_UID_MIN": 100,
    "SYS_UID_MAX": 999,
    "UID_MIN": 1000,
    "UID_MAX": 60000,
    "SYS_GID_MIN": 100,
    "SYS_GID_MAX": 999,
    "GID_MIN": 1000,
    "GID_MAX": 60000,
}


def _option(words: list[str], *names: str) -> str | None:
    for index, word in enumerate(words):
        for name in names:
            if word == name and index + 1 < len(words):
                return words[index + 1]
            if name.startswith("--") and word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _id_range(words: list[str], kind: str) -> tuple[int, int]:
    """The range login.defs allows for this useradd/groupadd call, after its --key overrides."""
    defs = dict(LOGIN_DEFS)
    for index, word in enumerate(words[:-1]):
        if word in ("--key", "-K"):
            key, _, value = words[index + 1].partition("=")
            defs[key] = int(value)
    prefix = "SYS_" if "--system" in words or "-r" in words else ""
    return defs[f"{prefix}{kind}_MIN"], defs[f"{prefix}{kind}_MAX"]


def test_the_image_user_is_created_without_a_range_warning() -> None:
    uid, gid = final_stage_user()
    commands = [words for run in stages()[-1].all("RUN") for words in shell_commands(run)]
    created = {words[0]: words for words in commands if words and words[0] in ("useradd", "groupadd")}
    assert set(created) == {"useradd", "groupadd"}
    assert int(_option(created["useradd"], "--uid", "-u") or -1) == uid
    assert int(_option(created["groupadd"], "--gid", "-g") or -1) == gid
    low, high = _id_range(created["useradd"], "UID")
    assert low <= uid <= high, f"useradd warns: uid {uid} outside {low}..{high}"
    low, high = _id_range(created["groupadd"], "GID")
    assert low <= gid <= high, f"groupadd warns: gid {gid} outside {low}..{high}"
    # The model of login.defs itself: without the override, 65532 is outside both ranges.
    assert not _id_range(["useradd", "--system"], "UID")[0] <= 65532 <= _id_range(["useradd", "--system"], "UID")[1]
    assert not _id_range(["useradd"], "UID")[0] <= 65532 <= _id_range(["useradd"], "UID")[1]


def test_no_parser_directive_makes_the_builder_fetch_a_frontend() -> None:
    # `# syntax=...` makes BuildKit pull a frontend image from a registry before it reads the file; nothing
    # here needs a newer syntax than the builder's own.
    assert "syntax" not in parser_directives()
    assert parser_directives("# syntax=docker/dockerfile:1\n# One image\nFROM x\n") == {"syntax": "docker/dockerfile:1"}


def test_the_virtualenv_gets_no_installer_so_nothing_is_uninstalled() -> None:
    # `pip uninstall pip setuptools wheel` warned "Skipping wheel as it is not installed": the venv never had it.
    commands = [words for stage in stages()[:-1] for run in stage.all("RUN") for words in shell_commands(run)]
    venvs = [words for words in commands if words[:3] == ["python", "-m", "venv"]]
    assert venvs
    assert all("--without-pip" in words for words in venvs)
    target = f"{venvs[0][-1]}/bin/python"
    installs = [words for words in commands if "pip" in words and "install" in words]
    assert installs
    assert all(_option(words, "--python") == target for words in installs)
    assert not [words for words in commands if "uninstall" in words]


def test_chart_runs_the_pods_as_the_image_user() -> None:
    uid, gid = final_stage_user()
    for deployment in render().of_kind("Deployment"):
        pod_context = deployment["spec"]["template"]["spec"]["securityContext"]
        assert (pod_context["runAsUser"], pod_context["runAsGroup"]) == (uid, gid)


def test_entrypoint_is_the_modelbooster_console_script() -> None:
    final = stages()[-1]
    entrypoint = final.last("ENTRYPOINT")
    assert entrypoint is not None
    assert exec_form(entrypoint) == ["modelbooster"]
    assert "modelbooster" in _pyproject()["project"]["scripts"]
    # The chart supplies the subcommand as the first argument.
    for deployment in render().of_kind("Deployment"):
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert "command" not in container  # keep the image's entrypoint
        assert container["args"][0] in ("webhook", "reconciler")


def test_final_stage_installs_nothing_and_copies_only_the_virtualenv() -> None:
    final = stages()[-1]
    runs = " ".join(final.all("RUN"))
    assert "pip" not in runs, "the runtime stage must not install packages (and so no dev tools)"
    copies = final.all("COPY") + final.all("ADD")
    assert copies, "the runtime stage copies nothing"
    for copy in copies:
        assert "--from=" in copy, f"runtime stage copies from the build context: {copy}"


def test_build_stage_installs_runtime_extras_only() -> None:
    extras = arg_default("EXTRAS")
    assert extras is not None
    installs = [run for stage in stages()[:-1] for run in stage.all("RUN") if re.search(r"\bpip\b.* install ", run)]
    assert installs
    for run in installs:
        assert "dev" not in re.findall(r"\[([^\]]*)\]", run.replace("${EXTRAS}", extras))[0].split(",")
        assert "-e " not in run
        assert "--editable" not in run
    optional = _pyproject()["project"]["optional-dependencies"]
    for extra in extras.split(","):
        assert extra in optional, f"EXTRAS names {extra!r}, which pyproject.toml does not define"
        names = {_requirement_name(requirement) for requirement in optional[extra]}
        assert not names & DEV_TOOLS, f"extra {extra} pulls in dev tools {names & DEV_TOOLS}"
    runtime = {_requirement_name(requirement) for requirement in _pyproject()["project"]["dependencies"]}
    assert not runtime & DEV_TOOLS


def test_exposed_ports_are_the_ones_the_chart_uses() -> None:
    exposed = {int(port.split("/")[0]) for value in stages()[-1].all("EXPOSE") for port in value.split()}
    deployments = render().of_kind("Deployment")
    used = {
        p["containerPort"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"] for p in c["ports"]
    }
    assert used <= exposed


def test_build_context_holds_what_pip_install_needs_and_nothing_else() -> None:
    sources = [source for stage in stages() for copy in stage.all("COPY") for source in copy_sources(copy)]
    assert sources
    for source in sources:
        assert (REPO_ROOT / source).exists(), f"COPY {source}: no such path in the repository"
        assert in_build_context(source), f"COPY {source} is excluded by .dockerignore"
    readme = _pyproject()["project"]["readme"]  # setuptools reads it during the build
    assert readme in sources
    assert in_build_context(readme)
    for package in _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]:
        name = package.rstrip("*")
        assert f"{name}/" in sources or name in sources, f"package {name} is not copied into the build"
        for path in (REPO_ROOT / name).rglob("*.py"):
            relative = path.relative_to(REPO_ROOT)
            assert in_build_context(relative) != ("__pycache__" in relative.parts), relative
    for excluded in (
        "tests/conftest.py",
        ".git/HEAD",
        "charts/modelbooster/Chart.yaml",
        "bench/x.py",
        "modelbooster/__pycache__/cli.cpython-311.pyc",
        ".venv/bin/python",
    ):
        assert not in_build_context(excluded), excluded


def test_dockerignore_semantics_of_the_helper() -> None:
    # The helper's own rules, on paths whose fate is obvious from .dockerignore's first lines.
    assert in_build_context("pyproject.toml")
    assert in_build_context(Path("shared") / "api" / "modelbooster.py")
    assert not in_build_context("docs/chart.md")


def _docker_engine_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


@pytest.mark.slow
def test_docker_build() -> None:
    if not _docker_engine_available():
        pytest.skip("no Docker engine answers `docker info` here; the image structure is checked by parsing")
    base = os.environ.get("MODELBOOSTER_TEST_PYTHON_IMAGE")
    base_arg = ["--build-arg", f"PYTHON_IMAGE={base}"] if base else []
    # No cache: a cached step prints nothing, and its warnings would go unseen.
    result = subprocess.run(
        ["docker", "build", "--no-cache", *base_arg, "--tag", "modelbooster:chart-test", str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert [line for line in output.splitlines() if re.search(r"(?i)\bwarning\b", line)] == []
    run = subprocess.run(
        ["docker", "run", "--rm", "--read-only", "--user", "65532:65532", "modelbooster:chart-test", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "webhook" in run.stdout
    no_pip = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pip') is not None)"
    image_python = ["docker", "run", "--rm", "--entrypoint", "/opt/modelbooster/bin/python", "modelbooster:chart-test"]
    assert subprocess.run([*image_python, "-c", no_pip], timeout=60, check=False).returncode == 0
