"""One ModelServer per backend: how the router finds and talks to its pods (docs/design/synthesis.md §11).

The selector is `{model-uid, backend-name}` (docs/design/quirks.md §1, Q9): the reference selected on the uid alone, so
the ModelServer of one backend also routed to every other backend's pods, and PD pods carried no labels.
"""

from __future__ import annotations

from typing import Any

from reconciler.modelbooster.synthesis.backend import BackendPlan, is_disaggregated
from reconciler.modelbooster.synthesis.errors import SynthesisError
from reconciler.modelbooster.synthesis.labels import stamp_revision
from reconciler.modelbooster.synthesis.owner import child_metadata
from shared.constants import (
    KIND_MODEL_SERVER,
    LABEL_BACKEND_NAME,
    LABEL_MODEL_UID,
    LABEL_MODELSERVING_GROUP_NAME,
    LABEL_MODELSERVING_ROLE,
    NETWORKING_API_VERSION,
)
from shared.engine_config import KvConnectorError, kv_connector, served_model_name

ROUTER_RETRY_ATTEMPTS = 5


def model_server(plan: BackendPlan) -> dict[str, Any]:
    backend = plan.backend
    selector: dict[str, Any] = {
        "matchLabels": {LABEL_MODEL_UID: plan.owner.uid, LABEL_BACKEND_NAME: backend.name},
    }
    if is_disaggregated(backend):
        selector["pdGroup"] = {
            "groupKey": LABEL_MODELSERVING_GROUP_NAME,
            "prefillLabels": {LABEL_MODELSERVING_ROLE: "prefill"},
            "decodeLabels": {LABEL_MODELSERVING_ROLE: "decode"},
        }
    spec: dict[str, Any] = {
        "model": served_model_name(plan.owner.name, backend.workers),
        "inferenceEngine": plan.engine.name,
        "workloadSelector": selector,
        "workloadPort": {"port": plan.engine_port},
        "trafficPolicy": {"retry": {"attempts": ROUTER_RETRY_ATTEMPTS, "retryInterval": "0s"}},
    }
    try:
        connector = kv_connector(backend.name, backend.workers)
    except KvConnectorError as error:
        raise SynthesisError(str(error)) from None
    if connector is not None:
        spec["kvConnector"] = {"type": connector}
    obj = {
        "apiVersion": NETWORKING_API_VERSION,
        "kind": KIND_MODEL_SERVER,
        "metadata": child_metadata(owner=plan.owner, name=plan.resource_name, backend=backend.name),
        "spec": spec,
    }
    return stamp_revision(obj)
