"""A worker's `resources` checked as Kubernetes checks a container's, so that what the pods would be refused for
is refused at admission instead (docs/design/validation.md §6, item 10).

Kubernetes validates a pod's containers when the pod is created, long after the ModelBooster and its
ModelServing were admitted: a `nvidia.com/gpu: "0.5"` is only found when no pod of the backend appears. The
rules are those of Kubernetes' container validation, with its messages:

- a name without a `/` must be a standard resource of containers (`cpu`, `memory`, `ephemeral-storage`,
  `hugepages-<size>`); a name with one, outside `kubernetes.io/`, is an extended resource (`nvidia.com/gpu`)
  and must be a qualified name;
- no quantity is negative; an extended resource's is a whole number;
- extended resources and huge pages cannot be overcommitted: a request needs a limit, and equals it (a limit
  alone is fine, the request defaults to it); for the others a request may not exceed its limit. A request
  without its limit is given one equal to it by defaulting (shared/defaults.py), as the only value Kubernetes
  allows, so only an object that skipped defaulting meets LIMIT_REQUIRED.
"""

from __future__ import annotations

import decimal
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from shared.errors import FieldError, invalid, required
from shared.quantity import quantity_value
from shared.spelling import closest, did_you_mean

STANDARD_CONTAINER_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")
_HUGE_PAGES_PREFIX: Final = "hugepages-"
_NATIVE_DOMAIN: Final = "kubernetes.io/"
# Kubernetes' qualified name: an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters.
_QUALIFIED_NAME: Final = re.compile(
    r"^(?:(?P<prefix>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*)/)?"
    r"(?P<name>[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)

# Accelerators written without their device plugin's domain, and the resource the best known plugin names.
_DEVICES: Final[dict[str, str | None]] = {"gpu": "nvidia.com/gpu", "tpu": None, "npu": None}

NOT_INTEGER: Final = "must be an integer"
NEGATIVE: Final = "must be greater than or equal to 0"
LIMIT_REQUIRED: Final = "Limit must be set for non overcommitable resources"


def is_extended(name: str) -> bool:
    """`nvidia.com/gpu`: a name with a domain outside `kubernetes.io/` (Kubernetes' IsExtendedResourceName)."""
    return "/" in name and _NATIVE_DOMAIN not in name and not name.startswith("requests.")


def _huge_pages(name: str) -> bool:
    return name.startswith(_HUGE_PAGES_PREFIX)


def _overcommit_allowed(name: str) -> bool:
    return not is_extended(name) and not _huge_pages(name)


def needs_equal_limit(name: str) -> bool:
    """Whether Kubernetes wants a limit equal to the request of `name` (extended resources, huge pages)."""
    return not _overcommit_allowed(name)


def resource_errors(
    path: str, *, limits: Mapping[str, int | str] | None, requests: Mapping[str, int | str] | None
) -> list[FieldError]:
    """The errors of one container's `resources` at `path` (its quantities decoded already)."""
    # Every admission runs this, and nearly every container asks for a few resources in valid amounts, the
    # same few in every object: each entry is judged once per process (`_fine`), and only a container with an
    # entry that is not fine is looked at again, to say what is wrong.
    if all_fine(limits, requests):
        return []
    return _errors(path, limits=limits, requests=requests)


def all_fine(limits: Mapping[str, int | str] | None, requests: Mapping[str, int | str] | None) -> bool:
    """Whether `resource_errors` finds nothing, decided at the cost of a cached lookup per entry. Loops, not all()
    over generators: this runs for every worker of every admission."""
    if limits:
        for name, quantity in limits.items():
            if not (_small(name) and _small(quantity) and _fine(name, quantity, None)):
                return False
    if requests:
        for name, quantity in requests.items():
            limit = limits.get(name, _NO_LIMIT) if limits else _NO_LIMIT
            if not (_small(name) and _small(quantity) and _small(limit) and _fine(name, quantity, limit)):
                return False
    return True


# Verdicts are cached for the few names and amounts every object repeats; a key of the user's that is long is
# judged without the cache, which must not hold on to megabytes of someone's text.
_SMALL_TEXT: Final = 64
_SMALL_NUMBER: Final = 2**63


def _small(value: object) -> bool:
    if type(value) is str:
        return len(value) <= _SMALL_TEXT
    return type(value) is int and -_SMALL_NUMBER <= value < _SMALL_NUMBER


def _errors(
    path: str, *, limits: Mapping[str, int | str] | None, requests: Mapping[str, int | str] | None
) -> list[FieldError]:
    errors: list[FieldError] = []
    refused: set[str] = set()
    for part, quantities in (("limits", limits), ("requests", requests)):
        for name, quantity in (quantities or {}).items():
            if name not in _COMMON:
                kind = _kind(name)
                if kind.problem is not None:
                    refused.add(name)
                    errors.append(invalid(f"{path}.{part}[{name}]", name, kind.problem))
                    continue
                if kind.extended and not _whole(quantity):
                    refused.add(name)
                    errors.append(invalid(f"{path}.{part}[{name}]", quantity, NOT_INTEGER))
            if _negative(quantity):
                refused.add(name)
                errors.append(invalid(f"{path}.{part}[{name}]", quantity, NEGATIVE))
    if requests:
        errors.extend(_requests_within_limits(path, limits=limits or {}, requests=requests, refused=refused))
    return errors


def _requests_within_limits(
    path: str, *, limits: Mapping[str, int | str], requests: Mapping[str, int | str], refused: set[str]
) -> Iterator[FieldError]:
    for name, quantity in requests.items():
        limit = limits.get(name)
        if limit is None:
            if name not in _COMMON and name not in refused and not _kind(name).overcommit:
                yield required(
                    f"{path}.limits[{name}]", f"{LIMIT_REQUIRED}: set limits[{name}] (the request defaults to it)"
                )
            continue
        if quantity == limit or name in refused:
            continue
        order = _order(quantity, limit)
        if order != 0 and not _kind(name).overcommit:
            yield _compared(f"{path}.requests[{name}]", quantity, f"must be equal to {name} limit of {limit}")
        elif order > 0:
            detail = f"must be less than or equal to {name} limit of {limit}"
            yield _compared(f"{path}.requests[{name}]", quantity, detail)


# The names nearly every container uses, known to be valid.
_COMMON: Final = frozenset(STANDARD_CONTAINER_RESOURCES)
# A request's limit when there is none (None stands for "a limit, not a request").
_NO_LIMIT: Final = ""


@functools.lru_cache(maxsize=1024)
def _fine(name: str, quantity: int | str, limit: int | str | None) -> bool:
    """Whether one entry raises no error: a limit (`limit` None), or a request beside its limit (or `_NO_LIMIT`)."""
    return not _errors(
        "", limits={name: quantity} if limit is None else ({} if limit == _NO_LIMIT else {name: limit}),
        requests=None if limit is None else {name: quantity},
    )  # fmt: skip


def _value(quantity: int | str) -> Decimal:
    """The number a quantity stands for; cached, since a few amounts ("4", "16Gi") recur in every object."""
    return _cached_value(quantity) if _small(quantity) else _exact_value(quantity)


def _exact_value(quantity: int | str) -> Decimal:
    # Every digit counts (`1111…1.5` is not whole): decimal's default context keeps 28.
    with decimal.localcontext() as context:
        context.prec = max(context.prec, len(str(quantity)) + 24)
        return quantity_value(quantity)


_cached_value = functools.lru_cache(maxsize=1024)(_exact_value)


def _order(request: int | str, limit: int | str) -> int:
    """-1, 0 or 1 as the request is below, equal to or above the limit."""
    a, b = _value(request), _value(limit)
    return (a > b) - (a < b)


def _negative(quantity: int | str) -> bool:
    if isinstance(quantity, int):
        return quantity < 0
    return quantity[:1] == "-" and _value(quantity) < 0  # "-0" is zero


def _whole(quantity: int | str) -> bool:
    if isinstance(quantity, int):
        return True
    value = _value(quantity)
    return value == value.to_integral_value()


def _compared(path: str, quantity: object, detail: str) -> FieldError:
    error = invalid(path, quantity, detail)
    # Read both: an update that leaves the pair as it was carries the error over (shared/ratchet.py).
    return FieldError(
        path=error.path, type=error.type, value=error.value, detail=error.detail,
        reads=(path, path.replace(".requests[", ".limits[", 1)),
    )  # fmt: skip


@dataclass(frozen=True)
class _Kind:
    """What a resource name is: refused (why), extended, and whether requests may be below limits."""

    problem: str | None
    extended: bool
    overcommit: bool


def _kind(name: str) -> _Kind:
    return _cached_kind(name) if _small(name) else _judged(name)


def _judged(name: str) -> _Kind:
    return _Kind(problem=_name_problem(name), extended=is_extended(name), overcommit=_overcommit_allowed(name))


_cached_kind = functools.lru_cache(maxsize=256)(_judged)


def _name_problem(name: str) -> str | None:
    if "/" in name:
        if _QUALIFIED_NAME.match(name) is None or len(name.rpartition("/")[2]) > 63:
            return "must be a qualified name (<domain>/<name>, e.g. nvidia.com/gpu)"
        return None
    if name in STANDARD_CONTAINER_RESOURCES or _huge_pages(name):
        return None
    detail = (
        f"must be a standard resource for containers ({', '.join(STANDARD_CONTAINER_RESOURCES)}, "
        "hugepages-<size>) or an extended resource with its domain (nvidia.com/gpu)"
    )
    # `gpu` is one letter from `cpu`, but means a device plugin's resource, as `tpu` or `npu` do.
    device = name.casefold().removesuffix("s")
    meant = _DEVICES[device] if device in _DEVICES else closest(name, STANDARD_CONTAINER_RESOURCES)
    return f"{detail}; {did_you_mean(meant)}" if meant else detail
