"""One step of the certificate lifecycle: read what exists, apply the rotation policy, issue what is due.

No I/O: the reconciler reads the Secrets (certs/secret.py parses them) and the caBundle the webhook
configurations carry (certs/injector.py), calls `ensure_certificates`, and when `plan.changed` writes the
bundle into the webhook configurations first and the Secrets second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509

from certs.authority import KeyPair, create_ca, issue_serving_cert, serving_sans
from certs.bundle import CertBundle, CertificateError, certificates_pem, public_keys_equal
from certs.rotation import DEFAULT_POLICY, RotationPlan, RotationPolicy, plan_rotation


@dataclass(frozen=True)
class Certificates:
    ca: KeyPair  # the CA that signs; its key belongs in a Secret the webhook does not mount
    bundle: CertBundle  # what the webhook mounts; `ca.crt` lists every CA still trusted
    plan: RotationPlan


def _published(bundle: CertBundle | None) -> list[x509.Certificate]:
    if bundle is None:
        return []
    try:
        return bundle.cas
    except CertificateError:
        return []


def _usable_serving(bundle: CertBundle | None) -> x509.Certificate | None:
    if bundle is None:
        return None
    try:
        cert, key = bundle.serving_cert, bundle.serving_key
    except CertificateError:
        return None
    return cert if public_keys_equal(cert, key) else None


def ensure_certificates(
    *,
    ca: KeyPair | None,
    bundle: CertBundle | None,
    service: str,
    namespace: str,
    extra_sans: Sequence[str] = (),
    now: datetime | None = None,
    policy: RotationPolicy = DEFAULT_POLICY,
    trusted: Sequence[x509.Certificate] = (),
) -> Certificates:
    """Return the certificates to use from now on; unchanged objects when nothing is due.

    `trusted` is what the API server trusts now (the CAs of the injected caBundle). It only counts when
    `bundle` has no usable serving certificate: then the webhook pods serve one our Secrets no longer
    describe, and the still-valid CAs among `trusted` stay published for the overlap (certs/rotation.py).
    """
    at = now or datetime.now(UTC)
    sans = serving_sans(service=service, namespace=namespace, extra_sans=extra_sans)
    plan = plan_rotation(
        ca=ca.cert if ca is not None else None,
        published=_published(bundle),
        serving=_usable_serving(bundle),
        sans=sans,
        now=at,
        policy=policy,
        trusted=trusted,
    )
    if not plan.changed and ca is not None and bundle is not None:
        return Certificates(ca=ca, bundle=bundle, plan=plan)
    signer = create_ca(now=at, validity=policy.ca_validity) if plan.new_ca or ca is None else ca
    cas = [signer.cert, *(cert for cert in plan.keep_cas if cert != signer.cert)]
    if plan.new_serving or bundle is None:
        serving = issue_serving_cert(
            ca=signer,
            service=service,
            namespace=namespace,
            extra_sans=extra_sans,
            now=at,
            validity=policy.serving_validity,
        )
        tls_crt, tls_key = serving.cert_pem, serving.key_pem
    else:
        tls_crt, tls_key = bundle.tls_crt, bundle.tls_key
    return Certificates(
        ca=signer,
        bundle=CertBundle(ca_crt=certificates_pem(cas), tls_crt=tls_crt, tls_key=tls_key),
        plan=plan,
    )
