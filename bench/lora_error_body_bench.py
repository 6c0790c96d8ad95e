"""Resident memory of the dynamic-LoRA updater (reconciler/modelbooster/lora.py) when an engine answers a load
with a huge error body.

A local aiohttp server on loopback (its own process) plays a pod's runtime sidecar and answers every
`load_lora_adapter` with HTTP 500 and a `--body-mib` MiB body (default 300). A separate measuring process runs
`LoraUpdater.execute` for one running pod of one backend, as the ModelBooster reconciler does, and reports its
resident set before the call and its peak (VmHWM) after, with the failure message it produced.

Usage: python bench/lora_error_body_bench.py [--body-mib 300] [--label after]
Writes bench/results/lora_error_body-<label>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

CHUNK = b"x" * (1 << 20)


def serve(body_mib: int) -> None:
    """The pod's runtime: a 500 with a body of `body_mib` MiB, streamed."""

    async def load(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(status=500)
        response.content_length = body_mib * len(CHUNK)
        await response.prepare(request)
        try:
            for _ in range(body_mib):
                await response.write(CHUNK)
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading: what a bounded read does
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/load_lora_adapter", load)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def status_kib(field: str) -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(field)


class _Pods:
    """The pod informer's index, holding one running engine pod of ModelServing m-a."""

    def __init__(self, port: int) -> None:
        self.pod = {"metadata": {"name": "m-a-0", "namespace": "bench", "uid": "pod-uid",
                                 "labels": {"workload.serving.volcano.sh/model-uid": "booster-uid"},
                                 "ownerReferences": [{"kind": "ModelServing", "name": "m-a", "uid": "serving-uid",
                                                      "controller": True}]},
                    "status": {"phase": "Running", "podIP": "127.0.0.1"}}  # fmt: skip

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        return [self.pod]


class _Recorder:
    async def emit(self, obj: dict[str, Any], *, type: str, reason: str, message: str) -> None:
        pass


async def measure(port: int) -> dict[str, Any]:
    import dataclasses

    from reconciler.modelbooster import lora

    updater = lora.LoraUpdater(pods=_Pods(port), recorder=_Recorder(), timeout=120.0)  # type: ignore[arg-type]
    fields = {f.name for f in dataclasses.fields(lora.LoraWork)}
    target = frozenset({("chat", "hf://acme/chat")})
    work: dict[str, Any] = {"key": ("booster-uid", "a"), "namespace": "bench", "serving": "m-a", "backend": "a",
                            "port": port, "cache_uri": "", "target": target}  # fmt: skip
    if "serving_uid" in fields:  # absent before pods were checked for their controller (the "before" run)
        work["serving_uid"] = "serving-uid"
    item = lora.LoraWork(**work)
    updater.commit(uid="booster-uid", backend="a", template=(), target=item.target)
    before = status_kib("VmRSS")
    failures = await updater.execute({"metadata": {"name": "m", "namespace": "bench"}}, [item])
    peak = status_kib("VmHWM")
    await updater.close()
    return {"before_kib": before, "peak_kib": peak, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body-mib", type=int, default=300)
    parser.add_argument("--label", default="after")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    if args.measure is not None:
        print(json.dumps(asyncio.run(measure(args.measure))))
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(args.body_mib)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        done = subprocess.run([sys.executable, __file__, "--measure", str(port)], cwd=ROOT, capture_output=True,
                              text=True, check=True)  # fmt: skip
        result = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(30)
    result["peak_over_before_mib"] = round((result["peak_kib"] - result["before_kib"]) / 1024, 1)
    print(f"error body {args.body_mib} MiB: RSS {result['before_kib'] / 1024:.1f} MiB before, peak "
          f"{result['peak_kib'] / 1024:.1f} MiB (+{result['peak_over_before_mib']} MiB)")  # fmt: skip
    for failure in result["failures"]:
        print(f"  failure: {failure[:160]}")
    out = ROOT / "bench/results" / f"lora_error_body-{args.label}.json"
    out.write_text(json.dumps({"python": platform.python_version(), "body_mib": args.body_mib, **result},
                              indent=2) + "\n")  # fmt: skip
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
