"""The recorded requests of each process as the RBAC authorizer sees them, and the chart's grants for it.

The fake logs a request when its handler returns, so a watch that is still streaming is not in the log yet:
`flush_watches` ends the open watch streams (cleanly, as the API server does when a watch times out), the
reconciler re-opens them, and the ended ones are logged.
"""

from __future__ import annotations

from urllib.parse import urlencode

from tests.chart.rbac import ApiRequest, Grant, grants_for_service_account, is_allowed, request_from_http
from tests.chart.render import NAMESPACE
from tests.e2e.harness import RECONCILER_SA, WEBHOOK_SA, Cluster, wait_for

SERVICE_ACCOUNTS = {"reconciler": RECONCILER_SA, "webhook": WEBHOOK_SA}


def grants(cluster: Cluster, process: str) -> frozenset[Grant]:
    return grants_for_service_account(
        cluster.rendered.objects, service_account=SERVICE_ACCOUNTS[process], namespace=NAMESPACE
    )


def api_requests(cluster: Cluster, process: str) -> list[ApiRequest]:
    """Every resource request `process` sent (discovery and other non-resource paths are not authorized by
    resource rules; the reconciler sends none, which `non_resource_requests` checks)."""
    return [
        request_from_http(entry.method, entry.path, urlencode(entry.query))
        for entry in cluster.requests_of(process)
        if entry.resource
    ]


def non_resource_requests(cluster: Cluster, process: str) -> list[str]:
    return [f"{entry.method} {entry.path}" for entry in cluster.requests_of(process) if not entry.resource]


def denied(cluster: Cluster, process: str) -> list[ApiRequest]:
    granted = grants(cluster, process)
    return sorted({r for r in api_requests(cluster, process) if not is_allowed(granted, r)}, key=repr)


def flush_watches(cluster: Cluster) -> None:
    """End every open watch so that it is logged (each ended stream is logged once its handler returns)."""

    def logged() -> int:
        return cluster.fake.requests.count(verb="watch")

    before = logged()
    closed = cluster.fake.close_watches()
    wait_for(lambda: logged() >= before + closed, what=f"{closed} closed watches to be logged")
