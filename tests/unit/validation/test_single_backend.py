"""Validation of the backend shapes (docs/design/api.md §8, docs/design/validation.md §8), Kthena v1.0's above
all: the rules that exactly one of spec.backend and spec.backends is given, each failure with its own type and
fix — from the webhook's function and from the CRD's CEL rules, with the same line — and the newer line's rules
(docs/design/validation.md §4 and §6) reported at the `spec.backend` paths the user wrote. Kthena v0.2-v0.4's
range is tests/unit/validation/test_range_backend.py. Expected lines are written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from shared.api.modelbooster import ModelBooster
from shared.defaults import apply_defaults
from shared.validation import parse_modelbooster, validate_modelbooster, validate_update
from tests.unit.crd_support import cel_denials, openapi_schema
from tests.unit.factories import backend, modelbooster, policy, single_backend, single_modelbooster, worker

NEITHER = (
    "spec: Required value: must specify one of spec.backend (one backend, as Kthena v0.2 and later write it) or "
    "spec.backends (a list of backends, as Kthena v0.1.0 writes it)"
)
BOTH = (
    "spec.backends: Forbidden: may not be set together with spec.backend: keep spec.backend for one backend, or "
    "spec.backends for a list of backends, and remove the other"
)
NO_AUTOSCALING = (
    "spec.autoscalingPolicy: Forbidden: a spec.backend with replicas (Kthena v1.0) has no autoscaling: it runs "
    "spec.backend.replicas replicas; to autoscale it, replace replicas with minReplicas and maxReplicas (as Kthena "
    "v0.2-v0.4 write it)"
)
RATE = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
TOPO = "topology configuration of ModelServing is not supported; create the ModelServing yourself"


def lines(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[str]:
    return [error.render() for error in validate_modelbooster(obj, old=old)]


def cel_lines(obj: dict[str, Any]) -> list[str]:
    """What kube-apiserver prints for the CRD's CEL rules on create, with the webhook down."""
    return cel_denials(obj, openapi_schema("ModelBooster"))


def test_a_single_backend_object_is_valid_and_decodes_to_the_list_of_one() -> None:
    obj = single_modelbooster(single_backend(replicas=3))
    assert lines(obj) == []
    assert cel_lines(obj) == []
    booster = parse_modelbooster(obj)
    assert booster.spec.backend is not None
    (internal,) = booster.spec.backends
    assert (internal.name, internal.min_replicas, internal.max_replicas) == ("a", 3, 3)
    assert (internal.route_weight, internal.autoscaling_policy, internal.lora_adapters) == (None, None, None)
    # Serialized, it is still the shape the user wrote.
    assert set(booster.to_wire()["spec"]) == {"backend"}


def both() -> dict[str, Any]:
    obj = modelbooster()
    obj["spec"]["backend"] = single_backend()
    return obj


def neither() -> dict[str, Any]:
    obj = modelbooster()
    del obj["spec"]["backends"]
    return obj


@pytest.mark.parametrize(("obj", "expected"), [(both(), BOTH), (neither(), NEITHER)], ids=["both", "neither"])
def test_exactly_one_shape_from_the_webhook_and_from_cel(obj: dict[str, Any], expected: str) -> None:
    """Neither is a missing field, both a field too many: each its own type and message, saying the fix."""
    assert lines(obj) == [expected]
    assert lines(apply_defaults(obj).obj) == [expected]
    assert cel_lines(obj) == [expected]


def test_neither_and_both_are_told_apart() -> None:
    (missing,) = validate_modelbooster(neither())
    (extra,) = validate_modelbooster(both())
    assert (missing.type, missing.path) == ("Required", "spec")
    assert (extra.type, extra.path) == ("Forbidden", "spec.backends")
    assert missing.detail != extra.detail


def test_a_null_shape_counts_as_absent_as_the_api_server_prunes_it() -> None:
    obj = single_modelbooster()
    obj["spec"]["backends"] = None
    assert lines(obj) == []
    listed = modelbooster()
    listed["spec"]["backend"] = None
    assert lines(listed) == []
    nulls = modelbooster()
    nulls["spec"] = {"backend": None, "backends": None}
    assert lines(nulls) == [NEITHER]


