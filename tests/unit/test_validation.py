"""Every validation rule, passing and failing, with the exact text a user sees.

Expected lines are written by hand from docs/design/validation.md §4 to §6 (whose §4 uses the real paths
`spec.backends[i].scalingCost`, `spec.autoscalingPolicy` and says what the no-autoscaling rule checks).
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.errors import MAX_COLLECTED_ERRORS, ValidationFailed, format_denial
from shared.validation import parse_modelbooster, validate_modelbooster
from tests.unit.factories import backend, modelbooster, pd_workers, policy, worker

# The no-autoscaling rule's message: the reference's words, then the two ways to let replicas move.
NO_AUTOSCALING = (
    "minReplicas and maxReplicas must be equal when no autoscaling is set; to let replicas move between them, set "
    'autoscalingPolicy, or annotate the ModelBooster modelbooster.io/external-replicas: "true" so they are set from '
    "outside (Inferno, KEDA or an HPA)"
)


def lines(obj: dict[str, Any], *, old: dict[str, Any] | None = None) -> list[str]:
    return [error.render() for error in validate_modelbooster(obj, old=old)]


def model_level(*backends: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A valid model-level autoscaled object around the given backends."""
    spec.setdefault("autoscalingPolicy", policy())
    spec.setdefault("costExpansionRatePercent", 200)
    return modelbooster(*backends, **spec)


def scaled(name: str = "a", **fields: Any) -> dict[str, Any]:
    """A backend ready for model-level autoscaling."""
    fields.setdefault("scalingCost", 10)
    fields.setdefault("scaleToZeroGracePeriod", "30s")
    fields.setdefault("maxReplicas", 4)
    return backend(name, **fields)


def test_the_baseline_objects_are_valid() -> None:
    assert lines(modelbooster()) == []
    assert lines(model_level(scaled())) == []
    assert lines(modelbooster(backend(autoscalingPolicy=policy(), maxReplicas=3))) == []
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers()))) == []


# --- docs/design/validation.md §4 (1): scaleToZeroGracePeriod --------------------------------------------


def test_grace_period_above_1800_seconds_is_rejected_with_the_go_duration_quoted() -> None:
    obj = model_level(scaled(scaleToZeroGracePeriod="31m"))
    assert lines(obj) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "31m0s": '
        "scaleToZeroGracePeriod cannot exceed 1800 seconds"
    ]


def test_grace_period_of_exactly_1800_seconds_passes() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="30m"))) == []
    assert lines(model_level(scaled(scaleToZeroGracePeriod="1800s"))) == []


def test_negative_grace_period_is_rejected() -> None:
    obj = model_level(scaled(scaleToZeroGracePeriod="-1m30s"))
    assert lines(obj) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "-1m30s": scaleToZeroGracePeriod cannot be negative'
    ]


def test_zero_grace_period_passes() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="0s"))) == []


def test_unparsable_grace_period_is_a_decode_error_with_gos_wording() -> None:
    assert lines(model_level(scaled(scaleToZeroGracePeriod="30"))) == [
        'spec.backends[0].scaleToZeroGracePeriod: Invalid value: "30": time: missing unit in duration "30"'
    ]


# --- (2) replica bounds -----------------------------------------------------------------------------------


def test_min_above_max_is_rejected() -> None:
    obj = modelbooster(backend(minReplicas=3, maxReplicas=2, autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 3: minReplicas cannot be greater than maxReplicas"
    ]


def test_min_equal_to_max_passes() -> None:
    assert lines(modelbooster(backend(minReplicas=2, maxReplicas=2, autoscalingPolicy=policy()))) == []


def test_sum_of_max_replicas_above_a_million_is_rejected() -> None:
    obj = modelbooster(
        backend("a", maxReplicas=600_000, autoscalingPolicy=policy()),
        backend("b", maxReplicas=600_000, autoscalingPolicy=policy()),
    )
    assert lines(obj) == [
        "spec.backends: Invalid value: 1200000: sum of maxReplicas across all backends (1200000) cannot exceed 1000000"
    ]


def test_sum_of_max_replicas_of_exactly_a_million_passes() -> None:
    obj = modelbooster(
        backend("a", maxReplicas=500_000, autoscalingPolicy=policy()),
        backend("b", maxReplicas=500_000, autoscalingPolicy=policy()),
    )
    assert lines(obj) == []


# --- (3) worker images ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("   ", 'Invalid value: "   ": invalid container image reference: image cannot be empty or whitespace only'),
        (
            "\t\u3000",
            'Invalid value: "\\t\u3000": invalid container image reference: image cannot be empty or whitespace only',
        ),
        (
            "vllm/vllm openai",
            'Invalid value: "vllm/vllm openai": invalid container image reference: image cannot contain spaces',
        ),
        # Beyond the plain space: any Go whitespace, as the newer line checks.
        (
            "vllm/vllm\topenai",
            'Invalid value: "vllm/vllm\\topenai": invalid container image reference: image cannot contain whitespace',
        ),
    ],
)
def test_bad_images_are_rejected(image: str, expected: str) -> None:
    obj = modelbooster(backend(workers=[worker(image=image)]))
    assert lines(obj) == [f"spec.backends[0].workers[0].image: {expected}"]


