"""The process's settings, shared by every controller in it (controller-runtime's manager options): how to
reach the API server, which namespaces to watch, leader election, probes and metrics, logging, field manager,
resync and watch timings, shutdown.

Every flag can also be given as an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` (upper case, dashes as
underscores); the flag wins over the variable, which wins over the built-in default. Each controller adds its
own flags with the same prefix (reconciler/<controller>/settings.py), so one Deployment's env configures all.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from process.flags import (
    Flag,
    add_flags,
    add_switch,
    choice,
    comma_list,
    non_negative_float,
    port,
    positive_float,
    positive_int,
)
from process.loop import EVENT_LOOPS
from reconciler.runtime.environment import SettingsError, detect_identity, detect_namespace
from reconciler.runtime.leader import LeaseTimings
from reconciler.runtime.manager import ManagerOptions

ENV_PREFIX: Final = "MODELBOOSTER_RECONCILER_"


@dataclass(frozen=True)
class ProcessSettings:
    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    qps: float = 0.0  # client-side limit; 0 = none (rely on API Priority and Fairness, as controller-runtime)
    burst: int = 0
    controller_namespace: str = "default"
    leader_elect: bool = True
    lease_name: str = "modelbooster-reconciler"
    lease_namespace: str | None = None
    identity: str = field(default_factory=detect_identity)
    lease: LeaseTimings = field(default_factory=LeaseTimings)
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 8080
    log_level: str = "info"
    log_format: str = "text"
    field_manager: str = "modelbooster"
    resync_period: float = 600.0
    watch_timeout: int = 300
    watch_read_timeout: float | None = None  # None: watch_timeout + 30 s
    shutdown_timeout: float = 25.0
    shutdown_delay: float = 0.0
    lease_owner_deployment: str = ""

    def __post_init__(self) -> None:
        if self.qps < 0 or self.burst < 0:
            raise SettingsError(f"--qps and --burst must not be negative, got {self.qps} and {self.burst}")
        if self.qps > 0 and self.burst < 1:
            raise SettingsError(f"--burst must be at least 1 when --qps is set, got {self.burst}")
        if not 0 <= self.metrics_port <= 65535:
            raise SettingsError(f"--metrics-port must be 0..65535, got {self.metrics_port}")
        if not self.field_manager or len(self.field_manager) > 128 or not self.field_manager.isprintable():
            raise SettingsError("--field-manager must be 1..128 printable characters")
        if self.log_format not in ("text", "json"):
            raise SettingsError(f"--log-format must be text or json, got {self.log_format!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise SettingsError(f"--log-level must be debug, info, warning or error, got {self.log_level!r}")
        for namespace in self.namespaces:
            if not namespace:
                raise SettingsError("--namespaces must not contain empty names")

    @property
    def effective_lease_namespace(self) -> str:
        return self.lease_namespace or self.controller_namespace

    def manager_options(self) -> ManagerOptions:
        return ManagerOptions(
            leader_elect=self.leader_elect,
            lease_name=self.lease_name,
            lease_namespace=self.effective_lease_namespace,
            identity=self.identity,
            lease=self.lease,
            resync_period=self.resync_period,
            shutdown_timeout=self.shutdown_timeout,
            shutdown_delay=self.shutdown_delay,
            lease_owner_deployment=self.lease_owner_deployment,
            watch_timeout=self.watch_timeout,
            watch_read_timeout=self.watch_read_timeout,
        )


_FLAGS: Final[dict[str, Flag]] = {
    "--kubeconfig": Flag("kubeconfig", str, None, "kubeconfig file (default: in-cluster, then $KUBECONFIG/~/.kube)"),
    "--namespaces": Flag("namespaces", comma_list, (), "comma-separated namespaces to watch (default: all)"),
    "--qps": Flag("qps", non_negative_float, 0.0, "client-side API request rate limit (0: none; rely on APF)"),
    "--burst": Flag("burst", lambda text: int(non_negative_float(text)), 0, "burst of the client-side limit"),
    "--controller-namespace": Flag(
        "controller_namespace", str, None, "namespace of the settings ConfigMap and the Lease (default: own)"
    ),
    "--lease-name": Flag("lease_name", str, "modelbooster-reconciler", "name of the leader-election Lease"),
    "--lease-namespace": Flag("lease_namespace", str, None, "namespace of the Lease (default: own)"),
    "--lease-duration": Flag("lease_duration", positive_float, 15.0, "seconds a Lease stays valid"),
    "--renew-deadline": Flag("renew_deadline", positive_float, 10.0, "seconds the leader may fail to renew"),
    "--retry-period": Flag("retry_period", positive_float, 2.0, "seconds between Lease attempts"),
    "--lease-owner-deployment": Flag(
        "lease_owner_deployment",
        str,
        "",
        "Deployment (in the Lease's namespace) that owns the Lease, so that deleting it deletes the Lease",
    ),
    "--metrics-bind-address": Flag("metrics_host", str, "0.0.0.0", "address of /metrics, /healthz, /readyz"),
    "--metrics-port": Flag("metrics_port", port, 8080, "port of /metrics, /healthz, /readyz (0: off)"),
    "--log-level": Flag("log_level", choice("debug", "info", "warning", "error"), "info", "log level"),
    "--log-format": Flag("log_format", choice("text", "json"), "text", "text, or json (one object per line)"),
    "--field-manager": Flag("field_manager", str, "modelbooster", "server-side apply field manager"),
    "--resync-period": Flag("resync_period", non_negative_float, 600.0, "seconds between full resyncs (0: off)"),
    "--watch-timeout": Flag("watch_timeout", positive_int, 300, "server-side timeout of each watch (s)"),
    "--shutdown-timeout": Flag("shutdown_timeout", non_negative_float, 25.0, "seconds to finish in-flight work"),
    "--shutdown-delay": Flag(
        "shutdown_delay",
        non_negative_float,
        0.0,
        "seconds the leader keeps leading after SIGTERM, so that a successor can start first",
    ),
    "--event-loop": Flag("event_loop", choice(*EVENT_LOOPS), "auto", "auto: uvloop if installed"),
}
_LEADER_ELECT_DEFAULT: Final = True


def add_process_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=environ)
    add_switch(
        parser,
        "--leader-elect",
        dest="leader_elect",
        default=_LEADER_ELECT_DEFAULT,
        help="elect a leader through a Lease; only the leader writes",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=environ,
    )


def process_settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> ProcessSettings:
    return ProcessSettings(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespaces),
        qps=args.qps,
        burst=args.burst,
        controller_namespace=args.controller_namespace or detect_namespace(environ),
        leader_elect=args.leader_elect,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        identity=detect_identity(environ),
        lease=LeaseTimings(
            lease_duration=args.lease_duration, renew_deadline=args.renew_deadline, retry_period=args.retry_period
        ),
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        log_level=args.log_level,
        log_format=args.log_format,
        field_manager=args.field_manager,
        resync_period=args.resync_period,
        watch_timeout=args.watch_timeout,
        shutdown_timeout=args.shutdown_timeout,
        shutdown_delay=args.shutdown_delay,
        lease_owner_deployment=args.lease_owner_deployment,
    )