def test_the_model_refuses_a_wrong_shape_too() -> None:
    with pytest.raises(ValueError, match=r"may not be set together with spec\.backend"):
        ModelBooster.model_validate(both())
    with pytest.raises(ValueError, match=r"must specify one of spec\.backend"):
        ModelBooster.model_validate(neither())


def test_a_kthena_v1_backend_cannot_autoscale() -> None:
    obj = single_modelbooster(autoscalingPolicy=policy())
    assert lines(apply_defaults(obj).obj) == [NO_AUTOSCALING]
    assert cel_lines(obj) == [NO_AUTOSCALING]
    # No default of Kthena v0.1.0's model-level autoscaling is added to it.
    assert "costExpansionRatePercent" not in apply_defaults(obj).obj["spec"]


def test_a_kthena_v1_backend_with_autoscaling_shows_all_its_errors_at_once() -> None:
    """The refused policy does not hide the object's other problems until the next attempt."""
    one = single_backend(workers=[worker(image=" ")], rateLimit={"tokens": 1})
    obj = single_modelbooster(one, autoscalingPolicy=policy(behavior={"scaleDown": {}}))
    assert lines(apply_defaults(obj).obj) == [
        NO_AUTOSCALING,
        'spec.backend.workers[0].image: Invalid value: " ": invalid container image reference: image cannot be '
        "empty or whitespace only",
        "spec.autoscalingPolicy.behavior: Forbidden: behavior is not supported; create AutoscalingPolicy + Binding "
        "yourself",
        f"spec.backend.rateLimit: Forbidden: {RATE}",
    ]
    # Decoding errors too.
    broken = single_modelbooster(single_backend(replicas="2"), autoscalingPolicy={"metrics": []})
    assert lines(broken) == [
        NO_AUTOSCALING,
        'spec.backend.replicas: Invalid value: "2": must be of type integer',
        "spec.autoscalingPolicy.metrics: Invalid value: 0: should have at least 1 items",
    ]


def test_the_four_unsupported_features_are_refused_in_the_single_shape_too() -> None:
    one = single_backend(rateLimit={"tokens": 1}, networkTopology={"a": 1}, topology={"b": 2},
                         workers=[worker(networkTopology={"c": 3})])  # fmt: skip
    obj = single_modelbooster(one, rateLimit={"x": 1})
    assert lines(obj) == [
        f"spec.rateLimit: Forbidden: {RATE}",
        f"spec.backend.rateLimit: Forbidden: {RATE}",
        f"spec.backend.networkTopology: Forbidden: {TOPO}",
        f"spec.backend.topology: Forbidden: {TOPO}",
        f"spec.backend.workers[0].networkTopology: Forbidden: {TOPO}",
    ]
    # CEL checks a worker's field on its backend (`workers` is an atomic list, where oldSelf is refused).
    assert sorted(cel_lines(obj)) == sorted(
        [
            f"spec.rateLimit: Forbidden: {RATE}",
            f"spec.backend.rateLimit: Forbidden: {RATE}",
            f"spec.backend.networkTopology: Forbidden: {TOPO}",
            f"spec.backend.topology: Forbidden: {TOPO}",
            f"spec.backend.workers: Forbidden: {TOPO}",
        ]
    )


# The newer line's admission rules, at its own paths (its webhook validates exactly this shape).
PVC_CACHE = (
    'spec.backend.cacheURI: Invalid value: "hostpath://tmp": when modelURI uses pvc://, cacheURI must also use '
    "pvc://. The downloader only has access to the volume mounted via cacheURI. Set cacheURI to the PVC that holds "
    "the model (e.g. pvc://<claimName>) and set modelURI to the path within that PVC (e.g. "
    "pvc:///<claimName>/<path-to-model>)"
)
KV_CONFIG = '{"kv_connector": "%s", "kv_role": "%s"}'


