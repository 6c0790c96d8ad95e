"""docs/design/validation.md §4 (6) and §6: LoRA names, generated names, the generated ModelRoute's limits.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

from tests.unit.factories import backend, modelbooster
from tests.unit.validation.support import lines


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


GENERATED_NAME_DETAIL = (
    "the generated ModelServing and ModelServer name <metadata.name>-<backend name> must be a DNS-1123 label of at "
    "most 63 characters (it is also a pod label value); shorten metadata.name or the backend name"
)


def test_generated_names_longer_than_63_characters_are_rejected() -> None:
    obj = modelbooster(backend("b" * 32), name="m" * 30)  # 30 + 1 + 32 = 63: fine
    assert lines(obj) == []
    obj = modelbooster(backend("b" * 33), name="m" * 30)
    assert lines(obj) == [f'spec.backends[0].name: Invalid value: "{"m" * 30}-{"b" * 33}": {GENERATED_NAME_DETAIL}']


def test_a_dotted_model_name_is_blamed_on_its_dot_not_on_a_length() -> None:
    """A valid object name (a DNS-1123 subdomain), but every child's name begins with it and takes no dot: one
    error, at metadata.name, naming the fault and a name that works; for every backend at once."""
    assert lines(modelbooster(backend("a"), backend("b"), name="llama.v3")) == [
        'metadata.name: Invalid value: "llama.v3": a \'.\' is not allowed: the name begins every child\'s name (the '
        'ModelServing and ModelServer <metadata.name>-<backend name>, here "llama.v3-a", and the names Kthena makes '
        "of it for their pods), which must be DNS-1035 labels: lowercase letters, digits and '-'; use e.g. "
        '"llama-v3"'
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
