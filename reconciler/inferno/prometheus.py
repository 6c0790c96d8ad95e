"""A small, bounded Prometheus HTTP API client: instant queries answering one number, or a `QueryFailure`
saying why there is none. Our own because the Python clients are synchronous and heavy or unmaintained, and
this one call must run on the reconciler's event loop, bounded like every other read (docs/design/inferno.md
§13)."""

from __future__ import annotations

import json
import math
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit, urlunsplit

import aiohttp

DEFAULT_TIMEOUT: Final = 5.0
# An instant query we send aggregates to one sample; anything near this size is not an answer to it.
MAX_RESPONSE_BYTES: Final = 1 << 20
MAX_TOKEN_BYTES: Final = 64 << 10
MAX_ERROR_TEXT: Final = 200

FailureReason = Literal["unreachable", "timeout", "error", "no_data", "not_a_number", "bad_response"]
FAILURE_REASONS: Final[tuple[FailureReason, ...]] = (
    "unreachable",
    "timeout",
    "error",
    "no_data",
    "not_a_number",
    "bad_response",
)


class QueryFailure(Exception):
    """No number came back; `reason` is one of FAILURE_REASONS, `message` says what happened."""

    def __init__(self, reason: FailureReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class PrometheusSettingsError(ValueError):
    """A Prometheus setting that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class PrometheusSettings:
    url: str
    bearer_token_file: str | None = None
    ca_file: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise PrometheusSettingsError(
                f"--inferno-prometheus-url {self.display_url!r}: must start with http:// or https://"
            )
        parts = urlsplit(self.url)
        if parts.scheme == "http" and (parts.username is not None or self.bearer_token_file is not None):
            # Anyone on the path would read the credential; the reconciler sends none in clear text.
            given = "--inferno-prometheus-bearer-token-file" if self.bearer_token_file is not None else "user:password"
            raise PrometheusSettingsError(
                f"--inferno-prometheus-url {self.display_url!r}: credentials ({given}) are sent only over https://"
            )
        if not self.timeout > 0:
            raise PrometheusSettingsError(f"--inferno-prometheus-timeout must be > 0, got {self.timeout}")
        for flag, path in (("--inferno-prometheus-bearer-token-file", self.bearer_token_file),
                           ("--inferno-prometheus-ca-file", self.ca_file)):  # fmt: skip
            if path is not None and not Path(path).is_file():
                raise PrometheusSettingsError(f"{flag} {path!r}: no such file")

    @property
    def query_url(self) -> str:
        return self.url.rstrip("/") + "/api/v1/query"

    @property
    def display_url(self) -> str:
        """The URL for logs and messages: any `user:password@` left out."""
        return redact_userinfo(self.url)

    def redact(self, text: str) -> str:
        """`text` (an error that may quote the URL) without the URL's `user:password@`."""
        netloc = urlsplit(self.url).netloc
        userinfo = netloc.rpartition("@")[0]
        return text.replace(userinfo + "@", "***@") if userinfo else text


def redact_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


class PrometheusClient:
    """Instant queries against one Prometheus; one aiohttp session for the client's life (`close()`)."""

    def __init__(self, settings: PrometheusSettings) -> None:
        self.settings = settings
        self._session: aiohttp.ClientSession | None = None
        self._ssl: ssl.SSLContext | None = None
        if settings.ca_file is not None:
            self._ssl = ssl.create_default_context(cafile=settings.ca_file)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout),
                connector=aiohttp.TCPConnector(ssl=self._ssl if self._ssl is not None else True, limit=16),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.settings.bearer_token_file is not None:
            try:
                with open(self.settings.bearer_token_file, "rb") as handle:
                    token = handle.read(MAX_TOKEN_BYTES + 1)
            except OSError as error:
                raise QueryFailure("error", f"reading the bearer token file: {error.strerror}") from None
            if len(token) > MAX_TOKEN_BYTES:
                raise QueryFailure("error", f"the bearer token file is over {MAX_TOKEN_BYTES} bytes")
            headers["Authorization"] = "Bearer " + token.decode("utf-8", "replace").strip()
        return headers

    async def query_number(self, query: str, *, at: float | None = None) -> float:
        """The single value of an instant `query` (evaluated now, or at Unix time `at`)."""
        params = {"query": query, "time": f"{time.time() if at is None else at:.3f}"}
        try:
            async with self._get_session().get(
                self.settings.query_url, params=params, headers=self._headers()
            ) as response:
                body = await _read_bounded(response)
                status = response.status
        except TimeoutError:
            raise QueryFailure("timeout", f"no answer within {self.settings.timeout:g}s") from None
        except aiohttp.ClientError as error:
            text = self.settings.redact(str(error))
            raise QueryFailure("unreachable", f"{type(error).__name__}: {_clip(text)}") from None
        return parse_number(status, body)


async def _read_bounded(response: aiohttp.ClientResponse) -> bytes:
    if response.content_length is not None and response.content_length > MAX_RESPONSE_BYTES:
        raise QueryFailure("bad_response", f"response of {response.content_length} bytes is over the limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(64 << 10):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise QueryFailure("bad_response", f"response over {MAX_RESPONSE_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_number(status: int, body: bytes) -> float:
    """The one sample of a query API answer (a vector of one element, or a scalar)."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        if status != 200:
            raise QueryFailure("error", f"HTTP {status}: {_clip(body.decode('utf-8', 'replace'))}") from None
        raise QueryFailure("bad_response", "the answer is not JSON") from None
    if not isinstance(payload, dict):
        raise QueryFailure("bad_response", "the answer is not a JSON object")
    if payload.get("status") != "success":
        kind = payload.get("errorType") or f"HTTP {status}"
        raise QueryFailure("error", f"{_clip(str(kind))}: {_clip(str(payload.get('error') or ''))}")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise QueryFailure("bad_response", "the answer has no data object")
    result_type, result = data.get("resultType"), data.get("result")
    if result_type == "scalar":
        sample = result
    elif result_type == "vector" and isinstance(result, list):
        if not result:
            raise QueryFailure("no_data", "no series")
        if len(result) > 1:
            raise QueryFailure("bad_response", f"{len(result)} series; the query must aggregate to one (sum)")
        sample = result[0].get("value") if isinstance(result[0], dict) else None
    else:
        raise QueryFailure("bad_response", f"result type {result_type!r}; the query must answer a vector")
    if not (isinstance(sample, list) and len(sample) == 2 and isinstance(sample[1], str)):
        raise QueryFailure("bad_response", "the sample is not [time, \"value\"]")
    try:
        value = float(sample[1])
    except ValueError:
        raise QueryFailure("bad_response", f"the sample value {_clip(sample[1])!r} is not a number") from None
    if not math.isfinite(value):
        raise QueryFailure("not_a_number", f"the value is {sample[1]}")
    return value


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT - 3] + "..."
