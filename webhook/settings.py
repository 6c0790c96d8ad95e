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
from typing import Any, Final, Literal

from process.flags import Flag, add_flags, choice, non_negative_float, port, positive_float, positive_int
from process.loop import EVENT_LOOPS, EventLoop

ENV_PREFIX: Final = "MODELBOOSTER_WEBHOOK_"
MiB: Final = 1024 * 1024

LogFormat = Literal["text", "json"]
TlsVersion = Literal["1.2", "1.3"]
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
    # Time to keep serving after SIGTERM, every answer closing its connection: the Service sends new
    # connections to ready pods, and to this one only while none is ready (docs/design/webhook.md §8).
    shutdown_delay: float = 0.0
    # Longer than kube-apiserver's idle timeout (90 s): its client closes idle connections first, so it never
    # sends a request on a connection we are closing.
    keepalive_timeout: float = 120.0
    # Close a connection after an answer once it is this old (0: never), so the client reconnects through the
    # Service and load spreads over the replicas; only while readiness probes arrive (webhook/rotation.py).
    connection_max_age: float = 0.0
    probe_silence: float = 10.0
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


def _flag(name: str, parse: Callable[[str], Any], help_text: str) -> Flag:
    return Flag(name, parse, getattr(_DEFAULTS, name), help_text)


_FLAGS: Final[dict[str, Flag]] = {
    "--bind-address": _flag("bind_address", str, "address of the HTTPS admission listener (empty: all interfaces)"),
    "--port": _flag("port", port, "HTTPS port for /mutate, /validate, /healthz, /readyz"),
    "--metrics-bind-address": _flag(
        "metrics_bind_address", str, "address of the plain-HTTP listener (empty: all interfaces)"
    ),
    "--metrics-port": _flag("metrics_port", port, "plain-HTTP port for /metrics, /healthz, /readyz"),
    "--tls-cert-file": _flag("tls_cert_file", Path, "serving certificate (PEM); re-read when it changes"),
    "--tls-private-key-file": _flag("tls_private_key_file", Path, "serving key (PEM); re-read when it changes"),
    "--tls-min-version": _flag("tls_min_version", choice("1.2", "1.3"), "lowest TLS version accepted: 1.2 or 1.3"),
    "--cert-check-interval": _flag(
        "cert_check_interval", positive_float, "seconds between checks of the certificate files"
    ),
    "--max-request-bytes": _flag("max_request_bytes", positive_int, "largest request body accepted (bytes)"),
    "--request-read-timeout": _flag(
        "request_read_timeout",
        positive_float,
        "seconds a client gets to send a whole request; slower ones are answered 408 and disconnected",
    ),
    "--max-buffered-bytes": _flag(
        "max_buffered_bytes",
        positive_int,
        "request body bytes held in memory across all requests; beyond it new requests are answered 429",
    ),
    "--max-requests-in-flight": _flag(
        "max_requests_in_flight",
        positive_int,
        "admission requests served at once; beyond it new requests are answered 429",
    ),
    "--shutdown-timeout": _flag(
        "shutdown_timeout", non_negative_float, "seconds in-flight requests may take to finish after SIGTERM"
    ),
    "--shutdown-delay": _flag(
        "shutdown_delay",
        non_negative_float,
        "seconds to keep serving after SIGTERM (each answer closing its connection), before closing the listeners",
    ),
    "--keepalive-timeout": _flag("keepalive_timeout", non_negative_float, "idle keep-alive connection timeout (s)"),
    "--connection-max-age": _flag(
        "connection_max_age",
        non_negative_float,
        "seconds after which a connection is closed after its next answer (give or take a fifth), so that "
        "clients reconnect through the Service and load spreads over the replicas; 0: never",
    ),
    "--probe-silence": _flag(
        "probe_silence",
        positive_float,
        "seconds without a readiness probe answered ready after which --connection-max-age is suspended, until "
        "probes have been steady for as long again",
    ),
    "--log-level": _flag("log_level", choice(*LOG_LEVELS), "debug, info, warning or error"),
    "--log-format": _flag("log_format", choice("text", "json"), "text, or json (one object per line)"),
    "--event-loop": _flag("event_loop", choice(*EVENT_LOOPS), "auto uses uvloop when it is installed"),
}


def add_arguments(parser: argparse.ArgumentParser, *, environ: Mapping[str, str] | None = None) -> None:
    """Add every flag; a set environment variable replaces the built-in default (and is checked)."""
    env = os.environ if environ is None else environ
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=env)


def from_args(args: argparse.Namespace) -> Settings:
    return Settings(**{field.name: getattr(args, field.name) for field in fields(Settings)})
