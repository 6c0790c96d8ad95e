"""A day of synthetic traffic through four autoscaling policies: what the guardrail and the online correction buy.

Simulated (no cluster, no Prometheus): 10 Servers of 5 models on 3 accelerator types (A100, G2, L4), each
pinned to its accelerator (Scale never moves one), min 1 / max 30 replicas. Traffic per Server: a diurnal
curve (trough at 04:00, peak at 16:00, trough = 25 % of peak) with about five bursts a day (x1.5 to x2.2 for 5
to 20 minutes), Poisson arrivals per minute; the load the policies see is the mean of the last two minutes
(the controller's `--inferno-prometheus-window`). The replicas serve as the queueing model says with their TRUE
performance (tests/inferno_plant.py), which is not the profile the optimiser is given for four Servers: three
are twice as slow as their profile (the profile underestimates latency by 2x), one 1.5x, one is faster
(0.7x). New replicas take two minutes to start; GPU time is counted from the request.

Policies, one decision a minute (the Optimizer's `interval: 60s`), every one through the 5-minute scale-down
stabiliser:
  (a) optimiser   — the optimiser's replicas from the hand-typed profile (what the loop did before);
  (b) +guardrail  — (a) guarded by KV-cache usage and waiting requests (reconciler/inferno/guardrail.py);
  (c) +correction — (b) with the profile corrected online from measured ITL (optimizer/estimation.py);
  (d) HPA         — an HPA-style utilisation rule on mean KV-cache usage, target 0.6, tolerance 10 %;
  (e) +trend      — (c) with the trend term (reconciler/inferno/trend.py), horizon two minutes.

Reported per policy: GPU-hours (and cost), SLO-violation minutes (Server-minutes whose mean ITL, 95th-percentile
wait (exponential) or refusals break the class's targets), scaling actions (changes of a target's replicas).
For (c) also the estimate's error at the end of the day, and for (e) the trend's forecast error.

Usage: python bench/autoscaler_bench.py [--seed S] [--minutes M]; prints a table, writes
bench/results/autoscaler.json. Deterministic for a seed. Takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer.estimation import Estimators, Profile  # noqa: E402
from optimizer.optimize import optimize  # noqa: E402
from optimizer.system import (  # noqa: E402
    Accelerator,
    Allocation,
    Load,
    ModelTarget,
    OptimizerFlags,
    PerfData,
    Server,
    ServiceClass,
    System,
)
from reconciler.inferno.guardrail import control  # noqa: E402
from reconciler.inferno.saturation import Signals, Thresholds, assess  # noqa: E402
from reconciler.inferno.stabilizer import Stabilizer  # noqa: E402
from reconciler.inferno.trend import Trend  # noqa: E402
from tests.inferno_plant import Observed, Truth, serve  # noqa: E402

MINUTES_PER_DAY = 24 * 60
WINDOW_MINUTES = 2
START_DELAY_MINUTES = 2
STABILIZATION_SECONDS = 300.0
MIN_REPLICAS, MAX_REPLICAS = 1, 30
ITL_NOISE = 0.05
HPA_TARGET = 0.6
HPA_TOLERANCE = 0.1
POLICIES = ("optimiser", "+guardrail", "+correction", "HPA", "+trend")

# name: (type cost cents/h, alpha ms, beta ms, maxBatchSize at 512 tokens)
ACCELERATORS = {"A100": (40.0, 8.5, 0.17, 64), "G2": (23.0, 17.15, 0.34, 38), "L4": (12.0, 24.0, 0.5, 24)}
MODEL_SIZE = {"m0": 1.0, "m1": 1.2, "m2": 0.8, "m3": 1.1, "m4": 0.9}
CLASSES = {"Premium": (1, 60.0, 1000.0), "Standard": (2, 90.0, 3000.0)}  # priority, slo-itl ms, slo-ttw ms


@dataclass(frozen=True)
class Spec:
    name: str
    model: str
    accelerator: str
    service_class: str
    length: int
    peak_rpm: float
    truth_factor: float  # true alpha, beta = profile x this


SPECS = (
    Spec("s0", "m0", "A100", "Premium", 512, 900.0, 2.0),
    Spec("s1", "m1", "G2", "Standard", 512, 300.0, 2.0),
    Spec("s2", "m2", "L4", "Standard", 256, 250.0, 2.0),
    Spec("s3", "m3", "A100", "Premium", 1024, 400.0, 1.5),
    Spec("s4", "m4", "G2", "Premium", 512, 250.0, 0.7),
    Spec("s5", "m0", "L4", "Standard", 512, 120.0, 1.0),
    Spec("s6", "m1", "A100", "Standard", 768, 500.0, 1.0),
    Spec("s7", "m2", "G2", "Premium", 256, 400.0, 1.0),
    Spec("s8", "m3", "L4", "Standard", 512, 100.0, 1.0),
    Spec("s9", "m4", "A100", "Premium", 512, 700.0, 1.0),
)


def profile_of(spec: Spec) -> PerfData:
    _, alpha, beta, batch = ACCELERATORS[spec.accelerator]
    size = MODEL_SIZE[spec.model]
    return PerfData(spec.model, spec.accelerator, 1, alpha * size, beta * size, batch, 512)


def truth_of(spec: Spec) -> Truth:
    perf = profile_of(spec)
    batch = max(perf.max_batch_size * perf.at_tokens // spec.length, 1)
    return Truth(alpha=perf.alpha * spec.truth_factor, beta=perf.beta * spec.truth_factor, batch=batch)


# --- traffic --------------------------------------------------------------------------------------------------


def traffic(spec: Spec, *, minutes: int, rng: random.Random) -> list[float]:
    """Requests per minute, minute by minute: diurnal curve x bursts."""
    bursts = []
    for _ in range(5):
        start = rng.uniform(0, minutes)
        bursts.append((start, rng.uniform(5, 20), rng.uniform(1.5, 2.2)))
    rates = []
    for minute in range(minutes):
        phase = 2 * math.pi * (minute - 4 * 60) / MINUTES_PER_DAY  # trough at 04:00
        level = 0.25 + 0.75 * 0.5 * (1 - math.cos(phase))
        factor = 1.0
        for start, length, height in bursts:
            if start <= minute < start + length:
                ramp = min(1.0, (minute - start + 1) / 2)  # bursts build over two minutes
                factor = max(factor, 1 + (height - 1) * ramp)
        rates.append(spec.peak_rpm * level * factor)
    return rates


def poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw (normal approximation above 50, Knuth below): the arrivals of one minute."""
    if mean > 50:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


