"""Validation of a ModelBooster: the validating webhook's rules, also run by the CLI and the reconciler.

One package so that each rule group has a room named for it; the entry points live in `entry.py` and are
exported here, so callers import `shared.validation`. Where each rule runs and the order of its errors:
docs/design/validation.md.
"""

from shared.validation.autoscaling import COST_EXPANSION_WITHOUT_MODEL_LEVEL, MIN_ONE_WITH_BACKEND_LEVEL
from shared.validation.entry import parse_defaulted, parse_modelbooster, validate_modelbooster, validate_update
from shared.validation.names import name_given

__all__ = [
    "COST_EXPANSION_WITHOUT_MODEL_LEVEL",
    "MIN_ONE_WITH_BACKEND_LEVEL",
    "name_given",
    "parse_defaulted",
    "parse_modelbooster",
    "validate_modelbooster",
    "validate_update",
]