def pd(prefill: str, decode: str) -> list[dict[str, Any]]:
    return [
        worker(type="prefill", config={"kv-transfer-config": KV_CONFIG % (prefill, "kv_producer")}),
        worker(type="decode", config={"kv-transfer-config": KV_CONFIG % (decode, "kv_consumer")}),
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"replicas": 1_000_001},
         ["spec.backend.replicas: Invalid value: 1000001: must be less than or equal to 1000000"]),
        ({"workers": [worker(image=" \t")]},
         ['spec.backend.workers[0].image: Invalid value: " \\t": invalid container image reference: '
          "image cannot be empty or whitespace only"]),
        ({"workers": [worker(), worker()]},
         ["spec.backend.workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker"]),
        ({"workers": [worker(type="decode")]},
         ["spec.backend.workers[0].type: Invalid value: \"decode\": If backend type is 'vLLM', the worker type must "
          "be 'server'"]),
        ({"type": "vLLMDisaggregated",
          "workers": [worker(type="prefill", config={"port": None}), worker(type="decode")]},
         ['spec.backend.workers[0].config.port: Invalid value: null: invalid port "<nil>" for worker prefill']),
        ({"type": "vLLMDisaggregated",
          "workers": [worker(type="prefill", config={"port": 9000}), worker(type="decode", config={"port": 9001})]},
         ["spec.backend.workers[1].config.port: Invalid value: 9001: workers use different engine ports: 9000 and "
          "9001"]),
        ({"modelURI": "pvc://models/qwen", "cacheURI": "hostpath://tmp"}, [PVC_CACHE]),
        ({"modelURI": "pvc://models/../x", "cacheURI": "pvc://models"},
         ['spec.backend.modelURI: Invalid value: "pvc://models/../x": pvc:// modelURI must not contain \'..\' path '
          "segments"]),
        ({"type": "vLLMDisaggregated", "workers": pd("NixlConnector", "MooncakeConnectorV1")},
         ['spec.backend.workers: Invalid value: "a": invalid kv connector configuration: backend a: kv_connector '
          'mismatch between prefill ("NixlConnector") and decode ("MooncakeConnectorV1") workers; prefill and '
          "decode must use the same kv connector"]),
        ({"type": "vLLMDisaggregated", "workers": pd("MooncakeConnector", "MooncakeConnectorV1")}, []),
        ({"type": "vLLMDisaggregated",
          "workers": [worker(type="prefill", config={"kv-transfer-config": {"kv_connector": "NixlConnector"}}),
                      worker(type="decode")]},
         ['spec.backend.workers[0].config.kv-transfer-config: Invalid value: "object": must be a JSON string, not a '
          "map; write it as kv-transfer-config: '{\"kv_connector\":\"NixlConnector\"}'"]),
        ({"modelURI": "pvc://models/qwen"},
         ["spec.backend.cacheURI: Required value: a pvc:// modelURI is read through the PVC that cacheURI names; set "
          "cacheURI: pvc://models (the claim that holds the model, the first segment of modelURI)"]),
        ({"workers": [worker(type="prefill"), worker(type="decode")]},
         ["spec.backend.workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker; for "
          "prefill and decode workers use type: vLLMDisaggregated"]),
        ({"type": "MindIE"},
         ['spec.backend.type: Invalid value: "MindIE": not supported yet; supported: vLLM, vLLMDisaggregated, SGLang']),
        ({"name": "b" * 62},
         [f'spec.backend.name: Invalid value: "m-{"b" * 62}": the generated ModelServing and ModelServer name '
          "<metadata.name>-<backend name> must be a DNS-1123 label of at most 63 characters (it is also a pod label "
          "value); shorten metadata.name or the backend name"]),
    ],
    ids=["replica-bound", "image", "worker-count", "worker-type", "port", "ports-differ", "pvc-cache", "pvc-dotdot",
         "kv-mismatch", "mooncake-compatible", "kv-map", "pvc-no-cache", "pd-as-vllm", "sglang", "generated-name"],
)  # fmt: skip
def test_the_newer_lines_rules_at_its_paths(fields: dict[str, Any], expected: list[str]) -> None:
    obj = single_modelbooster(single_backend(**fields))
    assert lines(apply_defaults(obj).obj) == expected


