"""The performance profile (alpha, beta of one model on one accelerator) learnt online from the measured
inter-token latency at the measured batch: a Kalman filter with the typed profile as its prior, an outlier gate
and bounds, so that a wrong profile is corrected and the estimate explains itself (docs/design/inferno.md §15).
Pure, deterministic, O(1) memory per pair."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

PRIOR_RELATIVE_SD: Final = 1.0
DRIFT_RELATIVE_SD: Final = 0.02
NOISE_RELATIVE_SD: Final = 0.1
GATE_SIGMAS: Final = 4.0
REJECTIONS_BEFORE_RESET: Final = 3
BOUND_FACTOR: Final = 10.0


@dataclass(frozen=True)
class Profile:
    """alpha, beta in ms: a token every alpha + beta * n ms at batch n."""

    alpha: float
    beta: float

    def itl(self, batch: float) -> float:
        return self.alpha + self.beta * batch


@dataclass(frozen=True)
class FilterSettings:
    prior_relative_sd: float = PRIOR_RELATIVE_SD
    drift_relative_sd: float = DRIFT_RELATIVE_SD
    noise_relative_sd: float = NOISE_RELATIVE_SD
    gate_sigmas: float = GATE_SIGMAS
    rejections_before_reset: int = REJECTIONS_BEFORE_RESET

    def __post_init__(self) -> None:
        for name in ("prior_relative_sd", "noise_relative_sd", "gate_sigmas"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.drift_relative_sd < 0:
            raise ValueError("drift_relative_sd must be >= 0")
        if self.rejections_before_reset < 1:
            raise ValueError("rejections_before_reset must be >= 1")


@dataclass(frozen=True)
class Update:
    """What one observation did."""

    accepted: bool
    predicted: float  # ms, before the update
    innovation_sigmas: float  # (measured - predicted) / its standard deviation
    reason: str  # "accepted", "outlier", "reset", "invalid"


@dataclass
class ProfileEstimator:
    """A Kalman filter over (alpha, beta) with `prior` as its prior mean."""

    prior: Profile
    settings: FilterSettings = field(default_factory=FilterSettings)
    accepted: int = 0
    rejected: int = 0
    last: Update | None = None
    _mean: list[float] = field(init=False)
    _cov: list[list[float]] = field(init=False)
    _scale: tuple[float, float] = field(init=False)
    _streak: int = field(init=False, default=0)  # consecutive rejections, signed by side

    def __post_init__(self) -> None:
        if not (math.isfinite(self.prior.alpha) and math.isfinite(self.prior.beta)):
            raise ValueError("the prior profile must be finite")
        if self.prior.alpha < 0 or self.prior.beta < 0 or self.prior.alpha + self.prior.beta <= 0:
            raise ValueError("the prior profile needs alpha, beta >= 0 and alpha + beta > 0")
        total = self.prior.alpha + self.prior.beta
        # A parameter typed as 0 still gets room to be learnt: a scale of a fraction of the whole.
        self._scale = (max(self.prior.alpha, 0.1 * total), max(self.prior.beta, 0.01 * total))
        self._mean = [self.prior.alpha, self.prior.beta]
        self._cov = self._prior_cov()

    def _prior_cov(self) -> list[list[float]]:
        sd = self.settings.prior_relative_sd
        return [[(sd * self._scale[0]) ** 2, 0.0], [0.0, (sd * self._scale[1]) ** 2]]

    @property
    def estimate(self) -> Profile:
        return Profile(alpha=self._mean[0], beta=self._mean[1])

    @property
    def standard_deviations(self) -> tuple[float, float]:
        return (math.sqrt(max(self._cov[0][0], 0.0)), math.sqrt(max(self._cov[1][1], 0.0)))

    def predict(self, batch: float) -> float:
        return self._mean[0] + self._mean[1] * batch

    def observe(self, *, itl: float, batch: float) -> Update:
        """One period's mean inter-token latency `itl` (ms) at mean batch `batch` (running requests per
        replica)."""
        predicted = self.predict(batch) if math.isfinite(batch) else math.nan
        if not (math.isfinite(itl) and itl > 0 and math.isfinite(batch) and batch >= 0):
            return self._record(Update(False, predicted, 0.0, "invalid"))
        drift = self.settings.drift_relative_sd
        cov = self._cov
        cov[0][0] += (drift * self._scale[0]) ** 2
        cov[1][1] += (drift * self._scale[1]) ** 2
        h = (1.0, batch)
        ph = (cov[0][0] * h[0] + cov[0][1] * h[1], cov[1][0] * h[0] + cov[1][1] * h[1])
        noise = (self.settings.noise_relative_sd * max(predicted, 1e-9)) ** 2
        variance = h[0] * ph[0] + h[1] * ph[1] + noise
        innovation = itl - predicted
        sigmas = innovation / math.sqrt(variance)
        reason = "accepted"
        if abs(sigmas) > self.settings.gate_sigmas:
            side = 1 if sigmas > 0 else -1
            self._streak = self._streak + side if self._streak * side > 0 else side
            if abs(self._streak) < self.settings.rejections_before_reset:
                return self._record(Update(False, predicted, sigmas, "outlier"))
            # The same surprise, period after period: the world changed. Forget the confidence, keep the mean.
            self._cov = cov = self._prior_cov()
            ph = (cov[0][0] * h[0], cov[1][1] * h[1])
            variance = h[0] * ph[0] + h[1] * ph[1] + noise
            reason = "reset"
        self._streak = 0
        gain = (ph[0] / variance, ph[1] / variance)
        self._mean[0] += gain[0] * innovation
        self._mean[1] += gain[1] * innovation
        # Joseph form: (I - K H) P (I - K H)^T + K R K^T stays symmetric and positive.
        a = ((1 - gain[0] * h[0], -gain[0] * h[1]), (-gain[1] * h[0], 1 - gain[1] * h[1]))
        ap = [[sum(a[i][k] * cov[k][j] for k in range(2)) for j in range(2)] for i in range(2)]
        self._cov = [
            [sum(ap[i][k] * a[j][k] for k in range(2)) + gain[i] * gain[j] * noise for j in range(2)] for i in range(2)
        ]
        for index in range(2):
            self._mean[index] = min(max(self._mean[index], 0.0), BOUND_FACTOR * self._scale[index])
        if self._mean[0] + self._mean[1] <= 0:
            self._mean = [self.prior.alpha, self.prior.beta]
        return self._record(Update(True, predicted, sigmas, reason))

    def _record(self, update: Update) -> Update:
        if update.accepted:
            self.accepted += 1
        else:
            self.rejected += 1
        self.last = update
        return update


class Estimators:
    """One estimator per (model, accelerator), created from the profile typed for it; a profile edited by hand
    starts a new estimator (the user's new prior wins over what was learnt from the old one). At most
    `limit` pairs are kept (the oldest are dropped first)."""

    def __init__(self, *, settings: FilterSettings | None = None, limit: int = 1024) -> None:
        self.settings = settings or FilterSettings()
        self.limit = limit
        self._by_pair: dict[tuple[str, str], ProfileEstimator] = {}

    def get(self, model: str, accelerator: str, prior: Profile) -> ProfileEstimator:
        key = (model, accelerator)
        found = self._by_pair.get(key)
        if found is None or found.prior != prior:
            found = ProfileEstimator(prior=prior, settings=self.settings)
            self._by_pair.pop(key, None)
            while len(self._by_pair) >= self.limit:
                self._by_pair.pop(next(iter(self._by_pair)))
            self._by_pair[key] = found
        return found

    def peek(self, model: str, accelerator: str) -> ProfileEstimator | None:
        return self._by_pair.get((model, accelerator))

    def __len__(self) -> int:
        return len(self._by_pair)
