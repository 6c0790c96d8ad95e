"""docs/migrating-from-kthena.md is a runbook whose commands work: each `helm` command for our chart renders with
the values it sets (every key one the chart has, the image named), each `kubectl apply -f` names a file or
directory of this repository, each `modelbooster` command parses, and each step about Kthena says what Kthena's
source does (its controller list, its webhook names, its log line, its ConfigMap keys), as the upgrade test
(tests/chart/test_upgrade.py) does for docs/chart.md."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from modelbooster.cli import build_parser
from shared.rollout import ANNOTATION_ROLLOUT
from tests.chart.render import render

REPO_ROOT: Final = Path(__file__).resolve().parents[3]
GUIDE: Final = (REPO_ROOT / "docs" / "migrating-from-kthena.md").read_text(encoding="utf-8")
VALUES: Final = yaml.safe_load((REPO_ROOT / "charts" / "modelbooster" / "values.yaml").read_text())
# Kthena's kthena-controller-manager (cmd/kthena-controller-manager/main.go, v0.3.0 and later): its controllers,
# and what `parseControllers` does with a list (see `kthena_enabled`).
KTHENA_CONTROLLERS: Final = ("modelserving", "modelbooster", "autoscaler")


def _section(title: str, level: str = "##") -> str:
    match = re.search(rf"^{level} {re.escape(title)}\n(.*?)(?=^#{{2,{len(level)}}} |\Z)", GUIDE,
                      flags=re.MULTILINE | re.DOTALL)  # fmt: skip
    assert match, f"no section {title!r}"
    return match.group(1)


def _commands(text: str = GUIDE) -> Iterator[list[str]]:
    """Each shell command of the guide's `sh` blocks (continuation lines joined, comments dropped), as argv."""
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL):
        pending = ""
        for raw in re.sub(r"\\\n\s*", " ", block).splitlines():
            pending = f"{pending}\n{raw}" if pending else raw.strip()
            if not pending or pending.startswith(("#", "|", "for ", "done", 'kubectl get "$kind"')):
                pending = ""
                continue
            try:
                argv = shlex.split(pending, comments=True)
            except ValueError:  # a quote that closes on a later line
                continue
            pending = ""
            yield argv


def kthena_enabled(controllers: list[str]) -> set[str]:
    """Which controllers Kthena's controller manager runs for a `--controllers` list: a name, or `+name`, turns
    one on, `-name` off (the first mention wins), `*` turns on those not mentioned; when that leaves none on, it
    logs "No controllers are enabled" and runs every one."""
    enabled = set()
    for name in KTHENA_CONTROLLERS:
        star, decided = False, None
        for item in controllers:
            if item in (name, f"+{name}"):
                decided = True
                break
            if item == f"-{name}":
                decided = False
                break
            star = star or item == "*"
        if decided if decided is not None else star:
            enabled.add(name)
    return enabled or set(KTHENA_CONTROLLERS)


def _set_values(argv: list[str]) -> dict[str, Any]:
    """The values of `--set key=value` flags (Helm's `{a,b}` lists too), nested."""
    values: dict[str, Any] = {}
    for index, arg in enumerate(argv):
        if arg != "--set":
            continue
        key, _, raw = argv[index + 1].partition("=")
        value: Any = raw.strip("{}").split(",") if raw.startswith("{") else raw
        if raw in ("true", "false"):
            value = raw == "true"
        node = values
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return values


def _known(values: dict[str, Any], defaults: dict[str, Any], path: str = "") -> None:
    for key, value in values.items():
        assert isinstance(defaults, dict), f"{path} is not a map in values.yaml"
        assert key in defaults, f"--set {path}{key}: not a value of the chart"
        if isinstance(value, dict):
            _known(value, defaults[key], f"{path}{key}.")


def _ours(argv: list[str]) -> bool:
    return argv[:1] == ["helm"] and "charts/modelbooster" in argv


def test_every_helm_command_for_our_chart_names_the_image_and_renders() -> None:
    commands = [argv for argv in _commands() if _ours(argv)]
    assert any(argv[1] == "install" for argv in commands)
    for argv in commands:
        values = _set_values(argv)
        _known(values, VALUES)
        assert values.get("image", {}).get("repository"), f"{shlex.join(argv)}: no image.repository"
        render(values, with_image=False)  # raises when the chart refuses it


def test_every_kubectl_apply_names_a_path_of_this_repository() -> None:
    applied = [argv[argv.index("-f") + 1] for argv in _commands() if argv[:2] == ["kubectl", "apply"]]
    ours = [path for path in applied if not path.startswith("<")]
    assert "charts/modelbooster/crds/workload.serving.volcano.sh_modelboosters.yaml" in ours
    for path in ours:
        assert (REPO_ROOT / path).exists(), path


