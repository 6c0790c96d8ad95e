"""Settings of the webhook process: command-line flags, each with an environment variable as its default.

Precedence: flag > environment variable > built-in default. Every environment variable is named
`MODELBOOSTER_WEBHOOK_<FLAG>` (upper case, dashes as underscores), e.g. `MODELBOOSTER_WEBHOOK_PORT`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

ENV_PREFIX: Final = "MODELBOOSTER_WEBHOOK_"
MiB: Final = 1024 * 1024

LogFormat = Literal["text", "json"]
TlsVersion = Literal["1.2", "1.3"]
EventLoop = Literal["auto", "asyncio", "uvloop"]
LOG_LEVELS: Final = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class Settings:
    # Empty means every interface, IPv4 and IPv6, so single-stack IPv6 clusters work too.
    bind_address: str = ""
    port: int = 8443
    metrics_bind_address: str = ""
    metrics_port: int = 8080
    tls_cert_file: Path = Path("/etc/webhook/certs/tls.crt")
    tls_private_key_file: Path = Path("/etc/webhook/certs/tls.key")
    tls_min_version: TlsVersion = "1.2"
    cert_check_interval: float = 10.0
    max_request_bytes: int = 3 * MiB
    # A client gets this long to send a whole request body; kube-apiserver sends it at once, and gives up on
    # the whole call after the webhook configuration's timeoutSeconds (5 s in the chart).
    request_read_timeout: float = 5.0
    # Request bodies held in memory at once, across all requests; beyond it new requests are answered 429.
    max_buffered_bytes: int = 32 * MiB
    # Admission requests served at once; beyond it new ones are answered 429.
    max_requests_in_flight: int = 64
    # Below the pod's default terminationGracePeriodSeconds (30 s), so in-flight requests finish first.
    shutdown_timeout: float = 25.0
    # Time to keep serving after SIGTERM while /readyz fails, so endpoints drop the pod before we stop.
    shutdown_delay: float = 0.0
    keepalive_timeout: float = 60.0
    log_level: str = "info"
    log_format: LogFormat = "text"
    event_loop: EventLoop = "auto"

    def __post_init__(self) -> None:
        if self.max_buffered_bytes < self.max_request_bytes:
            raise ValueError(
                f"--max-buffered-bytes ({self.max_buffered_bytes}) must be at least --max-request-bytes "
                f"({self.max_request_bytes}), or no request of the largest size could ever be read"
            )


_DEFAULTS: Final = Settings()
_T = TypeVar("_T")


def env_name(field_name: str) -> str:
    return ENV_PREFIX + field_name.upper()


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"{value} is not a TCP port (0-65535)")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"{value} must be positive")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(f"{value} must be positive")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"{value} must not be negative")
    return value


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in options:
            raise ValueError(f"{text!r} is not one of {', '.join(options)}")
        return text.lower()

    return parse


def _typed(parse: Callable[[str], _T], label: str) -> Callable[[str], _T]:
    """An argparse type whose error message says what was wrong, not just 'invalid value'."""

    def convert(text: str) -> _T:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"invalid {label}: {error}") from None

    convert.__name__ = label
    return convert


# flag -> (settings field, parser, help)
_FLAGS: Final[dict[str, tuple[str, Callable[[str], Any], str]]] = {
    "--bind-address": ("bind_address", str, "address of the HTTPS admission listener (empty: all interfaces)"),
    "--port": ("port", _port, "HTTPS port for /mutate, /validate, /healthz, /readyz"),
    "--metrics-bind-address": (
        "metrics_bind_address",
        str,
        "address of the plain-HTTP listener (empty: all interfaces)",
    ),
    "--metrics-port": ("metrics_port", _port, "plain-HTTP port for /metrics, /healthz, /readyz"),
    "--tls-cert-file": ("tls_cert_file", Path, "serving certificate (PEM); re-read when it changes"),
    "--tls-private-key-file": ("tls_private_key_file", Path, "serving key (PEM); re-read when it changes"),
    "--tls-min-version": ("tls_min_version", _choice(("1.2", "1.3")), "lowest TLS version accepted: 1.2 or 1.3"),
    "--cert-check-interval": (
        "cert_check_interval",
        _positive_float,
        "seconds between checks of the certificate files",
    ),
    "--max-request-bytes": ("max_request_bytes", _positive_int, "largest request body accepted (bytes)"),
    "--request-read-timeout": (
        "request_read_timeout",
        _positive_float,
        "seconds a client gets to send a whole request; slower ones are answered 408 and disconnected",
    ),
    "--max-buffered-bytes": (
        "max_buffered_bytes",
        _positive_int,
        "request body bytes held in memory across all requests; beyond it new requests are answered 429",
    ),
    "--max-requests-in-flight": (
        "max_requests_in_flight",
        _positive_int,
        "admission requests served at once; beyond it new requests are answered 429",
    ),
    "--shutdown-timeout": (
        "shutdown_timeout",
        _non_negative_float,
        "seconds in-flight requests may take to finish after SIGTERM",
    ),
    "--shutdown-delay": (
        "shutdown_delay",
        _non_negative_float,
        "seconds to keep serving after SIGTERM with /readyz failing, before closing the listeners",
    ),
    "--keepalive-timeout": ("keepalive_timeout", _non_negative_float, "idle keep-alive connection timeout (s)"),
    "--log-level": ("log_level", _choice(LOG_LEVELS), "debug, info, warning or error"),
    "--log-format": ("log_format", _choice(("text", "json")), "text, or json (one object per line)"),
    "--event-loop": (
        "event_loop",
        _choice(("auto", "asyncio", "uvloop")),
        "auto uses uvloop when it is installed",
    ),
}


def _show(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def add_arguments(parser: argparse.ArgumentParser, *, environ: Mapping[str, str] | None = None) -> None:
    """Add every flag; a set environment variable replaces the built-in default (and is checked)."""
    env = os.environ if environ is None else environ
    for flag, (name, parse, help_text) in _FLAGS.items():
        convert = _typed(parse, flag.removeprefix("--"))
        variable = env_name(name)
        default: Any = getattr(_DEFAULTS, name)
        if variable in env:
            try:
                default = convert(env[variable])
            except argparse.ArgumentTypeError as error:
                parser.error(f"environment variable {variable}: {error}")
        parser.add_argument(
            flag,
            dest=name,
            type=convert,
            default=default,
            help=f"{help_text} (env {variable}; default {_show(getattr(_DEFAULTS, name))})",
        )


def from_args(args: argparse.Namespace) -> Settings:
    return Settings(**{field.name: getattr(args, field.name) for field in fields(Settings)})