# --- one policy over the day ------------------------------------------------------------------------------------


@dataclass
class Target:
    spec: Spec
    ready_at: list[int] = field(default_factory=list)  # minute each requested replica is (or was) ready
    stabilizer: Stabilizer = field(default_factory=lambda: Stabilizer(window=STABILIZATION_SECONDS))
    trend: Trend = field(default_factory=Trend)
    actions: int = 0

    @property
    def requested(self) -> int:
        return len(self.ready_at)

    def ready(self, minute: int) -> int:
        return sum(1 for at in self.ready_at if at <= minute)

    def set(self, replicas: int, minute: int) -> None:
        if replicas == self.requested:
            return
        self.actions += 1
        if replicas > self.requested:
            self.ready_at.extend([minute + START_DELAY_MINUTES] * (replicas - self.requested))
        else:
            self.ready_at = sorted(self.ready_at)[:replicas]  # the newest (still starting) go first


def system_for(targets: list[Target], loads: dict[str, float], perf: dict[tuple[str, str], PerfData]) -> System:
    system = System(flags=OptimizerFlags(unlimited=True))
    for name, (cost, *_) in ACCELERATORS.items():
        system.accelerators[name] = Accelerator(name=name, type=name, cost=cost)
    for (model, accelerator), data in perf.items():
        system.models.setdefault(model, {})[accelerator] = data
    for class_name, (priority, itl, ttw) in CLASSES.items():
        system.service_classes[class_name] = ServiceClass(
            name=class_name,
            priority=priority,
            targets=tuple(ModelTarget(model=model, slo_itl=itl, slo_ttw=ttw) for model in MODEL_SIZE),
        )
    for target in targets:
        spec = target.spec
        cost = ACCELERATORS[spec.accelerator][0] * target.requested
        current = Allocation(
            accelerator=spec.accelerator,
            num_replicas=target.requested,
            cost=cost,
            load=Load(arrival_rate=loads[spec.name], avg_length=spec.length),
        )
        system.servers[spec.name] = Server(
            name=spec.name, class_name=spec.service_class, model=spec.model, current=current, keep_accelerator=True
        )
    return system


