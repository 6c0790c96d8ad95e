"""Differential testing of the fake API server against a real kube-apiserver v1.36.

A scenario (tests/realapi/scenarios.py) is a function that sends requests through a `Recorder`; it runs once
against each server, in a namespace of the same name on both, and the recorder keeps what a client can see of
each step: the status code, the Status `reason`, `message` and `details.causes`, the `Warning` headers, the
object in the body (volatile values masked: uid, timestamps, resourceVersion numbers), and watch events. Two runs
are compared facet by facet; every difference must be listed in `ALLOWED` (with why) or is a fake bug to fix in
tests/fakeapi, and an `ALLOWED` entry that no longer differs fails too, so the list stays true.

New fake behaviour comes with a scenario here.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pytest

Obj = dict[str, Any]
MASK: Final = "<masked>"
# scenario -> (facets compared, allow-listed differences seen), for the summary at the end of the run.
SUITE_SIZE: Final = pytest.StashKey[dict[str, tuple[int, int]]]()

# Metadata a client cannot expect to be equal between two servers: identities and clocks. resourceVersion values
# differ too; scenarios that care compare them to each other (`Recorder.note`), which is what a client can rely on.
VOLATILE_METADATA: Final = ("uid", "creationTimestamp", "resourceVersion", "deletionTimestamp")
_UID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# resourceVersion numbers inside messages ("... in record (262)", "Too large resource version: 253, current: 252").
_RV_IN_MESSAGE: Final = re.compile(r"(?i)(resource ?version[^0-9\n]{0,40}?|current: )\d+")
_TIMESTAMP: Final = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@dataclass(frozen=True)
class Step:
    """What a client saw of one request (or one derived fact, `note`), by facet."""

    label: str
    facets: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    warnings: list[str]


class Recorder:
    """Sends a scenario's requests to one server and records what came back."""

    def __init__(self, api: Any, namespace: str, *, webhook: Any = None) -> None:
        self.api = api
        self.namespace = namespace
        self.webhook = webhook  # our webhook process (tests.realapi.webhook.WebhookServer), for scenarios that use it
        self.steps: list[Step] = []

    # ---- requests -----------------------------------------------------------------------------------------

    def send(
        self, method: str, path: str, *, body: Any = None, content_type: str = "application/json", timeout: float = 10.0
    ) -> Answer:
        """One request, whatever its status; nothing recorded."""
        serialized = self.api.param_serialize(
            method,
            path,
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*serialized, _request_timeout=timeout)
        response.read()
        raw = response.data or b""
        try:
            decoded = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        headers = response.response.headers
        warnings = [value for key, value in headers.items() if key.lower() == "warning"]
        return Answer(status=int(response.status), body=decoded, warnings=warnings)

    def request(
        self,
        label: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        keep: tuple[str, ...] = (),
    ) -> Answer:
        """Send, and record the answer's facets under `label`. `keep`: volatile metadata to compare anyway."""
        answer = self.send(method, path, body=body, content_type=content_type)
        self.steps.append(Step(label, facets_of(answer, keep=keep, namespace=self.namespace)))
        return answer

    def note(self, label: str, value: Any) -> None:
        """A derived fact a client could rely on (e.g. "the resourceVersion did not change")."""
        self.steps.append(Step(label, {"value": value}))

    def watch(
        self, label: str, path: str, *, since: str, until: Callable[[list[Obj]], bool], timeout: float = 8.0
    ) -> None:
        """Watch `path` from resourceVersion `since` until `until(events)` holds (or `timeout`), and record the
        events (type and masked object; BOOKMARKs left out: when they come is the server's choice)."""
        events = read_watch(
            self.api,
            f"{path}{'&' if '?' in path else '?'}watch=true&resourceVersion={since}",
            until=until,
            timeout=timeout,
        )
        shown = [
            {"type": event["type"], "object": mask(event.get("object"), keep=(), namespace=self.namespace)}
            for event in events
            if event.get("type") != "BOOKMARK"
        ]
        self.steps.append(Step(label, {"events": shown}))


