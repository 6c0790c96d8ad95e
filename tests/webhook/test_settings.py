"""Flags and environment variables: defaults, precedence, and clear errors for bad values."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from modelbooster.cli import build_parser
from webhook.main import run
from webhook.settings import Settings, add_arguments, from_args


def _parse(argv: list[str], environ: dict[str, str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="modelbooster webhook")
    add_arguments(parser, environ=environ or {})
    return from_args(parser.parse_args(argv))


def test_defaults() -> None:
    settings = _parse([])
    assert settings.port == 8443
    assert settings.metrics_port == 8080
    assert settings.bind_address == ""
    assert settings.tls_cert_file == Path("/etc/webhook/certs/tls.crt")
    assert settings.tls_private_key_file == Path("/etc/webhook/certs/tls.key")
    assert settings.tls_min_version == "1.2"
    assert settings.max_request_bytes == 3 * 1024 * 1024
    assert settings.log_level == "info"
    assert settings.log_format == "text"
    assert settings.shutdown_timeout < 30  # inside the pod's default grace period
    assert settings.request_read_timeout == 5.0
    assert settings.max_buffered_bytes == 32 * 1024 * 1024
    assert settings.max_requests_in_flight == 64


def test_environment_replaces_defaults_and_flags_win() -> None:
    environ = {
        "MODELBOOSTER_WEBHOOK_PORT": "9443",
        "MODELBOOSTER_WEBHOOK_TLS_MIN_VERSION": "1.3",
        "MODELBOOSTER_WEBHOOK_LOG_FORMAT": "JSON",
        "MODELBOOSTER_WEBHOOK_TLS_CERT_FILE": "/certs/a.crt",
    }
    settings = _parse(["--port", "10443"], environ)
    assert settings.port == 10443
    assert settings.tls_min_version == "1.3"
    assert settings.log_format == "json"
    assert settings.tls_cert_file == Path("/certs/a.crt")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "argument --port: '70000': must be 0..65535"),
        (
            ["--tls-min-version", "1.1"],
            "argument --tls-min-version: '1.1': must be one of 1.2, 1.3",
        ),
        (["--max-request-bytes", "0"], "argument --max-request-bytes: '0': must be at least 1"),
        (["--log-level", "loud"], "argument --log-level: 'loud': must be one of debug, info, warning, error"),
        (["--shutdown-timeout", "-1"], "argument --shutdown-timeout: '-1': must not be negative"),
        (["--request-read-timeout", "0"], "argument --request-read-timeout: '0': must be positive"),
        (["--max-requests-in-flight", "0"], "argument --max-requests-in-flight: '0': must be at least 1"),
    ],
)
def test_bad_flags_are_named(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_environment_variable_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse([], {"MODELBOOSTER_WEBHOOK_METRICS_PORT": "http"})
    assert (
        "environment variable MODELBOOSTER_WEBHOOK_METRICS_PORT: 'http': not an integer" in capsys.readouterr().err
    )


def test_the_cli_dispatcher_exposes_the_webhook_flags() -> None:
    args = build_parser().parse_args(["webhook", "--port", "0", "--log-format", "json"])
    settings = from_args(args)
    assert settings.port == 0
    assert settings.log_format == "json"


def test_the_abuse_bounds_come_from_the_environment() -> None:
    environ = {
        "MODELBOOSTER_WEBHOOK_REQUEST_READ_TIMEOUT": "2.5",
        "MODELBOOSTER_WEBHOOK_MAX_BUFFERED_BYTES": str(64 * 1024 * 1024),
        "MODELBOOSTER_WEBHOOK_MAX_REQUESTS_IN_FLIGHT": "16",
    }
    settings = _parse([], environ)
    assert (settings.request_read_timeout, settings.max_buffered_bytes, settings.max_requests_in_flight) == (
        2.5,
        64 * 1024 * 1024,
        16,
    )


def test_a_budget_smaller_than_one_request_is_refused_at_start(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["webhook", "--max-request-bytes", "2000", "--max-buffered-bytes", "1000"])
    assert run(args) == 2
    assert capsys.readouterr().err == (
        "modelbooster webhook: --max-buffered-bytes (1000) must be at least --max-request-bytes (2000), "
        "or no request of the largest size could ever be read\n"
    )