@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.10.1", "", "registry:5000/a/b@sha256:abc", "a\x1cb"])
def test_good_or_empty_images_pass(image: str) -> None:
    # U+001C is whitespace to Python's str.isspace but not to Go: it must not be rejected as whitespace.
    assert lines(modelbooster(backend(workers=[worker(image=image)]))) == []


# --- (4) autoscaling scope ----------------------------------------------------------------------------------


def test_worked_example_of_the_reference_with_our_paths_and_text() -> None:
    """The reference's own error-formatting example, with our paths and text (docs/design/validation.md §4)."""
    obj = modelbooster(
        backend("backend1", minReplicas=1, maxReplicas=3, scalingCost=1, scaleToZeroGracePeriod="300ns"),
        backend("backend2", minReplicas=0, maxReplicas=3, scalingCost=2, scaleToZeroGracePeriod="600ns"),
        costExpansionRatePercent=50,
    )
    assert format_denial(validate_modelbooster(obj)) == (
        "validation failed:\n"
        "  - spec.backends[0].scalingCost: Forbidden: cost must not be provided when model-level autoscaling "
        "is not set\n"
        "  - spec.backends[0].scaleToZeroGracePeriod: Forbidden: scaleToZeroGracePeriod must not be provided when "
        "model-level autoscaling is not set\n"
        "  - spec.backends[1].scalingCost: Forbidden: cost must not be provided when model-level autoscaling "
        "is not set\n"
        "  - spec.backends[1].scaleToZeroGracePeriod: Forbidden: scaleToZeroGracePeriod must not be provided when "
        "model-level autoscaling is not set\n"
        "  - spec.costExpansionRatePercent: Forbidden: costExpansionRatePercent must not be provided when model-level "
        "autoscaling is not set\n"
        f'  - spec.backends[0]: Invalid value: "minReplicas=1, maxReplicas=3": {NO_AUTOSCALING}\n'
        f'  - spec.backends[1]: Invalid value: "minReplicas=0, maxReplicas=3": {NO_AUTOSCALING}'
    )


def test_scaling_cost_zero_is_allowed_without_model_level_autoscaling() -> None:
    assert lines(modelbooster(backend(scalingCost=0))) == []


