"""Whatever admission accepts, synthesis must render, and every child must fit its own CRD.

A property test over generated ModelBoosters: validation is the only gate before synthesis in the webhook
and the reconciler, so an object it admits but synthesis rejects (or a child the API server would refuse)
would leave a ModelBooster Failed after `kubectl apply` said yes.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.errors import ValidationFailed
from shared.naming import is_dns1123_label
from shared.validation import parse_modelbooster
from tests.unit.crd_support import openapi_schema, undeclared_fields

jsonschema: Any = importlib.import_module("jsonschema")

_NAMES = st.from_regex(r"\A[a-z]([a-z0-9-]{0,10}[a-z0-9])?\Z", fullmatch=True)
_CONFIG_VALUES = st.one_of(
    st.integers(-(10**7), 10**7),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)
_CONFIGS = st.one_of(
    st.none(),
    st.dictionaries(st.from_regex(r"\A[a-z][a-z_-]{0,15}\Z", fullmatch=True), _CONFIG_VALUES, max_size=5),
    st.fixed_dictionaries({"port": st.integers(1, 65535), "served-model-name": _NAMES}),
)
_CACHE_URIS = st.sampled_from([None, "hostpath:///tmp/cache", "hostpath://data/models/", "pvc://models", "pvc:///c"])
_LIST_ONLY = ("minReplicas", "maxReplicas", "loraAdapters")
_SINGLE_RANGE_ONLY = ("loraAdapters",)
_MODEL_URIS = st.sampled_from(["hf://Qwen/Qwen2.5-0.5B", "s3://bucket/model", "ms://org/m", "obs://b/m"])


def _worker(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"type": st.just(kind), "image": st.just("vllm/vllm-openai:v0.9.0")},
        optional={
            "replicas": st.integers(0, 3),
            "pods": st.integers(0, 4),
            "config": _CONFIGS,
            "resources": st.just({"limits": {"nvidia.com/gpu": 1, "memory": "8Gi"}, "requests": {"cpu": "500m"}}),
            "tolerations": st.just([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        },
    )


@st.composite
def _backend(draw: st.DrawFn, name: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["vLLM", "vLLMDisaggregated", "SGLang"]))
    if kind == "vLLMDisaggregated":
        workers = [draw(_worker("prefill")), draw(_worker("decode"))]
    else:
        workers = [draw(_worker("server"))]
    replicas = draw(st.integers(1, 3))
    backend: dict[str, Any] = {
        "name": name,
        "type": kind,
        "modelURI": draw(_MODEL_URIS),
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "workers": workers,
    }
    cache = draw(_CACHE_URIS)
    if cache is not None:
        backend["cacheURI"] = cache
    if draw(st.booleans()):
        backend["loraAdapters"] = [
            {"name": lora, "artifactURL": f"hf://org/{lora}"}
            for lora in draw(st.lists(_NAMES, max_size=3, unique=True))
        ]
    if draw(st.booleans()):
        backend["env"] = [{"name": "RUNTIME_PORT", "value": str(draw(st.integers(1024, 60000)))}]
    return backend


@st.composite
def modelboosters(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True))
    backends = [draw(_backend(name)) for name in names]
    spec: dict[str, Any] = {"backends": backends}
    scaling = draw(st.sampled_from(["none", "model", "backend", "single", "single-range"]))
    policy = {"metrics": [{"metricName": "kv_cache_usage", "targetValue": "80"}]}
    if scaling == "single":
        # Kthena v1.0's shape: one backend with a fixed replica count (0 included), no LoRA.
        single = {key: value for key, value in backends[0].items() if key not in _LIST_ONLY}
        spec = {"backend": {**single, "replicas": draw(st.integers(0, 3))}}
    elif scaling == "single-range":
        # Kthena v0.2-v0.4's shape: one backend with a replica range, scaled by the model-level policy or fixed.
        single = {key: value for key, value in backends[0].items() if key not in _SINGLE_RANGE_ONLY}
        spec = {"backend": single}
        if draw(st.booleans()):
            spec["autoscalingPolicy"] = policy
            single["maxReplicas"] = single["minReplicas"] + draw(st.integers(0, 3))
    elif scaling == "model":
        spec["autoscalingPolicy"] = policy
        for backend in backends:
            backend["scalingCost"] = draw(st.integers(1, 10))
            backend["maxReplicas"] = backend["minReplicas"] + draw(st.integers(0, 3))
    elif scaling == "backend":
        backends[0]["autoscalingPolicy"] = policy
        backends[0]["maxReplicas"] = backends[0]["minReplicas"] + 2
    return {
        "apiVersion": "workload.serving.volcano.sh/v1alpha1",
        "kind": "ModelBooster",
        "metadata": {"name": draw(_NAMES), "namespace": "default", "uid": "7d5c6a3e-0000-4000-8000-000000000001"},
        "spec": spec,
    }


@cache
def _validator(kind: str) -> Any:
    return jsonschema.Draft4Validator(openapi_schema(kind))


def _schema_problems(child: dict[str, Any]) -> list[str]:
    schema = openapi_schema(child["kind"])
    validator = _validator(child["kind"])
    problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(child)]
    problems += [f"{path}: not declared (would be pruned)" for path in undeclared_fields(child, schema)]
    return problems


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modelboosters())
def test_an_admitted_modelbooster_renders_children_that_fit_their_crds(document: dict[str, Any]) -> None:
    try:
        booster = parse_modelbooster(document)
    except ValidationFailed:
        return  # refused at admission: nothing to render
    children = synthesize(booster, SynthesisSettings())
    assert children
    for child in children:
        name = child["metadata"]["name"]
        assert is_dns1123_label(name), name
        assert _schema_problems(child) == [], f"{child['kind']} {name}"


def test_the_generator_reaches_admitted_objects_of_every_shape() -> None:
    """Guard against a generator that only ever produces refused objects (the property would be vacuous)."""
    admitted: set[tuple[str, ...]] = set()

    # Derandomized: a reach that depends on the run's luck would fail now and then with nothing broken.
    @settings(max_examples=120, deadline=None, database=None, derandomize=True)
    @given(modelboosters())
    def collect(document: dict[str, Any]) -> None:
        try:
            booster = parse_modelbooster(document)
        except ValidationFailed:
            return
        admitted.update((backend.type,) for backend in booster.spec.backends)
        if booster.spec.backend is not None:
            admitted.add(("single",) if booster.spec.backend.replicas is not None else ("single-range",))
            if booster.spec.backends[0].autoscaling_policy is not None:
                admitted.add(("single-range", "autoscaled"))
        if booster.spec.autoscaling_policy is not None:
            admitted.add(("model-level",))
        if any(backend.autoscaling_policy for backend in booster.spec.backends):
            admitted.add(("backend-level",))

    collect()
    shapes = {("single",), ("single-range",), ("single-range", "autoscaled")}
    assert {("vLLM",), ("vLLMDisaggregated",), ("SGLang",), ("model-level",), ("backend-level",), *shapes} <= admitted
