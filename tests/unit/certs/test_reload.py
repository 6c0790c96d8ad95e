"""Hot reload over real TLS handshakes, with files laid out the way the kubelet mounts a Secret."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest

from certs.authority import KeyPair, create_ca, issue_serving_cert
from certs.reload import CertificateReloader, ReloadOutcome, ReloadResult, watching


class SecretMount:
    """A directory like a kubelet Secret volume: `tls.crt -> ..data/tls.crt`, `..data -> ..<version>`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.version = 0

    @property
    def cert_file(self) -> Path:
        return self.root / "tls.crt"

    @property
    def key_file(self) -> Path:
        return self.root / "tls.key"

    def publish(self, files: dict[str, bytes]) -> None:
        """Write a new version and swap `..data` atomically, as the kubelet's atomic writer does."""
        self.version += 1
        target = self.root / f"..2026_03_01_12_00_00.{self.version}"
        target.mkdir(parents=True)
        for name, data in files.items():
            (target / name).write_bytes(data)
        temporary = self.root / "..data_tmp"
        temporary.symlink_to(target.name)
        old = (self.root / "..data").resolve() if (self.root / "..data").exists() else None
        os.replace(temporary, self.root / "..data")
        for name in files:
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")
        if old is not None:
            for child in old.iterdir():
                child.unlink()
            old.rmdir()


def _pair(ca: KeyPair, now: datetime) -> KeyPair:
    return issue_serving_cert(ca=ca, service="svc", namespace="ns", extra_sans=["127.0.0.1"], now=now)


@pytest.fixture
def mount(tmp_path: Path) -> SecretMount:
    return SecretMount(tmp_path / "certs")


@pytest.fixture
async def server(mount: SecretMount) -> AsyncIterator[tuple[CertificateReloader, int]]:
    reloader = CertificateReloader(cert_file=mount.cert_file, key_file=mount.key_file)

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(line)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=reloader.context)
    port = listener.sockets[0].getsockname()[1]
    yield reloader, port
    listener.close()
    await listener.wait_closed()


async def _peer_cert(port: int, ca: KeyPair) -> bytes:
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.write(b"ping\n")
        assert await reader.readline() == b"ping\n"
        return bytes(der)
    finally:
        writer.close()
        await writer.wait_closed()


def _der(pair: KeyPair) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return pair.cert.public_bytes(Encoding.DER)


async def test_nothing_on_disk_means_not_loaded_and_no_handshake(
    server: tuple[CertificateReloader, int], ca: KeyPair
) -> None:
    reloader, port = server
    result = reloader.reload()
    assert result.outcome is ReloadOutcome.FAILED
    assert "cannot read certificate files" in result.detail
    assert not reloader.loaded
    # The server aborts the handshake: the client sees an SSL alert or a reset, both OSErrors.
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        await _peer_cert(port, ca)


async def test_files_appearing_later_are_loaded(
    server: tuple[CertificateReloader, int], mount: SecretMount, ca: KeyPair, now: datetime
) -> None:
    reloader, port = server
    reloader.reload()
    pair = _pair(ca, now)
    mount.publish({"tls.crt": pair.cert_pem, "tls.key": pair.key_pem})
    result = reloader.reload()
    assert result.outcome is ReloadOutcome.LOADED
    assert result.not_after == pair.cert.not_valid_after_utc
    assert reloader.loaded
    assert await _peer_cert(port, ca) == _der(pair)
    assert reloader.reload().outcome is ReloadOutcome.UNCHANGED


async def test_symlink_swap_is_picked_up_and_open_connections_survive(
    server: tuple[CertificateReloader, int], mount: SecretMount, ca: KeyPair, now: datetime
) -> None:
    reloader, port = server
    first, second = _pair(ca, now), _pair(ca, now)
    mount.publish({"tls.crt": first.cert_pem, "tls.key": first.key_pem})
    reloader.reload()

    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
    try:
        assert writer.get_extra_info("ssl_object").getpeercert(binary_form=True) == _der(first)
        mount.publish({"tls.crt": second.cert_pem, "tls.key": second.key_pem})
        assert reloader.reload().outcome is ReloadOutcome.LOADED
        # New handshakes get the new certificate ...
        assert await _peer_cert(port, ca) == _der(second)
        # ... while the connection opened before the swap keeps working.
        writer.write(b"still here\n")
        assert await reader.readline() == b"still here\n"
    finally:
        writer.close()
        await writer.wait_closed()


