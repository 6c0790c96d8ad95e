"""An optional trend term: Holt's linear smoothing of a Server's arrival rate, so a steady ramp is sized for
where it will be `horizon` ahead, a falling one never faster than measured, with the forecast's own error
reported (docs/design/inferno.md §16). O(1) memory; time is given, never read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

LEVEL_WEIGHT: Final = 0.5
SLOPE_WEIGHT: Final = 0.3
ERROR_WEIGHT: Final = 0.3
# A measurement this close to zero makes a percentage error meaningless; below it the error is not updated.
MIN_RATE_FOR_ERROR: Final = 1e-6


@dataclass(frozen=True)
class TrendForecast:
    measured: float
    forecast: float  # at now + horizon, >= 0
    sized_for: float  # max(measured, forecast)
    error: float | None  # weighted mean absolute percentage error of past one-period forecasts, 0..


@dataclass
class Trend:
    level: float | None = None
    slope: float = 0.0  # rate units per second
    last_time: float | None = None
    error: float | None = None

    def update(self, *, now: float, measured: float, horizon: float) -> TrendForecast:
        if not (math.isfinite(measured) and measured >= 0):
            raise ValueError(f"measured rate must be finite and >= 0, got {measured!r}")
        if self.level is None or self.last_time is None or now <= self.last_time:
            if self.level is None:
                self.level = measured
            self.last_time = now if self.last_time is None else max(self.last_time, now)
        else:
            elapsed = now - self.last_time
            expected = self.level + self.slope * elapsed
            if measured > MIN_RATE_FOR_ERROR:
                miss = abs(expected - measured) / measured
                self.error = miss if self.error is None else (1 - ERROR_WEIGHT) * self.error + ERROR_WEIGHT * miss
            level = LEVEL_WEIGHT * measured + (1 - LEVEL_WEIGHT) * expected
            self.slope = SLOPE_WEIGHT * (level - self.level) / elapsed + (1 - SLOPE_WEIGHT) * self.slope
            self.level = level
            self.last_time = now
        forecast = max(self.level + self.slope * max(horizon, 0.0), 0.0)
        return TrendForecast(measured, forecast, max(measured, forecast), self.error)


class Trends:
    """One Trend per Server (namespace, name), at most `limit` (the oldest dropped first)."""

    def __init__(self, *, limit: int = 4096) -> None:
        self.limit = limit
        self._by_server: dict[tuple[str, str], Trend] = {}

    def get(self, namespace: str, name: str) -> Trend:
        key = (namespace, name)
        found = self._by_server.get(key)
        if found is None:
            while len(self._by_server) >= self.limit:
                self._by_server.pop(next(iter(self._by_server)))
            found = self._by_server[key] = Trend()
        return found

    def forget(self, namespace: str, name: str) -> None:
        self._by_server.pop((namespace, name), None)
