"""Running the fake: on the caller's event loop or on a background thread, plus kubeconfig output.

`FakeApiServer` is the handle tests hold. Its helper methods (CRD registration, namespaces, faults,
watch control, settle) may be called from any thread: when the server runs on another thread they are
executed on the server's loop and wait for the result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import ssl
import tempfile
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from aiohttp import web

from tests.fakeapi.app import FakeApi, ServerConfig, make_app
from tests.fakeapi.errors import ApiError
from tests.fakeapi.faults import Faults
from tests.fakeapi.reqlog import RequestLog
from tests.fakeapi.rest import Request
from tests.fakeapi.tls import TestCertificates, make_certificates

if TYPE_CHECKING:
    import kubernetes.aio.client
    import kubernetes.client

Obj = dict[str, Any]
T = TypeVar("T")


def _run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (internal writes skip admission) to completion, synchronously."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    coro.close()
    raise RuntimeError("internal operation unexpectedly waited; call it through the HTTP API instead")


class FakeApiServer:
    def __init__(
        self,
        config: ServerConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
    ) -> None:
        self.config = config or ServerConfig()
        self.host = host
        self.requested_port = port
        self.port = 0
        self.certificates: TestCertificates | None = make_certificates([host, "localhost"]) if tls else None
        self.api = FakeApi(self.config)
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # ---- lifecycle -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "https" if self.certificates else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def faults(self) -> Faults:
        return self.api.faults

    @property
    def requests(self) -> RequestLog:
        return self.api.log

    async def start(self) -> None:
        """Serve on the running event loop."""
        self._loop = asyncio.get_running_loop()
        self._runner = web.AppRunner(make_app(self.api), handle_signals=False, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        context: ssl.SSLContext | None = self.certificates.server_context() if self.certificates else None
        site = web.TCPSite(self._runner, self.host, self.requested_port, ssl_context=context)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        if not sockets:
            raise RuntimeError("the fake API server did not open a socket")
        self.port = int(sockets[0].getsockname()[1])
        self.api.server_address = f"{self.host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def __aenter__(self) -> FakeApiServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def start_in_thread(self, *, timeout: float = 10.0) -> None:
        """Serve on a new daemon thread with its own event loop; returns once the port is open."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as err:  # reported to the starting thread
                failure.append(err)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.stop())
                if self.certificates is not None:
                    # HTTPS transports finish closing on the next loop iterations.
                    loop.run_until_complete(asyncio.sleep(0.05))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=main, name=f"fakeapi-{id(self):x}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise RuntimeError("fake API server did not start in time")
        if failure:
            raise failure[0]

    def stop_thread(self, *, timeout: float = 10.0) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> FakeApiServer:
        self.start_in_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_thread()

    # ---- running things on the server's loop ---------------------------------------------------------------

    def _on_loop(self, fn: Callable[[], T], *, timeout: float = 10.0) -> T:
        loop = self._loop
        if loop is None or not loop.is_running() or self._in_loop_thread():
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn())
            except BaseException as err:
                future.set_exception(err)

        loop.call_soon_threadsafe(call)
        return future.result(timeout)

    def _in_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    # ---- helpers for tests ------------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Create an object directly (no admission webhooks), like a test fixture would with kubectl."""
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = obj.get("kind")

        def run() -> Obj:
            for res in self.api.registry.served():
                if res.group == group and version in res.versions and res.kind == kind and res.storage_group is None:
                    namespace = str(obj.get("metadata", {}).get("namespace", "")) if res.namespaced else ""
                    if res.namespaced and not namespace:
                        namespace = "default"
                    req = Request(res, version, namespace, field_manager="fakeapi", field_manager_param="fakeapi")
                    req.skip_admission = True
                    _, created = _run_now(self.api.registry.create(req, json.loads(json.dumps(obj))))
                    return dict(created)
            raise ApiError(404, "NotFound", f"the server doesn't have a resource type for {api_version}, Kind={kind}")

        return self._on_loop(run)

    def register_crd(self, manifest: Obj | str | Path) -> Obj:
        """Create a CustomResourceDefinition (a dict, a YAML file or YAML text) and return it once served."""
        if isinstance(manifest, Path) or (
            isinstance(manifest, str) and "\n" not in manifest and Path(manifest).exists()
        ):
            documents = list(yaml.safe_load_all(Path(manifest).read_text()))
        elif isinstance(manifest, str):
            documents = list(yaml.safe_load_all(manifest))
        else:
            documents = [manifest]
        created = [self.create(doc) for doc in documents if doc]
        return created[0] if len(created) == 1 else {"items": created}

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> Obj:
        metadata: Obj = {"name": name}
        if labels:
            metadata["labels"] = labels
        return self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": metadata})

    def get(self, api_version: str, plural: str, name: str, namespace: str = "") -> Obj | None:
        """The stored object as served at `api_version` (None when absent)."""
        group, _, version = api_version.rpartition("/")

        def run() -> Obj | None:
            res = self.api.registry.lookup(group, version, plural)
            if res is None:
                return None
            stored = self.api.store.get(res.storage_key, namespace, name)
            return None if stored is None else self.api.registry.external(res, version, stored)

        return self._on_loop(run)

    @property
    def resource_version(self) -> int:
        return self._on_loop(lambda: self.api.store.rv)

    def settle(self, timeout: float = 5.0) -> None:
        """Wait until the garbage collector and finalizers have nothing left to do."""
        loop = self._loop
        if loop is None:
            return
        if self._in_loop_thread():
            raise RuntimeError("on the server's own loop, use `await server.asettle()`")
        asyncio.run_coroutine_threadsafe(self.api.controllers.settle(), loop).result(timeout)

    async def asettle(self) -> None:
        await self.api.controllers.settle()

    def gc_failures(self) -> dict[str, str]:
        """`<storage key>/<namespace>/<name>` -> why the API refused the garbage collector's last write there."""
        return self._on_loop(
            lambda: {
                f"{ref.storage_key}/{ref.namespace}/{ref.name}": message
                for ref, message in self.api.controllers.failures.items()
            }
        )

    def expire_history(self) -> None:
        """Drop all watch history: a watch from any resourceVersion before now gets 410 Expired."""
        self._on_loop(lambda: self.api.hub.expire(self.api.store.rv))

    def set_history_size(self, size: int) -> None:
        self._on_loop(lambda: self.api.hub.set_history_size(size))

    def close_watches(self, resource: str | None = None, *, abort: bool = False) -> int:
        """End open watch streams (cleanly, or by cutting the connection with abort=True)."""
        return self._on_loop(lambda: self.api.hub.close_all(storage_key=self._storage_key(resource), abort=abort))

    def stall_watches(self, resource: str | None = None, *, stalled: bool = True) -> int:
        """Make open watch streams stop delivering events while staying open (or resume them)."""
        return self._on_loop(lambda: self.api.hub.stall_all(storage_key=self._storage_key(resource), stalled=stalled))

    def watch_count(self, resource: str | None = None) -> int:
        return self._on_loop(lambda: len(self.api.hub.watchers(self._storage_key(resource))))

    def _storage_key(self, resource: str | None) -> str | None:
        if resource is None:
            return None
        for res in self.api.registry.served():
            if resource in (res.plural, res.storage_key):
                return res.storage_key
        return resource

    def route_service(self, *, namespace: str, name: str, port: int = 443, to: tuple[str, int]) -> None:
        """Send webhook calls for service `namespace/name:port` to `to` (host, port)."""
        self.config.admission.service_overrides[(namespace, name, port)] = to

    @property
    def admission_calls(self) -> list[tuple[str, Obj]]:
        """(webhook name, AdmissionReview request) of every webhook call made so far."""
        return list(self.api.registry.admission.calls)

    # ---- client configuration ---------------------------------------------------------------------------

    def _ca_file(self) -> str | None:
        if self.certificates is None:
            return None
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="fakeapi-")
        path = Path(self._tmp.name, "ca.crt")
        if not path.exists():
            path.write_bytes(self.certificates.ca_pem)
        return str(path)

    def kubeconfig(self, *, namespace: str = "default") -> Obj:
        cluster: Obj = {"server": self.url}
        if self.certificates is not None:
            import base64

            cluster["certificate-authority-data"] = base64.b64encode(self.certificates.ca_pem).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fakeapi", "cluster": cluster}],
            "users": [{"name": "fakeapi", "user": {"token": "fakeapi-token"}}],
            "contexts": [
                {"name": "fakeapi", "context": {"cluster": "fakeapi", "user": "fakeapi", "namespace": namespace}}
            ],
            "current-context": "fakeapi",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        target = Path(path)
        target.write_text(yaml.safe_dump(self.kubeconfig(namespace=namespace), sort_keys=False))
        return target

    def configuration(self) -> kubernetes.client.Configuration:
        """A `kubernetes.client.Configuration` for the sync client."""
        from kubernetes import client

        config = client.Configuration(host=self.url)
        config.api_key = {"authorization": "Bearer fakeapi-token"}
        if self.certificates is not None:
            config.ssl_ca_cert = self._ca_file()
        return config

    def aio_configuration(self) -> kubernetes.aio.client.Configuration:
        """A `kubernetes.aio.client.Configuration` for the asyncio client."""
        from kubernetes.aio import client

        config = client.Configuration(host=self.url)
        config.api_key = {"authorization": "Bearer fakeapi-token"}
        if self.certificates is not None:
            config.ssl_ca_cert = self._ca_file()
        return config