def test_backend_level_autoscaling_needs_min_replicas_of_at_least_one() -> None:
    obj = modelbooster(backend(minReplicas=0, maxReplicas=3, autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 0: minReplicas must be >= 1 when backend-level autoscaling is set"
    ]


def test_without_autoscaling_zero_equals_zero_passes() -> None:
    # The rule checks equality only (docs/design/validation.md §4, item 4), whatever its text said.
    assert lines(modelbooster(backend(minReplicas=0, maxReplicas=1)))[0].startswith("spec.backends[0]: Invalid")
    obj = modelbooster(backend(minReplicas=0, maxReplicas=1, autoscalingPolicy=policy()))
    assert lines(obj)[0].startswith("spec.backends[0].minReplicas")


def test_a_backend_level_policy_anywhere_lifts_the_equality_rule_for_all_backends() -> None:
    obj = modelbooster(backend("a", maxReplicas=3, autoscalingPolicy=policy()), backend("b", maxReplicas=5))
    assert lines(obj) == []


def test_model_level_autoscaling_requires_cost_grace_period_and_expansion_rate() -> None:
    obj = modelbooster(backend(maxReplicas=4), autoscalingPolicy=policy())
    assert lines(obj) == [
        "spec.backends[0].scalingCost: Required value: cost must be provided when model-level autoscaling is set",
        "spec.backends[0].scaleToZeroGracePeriod: Required value: scaleToZeroGracePeriod must be provided when "
        "model-level autoscaling is set",
        "spec.costExpansionRatePercent: Required value: costExpansionRatePercent must be provided and > 0 when "
        "model-level autoscaling is set",
    ]


def test_model_level_scaling_cost_zero_counts_as_missing() -> None:
    assert lines(model_level(scaled(scalingCost=0))) == [
        "spec.backends[0].scalingCost: Required value: cost must be provided when model-level autoscaling is set"
    ]


def test_model_level_cost_expansion_rate_zero_is_accepted() -> None:
    assert lines(model_level(scaled(), costExpansionRatePercent=0)) == []


def test_model_level_sum_of_min_replicas_must_be_at_least_one() -> None:
    obj = model_level(scaled("a", minReplicas=0), scaled("b", minReplicas=0))
    assert lines(obj) == [
        "spec.backends: Invalid value: 0: sum of all minReplicas must be >= 1 when model-level autoscaling is set"
    ]
    assert lines(model_level(scaled("a", minReplicas=0), scaled("b", minReplicas=1))) == []


def test_negative_min_replicas_never_reaches_the_rules_the_schema_rejects_it() -> None:
    assert lines(model_level(scaled(minReplicas=-1))) == [
        "spec.backends[0].minReplicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_model_and_backend_level_autoscaling_together_are_forbidden() -> None:
    obj = model_level(scaled(autoscalingPolicy=policy()))
    assert lines(obj) == [
        "spec.autoscalingPolicy: Forbidden: spec.autoscalingPolicy and spec.backends[].autoscalingPolicy cannot both "
        "be set; choose model-level or backend-level autoscaling, not both"
    ]


# --- (5) worker types ---------------------------------------------------------------------------------------


def test_vllm_needs_exactly_one_worker() -> None:
    obj = modelbooster(backend(workers=[worker(), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'vLLM', there must be exactly one worker"
    ]


def test_vllm_worker_must_be_a_server() -> None:
    obj = modelbooster(backend(workers=[worker(type="decode")]))
    assert lines(obj) == [
        "spec.backends[0].workers[0].type: Invalid value: \"decode\": If backend type is 'vLLM', the worker type "
        "must be 'server'"
    ]


def test_a_worker_without_type_is_a_server() -> None:
    assert lines(modelbooster(backend(workers=[{"image": "vllm/vllm-openai"}]))) == []


def test_disaggregated_workers_must_be_prefill_or_decode() -> None:
    obj = modelbooster(backend(type="vLLMDisaggregated", workers=[*pd_workers(), worker(type="server")]))
    assert lines(obj) == [
        "spec.backends[0].workers[2].type: Invalid value: \"server\": If backend type is 'vLLMDisaggregated', all "
        "workers must be type 'prefill' or 'decode'",
    ]


def test_sglang_with_two_workers_gets_the_reference_error_and_ours() -> None:
    obj = modelbooster(backend(type="SGLang", workers=[worker(), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers: Invalid value: 2: If backend type is 'SGLang', there must be exactly one worker",
        'spec.backends[0].type: Invalid value: "SGLang": not supported yet; supported: vLLM, vLLMDisaggregated',
    ]


def test_mindie_disaggregated_rejects_server_workers() -> None:
    obj = modelbooster(backend(type="MindIEDisaggregated", workers=[worker(type="controller"), worker()]))
    assert lines(obj) == [
        "spec.backends[0].workers[1].type: Invalid value: \"server\": If backend type is 'MindIEDisaggregated', all "
        "workers must be type 'prefill', 'decode', 'controller', or 'coordinator' (not 'server')",
        'spec.backends[0].type: Invalid value: "MindIEDisaggregated": not supported yet; supported: vLLM, '
        "vLLMDisaggregated",
    ]


# --- (6) LoRA names -----------------------------------------------------------------------------------------


def lora(name: str) -> dict[str, str]:
    return {"name": name, "artifactURL": f"hf://adapters/{name}"}


def test_lora_named_like_the_model_is_rejected() -> None:
    obj = modelbooster(backend(loraAdapters=[lora("m")]), name="m")
    assert lines(obj) == [
        'spec.backends[0].loraAdapters[0].name: Invalid value: "m": lora name cannot be the same as model name'
    ]


def test_duplicate_lora_in_one_backend_is_rejected_but_across_backends_is_fine() -> None:
    obj = modelbooster(backend(loraAdapters=[lora("x"), lora("x")]))
    assert lines(obj) == [
        'spec.backends[0].loraAdapters[1].name: Invalid value: "x": lora name must be unique within the backend'
    ]
    assert lines(modelbooster(backend("a", loraAdapters=[lora("x")]), backend("b", loraAdapters=[lora("x")]))) == []


def test_a_lora_both_duplicated_and_named_like_the_model_gets_both_errors() -> None:
    obj = modelbooster(backend(loraAdapters=[lora("m"), lora("m")]), name="m")
    assert lines(obj) == [
        'spec.backends[0].loraAdapters[0].name: Invalid value: "m": lora name cannot be the same as model name',
        'spec.backends[0].loraAdapters[1].name: Invalid value: "m": lora name cannot be the same as model name',
        'spec.backends[0].loraAdapters[1].name: Invalid value: "m": lora name must be unique within the backend',
    ]


# --- docs/design/validation.md §5: unsupported features -----------------------------------------------------

RATE = "rate limiting of the generated ModelRoute is not supported; manage a ModelRoute yourself"
TOPO = "topology configuration of ModelServing is not supported; create the ModelServing yourself"
PANIC = "panicPolicy is not supported; create AutoscalingPolicy + Binding yourself"
BEHAVIOR = "behavior is not supported; create AutoscalingPolicy + Binding yourself"


def test_spec_rate_limit_is_rejected() -> None:
    assert lines(modelbooster(rateLimit={"unit": "second"})) == [f"spec.rateLimit: Forbidden: {RATE}"]


@pytest.mark.parametrize(("field", "detail"), [("rateLimit", RATE), ("networkTopology", TOPO), ("topology", TOPO)])
def test_backend_unsupported_fields_are_rejected(field: str, detail: str) -> None:
    obj = modelbooster(backend("a", **{field: {"anything": 1}}))
    assert lines(obj) == [f"spec.backends[0].{field}: Forbidden: {detail}"]


def test_worker_network_topology_is_rejected() -> None:
    obj = modelbooster(backend(workers=[worker(networkTopology={"mode": "hard"})]))
    assert lines(obj) == [f"spec.backends[0].workers[0].networkTopology: Forbidden: {TOPO}"]


def test_a_behavior_with_panic_policy_yields_both_errors_at_model_level() -> None:
    obj = model_level(scaled(), autoscalingPolicy=policy(behavior={"scaleUp": {"panicPolicy": {"period": "1m"}}}))
    assert lines(obj) == [
        f"spec.autoscalingPolicy.behavior.scaleUp.panicPolicy: Forbidden: {PANIC}",
        f"spec.autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}",
    ]


def test_a_behavior_without_panic_policy_yields_one_error_at_backend_level() -> None:
    obj = modelbooster(backend(maxReplicas=3, autoscalingPolicy=policy(behavior={"scaleDown": {"period": "1m"}})))
    assert lines(obj) == [f"spec.backends[0].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}"]


def test_empty_behavior_is_still_a_behavior() -> None:
    obj = modelbooster(backend(maxReplicas=3, autoscalingPolicy=policy(behavior={})))
    assert lines(obj) == [f"spec.backends[0].autoscalingPolicy.behavior: Forbidden: {BEHAVIOR}"]


def test_explicit_nulls_count_as_absent_as_the_api_server_prunes_them() -> None:
    obj = modelbooster(backend(rateLimit=None, topology=None), rateLimit=None)
    assert lines(obj) == []


# --- docs/design/validation.md §6: additional rules ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["SGLang", "MindIE"])
def test_backend_types_we_cannot_synthesize_are_rejected(kind: str) -> None:
    assert lines(modelbooster(backend(type=kind))) == [
        f'spec.backends[0].type: Invalid value: "{kind}": not supported yet; supported: vLLM, vLLMDisaggregated'
    ]


@pytest.mark.parametrize(
    ("workers", "count", "prefill", "decode"),
    [
        ([worker(type="prefill")], 1, 1, 0),
        ([worker(type="decode")], 1, 0, 1),
        ([worker(type="prefill"), worker(type="prefill"), worker(type="decode")], 3, 2, 1),
    ],
)
def test_disaggregated_backend_needs_exactly_one_prefill_and_one_decode(
    workers: list[dict[str, Any]], count: int, prefill: int, decode: int
) -> None:
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=workers))) == [
        f"spec.backends[0].workers: Invalid value: {count}: a vLLMDisaggregated backend needs exactly one prefill "
        f"and one decode worker; found {prefill} prefill and {decode} decode"
    ]


@pytest.mark.parametrize(
    ("config", "shown"), [(["--max-model-len", "8"], '["--max-model-len","8"]'), ("x", '"x"'), (3, "3")]
)
def test_config_must_be_an_object(config: object, shown: str) -> None:
    assert lines(modelbooster(backend(workers=[worker(config=config)]))) == [
        f"spec.backends[0].workers[0].config: Invalid value: {shown}: must be a JSON object of engine arguments"
    ]


def test_a_worker_without_config_is_fine() -> None:
    assert lines(modelbooster(backend(workers=[worker(config=None)]))) == []


def test_workers_must_agree_on_the_engine_port() -> None:
    obj = modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers(prefill={"config": {"port": 9000}})))
    assert lines(obj) == [
        "spec.backends[0].workers[1].config.port: Invalid value: 8000: "
        "workers use different engine ports: 9000 and 8000"
    ]


def test_agreeing_ports_given_as_number_and_string_pass() -> None:
    workers = pd_workers(prefill={"config": {"port": 9000}}, decode={"config": {"port": "9000"}})
    assert lines(modelbooster(backend(type="vLLMDisaggregated", workers=workers))) == []


@pytest.mark.parametrize(
    ("port", "value", "text"),
    [
        (None, "null", "<nil>"),
        (0, "0", "0"),
        (65536, "65536", "65536"),
        ("http", '"http"', "http"),
        (1e6, "1000000", "1e+06"),
        (80.5, "80.5", "80.5"),
    ],
)
def test_invalid_engine_ports_are_rejected(port: object, value: str, text: str) -> None:
    assert lines(modelbooster(backend(workers=[worker(config={"port": port})]))) == [
        f'spec.backends[0].workers[0].config.port: Invalid value: {value}: invalid port "{text}" for worker server'
    ]


def test_valid_engine_port_passes() -> None:
    assert lines(modelbooster(backend(workers=[worker(config={"port": 65535})]))) == []


def kv(connector: str, role: str) -> dict[str, str]:
    return {"kv-transfer-config": f'{{"kv_connector": "{connector}", "kv_role": "{role}"}}'}


def pd(prefill: dict[str, Any] | None, decode: dict[str, Any] | None) -> dict[str, Any]:
    workers = pd_workers(
        prefill={"config": prefill} if prefill is not None else None,
        decode={"config": decode} if decode is not None else None,
    )
    return modelbooster(backend("pd", type="vLLMDisaggregated", workers=workers))


KV_PREFIX = 'spec.backends[0].workers: Invalid value: "pd": invalid kv connector configuration: '


def test_matching_kv_connectors_pass_including_mooncake_and_its_v1() -> None:
    assert lines(pd(kv("NixlConnector", "kv_producer"), kv("NixlConnector", "kv_consumer"))) == []
    assert lines(pd(kv("MooncakeConnector", "kv_both"), kv("MooncakeConnectorV1", "kv_both"))) == []
    assert lines(pd(None, None)) == []


@pytest.mark.parametrize(
    ("prefill", "decode", "detail"),
    [
        (
            kv("NixlConnector", "kv_producer"),
            kv("LMCacheConnectorV1", "kv_consumer"),
            'backend pd: kv_connector mismatch between prefill ("NixlConnector") and decode ("LMCacheConnectorV1") '
            "workers; prefill and decode must use the same kv connector",
        ),
        (
            kv("NixlConnector", "kv_producer"),
            None,
            'backend pd: prefill worker specifies kv_connector "NixlConnector" but the decode worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector",
        ),
        (
            {},
            kv("NixlConnector", "kv_consumer"),
            'backend pd: decode worker specifies kv_connector "NixlConnector" but the prefill worker has no '
            "kv-transfer-config; prefill and decode must configure the same kv connector",
        ),
        (
            kv("P2pNcclConnector", "kv_producer"),
            None,
            'worker prefill: unsupported kv_connector "P2pNcclConnector" (supported: LMCacheConnectorV1, '
            "MooncakeConnector, MooncakeConnectorV1, NixlConnector)",
        ),
        (
            kv("NixlConnector", "kv_consumer"),
            None,
            'worker prefill: invalid kv_role "kv_consumer", expected one of [kv_producer, kv_both]',
        ),
        (
            kv("NixlConnector", "kv_producer"),
            kv("NixlConnector", "kv_producer"),
            'worker decode: invalid kv_role "kv_producer", expected one of [kv_consumer, kv_both]',
        ),
        (
            {"kv-transfer-config": {"kv_connector": "NixlConnector"}},
            None,
            "worker prefill: kv-transfer-config must be a JSON string, got map[string]interface {}; write the object "
            "as a string: kv-transfer-config: '{\"kv_connector\":\"NixlConnector\"}'",
        ),
        ({"kv-transfer-config": 5}, None, "worker prefill: kv-transfer-config must be a JSON string, got float64"),
        (
            {"kv-transfer-config": '{"kv_role": "kv_both"}'},
            None,
            "worker prefill: kv-transfer-config is set but kv_connector is missing",
        ),
        (
            {"kv-transfer-config": '{"kv_connector": "NixlConnector"}'},
            None,
            "worker prefill: kv-transfer-config is set but kv_role is missing",
        ),
        (
            {"kv-transfer-config": "[1]"},
            None,
            "worker prefill: invalid kv-transfer-config: failed to unmarshal config: json: cannot unmarshal array "
            "into Go value of type map[string]interface {}",
        ),
    ],
)
def test_kv_connector_errors(prefill: dict[str, Any] | None, decode: dict[str, Any] | None, detail: str) -> None:
    assert lines(pd(prefill, decode)) == [KV_PREFIX + detail]


def test_kv_transfer_config_that_is_not_json_names_the_parse_problem() -> None:
    (line,) = lines(pd({"kv-transfer-config": "{not json"}, None))
    assert line.startswith(KV_PREFIX + "worker prefill: invalid kv-transfer-config: failed to unmarshal config: ")


PVC_CACHE_DETAIL = (
    "when modelURI uses pvc://, cacheURI must also use pvc://. The downloader only has access to the volume mounted "
    "via cacheURI. Set cacheURI to the PVC that holds the model (e.g. pvc://<claimName>) and set modelURI to the "
    "path within that PVC (e.g. pvc:///<claimName>/<path-to-model>)"
)


def test_pvc_model_needs_a_pvc_cache() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/qwen", cacheURI="hostpath://cache"))
    assert lines(obj) == [f'spec.backends[0].cacheURI: Invalid value: "hostpath://cache": {PVC_CACHE_DETAIL}']
    assert lines(modelbooster(backend(modelURI="pvc:///models/qwen"))) == [
        f'spec.backends[0].cacheURI: Invalid value: "": {PVC_CACHE_DETAIL}'
    ]


def test_pvc_model_may_not_climb_out_with_dot_dot() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/../etc", cacheURI="pvc://models"))
    assert lines(obj) == [
        "spec.backends[0].modelURI: Invalid value: \"pvc:///models/../etc\": pvc:// modelURI must not contain '..' "
        "path segments"
    ]


def test_pvc_cache_must_name_a_single_claim() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/qwen", cacheURI="pvc://models/sub"))
    assert lines(obj) == [
        'spec.backends[0].cacheURI: Invalid value: "pvc://models/sub": pvc:// cacheURI must contain a single PVC '
        "claim name with no path separator (e.g. pvc://<claimName>); claim names cannot contain '/'"
    ]


def test_pvc_model_must_be_reachable_through_the_cache_mount() -> None:
    obj = modelbooster(backend(modelURI="pvc://other/qwen", cacheURI="pvc://models"))
    assert lines(obj) == [
        'spec.backends[0].modelURI: Invalid value: "pvc://other/qwen": PVC source path "/other/qwen" is not '
        'reachable via cacheURI mount "/models". The downloader only has access to PVCs mounted via cacheURI. If the '
        "source model and the cache are on the same PVC, set cacheURI to the PVC name and include that name as the "
        "first path segment of modelURI. Example: cacheURI: pvc://<claimName>, modelURI: "
        "pvc:///<claimName>/<path-to-model>"
    ]


@pytest.mark.parametrize(
    "model_uri", ["pvc:///models/qwen", "pvc://models/qwen/", "pvc:////models//qwen", "pvc://models"]
)
def test_reachable_pvc_models_pass(model_uri: str) -> None:
    assert lines(modelbooster(backend(modelURI=model_uri, cacheURI="pvc://models/"))) == []


def test_cache_uris_that_name_nothing_are_rejected() -> None:
    assert lines(modelbooster(backend(cacheURI="pvc:///"))) == [
        'spec.backends[0].cacheURI: Invalid value: "pvc:///": invalid cacheURI "pvc:///": must include a PVC claim name'
    ]
    assert lines(modelbooster(backend(cacheURI="hostpath:////"))) == [
        'spec.backends[0].cacheURI: Invalid value: "hostpath:////": invalid cacheURI "hostpath:////": must include a '
        "host path"
    ]


GENERATED_NAME_DETAIL = (
    "the generated ModelServing and ModelServer name <metadata.name>-<backend name> must be a DNS-1123 label of at "
    "most 63 characters (it is also a pod label value); shorten metadata.name or the backend name"
)


def test_generated_names_longer_than_63_characters_are_rejected() -> None:
    obj = modelbooster(backend("b" * 32), name="m" * 30)  # 30 + 1 + 32 = 63: fine
    assert lines(obj) == []
    obj = modelbooster(backend("b" * 33), name="m" * 30)
    assert lines(obj) == [f'spec.backends[0].name: Invalid value: "{"m" * 30}-{"b" * 33}": {GENERATED_NAME_DETAIL}']


def test_a_dotted_model_name_cannot_make_a_label_value() -> None:
    assert lines(modelbooster(backend("a"), name="llama.v3")) == [
        f'spec.backends[0].name: Invalid value: "llama.v3-a": {GENERATED_NAME_DETAIL}'
    ]


def container_detail(name: str) -> str:
    return f"the generated container name {name!r} must be a DNS-1123 label of at most 63 characters; shorten the name"


def test_a_model_name_too_long_for_the_downloader_container_is_rejected() -> None:
    # `<model>-model-downloader` adds 17 characters: 46 + 17 = 63 passes, 47 + 17 = 64 does not.
    assert lines(modelbooster(backend("a"), name="m" * 46)) == []
    long_name = "m" * 47
    assert lines(modelbooster(backend("a"), name=long_name)) == [
        f'metadata.name: Invalid value: "{long_name}-model-downloader": '
        + container_detail(f"{long_name}-model-downloader")
    ]


def test_the_last_lora_downloader_name_must_fit_too() -> None:
    # `<model>-lora-downloader-<i>` adds 18 characters for i < 10: a 45-character model name fits, 46 does not.
    fits = modelbooster(backend("a", loraAdapters=[lora("x")]), name="m" * 45)
    assert lines(fits) == []
    name = "m" * 46
    too_long = modelbooster(backend("a", loraAdapters=[lora("x")]), name=name)
    assert lines(too_long) == [
        f'metadata.name: Invalid value: "{name}-lora-downloader-0": ' + container_detail(f"{name}-lora-downloader-0")
    ]


def test_a_backend_name_too_long_for_the_ray_worker_container_is_rejected() -> None:
    # `<backend>-vllm-worker` adds 12 characters: 51 + 12 = 63 passes, 52 + 12 = 64 does not.
    assert lines(modelbooster(backend("b" * 51), name="m")) == []
    long_backend = "b" * 52
    assert lines(modelbooster(backend(long_backend), name="m")) == [
        f'spec.backends[0].name: Invalid value: "{long_backend}-vllm-worker": '
        + container_detail(f"{long_backend}-vllm-worker")
    ]


def test_without_a_name_yet_generated_names_are_not_checked() -> None:
    obj = modelbooster(backend("a"))
    obj["metadata"] = {"generateName": "llama-"}
    assert lines(obj) == []


def test_more_than_ten_distinct_lora_names_are_rejected() -> None:
    ok = modelbooster(backend(loraAdapters=[lora(f"l{index}") for index in range(10)]))
    assert lines(ok) == []
    too_many = modelbooster(backend(loraAdapters=[lora(f"l{index}") for index in range(11)]))
    assert lines(too_many) == [
        "spec.backends: Invalid value: 11: at most 10 distinct LoRA adapter names are supported across all backends "
        "(the generated ModelRoute lists them all)"
    ]


def test_more_than_sixteen_route_rules_are_rejected() -> None:
    # Two backends: a default rule plus one rule per LoRA name; 16 names make 17 rules.
    names = [lora(f"l{index}") for index in range(16)]
    obj = modelbooster(backend("a", loraAdapters=names), backend("b"))
    assert lines(obj) == [
        "spec.backends: Invalid value: 16: at most 10 distinct LoRA adapter names are supported across all backends "
        "(the generated ModelRoute lists them all)",
        "spec.backends: Invalid value: 17: the generated ModelRoute would have 17 rules (a default rule plus one per "
        "LoRA adapter name); at most 16 are allowed",
    ]
    # One backend gets a single rule whatever its adapters (docs/design/synthesis.md §12).
    assert "rules" not in " ".join(lines(modelbooster(backend("a", loraAdapters=names))))


def test_duplicate_env_names_are_rejected() -> None:
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}]
    assert lines(modelbooster(backend(env=env))) == ['spec.backends[0].env[2].name: Duplicate value: "A"']