def test_every_modelbooster_command_parses() -> None:
    parser = build_parser()
    commands = [argv for argv in _commands() if argv[:1] == ["modelbooster"]]
    assert {argv[1] for argv in commands} >= {"validate", "render", "rollout"}
    for argv in commands:
        parser.parse_args(argv[1:])
    assert f"{ANNOTATION_ROLLOUT}=" in GUIDE


def test_kthenas_modelbooster_controller_is_turned_off_with_a_list_that_keeps_the_others() -> None:
    section = _section("2. Turn off Kthena's ModelBooster controller", "###")
    kthena = [argv for argv in _commands(section) if argv[:3] == ["helm", "upgrade", "kthena"]]
    assert kthena, "no helm upgrade of Kthena"
    for argv in kthena:
        listed = _set_values(argv)["workload"]["controllerManager"]["controllers"]
        assert kthena_enabled(listed) == {"modelserving", "autoscaler"}
    assert "--controllers=*,-modelbooster" in section
    assert kthena_enabled(["*", "-modelbooster"]) == {"modelserving", "autoscaler"}
    # The claim the guide makes about a list without `*`: Kthena then runs everything.
    assert kthena_enabled(["-modelbooster"]) == set(KTHENA_CONTROLLERS)
    assert "`-modelbooster` alone — makes Kthena fall back to\n**every** controller" in section
    assert "No controllers are enabled" in section
    assert "Controller <modelbooster> is disabled" in section  # the line Kthena logs for a disabled controller


@pytest.mark.parametrize(
    ("release", "says"),
    [
        ("**Kthena v0.3.0, v0.4.0 and v1.0.**", "takes `--controllers`"),
        ("**Kthena v0.2.0.**", "no `--controllers` flag (it arrived in v0.3.0), and an unknown flag\nstops the whole"),
        ("**Kthena v0.1.0.**", "scale deploy/kthena-controller-manager --replicas=0"),
    ],
)
def test_each_release_gets_what_works_on_it(release: str, says: str) -> None:
    section = _section("2. Turn off Kthena's ModelBooster controller", "###")
    assert release in section
    start = section.index(release)
    assert says in section[start:start + 1400]


def test_kthenas_modelbooster_webhooks_are_named_as_kthena_registers_them() -> None:
    section = _section("4. Remove Kthena's ModelBooster webhooks", "###")
    for name in (
        "mutate-modelbooster.volcano.sh",
        "validate-modelbooster.volcano.sh",
        "kthena-controller-manager-mutating-webhook",
        "kthena-controller-manager-validating-webhook",
    ):
        assert name in section
    assert "failurePolicy: Fail" in section
    assert "workload.controllerManager.webhook.enabled=false" in section


def test_kthenas_images_are_read_from_its_configmap_into_our_values() -> None:
    section = _section("Before you start: the image")
    assert "model-booster-controller-config" in section
    for key in ("model_serving_runtime_image", "model_serving_downloader_image"):
        assert key in section
    install = next(argv for argv in _commands(_section("3. Install ours", "###")) if _ours(argv))
    engine = _set_values(install)["engine"]
    assert set(engine) == {"runtimeImage", "downloaderImage"}


def test_the_guide_says_no_image_is_published_and_the_chart_refuses_to_render_without_one() -> None:
    section = _section("Before you start: the image")
    assert VALUES["image"]["repository"] == ""
    assert "No image is published" in section
    assert re.search(r"^docker build -t (\S+) \.$", section, flags=re.MULTILINE)
    assert re.search(r"^docker push \S+$", section, flags=re.MULTILINE)
    assert "The chart refuses to render without `image.repository`" in section
    with pytest.raises(Exception, match=r"image\.repository is not set"):
        render({}, with_image=False)


def test_the_wrong_facts_of_the_earlier_guide_are_gone() -> None:
    assert "never implemented" not in GUIDE
    assert "enables nothing else" not in GUIDE
    assert "every child is rewritten once" not in GUIDE
    coming = _section("Coming from Kthena v0.2 to v0.4: one backend with a replica range")
    assert re.search(r"^modelbooster render -f my-model.yaml +# the children, in Kthena v0.2-v0.4's", coming, re.M)
    assert "modelbooster render -f my-model.yaml --generation v0.1" in coming
    assert "`homogeneousTarget`" in coming
    assert "`scalingConfiguration`, where" not in coming
