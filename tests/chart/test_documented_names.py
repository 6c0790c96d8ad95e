"""The object names the docs give are those the chart renders for the release the docs' commands install."""

from __future__ import annotations

import re

from tests.chart.render import REPO_ROOT, render

DOCS = [REPO_ROOT / "docs" / "chart.md", REPO_ROOT / "docs" / "reconciler.md"]
# `helm install modelbooster charts/modelbooster -n modelbooster-system`, as every command in the docs.
DOCUMENTED_RELEASE = "modelbooster"


def test_the_tls_and_ca_secrets_are_named_as_the_chart_names_them() -> None:
    rendered = render(release=DOCUMENTED_RELEASE)
    webhook = rendered.one("Deployment", "modelbooster-webhook")
    [tls_secret] = [
        volume["secret"]["secretName"]
        for volume in webhook["spec"]["template"]["spec"]["volumes"]
        if "secret" in volume
    ]
    reconciler_args = rendered.one("Deployment", "modelbooster-reconciler")["spec"]["template"]["spec"]["containers"][
        0
    ]["args"]
    [ca_secret] = [arg.split("=", 1)[1] for arg in reconciler_args if arg.startswith("--webhook-ca-secret=")]
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        assert f"`{tls_secret}`" in text, path
        assert "<release>-modelbooster-webhook" not in text, path
    assert "`" + ca_secret + "`" in DOCS[0].read_text(encoding="utf-8")


def test_every_object_name_the_troubleshooting_commands_use_is_rendered() -> None:
    rendered = render(release=DOCUMENTED_RELEASE)
    names = {obj["metadata"]["name"] for obj in rendered.objects}
    text = DOCS[0].read_text(encoding="utf-8")
    used = set(
        re.findall(r"(?:deploy/|lease |secret |certificate |service-name=|configuration )(modelbooster[\w-]*)", text)
    )
    assert used
    assert used <= names | {
        "modelbooster-webhook-tls",
        "modelbooster-webhook-ca",
    }  # the Secrets are written at run time


def test_the_chart_description_names_every_kthena_generation_served() -> None:
    chart = (REPO_ROOT / "charts" / "modelbooster" / "Chart.yaml").read_text(encoding="utf-8")
    description = chart.split("description:", 1)[1].split("\ntype:", 1)[0]
    for generation in ("Kthena v0.1.0", "spec.backends", "v0.2 to v0.4", "v1.0", "spec.backend "):
        assert generation in description, generation
