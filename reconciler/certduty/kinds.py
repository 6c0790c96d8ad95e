"""The kinds the webhook-certificate duty reads and writes: the two Secrets (serving and CA), the two webhook
configurations it arms and injects `caBundle` into, and the EndpointSlices of the webhook Service (is a webhook
pod ready?). All are built-in kinds; none is ours."""

from __future__ import annotations

from typing import Final

from reconciler.runtime.kinds import Kind

SECRET: Final = Kind("", "v1", "Secret", "secrets")
MUTATING_WEBHOOK_CONFIGURATION: Final = Kind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
    namespaced=False,
)  # fmt: skip
VALIDATING_WEBHOOK_CONFIGURATION: Final = Kind(
    "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
    namespaced=False,
)  # fmt: skip
WEBHOOK_CONFIGURATION_KINDS: Final = (MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION)
ENDPOINT_SLICE: Final = Kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
# The label the EndpointSlice controller puts on every slice of a Service.
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
