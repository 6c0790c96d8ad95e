"""Fields of a ModelServing that a scaler outside the ModelBooster sets once it exists (docs/design/reconciler.md
§16, docs/design/inferno.md §19): `spec.replicas` under an autoscaler, and with the external-replicas opt-in on a
disaggregated backend each role's `replicas`.
"""

from __future__ import annotations

from typing import Any

from reconciler.runtime.paths import Item, Path


def role_replica_paths(serving: dict[str, Any]) -> tuple[Path, ...]:
    """`spec.template.roles[<name>].replicas` of each role of a rendered ModelServing, the role named by its
    `name`: the live list may hold the roles in another order (someone rewrote it), and an index would then
    name the other role's replicas."""
    roles = ((serving.get("spec") or {}).get("template") or {}).get("roles") or ()
    return tuple(
        ("spec", "template", "roles", Item("name", str(role["name"])), "replicas")
        for role in roles
        if isinstance(role, dict) and isinstance(role.get("name"), str)
    )
