"""The names of a ModelBooster's children, and where two ModelBoosters of one namespace would generate the same.

Children are named after the model and the backend (docs/design/synthesis.md §2): `qwen-fixed` with a backend
`cpu` and `qwen` with a backend `fixed-cpu` both generate the ModelServing `qwen-fixed-cpu`. Each is valid on
its own, and in a cluster the one applied second finds the name taken by the other and fails (the reconciler's
`OwnershipConflict`). `modelbooster render` and `validate` see every ModelBooster of their input at once, so
they refuse the second one there, with a line naming the first (docs/design/validation.md §9).

`child_names` follows synthesis (a test holds it to the children `synthesize` builds for every example).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shared.api.modelbooster import ModelBooster
from shared.backend_shape import wire_path
from shared.constants import (
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_ROUTE,
    KIND_MODEL_SERVER,
    KIND_MODEL_SERVING,
)
from shared.errors import FieldError, invalid
from shared.gotext import go_quote
from shared.naming import backend_resource_name, route_name

_PER_BACKEND = (KIND_MODEL_SERVING, KIND_MODEL_SERVER)
_AUTOSCALING = (KIND_AUTOSCALING_POLICY, KIND_AUTOSCALING_POLICY_BINDING)


@dataclass(frozen=True)
class ChildName:
    kind: str
    name: str
    # The backend whose name is part of the child's, if any, and the field of the ModelBooster that gives the
    # name its distinctive part (a backend's `name`, or `metadata.name`), at the path the user wrote.
    backend: str | None
    field: str


def child_names(booster: ModelBooster) -> list[ChildName]:
    """Every child `booster` generates, by kind and name (the binding too, which Kthena v1.0's CRDs lack)."""
    model = booster.metadata.name or ""
    single = booster.spec.backend is not None
    names: list[ChildName] = []
    for i, backend in enumerate(booster.spec.backends):
        field = wire_path(f"spec.backends[{i}].name") if single else f"spec.backends[{i}].name"
        kinds: tuple[str, ...] = _PER_BACKEND
        if booster.spec.autoscaling_policy is None and backend.autoscaling_policy is not None:
            kinds = (*kinds, *_AUTOSCALING)
        resource = backend_resource_name(model, backend.name)
        names.extend(ChildName(kind, resource, backend.name, field) for kind in kinds)
    kinds = (KIND_MODEL_ROUTE, *(_AUTOSCALING if booster.spec.autoscaling_policy is not None else ()))
    names.extend(ChildName(kind, route_name(model), None, "metadata.name") for kind in kinds)
    return names


@dataclass(frozen=True)
class Member:
    """One ModelBooster of an input: its namespace (empty when it names none), and how messages name it."""

    namespace: str
    display: str
    booster: ModelBooster


def collisions(members: Sequence[Member]) -> list[list[FieldError]]:
    """Per member, in order, the errors for the children it would generate under a name an earlier member of the
    same namespace generates already (the earlier one keeps it, as in a cluster where it is applied first)."""
    taken: dict[tuple[str, str, str], tuple[Member, ChildName]] = {}
    found: list[list[FieldError]] = []
    for member in members:
        mine = child_names(member.booster)
        clashes: dict[tuple[str, str], list[str]] = {}  # (field, name) -> kinds, in order
        owners: dict[tuple[str, str], tuple[Member, ChildName]] = {}
        for child in mine:
            owner = taken.get((member.namespace, child.kind, child.name))
            if owner is None or _name(owner[0]) == _name(member):
                continue  # the same ModelBooster twice: applying the second updates the first
            clashes.setdefault((child.field, child.name), []).append(child.kind)
            owners.setdefault((child.field, child.name), owner)
        for child in mine:
            taken.setdefault((member.namespace, child.kind, child.name), (member, child))
        found.append(list(_errors(clashes, owners)))
    return found


def _name(member: Member) -> str:
    return member.booster.metadata.name or ""


def _errors(
    clashes: dict[tuple[str, str], list[str]], owners: dict[tuple[str, str], tuple[Member, ChildName]]
) -> Iterator[FieldError]:
    for (field, name), kinds in clashes.items():
        other, theirs = owners[(field, name)]
        whose = f"{other.display} (its backend {go_quote(theirs.backend)})" if theirs.backend else other.display
        fix = "rename this backend" if field != "metadata.name" else "rename this ModelBooster"
        yield invalid(
            field,
            name,
            f"the generated {_kinds(kinds)} {go_quote(name)} would also be the child of {whose}, earlier in this "
            f"input; a name belongs to one ModelBooster of a namespace, so this one, applied after it, would fail: "
            f"{fix} or the other ModelBooster",
        )


def _kinds(kinds: Sequence[str]) -> str:
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