def read_watch(api: Any, path: str, *, until: Callable[[list[Obj]], bool], timeout: float) -> list[Obj]:
    """Events of one watch request, read on a thread so a silent stream cannot hang the test."""
    events: list[Obj] = []
    done = threading.Event()
    holder: dict[str, Any] = {}

    def run() -> None:
        try:
            serialized = api.param_serialize(
                "GET",
                f"{path}&timeoutSeconds={max(1, int(timeout))}",
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = api.call_api(*serialized, _request_timeout=timeout + 2)
            holder["response"] = response
            buffer = b""
            for chunk in response.response.stream(4096, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        events.append(json.loads(line))
                        if until(events) or events[-1].get("type") == "ERROR":
                            return
        except Exception as error:  # reported to the caller (the stream's normal end raises nothing)
            holder["error"] = error
        finally:
            done.set()

    thread = threading.Thread(target=run, name="differential-watch", daemon=True)
    thread.start()
    finished = done.wait(timeout + 3)
    response = holder.get("response")
    if response is not None:
        response.response.close()  # also ends a stream the server keeps open
    thread.join(2)
    if "error" in holder and finished:
        raise holder["error"]
    return list(events)


# ---- what a client sees ------------------------------------------------------------------------------------


def mask(value: Any, *, keep: tuple[str, ...], namespace: str) -> Any:
    """A copy of a returned object with what differs between any two servers masked."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if key == "metadata" and isinstance(item, dict):
                result[key] = _mask_metadata(item, keep=keep, namespace=namespace)
            else:
                result[key] = mask(item, keep=keep, namespace=namespace)
        return result
    if isinstance(value, list):
        return [mask(item, keep=keep, namespace=namespace) for item in value]
    if isinstance(value, str):
        return _RV_IN_MESSAGE.sub(r"\1" + MASK, _TIMESTAMP.sub(MASK, _UID.sub(MASK, value)))
    return value


def _mask_metadata(metadata: Mapping[str, Any], *, keep: tuple[str, ...], namespace: str) -> Obj:
    shown: Obj = {}
    for key, value in metadata.items():
        if key in VOLATILE_METADATA and key not in keep:
            shown[key] = MASK
        elif key == "managedFields" and isinstance(value, list):
            shown[key] = [{k: (MASK if k == "time" else v) for k, v in entry.items()} for entry in value]
        else:
            shown[key] = mask(value, keep=keep, namespace=namespace)
    return shown


def facets_of(answer: Answer, *, keep: tuple[str, ...], namespace: str) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "code": answer.status,
        "warnings": [mask(w, keep=(), namespace=namespace) for w in answer.warnings],
    }
    body = answer.body
    if isinstance(body, dict) and body.get("kind") == "Status":
        details = body.get("details") or {}
        message, causes = in_canonical_order(body.get("message"), details.get("causes"))
        facets["reason"] = body.get("reason")
        facets["message"] = mask(message, keep=(), namespace=namespace)
        shown = {k: v for k, v in details.items() if k != "causes"} if "details" in body else None
        facets["details"] = mask(shown, keep=(), namespace=namespace)
        facets["causes"] = mask(causes, keep=(), namespace=namespace)
    elif isinstance(body, dict) and isinstance(body.get("items"), list):
        facets["kind"] = body.get("kind")
        facets["items"] = [mask(item, keep=keep, namespace=namespace) for item in body["items"]]
        list_meta = body.get("metadata") or {}
        facets["list metadata"] = sorted(list_meta)  # which keys (continue tokens and versions differ)
    else:
        facets["body"] = mask(body, keep=keep, namespace=namespace)
    return facets


def in_canonical_order(message: Any, causes: Any) -> tuple[Any, Any]:
    """An Invalid Status lists its field errors in the order validation found them, which kube-apiserver does not
    fix (it walks schema properties in Go map order): sort the causes, and the bracketed list in the message
    when it is exactly the causes in their order, so two servers compare equal when they found the same errors."""
    if not isinstance(causes, list) or not isinstance(message, str) or len(causes) < 2:
        return message, causes
    lines = [f"{c.get('field')}: {c.get('message')}" for c in causes if isinstance(c, dict)]
    listed = "[" + ", ".join(lines) + "]"
    if message.endswith(listed):
        message = message[: -len(listed)] + "[" + ", ".join(sorted(lines)) + "]"
    return message, sorted(causes, key=lambda c: json.dumps(c, sort_keys=True))


# ---- comparing two runs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    step: str
    facet: str
    fake: Any
    real: Any

    @property
    def key(self) -> tuple[str, str]:
        return (self.step, self.facet)

    def __str__(self) -> str:
        return f"{self.step} / {self.facet}:\n  fake: {_short(self.fake)}\n  real: {_short(self.real)}"


def _short(value: Any, limit: int = 1500) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def compare(fake: list[Step], real: list[Step]) -> list[Difference]:
    """Every facet that differs, step by step (a scenario sends the same steps to both servers)."""
    if [s.label for s in fake] != [s.label for s in real]:
        return [Difference("(steps)", "labels", [s.label for s in fake], [s.label for s in real])]
    found = []
    for ours, theirs in zip(fake, real, strict=True):
        for facet in sorted(set(ours.facets) | set(theirs.facets)):
            mine, actual = ours.facets.get(facet), theirs.facets.get(facet)
            if mine != actual:
                found.append(Difference(ours.label, facet, mine, actual))
    return found


def checks(steps: list[Step]) -> int:
    """How many facets a run compares (the suite's size is scenarios x checks)."""
    return sum(len(step.facets) for step in steps)


@dataclass
class Allowed:
    """A known difference: why the fake may differ here."""

    why: str
    facets: tuple[str, ...] = field(default=())


def unexplained(
    scenario: str, differences: list[Difference], allowed: Mapping[str, Mapping[str, Allowed]]
) -> tuple[list[Difference], list[str]]:
    """(differences not in the allow-list, allow-list entries of this scenario that did not occur)."""
    entries = allowed.get(scenario, {})
    permitted = {(step, facet) for step, entry in entries.items() for facet in entry.facets}
    seen = {d.key for d in differences}
    stale = [f"{step} / {facet}" for step, facet in sorted(permitted - seen)]
    return [d for d in differences if d.key not in permitted], stale


def poll(check: Callable[[], bool], *, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def events_until_name(name: str, event_type: str) -> Callable[[list[Obj]], bool]:
    def done(events: list[Obj]) -> bool:
        return any(
            e.get("type") == event_type and ((e.get("object") or {}).get("metadata") or {}).get("name") == name
            for e in events
        )

    return done


def iter_steps(steps: list[Step]) -> Iterator[str]:
    for step in steps:
        yield f"{step.label}: {_short(step.facets, 300)}"
