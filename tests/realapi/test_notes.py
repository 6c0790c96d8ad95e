"""NOTES.txt's admission check, run as written with kubectl against a real kube-apiserver v1.36 with our webhook
registered: kubectl prints exactly the line NOTES.txt says it prints."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.chart.render import render
from tests.realapi.controlplane import RealCluster
from tests.realapi.webhook import Registration

# `cat <<'YAML' | kubectl ...`, the manifest, `YAML`.
NOTES_CHECK = r"^\s*cat <<'YAML' \| (kubectl [^\n]*)\n(.*?)\n\s*YAML\n"


def test_notes_admission_check_prints_what_notes_promise(real_api: RealCluster, real_webhook: Registration) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: NOTES.txt's command is run with it")
    notes = render().notes
    command = re.search(NOTES_CHECK, notes, flags=re.MULTILINE | re.DOTALL)
    assert command, "NOTES.txt has no admission check"
    promised = re.search(r"Expected: kubectl prints\n\s+(.+)\n", notes)
    assert promised, "NOTES.txt does not say what kubectl prints"
    lines = command.group(2).splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    manifest = "\n".join(line[indent:] for line in lines).replace(
        "namespace: default", f"namespace: {real_webhook.namespace}"
    )
    argv = command.group(1).split()
    done = subprocess.run(
        [kubectl, *argv[1:]],
        input=manifest,
        env={**os.environ, "KUBECONFIG": str(real_api.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == promised.group(1).strip()
