"""`modelbooster rollout`: ask for the current rendering of ModelBoosters' ModelServings (docs/design/reconciler.md
§16), the `kubectl rollout restart` of this product.

The reconciler keeps a ModelServing's pod template as it runs — taken over from Kthena or from an earlier version,
or rendered before the reconciler's settings changed — until the ModelBooster's spec changes, so that no pod
restarts unasked. This command writes the request that moves them: the annotation `modelbooster.io/rollout` on each
ModelBooster named (or every one of a namespace, or of the cluster), set to the current time. The reconciler then
brings every ModelServing of it to the current rendering; one that already runs it is not touched. The condition
`UpToDate` says beforehand how many ModelServings run an older rendering (`--dry-run` prints it for each).

The write is a merge patch of that one annotation, with the field manager `modelbooster-rollout`: it changes no
spec, so the admission webhook admits it whatever the object holds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes.aio import config as kube_config

from reconciler.api.kinds import MODEL_BOOSTER
from reconciler.runtime.client import ApiError, KubeClient
from shared.constants import CONDITION_UP_TO_DATE
from shared.rollout import ANNOTATION_ROLLOUT

FIELD_MANAGER: Final = "modelbooster-rollout"
EXIT_CODES: Final[Mapping[int, str]] = {
    0: "the rollout was asked for every ModelBooster named (or, with --dry-run, they were all read)",
    1: "a ModelBooster could not be read or written (not found, forbidden, ...; one line each on stderr)",
    2: "unusable arguments, or no cluster to talk to (kubeconfig)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="ModelBoosters to roll out")
    parser.add_argument("-n", "--namespace", help="their namespace (default: the kubeconfig context's)")
    parser.add_argument("--all", action="store_true", help="every ModelBooster of the namespace")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="every ModelBooster of the cluster")
    parser.add_argument("--dry-run", action="store_true",
                        help="write nothing; print what each would roll (its UpToDate condition)")  # fmt: skip
    parser.add_argument("--kubeconfig", help="the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="the kubeconfig context")


def run(args: argparse.Namespace) -> int:
    chosen = bool(args.names) + args.all + args.all_namespaces
    if chosen != 1:
        print("modelbooster rollout: name ModelBoosters, or give --all or -A (one of them)", file=sys.stderr)
        return 2
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    try:
        client = await KubeClient.connect(kubeconfig=args.kubeconfig, context=args.context,
                                          user_agent="modelbooster-rollout")  # fmt: skip
    except Exception as error:  # the kubernetes package raises several kinds for an unusable configuration
        print(f"modelbooster rollout: no cluster to talk to: {error}", file=sys.stderr)
        return 2
    try:
        namespace = args.namespace or _context_namespace(args.kubeconfig, args.context)
        targets = await _targets(client, args, namespace)
        failed = 0
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for booster_namespace, name, booster in targets:
            failed += not await _one(client, booster_namespace, name, booster, stamp=stamp, dry_run=args.dry_run)
        return 1 if failed else 0
    except ApiError as error:
        print(f"modelbooster rollout: listing ModelBoosters failed: {error}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace the kubeconfig's context names, as kubectl takes it (else `default`)."""
    try:
        contexts, active = kube_config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except Exception:  # no kubeconfig (in a pod), or one without contexts: kubectl's default then
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


async def _targets(
    client: KubeClient, args: argparse.Namespace, namespace: str
) -> Sequence[tuple[str, str, dict[str, Any] | None]]:
    """(namespace, name, the object if already listed) of each ModelBooster to roll out."""
    if args.names:
        return [(namespace, name, None) for name in args.names]
    listed = await client.list(MODEL_BOOSTER, namespace=None if args.all_namespaces else namespace)
    return sorted(
        ((str(item["metadata"].get("namespace")), str(item["metadata"]["name"]), item) for item in listed.items),
        key=lambda target: (target[0], target[1]),
    )


async def _one(
    client: KubeClient, namespace: str, name: str, booster: dict[str, Any] | None, *, stamp: str, dry_run: bool
) -> bool:
    ref = f"modelbooster.workload.serving.volcano.sh/{name} -n {namespace}"
    try:
        if booster is None:
            booster = await client.get(MODEL_BOOSTER, namespace, name)
        if not dry_run:
            patch = {"metadata": {"annotations": {ANNOTATION_ROLLOUT: stamp}}}
            await client.patch(MODEL_BOOSTER, namespace, name, patch, field_manager=FIELD_MANAGER)
    except ApiError as error:
        print(f"{ref}: {error}", file=sys.stderr)
        return False
    print(f"{ref}: {'would roll out' if dry_run else 'rollout requested'} ({_rendering(booster)})")
    return True


def _rendering(booster: dict[str, Any]) -> str:
    for condition in (booster.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == CONDITION_UP_TO_DATE:
            if condition.get("status") == "True":
                return "its ModelServings run the current rendering: nothing restarts"
            # The message ends with how to ask for a rollout, which is what is being done.
            message = str(condition.get("message") or "").split("; it is kept")[0]
            return f"{CONDITION_UP_TO_DATE}={condition.get('status')}: {message}"
    return f"no {CONDITION_UP_TO_DATE} condition yet"
