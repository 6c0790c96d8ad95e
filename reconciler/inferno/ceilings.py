"""The operator's limits on Scale actuation, which no Server or ModelBooster can pass: the highest and lowest
replicas, the largest step of one decision, the shortest scale-down window (docs/design/inferno.md §18)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from reconciler.inferno.targets import Bounds

DEFAULT_MAX_REPLICAS: Final = 100
DEFAULT_MIN_REPLICAS: Final = 1
DEFAULT_MAX_STEP: Final = 4
DEFAULT_MAX_STEP_PERCENT: Final = 100
DEFAULT_MIN_STABILIZATION: Final = 60.0  # seconds


class CeilingsError(ValueError):
    """Limits that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class Ceilings:
    max_replicas: int = DEFAULT_MAX_REPLICAS
    min_replicas: int = DEFAULT_MIN_REPLICAS
    max_step: int = DEFAULT_MAX_STEP
    max_step_percent: int = DEFAULT_MAX_STEP_PERCENT
    min_stabilization: float = DEFAULT_MIN_STABILIZATION

    def __post_init__(self) -> None:
        if self.max_replicas < 1:
            raise CeilingsError(f"--inferno-max-replicas must be at least 1, got {self.max_replicas}")
        if not 0 <= self.min_replicas <= self.max_replicas:
            raise CeilingsError(
                f"--inferno-min-replicas must be between 0 and --inferno-max-replicas ({self.max_replicas}), "
                f"got {self.min_replicas}"
            )
        if self.max_step < 1:
            raise CeilingsError(f"--inferno-max-scale-step must be at least 1, got {self.max_step}")
        if self.max_step_percent < 0:
            raise CeilingsError(f"--inferno-max-scale-step-percent must not be negative, got {self.max_step_percent}")
        if not self.min_stabilization >= 0:
            raise CeilingsError(f"--inferno-min-stabilization must not be negative, got {self.min_stabilization}")

    def limit(self, bounds: Bounds) -> Bounds:
        """`bounds` within the operator's; the source says which limit applied."""
        maximum = min(bounds.maximum, self.max_replicas)
        minimum = min(max(bounds.minimum, self.min_replicas), maximum)
        notes = []
        if maximum < bounds.maximum:
            notes.append(f"operator ceiling {self.max_replicas}")
        if minimum > bounds.minimum:
            notes.append(f"operator floor {self.min_replicas}")
        source = ", ".join([bounds.source, *notes])
        return Bounds(minimum=minimum, maximum=maximum, source=source)

    def step(self, *, current: int, wanted: int) -> int:
        """`wanted`, moved from `current` by at most what one decision may move."""
        allowed = max(self.max_step, math.ceil(current * self.max_step_percent / 100))
        return min(max(wanted, current - allowed), current + allowed)

    def window(self, seconds: float) -> float:
        """The stabilisation window a Server gets: its own, or the operator's shortest."""
        return max(seconds, self.min_stabilization)
