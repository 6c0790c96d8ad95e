"""Validation of a ModelBooster: the validating webhook's rules, also run by the CLI and the reconciler.

Its entry points are exported here, so callers import `shared.validation`. Where each rule runs and the order
of its errors: docs/design/validation.md.
"""

from shared.validation.autoscaling import (
    COST_EXPANSION_WITHOUT_MODEL_LEVEL,
    MIN_ONE_WITH_BACKEND_LEVEL,
    parse_defaulted,
    parse_modelbooster,
    validate_modelbooster,
    validate_update,
)

__all__ = [
    "COST_EXPANSION_WITHOUT_MODEL_LEVEL",
    "MIN_ONE_WITH_BACKEND_LEVEL",
    "parse_defaulted",
    "parse_modelbooster",
    "validate_modelbooster",
    "validate_update",
]