def run_policy(
    policy: str, *, rates: dict[str, list[float]], arrivals: dict[str, list[int]], seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)  # measurement noise, the same draws for every policy
    minutes = len(next(iter(rates.values())))
    targets = [Target(spec) for spec in SPECS]
    estimators = Estimators()
    guarded = policy not in {"optimiser", "HPA"}
    corrected = policy in {"+correction", "+trend"}
    trended = policy == "+trend"
    thresholds = Thresholds()
    gpu_minutes = 0.0
    cost_cent_minutes = 0.0
    violations = 0
    overrides: dict[str, int] = {}
    trend_errors: list[float] = []
    observed: dict[str, Observed] = {}
    started = time.process_time()
    for minute in range(minutes):
        # Serve this minute with the replicas that run; what the pods report is seen by this minute's decision.
        for target in targets:
            spec = target.spec
            seen = serve(truth=truth_of(spec), rate_rpm=rates[spec.name][minute], length=spec.length,
                         replicas=target.ready(minute))  # fmt: skip
            observed[spec.name] = seen
            _, itl, ttw = CLASSES[spec.service_class]
            violations += seen.violates(slo_itl=itl, slo_ttw=ttw)
            gpu_minutes += target.requested
            cost_cent_minutes += target.requested * ACCELERATORS[spec.accelerator][0]
        window = {
            spec.name: sum(arrivals[spec.name][max(0, minute - WINDOW_MINUTES + 1) : minute + 1])
            / min(minute + 1, WINDOW_MINUTES)
            for spec in SPECS
        }
        now = 60.0 * minute
        if policy == "HPA":
            for target in targets:
                seen = observed[target.spec.name]
                ready = target.ready(minute)
                current = target.requested
                wanted = current
                if ready > 0:
                    ratio = seen.kv_cache / HPA_TARGET
                    if abs(ratio - 1) > HPA_TOLERANCE:
                        wanted = math.ceil(ready * ratio)
                else:
                    wanted = max(current, MIN_REPLICAS)
                wanted = min(max(wanted, MIN_REPLICAS), MAX_REPLICAS)
                target.set(target.stabilizer.recommend(now=now, desired=wanted, current=current), minute)
            continue
        loads = {}
        for target in targets:
            measured = window[target.spec.name]
            if trended:
                forecast = target.trend.update(now=now, measured=measured, horizon=120.0)
                measured = forecast.sized_for
                if forecast.error is not None:
                    trend_errors.append(forecast.error)
            loads[target.spec.name] = measured
        perf: dict[tuple[str, str], PerfData] = {}
        for spec in SPECS:
            prior = profile_of(spec)
            key = (spec.model, spec.accelerator)
            if corrected:
                estimator = estimators.get(spec.model, spec.accelerator, Profile(prior.alpha, prior.beta))
                seen = observed[spec.name]
                if seen.replicas > 0 and seen.running > 0:
                    noisy = seen.itl * (1 + rng.gauss(0, ITL_NOISE))
                    estimator.observe(itl=noisy, batch=seen.running_per_replica)
                estimate = estimator.estimate
                perf[key] = PerfData(spec.model, spec.accelerator, 1, estimate.alpha, estimate.beta,
                                     prior.max_batch_size, prior.at_tokens)  # fmt: skip
            else:
                perf[key] = prior
        decided = optimize(system_for(targets, loads, perf)).desired()
        for target in targets:
            spec = target.spec
            allocation = decided.get(spec.name)
            want = allocation.num_replicas if allocation is not None and allocation.accelerator else MAX_REPLICAS
            seen = observed[spec.name]
            assessment = (
                assess(Signals(seen.kv_cache, seen.waiting, seen.running), thresholds, replicas=seen.replicas)
                if guarded and seen.replicas > 0
                else None
            )
            replicas, guard = control(
                decided=want, current=target.requested, minimum=MIN_REPLICAS, maximum=MAX_REPLICAS,
                assessment=assessment, stabilizer=target.stabilizer, now=now,
            )  # fmt: skip
            if guard.override is not None:
                overrides[guard.override] = overrides.get(guard.override, 0) + 1
            target.set(replicas, minute)
    result: dict[str, Any] = {
        "policy": policy,
        "gpu_hours": round(gpu_minutes / 60, 1),
        "cost_dollars": round(cost_cent_minutes / 60 / 100, 2),
        "slo_violation_minutes": violations,
        "scaling_actions": sum(target.actions for target in targets),
        "guardrail_overrides": dict(sorted(overrides.items())),
        "cpu_seconds": round(time.process_time() - started, 2),
    }
    if corrected:
        errors = {}
        for spec in SPECS:
            learnt = estimators.peek(spec.model, spec.accelerator)
            truth = truth_of(spec)
            if learnt is not None:
                at = truth.batch / 2  # the middle of the batch range
                errors[spec.name] = round(abs(learnt.predict(at) / (truth.alpha + truth.beta * at) - 1), 3)
        result["estimate_itl_error_at_half_batch"] = errors
    if trended and trend_errors:
        result["trend_mape_mean"] = round(sum(trend_errors) / len(trend_errors), 3)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--minutes", type=int, default=MINUTES_PER_DAY)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "autoscaler.json")
    args = parser.parse_args()
    if args.minutes < WINDOW_MINUTES:
        parser.error(f"--minutes must be at least {WINDOW_MINUTES}")
    rng = random.Random(args.seed)
    rates = {spec.name: traffic(spec, minutes=args.minutes, rng=rng) for spec in SPECS}
    arrivals = {name: [poisson(rng, rate) for rate in series] for name, series in rates.items()}
    results = []
    print(f"{'policy':<12} {'GPU-hours':>9} {'cost $':>8} {'SLO-violation min':>17} {'actions':>7}  overrides")
    for policy in POLICIES:
        result = run_policy(policy, rates=rates, arrivals=arrivals, seed=args.seed)
        results.append(result)
        print(
            f"{policy:<12} {result['gpu_hours']:>9} {result['cost_dollars']:>8} "
            f"{result['slo_violation_minutes']:>17} {result['scaling_actions']:>7}  {result['guardrail_overrides']}"
        )
    for result in results:
        if "estimate_itl_error_at_half_batch" in result:
            errors = result["estimate_itl_error_at_half_batch"]
            print(f"{result['policy']}: the estimate's ITL error at half batch, per Server: {errors}")
        if "trend_mape_mean" in result:
            print(
                f"{result['policy']}: the trend's one-step forecast error (weighted MAPE): {result['trend_mape_mean']}"
            )
    server_minutes = args.minutes * len(SPECS)
    report = {
        "bench": "autoscaler",
        "seed": args.seed,
        "minutes": args.minutes,
        "servers": len(SPECS),
        "server_minutes": server_minutes,
        "python": platform.python_version(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    shown = args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out
    print(f"({server_minutes} Server-minutes; written to {shown})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
