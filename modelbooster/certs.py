"""`modelbooster certs`: write a CA and a serving certificate for running the webhook outside a cluster.

Writes `ca.crt`, `tls.crt` and `tls.key` (the key with mode 0600) into `--out`, the file names a mounted serving Secret
has, so `modelbooster webhook --tls-cert-file DIR/tls.crt --tls-private-key-file DIR/tls.key` can use
them and `ca.crt` can go into a webhook configuration's `caBundle`. The CA key is not kept: a local
certificate is simply made again when it runs out.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from certs.authority import create_ca, issue_serving_cert, serving_sans
from certs.bundle import CertBundle, CertificateError
from certs.secret import CA_CRT, TLS_CRT, TLS_KEY

DEFAULT_SERVICE = "modelbooster-webhook"
DEFAULT_NAMESPACE = "modelbooster-system"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="directory to write ca.crt, tls.crt, tls.key")
    parser.add_argument("--service", default=DEFAULT_SERVICE, help=f"webhook Service name (default {DEFAULT_SERVICE})")
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help=f"webhook Service namespace (default {DEFAULT_NAMESPACE})"
    )
    parser.add_argument(
        "--extra-san",
        action="append",
        default=[],
        metavar="NAME",
        help="additional DNS name or IP address for the serving certificate (repeatable), e.g. 127.0.0.1",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def _write(path: Path, data: bytes, *, mode: int) -> None:
    # Created with its final mode, so the key is never readable by others, not even briefly.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    try:
        sans = serving_sans(service=args.service, namespace=args.namespace, extra_sans=args.extra_san)
    except CertificateError as error:
        print(f"modelbooster certs: {error}", file=sys.stderr)
        return 2
    targets = [out / CA_CRT, out / TLS_CRT, out / TLS_KEY]
    existing = [str(path) for path in targets if path.exists()]
    if existing and not args.force:
        print(f"modelbooster certs: refusing to overwrite {', '.join(existing)} (use --force)", file=sys.stderr)
        return 1
    ca = create_ca()
    serving = issue_serving_cert(ca=ca, service=args.service, namespace=args.namespace, extra_sans=args.extra_san)
    bundle = CertBundle(ca_crt=ca.cert_pem, tls_crt=serving.cert_pem, tls_key=serving.key_pem)
    try:
        out.mkdir(parents=True, exist_ok=True)
        _write(out / CA_CRT, bundle.ca_crt, mode=0o644)
        _write(out / TLS_CRT, bundle.tls_crt, mode=0o644)
        _write(out / TLS_KEY, bundle.tls_key, mode=0o600)
    except OSError as error:
        print(f"modelbooster certs: cannot write to {out}: {error.strerror or error}", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(str(path) for path in targets)}")
    print(f"serving certificate for {', '.join(sans)}, valid until {bundle.serving_not_after.isoformat()}")
    print(f"caBundle: {bundle.ca_bundle_base64()}")
    return 0