def test_fields_of_the_other_shape_say_where_they_belong() -> None:
    obj = single_modelbooster(single_backend(routeWeight=50, autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.backend.routeWeight: Forbidden: field not declared in schema; routeWeight is a field of "
        "spec.backends[] (Kthena v0.1.0: several backends); a spec.backend has none",
        "spec.backend.autoscalingPolicy: Forbidden: field not declared in schema; a single backend autoscales with "
        "spec.autoscalingPolicy and its minReplicas and maxReplicas (as Kthena v0.2-v0.4 write it)",
    ]
    listed = modelbooster(backend(replicas=2))
    assert lines(listed) == [
        "spec.backends[0].replicas: Forbidden: field not declared in schema; replicas is a field of spec.backend "
        "(Kthena v1.0); a spec.backends[] entry has minReplicas and maxReplicas"
    ]


def test_a_lora_adapter_may_not_take_the_model_name_clients_send() -> None:
    obj = modelbooster(backend(loraAdapters=[{"name": "chat", "artifactURL": "hf://org/chat"}]), name="m")
    obj["spec"]["name"] = "chat"
    assert lines(obj) == [
        'spec.backends[0].loraAdapters[0].name: Invalid value: "chat": lora name cannot be the same as the model '
        "name clients send (spec.name)"
    ]
    obj["spec"]["name"] = "other"
    assert lines(obj) == []


# --- UPDATE: the same rule across shapes -------------------------------------------------------------------------

REPLICAS_CHANGE = (
    "Forbidden: cannot change from 1 to 2: the generated ModelServing's gangPolicy.minRoleReplicas is immutable; "
    "delete and recreate the ModelBooster (or give the backend a new name) to change it"
)


def test_a_workers_replicas_stay_fixed_in_the_single_shape() -> None:
    old = single_modelbooster(single_backend(workers=[worker(replicas=1)]))
    new = single_modelbooster(single_backend(workers=[worker(replicas=2)]))
    assert lines(new, old=old) == [f"spec.backend.workers[0].replicas: {REPLICAS_CHANGE}"]
    # The backend's own replicas are the ModelServing's, which may change.
    assert lines(single_modelbooster(single_backend(replicas=5)), old=old) == []


@pytest.mark.parametrize("direction", ["list-to-single", "single-to-list"])
def test_moving_between_shapes_keeps_the_same_backend_under_the_same_rules(direction: str) -> None:
    listed = modelbooster(backend("a", workers=[worker(replicas=1)]))
    single = single_modelbooster(single_backend("a", workers=[worker(replicas=1)]))
    old, new = (listed, single) if direction == "list-to-single" else (single, listed)
    assert lines(new, old=old) == []
    changed = single_modelbooster(single_backend("a", workers=[worker(replicas=2)]))
    changed_list = modelbooster(backend("a", workers=[worker(replicas=2)]))
    if direction == "list-to-single":
        assert lines(changed, old=listed) == [f"spec.backend.workers[0].replicas: {REPLICAS_CHANGE}"]
    else:
        assert lines(changed_list, old=single) == [f"spec.backends[0].workers[0].replicas: {REPLICAS_CHANGE}"]
    # A new backend name is a new ModelServing: any replicas.
    renamed = single_modelbooster(single_backend("b", workers=[worker(replicas=2)]))
    assert lines(renamed, old=listed) == []


# --- UPDATE ratcheting reads the single backend's own paths -------------------------------------------------------

LONG = "b" * 62  # m-<62 characters>: the generated ModelServing name is one character too long


def test_an_update_carries_over_a_problem_a_kthena_v1_object_was_stored_with() -> None:
    """Kthena v1.0 did not check the generated names: such an object stays manageable, its problem a warning."""
    old = apply_defaults(single_modelbooster(single_backend(LONG))).obj
    new = apply_defaults(single_modelbooster(single_backend(LONG, replicas=4))).obj
    verdict = validate_update(new, old=old)
    assert verdict.errors == []
    assert [error.path for error in verdict.carried] == ["spec.backend.name"]


def test_an_update_that_brings_the_problem_is_refused_at_the_single_backend_path() -> None:
    old = apply_defaults(single_modelbooster(single_backend("b"))).obj
    new = apply_defaults(single_modelbooster(single_backend(LONG))).obj
    assert [error.path for error in validate_update(new, old=old).errors] == ["spec.backend.name"]


def test_the_reads_of_a_cross_field_rule_name_the_single_backends_fields() -> None:
    (error,) = validate_modelbooster(single_modelbooster(single_backend(modelURI="pvc://m/x", cacheURI="pvc://c")))
    assert error.path == "spec.backend.modelURI"
    assert error.reads == ("spec.backend.modelURI", "spec.backend.cacheURI")
