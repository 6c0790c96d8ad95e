"""Choosing one candidate per server: transition value, unlimited and greedy-limited, and the saturation
policies that place what did not fit (docs/design/inferno.md §5, §6), with deterministic ties where the
reference used Go's random map order (§7).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from optimizer.sizing import Candidate, rescale
from optimizer.system import Allocation
from shared.api.inferno import SaturationPolicy

ACCEL_PENALTY_FACTOR = 0.1


def transition_value(current: Allocation, candidate: Candidate) -> float:
    """The objective of a candidate given the current allocation (docs/design/inferno.md §5).

    Unchanged: 0. Same accelerator, other replica count: the cost difference. Another accelerator: the cost
    difference plus 10% of both costs, the price of moving. `current.cost` is taken as given.
    """
    if candidate.accelerator == current.accelerator:
        if candidate.num_replicas == current.num_replicas:
            return 0.0
        return candidate.cost - current.cost
    return ACCEL_PENALTY_FACTOR * (current.cost + candidate.cost) + (candidate.cost - current.cost)


def candidate_key(candidate: Candidate) -> tuple[float, float, str]:
    return (candidate.value, candidate.cost, candidate.accelerator)


@dataclass(frozen=True, slots=True)
class ServerCandidates:
    """What the solvers see of one server."""

    server: str
    priority: int
    candidates: tuple[Candidate, ...]
    demand: float = 0.0  # requests/ms, for the heterogeneous MILP
    min_replicas: int = 0


@dataclass(slots=True)
class Placement:
    chosen: dict[str, Candidate] = field(default_factory=dict)
    partial: set[str] = field(default_factory=set)  # placed by a saturation policy, below their need
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # heterogeneous MILP only


def solve_unlimited(entries: Iterable[ServerCandidates]) -> Placement:
    """Each server independently takes its best candidate; capacity and priority play no part."""
    placement = Placement()
    for entry in entries:
        if entry.candidates:
            placement.chosen[entry.server] = min(entry.candidates, key=candidate_key)
    return placement


@dataclass(slots=True)
class _Entry:
    server: str
    priority: int
    candidates: list[Candidate]
    cursor: int = 0
    regret: float = math.inf

    def current(self) -> Candidate:
        return self.candidates[self.cursor]

    def update_regret(self) -> None:
        # The value lost if this entry cannot have its current candidate: servers that lose most go first.
        following = self.cursor + 1
        if following < len(self.candidates):
            self.regret = self.candidates[following].value - self.candidates[self.cursor].value
        else:
            self.regret = math.inf

    def order(self) -> tuple[int, float, float, str]:
        return (self.priority, -self.regret, -self.current().value, self.server)


def solve_greedy(
    entries: Iterable[ServerCandidates],
    *,
    capacity: Mapping[str, int],
    saturation_policy: SaturationPolicy = "None",
    delayed_best_effort: bool = False,
) -> Placement:
    """Greedy by priority and regret under per-type capacity (docs/design/inferno.md §6).

    Types missing from capacity have 0 units.
    """
    available = dict(capacity)
    placement = Placement()
    queue: list[_Entry] = []
    for entry in entries:
        if not entry.candidates:
            continue
        item = _Entry(entry.server, entry.priority, sorted(entry.candidates, key=candidate_key))
        item.update_regret()
        queue.append(item)
    queue.sort(key=_Entry.order)

    if delayed_best_effort:
        groups = [queue]
    else:
        groups = [list(group) for _priority, group in itertools.groupby(queue, key=lambda e: e.priority)]
    unallocated: list[_Entry] = []
    for group in groups:
        left = _allocate(group, available=available, placement=placement)
        if delayed_best_effort:
            unallocated = left
        else:
            _best_effort(left, policy=saturation_policy, available=available, placement=placement)
    if delayed_best_effort:
        _best_effort(unallocated, policy=saturation_policy, available=available, placement=placement)
    return placement


def _allocate(pending: list[_Entry], *, available: dict[str, int], placement: Placement) -> list[_Entry]:
    """Place entries in order; one that does not fit moves to its next candidate and is re-queued."""
    unallocated: list[_Entry] = []
    while pending:
        entry = pending.pop(0)
        candidate = entry.current()
        if available.get(candidate.acc_type, 0) >= candidate.units:
            available[candidate.acc_type] = available.get(candidate.acc_type, 0) - candidate.units
            placement.chosen[entry.server] = candidate
            continue
        entry.cursor += 1
        if entry.cursor >= len(entry.candidates):
            unallocated.append(entry)
            continue
        entry.update_regret()
        bisect.insort_left(pending, entry, key=_Entry.order)
    return unallocated


def _best_effort(
    entries: Sequence[_Entry], *, policy: SaturationPolicy, available: dict[str, int], placement: Placement
) -> None:
    ordered = sorted(entries, key=lambda e: e.priority)  # stable: failure order within a priority
    if policy == "PriorityExhaustive":
        _exhaustive(ordered, available=available, placement=placement)
    elif policy == "RoundRobin":
        _round_robin(ordered, available=available, placement=placement)
    elif policy == "PriorityRoundRobin":
        for _priority, group in itertools.groupby(ordered, key=lambda e: e.priority):
            _round_robin(list(group), available=available, placement=placement)


def _exhaustive(entries: Sequence[_Entry], *, available: dict[str, int], placement: Placement) -> None:
    for entry in entries:
        for candidate in entry.candidates:
            fits = available.get(candidate.acc_type, 0) // candidate.units_per_replica
            replicas = min(fits, candidate.num_replicas)
            if replicas > 0:
                available[candidate.acc_type] -= replicas * candidate.units_per_replica
                _place_partial(placement, server=entry.server, candidate=candidate, replicas=replicas)
                break


def _round_robin(entries: Sequence[_Entry], *, available: dict[str, int], placement: Placement) -> None:
    fixed: list[tuple[_Entry, Candidate]] = []
    for entry in entries:
        for candidate in entry.candidates:
            if available.get(candidate.acc_type, 0) >= candidate.units_per_replica:
                fixed.append((entry, candidate))
                break
    granted = [0] * len(fixed)
    progress = True
    while progress:
        progress = False
        for index, (_entry, candidate) in enumerate(fixed):
            if granted[index] < candidate.num_replicas and available[candidate.acc_type] >= candidate.units_per_replica:
                available[candidate.acc_type] -= candidate.units_per_replica
                granted[index] += 1
                progress = True
    for (entry, candidate), replicas in zip(fixed, granted, strict=True):
        if replicas > 0:
            _place_partial(placement, server=entry.server, candidate=candidate, replicas=replicas)


def _place_partial(placement: Placement, *, server: str, candidate: Candidate, replicas: int) -> None:
    placement.chosen[server] = rescale(candidate, replicas)
    if replicas < candidate.num_replicas:
        placement.partial.add(server)
