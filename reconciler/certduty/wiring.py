"""The certificate duty as a peer of the process: its informers and its leader task on the process's manager."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from certs.secret import ca_expiry, serving_expiry
from reconciler.certduty.duty import TASK_NAME, CertDuty
from reconciler.certduty.kinds import ENDPOINT_SLICE, SECRET, SERVICE_NAME_LABEL, WEBHOOK_CONFIGURATION_KINDS
from reconciler.certduty.metrics import CertDutyMetrics
from reconciler.certduty.settings import CertDutySettings, add_cert_arguments, cert_settings_from_args
from reconciler.peer import Context, Peer

logger = logging.getLogger(__name__)


def register(context: Context, settings: CertDutySettings) -> CertDuty | None:
    """Watch our four objects and run the duty while this process leads; None when the duty is off.

    The informers start with the others (on every replica, so the expiry gauge is exported by standbys too),
    and the leader task once they have synced.
    """
    if not settings.enabled:
        logger.info("webhook certificate duty is off (--no-cert-duty): certificates and caBundle come from elsewhere")
        return None
    manager = context.manager
    metrics = CertDutyMetrics(manager.metrics.registry)
    slices = manager.informer(
        ENDPOINT_SLICE, namespaces=[settings.namespace], label_selector=f"{SERVICE_NAME_LABEL}={settings.service}"
    )
    duty = CertDuty(client=context.client, settings=settings, metrics=metrics, clock=context.clock,
                    field_manager=context.settings.field_manager, endpoints=slices.objects)  # fmt: skip
    slices.add_handler(duty.on_event)
    by_name = f"metadata.name={settings.configuration}"
    for kind in WEBHOOK_CONFIGURATION_KINDS:
        manager.informer(kind, field_selector=by_name).add_handler(duty.on_event)
    secrets = {}
    for name, read in ((settings.tls_secret, serving_expiry), (settings.ca_secret, ca_expiry)):
        informer = manager.informer(SECRET, namespaces=[settings.namespace], field_selector=f"metadata.name={name}")
        informer.add_handler(duty.on_event)
        secrets[name] = (_cached(informer.get, settings.namespace, name), read)
    metrics.watch_expiry(secrets)
    manager.add_leader_task(TASK_NAME, duty.run)
    return duty


def _cached(
    get: Callable[[str, str], dict[str, Any] | None], namespace: str, name: str
) -> Callable[[], dict[str, Any] | None]:
    return lambda: get(namespace, name)


PEER: Final = Peer(
    name="certduty", default_settings=CertDutySettings, add_arguments=add_cert_arguments,
    settings_from_args=cert_settings_from_args, register=register,
)  # fmt: skip
