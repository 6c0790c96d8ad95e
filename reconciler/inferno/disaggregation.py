"""Prefill and decode of a disaggregated backend scaled apart: each role's own need, the ratio band between
them, and the ratio learnt from the prefill pods' pressure where no prefill throughput is given
(docs/design/inferno.md §17). Pure and deterministic."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

DEFAULT_MIN_RATIO: Final = 0.1
DEFAULT_MAX_RATIO: Final = 10.0
DEFAULT_TARGET_PRESSURE: Final = 0.6
PREFILL: Final = "prefill"
DECODE: Final = "decode"


@dataclass(frozen=True)
class RoleBounds:
    minimum: int
    maximum: int

    def __post_init__(self) -> None:
        if self.minimum < 0 or self.maximum < max(self.minimum, 1):
            raise ValueError(f"role bounds {self.minimum}..{self.maximum} are not a range of replicas")

    def clamp(self, replicas: int) -> int:
        return min(max(replicas, self.minimum), self.maximum)


@dataclass(frozen=True)
class Ratio:
    """Prefill replicas per decode replica."""

    minimum: float = DEFAULT_MIN_RATIO
    maximum: float = DEFAULT_MAX_RATIO

    def __post_init__(self) -> None:
        if not (math.isfinite(self.minimum) and math.isfinite(self.maximum)):
            raise ValueError("ratio bounds must be finite")
        if self.minimum < 0 or self.maximum <= 0 or self.minimum > self.maximum:
            raise ValueError(
                f"ratio bounds {self.minimum}..{self.maximum}: need 0 <= minRatio <= maxRatio and maxRatio > 0"
            )

    def clamp(self, value: float) -> float:
        return min(max(value, self.minimum), self.maximum)


@dataclass(frozen=True)
class Split:
    prefill: int
    decode: int
    note: str | None  # what the ratio or the bounds changed, None if each side got its need


def prefill_need(*, prompt_tokens_per_second: float, tokens_per_second_per_replica: float) -> int:
    """Replicas that carry the measured prompt-token rate at the given per-replica prefill throughput."""
    if not tokens_per_second_per_replica > 0:
        raise ValueError("prefill tokens per second per replica must be > 0")
    if not (math.isfinite(prompt_tokens_per_second) and prompt_tokens_per_second >= 0):
        raise ValueError("the prompt-token rate must be finite and >= 0")
    return math.ceil(prompt_tokens_per_second / tokens_per_second_per_replica - 1e-9)


def split(*, prefill: int, decode: int, prefill_bounds: RoleBounds, decode_bounds: RoleBounds, ratio: Ratio) -> Split:
    """Each role's need, made to fit its bounds and the ratio: a side below the band is raised, and the band is
    restored by raising the other side rather than cutting a needed one. Only when bounds leave no room is a
    side cut, and the note says so."""
    p, d = prefill_bounds.clamp(prefill), decode_bounds.clamp(decode)
    notes: list[str] = []
    if p != prefill or d != decode:
        notes.append(f"needs prefill {prefill}, decode {decode} clamped to the role bounds")
    if d > 0 and p > ratio.maximum * d + 1e-9:
        raised = decode_bounds.clamp(math.ceil(p / ratio.maximum - 1e-9))
        if raised > d:
            notes.append(f"decode raised to {raised} to keep prefill/decode <= {ratio.maximum:g}")
            d = raised
        if p > ratio.maximum * d + 1e-9:
            cut = max(prefill_bounds.clamp(math.floor(ratio.maximum * d + 1e-9)), 0)
            notes.append(f"prefill cut to {cut}: decode is at its maximum of {decode_bounds.maximum}")
            p = cut
    if p < ratio.minimum * d - 1e-9:
        raised = prefill_bounds.clamp(math.ceil(ratio.minimum * d - 1e-9))
        if raised > p:
            notes.append(f"prefill raised to {raised} to keep prefill/decode >= {ratio.minimum:g}")
            p = raised
        if p < ratio.minimum * d - 1e-9:
            cut = decode_bounds.clamp(math.floor(p / ratio.minimum + 1e-9)) if ratio.minimum > 0 else d
            notes.append(f"decode cut to {cut}: prefill is at its maximum of {prefill_bounds.maximum}")
            d = cut
    return Split(prefill=p, decode=d, note="; ".join(notes) or None)


@dataclass
class LearntRatio:
    """Prefill per decode replicas, learnt from the prefill pods' pressure; starts at the band's geometric
    middle unless given."""

    band: Ratio
    value: float = 0.0
    target_pressure: float = DEFAULT_TARGET_PRESSURE

    def __post_init__(self) -> None:
        if not self.target_pressure > 0:
            raise ValueError("target pressure must be > 0")
        if self.value <= 0:
            low = max(self.band.minimum, self.band.maximum * 1e-3)
            self.value = math.sqrt(low * self.band.maximum)
        self.value = self.band.clamp(self.value)

    def update(self, prefill_pressure: float | None) -> float:
        """One period's pressure of the prefill pods (None: no signal, nothing learnt)."""
        if prefill_pressure is not None and math.isfinite(prefill_pressure) and prefill_pressure >= 0:
            correction = max(prefill_pressure, 0.05) / self.target_pressure
            self.value = self.band.clamp(self.value * math.sqrt(min(max(correction, 0.25), 4.0)))
        return self.value
