"""Which generation of Kthena's autoscaling kinds the cluster serves, read off the served AutoscalingPolicy and
Binding schemas (shared/autoscaling_generations.py holds the shapes and the rule), and what a ModelBooster that
autoscales lacks when none is fully served."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reconciler.modelbooster.kinds import AUTOSCALING_POLICY, AUTOSCALING_POLICY_BINDING
from reconciler.runtime.kinds import Kind
from shared.autoscaling_generations import Generation, missing_kinds, served_generation

SchemaOf = Callable[[Kind], Mapping[str, Any] | None]


def detect_generation(schema_of: SchemaOf) -> Generation | None:
    """The served generation, or None when the served schemas match none (or a kind is not served)."""
    return served_generation(schema_of(AUTOSCALING_POLICY), schema_of(AUTOSCALING_POLICY_BINDING))


def autoscaling_kinds_missing(schema_of: SchemaOf) -> list[Kind]:
    """The autoscaling kinds to install before any generation is fully served."""
    names = missing_kinds(schema_of(AUTOSCALING_POLICY), schema_of(AUTOSCALING_POLICY_BINDING))
    return [AUTOSCALING_POLICY if name == AUTOSCALING_POLICY.kind else AUTOSCALING_POLICY_BINDING for name in names]
