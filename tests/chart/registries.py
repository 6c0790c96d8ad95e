"""The metrics registry of each process as it starts, before any request or reconcile: what Prometheus
scrapes from a quiet cluster."""

from __future__ import annotations

import argparse

from prometheus_client import CollectorRegistry

from modelbooster.cli import build_parser
from reconciler.assembly import build
from reconciler.certduty.controller import register_cert_duty
from reconciler.certduty.settings import cert_settings_from_args
from reconciler.crdcheck.controller import register_crd_check
from reconciler.crdcheck.settings import crd_check_settings_from_args
from reconciler.inferno.controller import inferno_settings_from_args, register_inferno
from reconciler.main import settings_from_args
from reconciler.runtime.client import KubeClient
from reconciler.runtime.metrics import Metrics
from tests.chart.render import NAMESPACE, Rendered, container_args


async def reconciler_registry(rendered: Rendered) -> CollectorRegistry:
    """The registry of a reconciler started with the rendered arguments, assembled like reconciler/main.py."""
    command_line = container_args(rendered.deployment("reconciler"), "reconciler")
    args: argparse.Namespace = build_parser().parse_args(command_line)
    environ = {"POD_NAMESPACE": NAMESPACE, "POD_NAME": "reconciler-0"}
    settings = settings_from_args(args, environ=environ)
    metrics = Metrics()
    client = KubeClient.for_url("http://127.0.0.1:9", metrics=metrics)  # never called: nothing is started
    try:
        process = build(settings, client, metrics)
        register_cert_duty(process.manager, client, cert_settings_from_args(args, environ=environ))
        register_inferno(process.manager, client, inferno_settings_from_args(args, environ=environ))
        register_crd_check(
            process.manager, process.served, settings=crd_check_settings_from_args(args), recorder=None, version="0"
        )
    finally:
        await client.close()
    return metrics.registry
