"""A small synchronous client of the rig's API server, as its admin (client certificate of the rig's CA).

The tier's scenarios need a handful of calls (read pods, delete or evict one, read a Lease, watch nothing):
plain JSON over HTTPS is shorter than the generated client's models and keeps every call bounded in time.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

REQUEST_TIMEOUT: Final = 10.0


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


@dataclass(frozen=True)
class Credentials:
    """Where the API server is and who we are: the rig's admin."""

    server: str
    ca_file: Path
    cert_file: Path
    key_file: Path

    @classmethod
    def of_rig(cls, rig: Path, *, server: str) -> Credentials:
        pki = rig / "pki"
        return cls(server=server, ca_file=pki / "ca.crt", cert_file=pki / "admin.crt", key_file=pki / "admin.key")

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


class Api:
    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._context = credentials.ssl_context()
        # No proxy, whatever the environment says: the rig's addresses are local.
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self._context)
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, str] | None = None,
    ) -> Any:
        url = self.credentials.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with self._opener.open(request, timeout=REQUEST_TIMEOUT) as answer:
                payload = answer.read()
        except urllib.error.HTTPError as error:
            try:
                text = error.read().decode(errors="replace")
            finally:
                error.close()  # it holds the connection: left to the garbage collector it warns
            with contextlib.suppress(ValueError, AttributeError):
                text = json.loads(text).get("message", text)
            raise ApiError(error.code, text) from None
        return json.loads(payload) if payload else None

    def get(self, path: str, **query: str) -> Any:
        return self.request("GET", path, query=query or None)

    def get_or_none(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    def delete(self, path: str, *, body: Any = None) -> Any:
        return self.request("DELETE", path, body=body)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body=body)

    def patch(self, path: str, body: Any, *, content_type: str = "application/merge-patch+json") -> Any:
        return self.request("PATCH", path, body=body, content_type=content_type)

    def items(self, path: str, **query: str) -> list[dict[str, Any]]:
        return list(self.get(path, **query).get("items") or [])


def wait_for(what: str, check: Callable[[], bool], *, timeout: float, interval: float = 0.25) -> float:
    """Poll `check` until it holds; the seconds it took. Raises TimeoutError naming `what`."""
    started = time.monotonic()
    deadline = started + timeout
    last_error: Exception | None = None
    while True:
        try:
            if check():
                return time.monotonic() - started
        except (ApiError, OSError) as error:  # the API server may be restarting under us; try again
            last_error = error
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise TimeoutError(f"{what}: not within {timeout:.0f} s{detail}")
        time.sleep(interval)