async def test_mismatched_pair_keeps_the_old_certificate(
    server: tuple[CertificateReloader, int], mount: SecretMount, ca: KeyPair, now: datetime
) -> None:
    reloader, port = server
    first, second = _pair(ca, now), _pair(ca, now)
    mount.publish({"tls.crt": first.cert_pem, "tls.key": first.key_pem})
    reloader.reload()
    mount.publish({"tls.crt": second.cert_pem, "tls.key": first.key_pem})
    result = reloader.reload()
    assert result.outcome is ReloadOutcome.FAILED
    assert result.detail.endswith("(keeping the previous certificate)")
    assert await _peer_cert(port, ca) == _der(first)


async def test_garbage_certificate_is_reported_by_file(
    server: tuple[CertificateReloader, int], mount: SecretMount
) -> None:
    reloader, _ = server
    mount.publish({"tls.crt": b"garbage", "tls.key": b"garbage"})
    result = reloader.reload()
    assert result.outcome is ReloadOutcome.FAILED
    assert f"{mount.cert_file} is not PEM-encoded X.509 certificates" in result.detail


async def test_watch_picks_up_a_swap_without_being_asked(
    server: tuple[CertificateReloader, int], mount: SecretMount, ca: KeyPair, now: datetime
) -> None:
    reloader, port = server
    first, second = _pair(ca, now), _pair(ca, now)
    mount.publish({"tls.crt": first.cert_pem, "tls.key": first.key_pem})
    async with watching(reloader, interval=0.01):
        assert await _peer_cert(port, ca) == _der(first)
        mount.publish({"tls.crt": second.cert_pem, "tls.key": second.key_pem})
        for _ in range(200):
            if await _peer_cert(port, ca) == _der(second):
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the swapped certificate was never served")


async def test_files_changing_while_loading_are_not_trusted(mount: SecretMount, ca: KeyPair, now: datetime) -> None:
    first, second = _pair(ca, now), _pair(ca, now)
    mount.publish({"tls.crt": first.cert_pem, "tls.key": first.key_pem})

    class SwapDuringLoad(CertificateReloader):
        reads = 0

        def _read(self) -> tuple[bytes, bytes]:
            self.reads += 1
            if self.reads == 2:
                mount.publish({"tls.crt": second.cert_pem, "tls.key": second.key_pem})
            return super()._read()

    reloader = SwapDuringLoad(cert_file=mount.cert_file, key_file=mount.key_file)
    result = reloader.reload()
    assert result.outcome is ReloadOutcome.FAILED
    assert result.detail == "certificate files changed while loading; retrying"
    assert not reloader.loaded
    assert reloader.reload().outcome is ReloadOutcome.LOADED


async def test_minimum_tls_version_is_enforced(mount: SecretMount, ca: KeyPair, now: datetime) -> None:
    pair = _pair(ca, now)
    mount.publish({"tls.crt": pair.cert_pem, "tls.key": pair.key_pem})
    reloader = CertificateReloader(
        cert_file=mount.cert_file, key_file=mount.key_file, min_version=ssl.TLSVersion.TLSv1_3
    )
    reloader.reload()
    listener = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0, ssl=reloader.context)
    port = listener.sockets[0].getsockname()[1]
    try:
        old_client = ssl.create_default_context(cadata=ca.cert_pem.decode())
        old_client.maximum_version = ssl.TLSVersion.TLSv1_2
        # Refused during the handshake (an alert or a reset, depending on who closes first).
        with pytest.raises((ssl.SSLError, ConnectionResetError)):
            await asyncio.open_connection("127.0.0.1", port, ssl=old_client)
        new_client = ssl.create_default_context(cadata=ca.cert_pem.decode())
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=new_client)
        assert writer.get_extra_info("ssl_object").version() == "TLSv1.3"
        writer.close()
        await writer.wait_closed()
    finally:
        listener.close()
        await listener.wait_closed()


def test_every_check_is_reported_to_the_callback(mount: SecretMount, ca: KeyPair, now: datetime) -> None:
    seen: list[ReloadResult] = []
    reloader = CertificateReloader(cert_file=mount.cert_file, key_file=mount.key_file, on_reload=seen.append)
    reloader.reload()
    pair = _pair(ca, now)
    mount.publish({"tls.crt": pair.cert_pem, "tls.key": pair.key_pem})
    reloader.reload()
    reloader.reload()
    assert [result.outcome for result in seen] == [
        ReloadOutcome.FAILED,
        ReloadOutcome.LOADED,
        ReloadOutcome.UNCHANGED,
    ]


def test_a_certificate_of_another_ca_is_still_loaded(mount: SecretMount, now: datetime) -> None:
    # Trust is the client's business; the reloader only checks that the pair belongs together.
    other = _pair(create_ca(now=now), now)
    mount.publish({"tls.crt": other.cert_pem, "tls.key": other.key_pem})
    reloader = CertificateReloader(cert_file=mount.cert_file, key_file=mount.key_file)
    assert reloader.reload().outcome is ReloadOutcome.LOADED
