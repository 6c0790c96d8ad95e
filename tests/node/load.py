"""A steady, bounded stream of ModelBooster writes through the API server, and what became of each one.

Per second (`rate` 11): five creates and five updates, alternating, then one server-side dry run of an object
only the validating webhook refuses (a `MindIE` backend, which no engine of ours serves). Every write sets a
worker's `pods: 0`, which the mutating webhook turns into 1 with a warning, so each answer tells whether the
webhooks ran:

| outcome | meaning |
|---|---|
| `admitted` | stored, and the mutating webhook's warning came back (create, update) |
| `refused` | the probe was denied by the validating webhook, as it must be |
| `unchecked` | stored (or, for the probe, allowed) without the webhooks: no configuration was enforced |
| `failed` | the API server refused a valid write, or the probe, for any other reason (webhook unreachable, ...) |

A failed admission is a `failed` outcome. A watch on the namespace records when each created object first has
`Initialized=True`, for create -> Initialized. Everything is bounded: writes in flight (`in_flight`), the
load's duration (`max_seconds`), each request (`REQUEST_TIMEOUT`), the drain at `stop()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import aiohttp

from tests.node.api import Credentials

GROUP_PATH: Final = "/apis/workload.serving.volcano.sh/v1alpha1"
REQUEST_TIMEOUT: Final = 30.0
DRAIN_SECONDS: Final = 35.0
INITIALIZED_WAIT: Final = 30.0
SSL_CLOSE_GRACE: Final = 1.0
PROBE_EVERY: Final = 10  # one dry-run probe after this many writes
WARNING_MARK: Final = "pods: 0 is not a valid pod count"
DENIAL_MARK: Final = 'admission webhook "validate.modelboosters.workload.serving.volcano.sh" denied the request'

Kind = Literal["create", "update", "probe"]
Outcome = Literal["admitted", "refused", "unchecked", "failed", "skipped"]


@dataclass(frozen=True)
class Write:
    kind: Kind
    name: str
    at: float  # seconds since the load started, when the request was sent
    seconds: float
    outcome: Outcome
    status: int
    message: str


@dataclass
class LoadReport:
    writes: list[Write]
    initialized: dict[str, float]  # name -> seconds from its create request to Initialized=True seen
    not_initialized: list[str]  # admitted creates never seen Initialized
    marks: list[tuple[float, str]]  # (seconds since start, what the scenario did)
    seconds: float

    def count(self, outcome: Outcome, *, kinds: tuple[Kind, ...] = ("create", "update", "probe")) -> int:
        return sum(1 for write in self.writes if write.outcome == outcome and write.kind in kinds)

    def admissions(self) -> int:
        return sum(1 for write in self.writes if write.outcome != "skipped")

    def failed(self) -> list[Write]:
        return [write for write in self.writes if write.outcome == "failed"]

    def window(self, outcome: Outcome) -> float:
        """Seconds from the first to the last write with this outcome (0 when fewer than two)."""
        times = [write.at for write in self.writes if write.outcome == outcome]
        return max(times) - min(times) if len(times) > 1 else 0.0

    def longest_initialized(self, *, checked_only: bool = False) -> float:
        """The longest create -> Initialized; `checked_only`: of the creates the webhooks admitted (the others
        were written while no release was installed, when nothing reconciles)."""
        if checked_only:
            checked = {write.name for write in self.writes if write.kind == "create" and write.outcome == "admitted"}
            return max((seconds for name, seconds in self.initialized.items() if name in checked), default=0.0)
        return max(self.initialized.values(), default=0.0)

    def slowest(self, count: int = 3) -> list[Write]:
        """The writes that took longest to be answered."""
        return sorted((write for write in self.writes if write.outcome != "skipped"), key=lambda w: -w.seconds)[:count]

    def percentile_initialized(self, fraction: float) -> float:
        values = sorted(self.initialized.values())
        if not values:
            return 0.0
        return values[min(len(values) - 1, int(fraction * len(values)))]

    def messages(self, outcome: Outcome, limit: int = 5) -> list[str]:
        """The distinct messages of this outcome, most frequent first."""
        counts: dict[str, int] = {}
        for write in self.writes:
            if write.outcome == outcome:
                key = write.message[:300]
                counts[key] = counts.get(key, 0) + 1
        return [f"{n} x {text}" for text, n in sorted(counts.items(), key=lambda item: -item[1])[:limit]]


def modelbooster(*, name: str, namespace: str, backend_type: str = "vLLM") -> dict[str, Any]:
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": name, "namespace": namespace, "labels": {"modelbooster.io/node-tier": "load"}},
        "spec": {
            "backends": [
                {
                    "name": "main",
                    "type": backend_type,
                    "modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct",
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    # pods: 0 is set to 1 by the mutating webhook, with a warning: the mark that it ran.
                    "workers": [{"type": "server", "image": "vllm/vllm-openai:latest", "pods": 0}],
                }
            ]
        },
    }


def _initialized(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)


@dataclass
class _State:
    writes: list[Write] = field(default_factory=list)
    created_at: dict[str, float] = field(default_factory=dict)
    initialized_at: dict[str, float] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)


class Load:
    """Start with `start()` (or as a context manager), act, then `stop()` for the report."""

    def __init__(
        self,
        credentials: Credentials,
        *,
        namespace: str,
        rate: float = 11.0,
        max_seconds: float = 600.0,
        in_flight: int = 64,
    ) -> None:
        if not 0 < rate <= 50:
            raise ValueError(f"rate {rate}/s is outside 0..50")
        self.credentials = credentials
        self.namespace = namespace
        self.rate = rate
        self.max_seconds = max_seconds
        self.max_writes = int(rate * max_seconds)
        self.in_flight = in_flight
        self._state = _State()
        self._marks: list[tuple[float, str]] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = 0.0
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._report: LoadReport | None = None

    # ------------------------------------------------------------------ control (caller's thread)
    def start(self) -> None:
        self._thread = threading.Thread(target=self._thread_main, name=f"load-{self.namespace}", daemon=True)
        self._thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"the load generator did not start: {self._error}")

    def mark(self, what: str) -> None:
        self._marks.append((time.monotonic() - self._started, what))

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def stop(self) -> LoadReport:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(DRAIN_SECONDS + INITIALIZED_WAIT + 30)
        if self._error is not None:
            raise RuntimeError(f"the load generator failed: {self._error!r}") from self._error
        if self._report is None:
            raise RuntimeError("the load generator did not stop in time")
        return self._report

    def __enter__(self) -> Load:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._report is None and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self.stop()

    # ------------------------------------------------------------------ the loop (its own thread)
    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # reported to the caller by stop()
            self._error = error
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        context = self.credentials.ssl_context()
        connector = aiohttp.TCPConnector(ssl=context, limit=self.in_flight + 4)
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
            version = await self._list_version(session)
            watch = asyncio.create_task(self._watch(session, version))
            self._started = time.monotonic()
            self._ready.set()
            try:
                await self._pace(session)
                await self._wait_initialized()
            finally:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
        # A closed session's TLS connections finish closing on the loop's next turns; a loop that ends first
        # leaves their transports to the garbage collector, which warns (aiohttp's "graceful shutdown").
        await asyncio.sleep(SSL_CLOSE_GRACE)
        state = self._state
        initialized = {
            name: state.initialized_at[name] - state.created_at[name]
            for name in state.created
            if name in state.initialized_at
        }
        self._report = LoadReport(
            writes=sorted(state.writes, key=lambda write: write.at),
            initialized=initialized,
            not_initialized=[name for name in state.created if name not in state.initialized_at],
            marks=list(self._marks),
            seconds=time.monotonic() - self._started,
        )

    def _path(self, name: str = "") -> str:
        base = f"{self.credentials.server}{GROUP_PATH}/namespaces/{self.namespace}/modelboosters"
        return f"{base}/{name}" if name else base

    async def _pace(self, session: aiohttp.ClientSession) -> None:
        assert self._stop is not None
        tasks: set[asyncio.Task[None]] = set()
        slots = asyncio.Semaphore(self.in_flight)
        interval = 1.0 / self.rate
        deadline = self._started + self.max_seconds
        for number, kind in zip(range(self.max_writes), self._kinds(), strict=False):
            due = self._started + number * interval
            delay = due - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set() or time.monotonic() >= deadline:
                break
            if slots.locked():
                self._record(
                    kind,
                    name="",
                    sent=time.monotonic(),
                    outcome="skipped",
                    message=f"{self.in_flight} writes in flight already",
                )
                continue
            await slots.acquire()
            task = asyncio.create_task(self._one(session, kind, number, slots))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(tasks, timeout=DRAIN_SECONDS)

    def _kinds(self) -> Iterator[Kind]:
        """create, update, ... (PROBE_EVERY writes), then one probe; again."""
        for number in itertools.count():
            position = number % (PROBE_EVERY + 1)
            if position == PROBE_EVERY:
                yield "probe"
            else:
                yield "create" if position % 2 == 0 else "update"

    async def _one(self, session: aiohttp.ClientSession, kind: Kind, number: int, slots: asyncio.Semaphore) -> None:
        try:
            if kind == "update" and self._state.created:
                await self._update(session, self._state.created[number % len(self._state.created)], number)
            elif kind == "probe":
                await self._probe(session, number)
            else:
                await self._create(session, number)
        finally:
            slots.release()

    async def _send(
        self, session: aiohttp.ClientSession, method: str, url: str, body: Any, content_type: str
    ) -> tuple[int, str, list[str]]:
        try:
            async with session.request(
                method, url, data=json.dumps(body), headers={"Content-Type": content_type}
            ) as answer:
                text = await answer.text()
                warnings = answer.headers.getall("Warning", [])
                return answer.status, text, warnings
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            return 0, f"{type(error).__name__}: {error}", []

    def _record_answer(
        self, kind: Kind, *, name: str, sent: float, stored: bool, answer: tuple[int, str, list[str]]
    ) -> None:
        """A stored write was admitted when the webhooks' warning came back with it, else it passed unchecked (no
        webhook was called); a write not stored failed."""
        status, text, warnings = answer
        if not stored:
            self._record(kind, name=name, sent=sent, outcome="failed", status=status, message=_message(text))
        elif _warned(warnings):
            self._record(kind, name=name, sent=sent, outcome="admitted", status=status)
        else:
            self._record(kind, name=name, sent=sent, outcome="unchecked", status=status, message="no webhook warning")

    def _record(
        self, kind: Kind, *, name: str, sent: float, outcome: Outcome, status: int = 0, message: str = ""
    ) -> None:
        self._state.writes.append(
            Write(kind=kind, name=name, at=sent - self._started, seconds=time.monotonic() - sent,
                  outcome=outcome, status=status, message=message)
        )  # fmt: skip

    async def _create(self, session: aiohttp.ClientSession, number: int) -> None:
        name = f"lc-{number:06d}"
        sent = time.monotonic()
        self._state.created_at[name] = sent
        status, text, warnings = await self._send(
            session, "POST", self._path(), modelbooster(name=name, namespace=self.namespace), "application/json"
        )
        if status == 201:
            self._state.created.append(name)
        self._record_answer("create", name=name, sent=sent, stored=status == 201, answer=(status, text, warnings))

    async def _update(self, session: aiohttp.ClientSession, name: str, number: int) -> None:
        patch = [
            {"op": "add", "path": "/spec/backends/0/routeWeight", "value": 50 + number % 50},
            {"op": "add", "path": "/spec/backends/0/workers/0/pods", "value": 0},
        ]
        sent = time.monotonic()
        content_type = "application/json-patch+json"
        status, text, warnings = await self._send(session, "PATCH", self._path(name), patch, content_type)
        self._record_answer("update", name=name, sent=sent, stored=status == 200, answer=(status, text, warnings))

    async def _probe(self, session: aiohttp.ClientSession, number: int) -> None:
        name = f"probe-{number:06d}"
        body = modelbooster(name=name, namespace=self.namespace, backend_type="MindIE")
        sent = time.monotonic()
        status, text, _ = await self._send(session, "POST", self._path() + "?dryRun=All", body, "application/json")
        message = _message(text)
        if status == 201:
            self._record(
                "probe",
                name=name,
                sent=sent,
                outcome="unchecked",
                status=status,
                message="a MindIE backend was admitted",
            )
        elif DENIAL_MARK in message:
            self._record("probe", name=name, sent=sent, outcome="refused", status=status)
        else:
            self._record("probe", name=name, sent=sent, outcome="failed", status=status, message=message)

    async def _list_version(self, session: aiohttp.ClientSession) -> str:
        async with session.get(self._path()) as answer:
            answer.raise_for_status()
            return str((await answer.json()).get("metadata", {}).get("resourceVersion", ""))

    async def _watch(self, session: aiohttp.ClientSession, version: str) -> None:
        """Record when each object is first seen Initialized; re-list and re-watch whenever the stream ends."""
        while True:
            params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "120"}
            if version:
                params["resourceVersion"] = version
            try:
                async with session.get(self._path(), params=params,
                                       timeout=aiohttp.ClientTimeout(total=None, sock_read=150)) as answer:  # fmt: skip
                    if answer.status == 410:
                        version = ""
                        continue
                    answer.raise_for_status()
                    async for line in answer.content:
                        event = json.loads(line)
                        obj = event.get("object") or {}
                        version = str(obj.get("metadata", {}).get("resourceVersion", version))
                        if event.get("type") == "ERROR":
                            version = ""
                            break
                        self._saw(obj)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
                await asyncio.sleep(0.5)
            if not version:
                version = await self._relist(session)

    async def _relist(self, session: aiohttp.ClientSession) -> str:
        try:
            async with session.get(self._path()) as answer:
                answer.raise_for_status()
                listed = await answer.json()
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            return ""
        for obj in listed.get("items") or []:
            self._saw(obj)
        return str(listed.get("metadata", {}).get("resourceVersion", ""))

    def _saw(self, obj: dict[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if name and name not in self._state.initialized_at and _initialized(obj):
            self._state.initialized_at[name] = time.monotonic()

    async def _wait_initialized(self) -> None:
        deadline = time.monotonic() + INITIALIZED_WAIT
        while time.monotonic() < deadline:
            if all(name in self._state.initialized_at for name in self._state.created):
                return
            await asyncio.sleep(0.2)


def _warned(warnings: list[str]) -> bool:
    return any(WARNING_MARK in warning for warning in warnings)


def _message(text: str) -> str:
    try:
        return str(json.loads(text).get("message", text))
    except (ValueError, AttributeError):
        return text[:500]
