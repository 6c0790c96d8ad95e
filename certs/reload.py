"""A TLS server context whose certificate follows the files on disk, without a restart.

The listening socket keeps one outer `ssl.SSLContext` for its whole life. Its SNI callback, which OpenSSL
runs on every ClientHello (with or without a server name), hands the connection the most recently loaded
inner context. A reload therefore builds and checks a complete new context and swaps one reference:
handshakes already under way and established connections keep the context they started with, and a
broken pair on disk (a key that does not match, a half-written file) never replaces a working one.

Kubernetes updates a mounted Secret by writing a new timestamped directory and atomically renaming the
`..data` symlink to it; `tls.crt` and `tls.key` are symlinks through `..data`. Reading the files by their
mounted paths always follows the current `..data`, so polling their content catches the swap. A poll that
reads the certificate before a swap and the key after it sees a mismatch, keeps the old context, and
succeeds on the next poll. Polling (by content digest) rather than inotify is deliberate: inotify on the
symlinks does not fire for the `..data` rename, and the kubelet updates Secrets only every minute or so.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Final

from certs.bundle import CertificateError, load_certificates

log = logging.getLogger(__name__)

TLS_VERSIONS: Final[dict[str, ssl.TLSVersion]] = {
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}


def server_context(*, min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2) -> ssl.SSLContext:
    """A TLS server context with our settings and no certificate yet."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = min_version
    # aiohttp speaks HTTP/1.1 only; saying so lets Go clients (kube-apiserver) skip offering h2.
    context.set_alpn_protocols(["http/1.1"])
    return context


class ReloadOutcome(Enum):
    UNCHANGED = "unchanged"
    LOADED = "loaded"
    FAILED = "failed"


@dataclass(frozen=True)
class ReloadResult:
    outcome: ReloadOutcome
    detail: str = ""
    not_after: datetime | None = None


class CertificateReloader:
    """Owns the outer server context; `reload()` checks the files, `watch()` polls them."""

    def __init__(
        self,
        *,
        cert_file: Path,
        key_file: Path,
        min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
        on_reload: Callable[[ReloadResult], None] | None = None,
    ) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._min_version = min_version
        self._on_reload = on_reload
        self._inner: ssl.SSLContext | None = None
        self._digest: bytes | None = None
        self._failed_digest: bytes | None = None
        self.not_after: datetime | None = None
        self.context = server_context(min_version=min_version)
        self.context.sni_callback = self._select_context

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def _select_context(self, connection: ssl.SSLObject, _server_name: str | None, _outer: ssl.SSLContext) -> None:
        inner = self._inner
        if inner is not None:
            connection.context = inner
        # With nothing loaded the handshake fails for lack of a certificate, which is what we want.

    def _read(self) -> tuple[bytes, bytes]:
        return self.cert_file.read_bytes(), self.key_file.read_bytes()

    def reload(self) -> ReloadResult:
        """Load the files if their content changed since the last successful load."""
        result = self._reload()
        if self._on_reload is not None:
            self._on_reload(result)
        return result

    def _reload(self) -> ReloadResult:
        try:
            cert_pem, key_pem = self._read()
        except OSError as error:
            detail = f"cannot read certificate files: {error}"
            return self._failure(hashlib.sha256(detail.encode()).digest(), detail)
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        if digest == self._digest:
            return ReloadResult(ReloadOutcome.UNCHANGED, not_after=self.not_after)
        try:
            not_after = load_certificates(cert_pem, what=str(self.cert_file))[0].not_valid_after_utc
            candidate = server_context(min_version=self._min_version)
            candidate.load_cert_chain(self.cert_file, self.key_file)
            again = self._read()
        except CertificateError as error:
            return self._failure(digest, str(error))
        except (ssl.SSLError, OSError) as error:
            return self._failure(digest, f"cannot load {self.cert_file} with {self.key_file}: {error}")
        if again != (cert_pem, key_pem):
            # The files moved under us (a Secret update in progress); what we loaded may be a mix.
            return ReloadResult(ReloadOutcome.FAILED, "certificate files changed while loading; retrying")
        self._inner = candidate
        self._digest = digest
        self._failed_digest = None
        self.not_after = not_after
        log.info(
            "serving certificate loaded",
            extra={"context": {"cert_file": str(self.cert_file), "not_after": str(not_after)}},
        )
        return ReloadResult(ReloadOutcome.LOADED, not_after=not_after)

    def _failure(self, digest: bytes, detail: str) -> ReloadResult:
        # The same broken content (or the same read error) is reported once, not on every poll.
        if digest != self._failed_digest:
            log.warning("serving certificate not (re)loaded: %s", detail)
        self._failed_digest = digest
        keeping = " (keeping the previous certificate)" if self.loaded else ""
        return ReloadResult(ReloadOutcome.FAILED, detail + keeping, not_after=self.not_after)

    async def watch(self, *, interval: float) -> None:
        """Check the files every `interval` seconds, forever; cancel to stop."""
        while True:
            await asyncio.sleep(interval)
            self.reload()


@contextlib.asynccontextmanager
async def watching(reloader: CertificateReloader, *, interval: float) -> AsyncIterator[None]:
    """Run `reloader.watch` for the duration of the block (after one synchronous load)."""
    reloader.reload()
    task = asyncio.create_task(reloader.watch(interval=interval), name="certificate-reloader")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
