"""The engine behind each backend type we serve (docs/design/synthesis.md §9)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from shared.engines.engine import Engine
from shared.engines.sglang.serving import SGLANG
from shared.engines.vllm.serving import VLLM

ENGINES: Final = (VLLM, SGLANG)
# vLLMDisaggregated is vLLM in prefill and decode roles.
_BY_BACKEND_TYPE: Final[Mapping[str, Engine]] = {
    backend_type: engine for engine in ENGINES for backend_type in engine.runtime_names
}


class UnknownEngine(LookupError):
    """A backend type no engine of ours serves."""


def engine_for(backend_type: str) -> Engine:
    try:
        return _BY_BACKEND_TYPE[backend_type]
    except KeyError:
        raise UnknownEngine(f"not support model backend type: {backend_type}") from None


def served_backend_types() -> tuple[str, ...]:
    return tuple(_BY_BACKEND_TYPE)