def test_duplicate_backend_names_are_rejected() -> None:
    assert lines(modelbooster(backend("a"), backend("a"))) == ['spec.backends[1].name: Duplicate value: "a"']


def test_divisor_of_a_resource_field_ref_is_a_quantity() -> None:
    def env(divisor: object) -> list[dict[str, Any]]:
        return [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": divisor}}}]

    assert lines(modelbooster(backend(env=env(1)))) == []
    assert lines(modelbooster(backend(env=env("1m")))) == []
    (line,) = lines(modelbooster(backend(env=env("one"))))
    assert line.startswith('spec.backends[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "one": ')


# --- UPDATE -------------------------------------------------------------------------------------------------


def test_changing_a_workers_replicas_on_update_is_forbidden() -> None:
    old = modelbooster(backend(workers=[worker(replicas=1)]))
    new = modelbooster(backend(workers=[worker(replicas=2)]))
    assert lines(new, old=old) == [
        "spec.backends[0].workers[0].replicas: Forbidden: cannot change from 1 to 2: the generated ModelServing's "
        "gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster (or give the backend a new "
        "name) to change it"
    ]


def test_update_rules_compare_effective_replicas_and_matching_backends_only() -> None:
    old = modelbooster(backend("a", workers=[worker()]))
    assert lines(modelbooster(backend("a", workers=[worker(replicas=1)])), old=old) == []
    assert lines(modelbooster(backend("b", workers=[worker(replicas=3)])), old=old) == []
    assert lines(modelbooster(backend("a", workers=[worker(replicas=1)])), old=None) == []


def test_update_compares_pd_roles_by_type() -> None:
    old = modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers(prefill={"replicas": 2})))
    new = modelbooster(backend(type="vLLMDisaggregated", workers=list(reversed(pd_workers(prefill={"replicas": 3})))))
    assert lines(new, old=old) == [
        "spec.backends[0].workers[1].replicas: Forbidden: cannot change from 2 to 3: the generated ModelServing's "
        "gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster (or give the backend a new "
        "name) to change it"
    ]


