"""`modelbooster reconciler`: run the controller.

Every flag can also be given as an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` (upper case, dashes as
underscores, e.g. `MODELBOOSTER_RECONCILER_WORKERS=8`); the flag wins over the variable, which wins over the
built-in default. The settings ConfigMap (`--config-map`) overrides the image and engine-env settings while
running (reconciler/modelbooster/settings.py).

Besides the ModelBooster controller the process runs, when enabled, the webhook-certificate duty (leader only;
flags in reconciler/certduty/settings.py) and the Inferno controller (flags in reconciler/inferno/controller.py).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from process.build import version
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
from process.logs import configure
from process.loop import EVENT_LOOPS, event_loop_runner
from reconciler.assembly import ReconcilerProcess, serve
from reconciler.certduty.duty import register_cert_duty
from reconciler.certduty.settings import CertDutySettings, add_cert_arguments, cert_settings_from_args
from reconciler.crdcheck.check import (
    CrdCheckSettings,
    add_crd_check_arguments,
    crd_check_settings_from_args,
    register_crd_check,
)
from reconciler.inferno.controller import (
    InfernoSettings,
    InfernoSettingsError,
    add_inferno_arguments,
    inferno_settings_from_args,
    register_inferno,
)
from reconciler.modelbooster.settings import ReconcilerSettings
from reconciler.modelbooster.synthesis import DEFAULT_DOWNLOADER_IMAGE, DEFAULT_RUNTIME_IMAGE
from reconciler.runtime.client import KubeClient
from reconciler.runtime.environment import SettingsError, detect_identity, detect_namespace
from reconciler.runtime.events import EventRecorder
from reconciler.runtime.leader import LeaseTimings
from reconciler.settings import ENV_PREFIX

logger = logging.getLogger(__name__)



_FLAGS: Final[dict[str, Flag]] = {
    "--kubeconfig": Flag("kubeconfig", str, None, "kubeconfig file (default: in-cluster, then $KUBECONFIG/~/.kube)"),
    "--namespaces": Flag("namespaces", comma_list, (), "comma-separated namespaces to watch (default: all)"),
    "--workers": Flag("workers", positive_int, 5, "ModelBoosters reconciled in parallel"),
    "--qps": Flag("qps", non_negative_float, 0.0, "client-side API request rate limit (0: none; rely on APF)"),
    "--burst": Flag("burst", lambda text: int(non_negative_float(text)), 0, "burst of the client-side limit"),
    "--runtime-image": Flag("runtime_image", str, DEFAULT_RUNTIME_IMAGE, "runtime sidecar image"),
    "--downloader-image": Flag("downloader_image", str, DEFAULT_DOWNLOADER_IMAGE, "model/LoRA downloader image"),
    "--config-map": Flag("config_map", str, None, "settings ConfigMap in the controller namespace (watched)"),
    "--controller-namespace": Flag(
        "controller_namespace", str, None, "namespace of the settings ConfigMap and the Lease (default: own)"
    ),
    "--lease-name": Flag("lease_name", str, "modelbooster-reconciler", "name of the leader-election Lease"),
    "--lease-namespace": Flag("lease_namespace", str, None, "namespace of the Lease (default: own)"),
    "--lease-duration": Flag("lease_duration", positive_float, 15.0, "seconds a Lease stays valid"),
    "--renew-deadline": Flag("renew_deadline", positive_float, 10.0, "seconds the leader may fail to renew"),
    "--retry-period": Flag("retry_period", positive_float, 2.0, "seconds between Lease attempts"),
    "--metrics-bind-address": Flag("metrics_host", str, "0.0.0.0", "address of /metrics, /healthz, /readyz"),
    "--metrics-port": Flag("metrics_port", port, 8080, "port of /metrics, /healthz, /readyz (0: off)"),
    "--log-level": Flag("log_level", choice("debug", "info", "warning", "error"), "info", "log level"),
    "--log-format": Flag("log_format", choice("text", "json"), "text", "text, or json (one object per line)"),
    "--field-manager": Flag("field_manager", str, "modelbooster", "server-side apply field manager"),
    "--resync-period": Flag("resync_period", non_negative_float, 600.0, "seconds between full resyncs (0: off)"),
    "--watch-timeout": Flag("watch_timeout", positive_int, 300, "server-side timeout of each watch (s)"),
    "--lora-timeout": Flag("lora_timeout", positive_float, 300.0, "timeout of one LoRA load/unload call (s)"),
    "--shutdown-timeout": Flag("shutdown_timeout", non_negative_float, 25.0, "seconds to finish in-flight work"),
    "--event-loop": Flag("event_loop", choice(*EVENT_LOOPS), "auto", "auto: uvloop if installed"),
}
_LEADER_ELECT_DEFAULT: Final = True


def add_arguments(parser: argparse.ArgumentParser, *, environ: Mapping[str, str] | None = None) -> None:
    env = os.environ if environ is None else environ
    add_flags(parser, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=env)
    add_switch(
        parser,
        "--leader-elect",
        dest="leader_elect",
        default=_LEADER_ELECT_DEFAULT,
        help="elect a leader through a Lease; only the leader writes",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=env,
    )
    add_cert_arguments(parser, environ=env)
    add_inferno_arguments(parser, environ=env)
    add_crd_check_arguments(parser, environ=env)


def settings_from_args(args: argparse.Namespace, *, environ: Mapping[str, str] | None = None) -> ReconcilerSettings:
    namespace = args.controller_namespace or detect_namespace(environ)
    return ReconcilerSettings(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespaces),
        workers=args.workers,
        qps=args.qps,
        burst=args.burst,
        runtime_image=args.runtime_image,
        downloader_image=args.downloader_image,
        config_map=args.config_map,
        controller_namespace=namespace,
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
        lora_timeout=args.lora_timeout,
        shutdown_timeout=args.shutdown_timeout,
    )


@dataclass(frozen=True)
class _Duties:
    """What runs next to the ModelBooster controller."""

    cert: CertDutySettings
    inferno: InfernoSettings
    crd_check: CrdCheckSettings


async def _serve(settings: ReconcilerSettings, duties: _Duties, *, stop: asyncio.Event) -> None:
    """The ModelBooster controller plus the certificate duty and the Inferno controller on the same manager."""

    def cert_duty(process: ReconcilerProcess, client: KubeClient) -> None:
        register_cert_duty(process.manager, client, duties.cert, field_manager=settings.field_manager)

    def inferno(process: ReconcilerProcess, client: KubeClient) -> None:
        register_inferno(process.manager, client, duties.inferno)

    def crd_check(process: ReconcilerProcess, client: KubeClient) -> None:
        recorder = EventRecorder(client, instance=settings.identity)
        check = dataclasses.replace(duties.crd_check, check_inferno=duties.inferno.enabled)
        register_crd_check(process.manager, process.served, settings=check, recorder=recorder, version=version())

    await serve(settings, stop=stop, duties=(cert_duty, inferno, crd_check))


async def _serve_until_signalled(settings: ReconcilerSettings, duties: _Duties) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await _serve(settings, duties, stop=stop)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
        duties = _Duties(
            cert=cert_settings_from_args(args),
            inferno=inferno_settings_from_args(args),
            crd_check=crd_check_settings_from_args(args),
        )
    except (SettingsError, InfernoSettingsError, ValueError) as error:
        print(f"modelbooster reconciler: {error}", file=sys.stderr)
        return 2
    configure(level=settings.log_level, fmt=settings.log_format)
    runner = event_loop_runner(args.event_loop)
    if runner is None:
        print("modelbooster reconciler: --event-loop uvloop requested but uvloop is not installed", file=sys.stderr)
        return 2
    try:
        runner(_serve_until_signalled(settings, duties))
    except OSError as error:
        print(f"modelbooster reconciler: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # configuration problems surface here (no kubeconfig, bad credentials)
        logger.debug("fatal error", exc_info=True)
        print(f"modelbooster reconciler: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0
