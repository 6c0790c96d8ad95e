"""`modelbooster certs` through the real dispatcher: files, modes, names, and refusals."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from certs.bundle import CertBundle, san_strings
from modelbooster.cli import main


def _bundle(out: Path) -> CertBundle:
    return CertBundle(
        ca_crt=(out / "ca.crt").read_bytes(),
        tls_crt=(out / "tls.crt").read_bytes(),
        tls_key=(out / "tls.key").read_bytes(),
    )


def test_writes_a_usable_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "certs"
    code = main(["certs", "--out", str(out), "--service", "mbw", "--namespace", "kthena", "--extra-san", "127.0.0.1"])
    assert code == 0
    bundle = _bundle(out)
    assert san_strings(bundle.serving_cert) == {"mbw.kthena.svc", "mbw.kthena.svc.cluster.local", "127.0.0.1"}
    assert bundle.problems(now=datetime.now(UTC)) == []
    assert stat.S_IMODE((out / "tls.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "tls.crt").stat().st_mode) == 0o644
    left = bundle.serving_not_after - datetime.now(UTC)
    assert timedelta(days=364) < left <= timedelta(days=365)
    printed = capsys.readouterr().out
    assert f"caBundle: {bundle.ca_bundle_base64()}" in printed


def test_default_service_name(tmp_path: Path) -> None:
    assert main(["certs", "--out", str(tmp_path)]) == 0
    assert san_strings(_bundle(tmp_path).serving_cert) == {
        "modelbooster-webhook.modelbooster-system.svc",
        "modelbooster-webhook.modelbooster-system.svc.cluster.local",
    }


def test_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "--out", str(tmp_path)]) == 0
    before = (tmp_path / "tls.key").read_bytes()
    assert main(["certs", "--out", str(tmp_path)]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err
    assert (tmp_path / "tls.key").read_bytes() == before
    assert main(["certs", "--out", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "tls.key").read_bytes() != before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--service", "My_Webhook"], "service name 'My_Webhook' is not a DNS-1123 label"),
        (["--extra-san", "not a name"], "subject alternative name 'not a name'"),
    ],
)
def test_bad_names_are_refused_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["certs", "--out", str(tmp_path / "x"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_unwritable_output_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["certs", "--out", str(blocker / "sub")]) == 1
    assert "cannot write to" in capsys.readouterr().err