def test_an_old_object_that_does_not_decode_skips_the_update_rules() -> None:
    new = modelbooster(backend(workers=[worker(replicas=2)]))
    assert lines(new, old={"spec": "garbage"}) == []


# --- order and parse_modelbooster ---------------------------------------------------------------------------


def test_errors_come_in_the_documented_order() -> None:
    obj = modelbooster(
        backend(type="SGLang", minReplicas=2, maxReplicas=1, rateLimit={}, env=[{"name": "A"}, {"name": "A"}]),
        rateLimit={},
    )
    assert lines(obj) == [
        "spec.backends[0].minReplicas: Invalid value: 2: minReplicas cannot be greater than maxReplicas",
        f'spec.backends[0]: Invalid value: "minReplicas=2, maxReplicas=1": {NO_AUTOSCALING}',
        f"spec.rateLimit: Forbidden: {RATE}",
        f"spec.backends[0].rateLimit: Forbidden: {RATE}",
        'spec.backends[0].type: Invalid value: "SGLang": not supported yet; supported: vLLM, vLLMDisaggregated',
        'spec.backends[0].env[1].name: Duplicate value: "A"',
    ]


def test_parse_modelbooster_defaults_before_validating_and_returns_the_model() -> None:
    model = parse_modelbooster(model_level(backend(maxReplicas=3, scalingCost=5)))
    (parsed,) = model.spec.backends
    assert parsed.scale_to_zero_grace_period == "30s"
    assert model.spec.cost_expansion_rate_percent == 200
    assert parsed.route_weight == 100
    assert parsed.workers[0].replicas == 1


