"""Flags of the webhook-certificate duty (`modelbooster reconciler --cert-duty ...`) and their variables.

Like every reconciler flag, each has an environment variable `MODELBOOSTER_RECONCILER_<FLAG>` as its default
(the flag wins over the variable, which wins over the built-in default). The built-in names are the chart's
for a release called `modelbooster`: Service `modelbooster-webhook`, Secrets `modelbooster-webhook-tls` and
`modelbooster-webhook-ca`, webhook configurations `modelbooster`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from process.flags import Flag, add_flags, add_switch
from reconciler.runtime.environment import SettingsError, detect_namespace
from reconciler.settings import ENV_PREFIX
from shared.durations import DurationError, parse_duration
from shared.naming import is_dns1123_label

DEFAULT_SERVICE: Final = "modelbooster-webhook"
DEFAULT_TLS_SECRET: Final = "modelbooster-webhook-tls"
DEFAULT_CA_SECRET: Final = "modelbooster-webhook-ca"
DEFAULT_CONFIGURATION: Final = "modelbooster"
DEFAULT_CHECK_INTERVAL: Final = 3600.0
# kube-proxy programs a new endpoint within its minimum sync period (1 s by default): the configurations are
# armed once a webhook endpoint has been ready this long (reconciler/certduty/arming.py).
DEFAULT_ARM_DELAY: Final = 2.0
# RFC 1123 subdomain: what Secret and webhook configuration names must be.
_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MAX_LENGTH: Final = 253


@dataclass(frozen=True)
class CertDutySettings:
    enabled: bool = True
    service: str = DEFAULT_SERVICE
    namespace: str = "default"  # of the Service and of both Secrets
    tls_secret: str = DEFAULT_TLS_SECRET
    ca_secret: str = DEFAULT_CA_SECRET
    configuration: str = DEFAULT_CONFIGURATION  # name of both the Mutating and the Validating configuration
    check_interval: float = DEFAULT_CHECK_INTERVAL  # seconds between expiry checks when nothing else wakes us
    arm_delay: float = DEFAULT_ARM_DELAY

    def __post_init__(self) -> None:
        for flag, value in (("--webhook-service", self.service), ("--webhook-namespace", self.namespace)):
            if not is_dns1123_label(value):
                raise SettingsError(
                    f"{flag} must be a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters), "
                    f"got {value!r}"
                )
        for flag, value in (
            ("--webhook-tls-secret", self.tls_secret),
            ("--webhook-ca-secret", self.ca_secret),
            ("--webhook-configuration", self.configuration),
        ):
            if len(value) > _SUBDOMAIN_MAX_LENGTH or not _SUBDOMAIN.match(value):
                raise SettingsError(
                    f"{flag} must be a DNS-1123 subdomain (lower-case letters, digits, '-' and '.'), got {value!r}"
                )
        if self.tls_secret == self.ca_secret:
            # One Secret for both would put the CA key into the webhook pods' volume.
            raise SettingsError("--webhook-tls-secret and --webhook-ca-secret must name different Secrets")
        if not self.check_interval > 0:
            raise SettingsError(f"--cert-check-interval must be positive, got {self.check_interval}")
        if not 0 <= self.arm_delay <= 300:
            raise SettingsError(f"--webhook-arm-delay must be 0..300 seconds, got {self.arm_delay}")


def parse_interval(text: str) -> float:
    """Seconds (`3600`, `90.5`) or a Go duration (`1h`, `30m`); positive."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text) / 1e9
        except DurationError as error:
            raise ValueError(f"not a number of seconds nor a duration ({error})") from None
    if not seconds > 0:  # also refuses NaN
        raise ValueError("must be positive")
    return seconds


_FLAGS: Final[dict[str, Flag]] = {
    "--webhook-service": Flag("webhook_service", str, DEFAULT_SERVICE, "Service in front of the webhook pods"),
    "--webhook-namespace": Flag(
        "webhook_namespace", str, None, "namespace of that Service and of both Secrets (default: own namespace)"
    ),
    "--webhook-tls-secret": Flag(
        "webhook_tls_secret", str, DEFAULT_TLS_SECRET, "Secret the webhook mounts (tls.crt, tls.key, ca.crt)"
    ),
    "--webhook-ca-secret": Flag(
        "webhook_ca_secret", str, DEFAULT_CA_SECRET, "Secret holding the CA key (ca.crt, ca.key); never mounted"
    ),
    "--webhook-configuration": Flag(
        "webhook_configuration",
        str,
        DEFAULT_CONFIGURATION,
        "name of the Mutating and the Validating webhook configuration to inject caBundle into",
    ),
    "--webhook-arm-delay": Flag(
        "webhook_arm_delay",
        float,
        DEFAULT_ARM_DELAY,
        "seconds a webhook endpoint must have been ready before the configurations' entries are written",
    ),
    "--cert-check-interval": Flag(
        "cert_check_interval",
        parse_interval,
        DEFAULT_CHECK_INTERVAL,
        "how often to check certificate expiry: seconds or a duration such as 1h",
    ),
}


def add_cert_arguments(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Add the duty's flags to the reconciler's parser (their defaults from `environ`)."""
    group = parser.add_argument_group("webhook certificates (self-signed mode)")
    add_switch(
        group,
        "--cert-duty",
        dest="cert_duty",
        default=True,
        help="create and rotate the webhook's CA and serving certificate and inject caBundle (leader only); "
        "turn off when cert-manager issues them",
        prefix=ENV_PREFIX,
        parser=parser,
        environ=environ,
    )
    add_flags(group, _FLAGS, prefix=ENV_PREFIX, parser=parser, environ=environ)


def cert_settings_from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> CertDutySettings:
    """The duty's settings from parsed arguments; SettingsError names a bad flag."""
    return CertDutySettings(
        enabled=args.cert_duty,
        service=args.webhook_service,
        namespace=args.webhook_namespace or detect_namespace(environ),
        tls_secret=args.webhook_tls_secret,
        ca_secret=args.webhook_ca_secret,
        configuration=args.webhook_configuration,
        check_interval=args.cert_check_interval,
        arm_delay=args.webhook_arm_delay,
    )
