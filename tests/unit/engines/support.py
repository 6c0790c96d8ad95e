"""SGLang ModelBoosters in each API shape we accept, and what their children say."""

from __future__ import annotations

import copy
import shlex
from typing import Any

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.autoscaling_generations import DEFAULT_GENERATION, Generation
from shared.validation import parse_modelbooster

UID = "7d5c6a3e-0000-4000-8000-0000000000aa"
SHAPES = ("v0.1 list", "v0.2-v0.4 single backend", "v1.0 single backend")


def sglang_backend(**fields: Any) -> dict[str, Any]:
    backend: dict[str, Any] = {
        "name": "gpu",
        "type": "SGLang",
        "modelURI": "hf://Qwen/Qwen2.5-7B-Instruct",
        "workers": [{"type": "server", "image": "lmsysorg/sglang:v0.5.23", "replicas": 1, "pods": 1}],
    }
    backend.update(fields)
    return backend


def worker(**fields: Any) -> dict[str, Any]:
    return {"type": "server", "image": "lmsysorg/sglang:v0.5.23", "replicas": 1, "pods": 1, **fields}


def sglang_doc(shape: str = SHAPES[0], **backend_fields: Any) -> dict[str, Any]:
    backend = sglang_backend(**backend_fields)
    if shape == SHAPES[0]:
        spec: dict[str, Any] = {"backends": [{"minReplicas": 1, "maxReplicas": 1, **backend}]}
    elif shape == SHAPES[1]:
        spec = {"backend": {"minReplicas": 1, "maxReplicas": 1, **backend}}
        spec["backend"].pop("loraAdapters", None)
    else:
        spec = {"name": "qwen-chat", "backend": {"replicas": 1, **backend}}
        spec["backend"].pop("loraAdapters", None)
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": "qwen", "namespace": "default", "uid": UID},
        "spec": spec,
    }


def render(doc: dict[str, Any], generation: Generation = DEFAULT_GENERATION) -> list[dict[str, Any]]:
    """Admitted (the webhook's rules) and rendered; raises ValidationFailed when admission refuses."""
    return synthesize(parse_modelbooster(copy.deepcopy(doc)), SynthesisSettings(), generation=generation)


def child(children: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [c for c in children if c["kind"] == kind]
    return found


def role(children: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = child(children, "ModelServing")["spec"]["template"]["roles"][0]
    return found


def containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["containers"]}


def entry_engine(children: list[dict[str, Any]]) -> dict[str, Any]:
    return containers(role(children)["entryTemplate"]["spec"])["engine"]


def argv_options(command: list[str]) -> list[str]:
    """The long options a container command gives the engine's server; inside a `bash -c` script, those of the
    step that runs `python3 -m ...` (the other steps are vLLM's multi-node shell script, not vLLM's parser)."""
    words = command
    if command[:2] == ["bash", "-c"]:
        steps = [shlex.split(step) for step in command[2].split("&&")]
        words = next((step for step in steps if step[:2] == ["python3", "-m"]), [])
    return [word for word in words if word.startswith("--")]