def test_parse_modelbooster_raises_with_the_denial_message() -> None:
    with pytest.raises(ValidationFailed) as caught:
        parse_modelbooster(modelbooster(backend(type="MindIE")))
    assert str(caught.value) == (
        "validation failed:\n"
        '  - spec.backends[0].type: Invalid value: "MindIE": not supported yet; supported: vLLM, vLLMDisaggregated'
    )
    assert [error.path for error in caught.value.errors] == ["spec.backends[0].type"]


def test_parse_modelbooster_applies_update_rules_against_the_defaulted_old_object() -> None:
    old = modelbooster(backend(workers=[worker()]))  # replicas absent: 1 after defaulting
    with pytest.raises(ValidationFailed):
        parse_modelbooster(modelbooster(backend(workers=[worker(replicas=0)])), old=old)


# --- cost bounds -----------------------------------------------------------------------------------------


def test_collection_stops_at_the_limit_for_rule_errors() -> None:
    env = [{"name": "A", "value": "x"} for _ in range(3 * MAX_COLLECTED_ERRORS)]
    errors = validate_modelbooster(modelbooster(backend(env=env)))
    assert len(errors) == MAX_COLLECTED_ERRORS
    assert errors[-1].render() == f'spec.backends[0].env[{MAX_COLLECTED_ERRORS}].name: Duplicate value: "A"'


def test_collection_stops_at_the_limit_for_decoding_errors() -> None:
    env = [{"name": index} for index in range(3 * MAX_COLLECTED_ERRORS)]
    errors = validate_modelbooster(modelbooster(backend(env=env)))
    assert len(errors) == MAX_COLLECTED_ERRORS
    assert errors[0].render() == "spec.backends[0].env[0].name: Invalid value: 0: must be of type string"


def test_an_old_object_that_does_not_decode_adds_no_errors() -> None:
    old = modelbooster(backend(env=[{"name": 1}]))
    assert validate_modelbooster(modelbooster(), old=old) == []


def test_the_denial_of_thousands_of_errors_is_short() -> None:
    env = [{"name": "A", "value": "x"} for _ in range(3 * MAX_COLLECTED_ERRORS)]
    with pytest.raises(ValidationFailed) as failure:
        parse_modelbooster(modelbooster(backend(env=env)))
    lines = str(failure.value).splitlines()
    assert len(lines) == 1 + 20 + 1
    assert lines[-1] == (
        "  - spec.backends[0].env: and at least 980 more errors, not shown (validation stops after 1000)"
    )
