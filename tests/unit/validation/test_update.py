"""docs/design/validation.md §7: what an UPDATE may not change.

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

import pytest

from shared.errors import ValidationFailed
from shared.validation import parse_modelbooster
from tests.unit.factories import backend, modelbooster, pd_workers, worker
from tests.unit.validation.support import lines


def test_changing_a_workers_replicas_on_update_is_forbidden() -> None:
    old = modelbooster(backend(workers=[worker(replicas=1)]))
    new = modelbooster(backend(workers=[worker(replicas=2)]))
    assert lines(new, old=old) == [
        "spec.backends[0].workers[0].replicas: Forbidden: cannot change from 1 to 2: the generated ModelServing's "
        "gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster (or give the backend a new "
        "name) to change it"
    ]


def test_update_rules_compare_effective_replicas_and_matching_backends_only() -> None:
    old = modelbooster(backend("a", workers=[worker()]))
    assert lines(modelbooster(backend("a", workers=[worker(replicas=1)])), old=old) == []
    assert lines(modelbooster(backend("b", workers=[worker(replicas=3)])), old=old) == []
    assert lines(modelbooster(backend("a", workers=[worker(replicas=1)])), old=None) == []


def test_update_compares_pd_roles_by_type() -> None:
    old = modelbooster(backend(type="vLLMDisaggregated", workers=pd_workers(prefill={"replicas": 2})))
    new = modelbooster(backend(type="vLLMDisaggregated", workers=list(reversed(pd_workers(prefill={"replicas": 3})))))
    assert lines(new, old=old) == [
        "spec.backends[0].workers[1].replicas: Forbidden: cannot change from 2 to 3: the generated ModelServing's "
        "gangPolicy.minRoleReplicas is immutable; delete and recreate the ModelBooster (or give the backend a new "
        "name) to change it"
    ]


def test_an_old_object_that_does_not_decode_skips_the_update_rules() -> None:
    new = modelbooster(backend(workers=[worker(replicas=2)]))
    assert lines(new, old={"spec": "garbage"}) == []


def test_parse_modelbooster_applies_update_rules_against_the_defaulted_old_object() -> None:
    old = modelbooster(backend(workers=[worker()]))  # replicas absent: 1 after defaulting
    with pytest.raises(ValidationFailed):
        parse_modelbooster(modelbooster(backend(workers=[worker(replicas=0)])), old=old)
