"""Fields a served CRD makes immutable, read off its schema (docs/design/reconciler.md §16).

A CRD says a field may not change with a transition rule on it: `x-kubernetes-validations: [{rule: "self ==
oldSelf"}]` (Kthena's ModelServing on `spec.template.gangPolicy.minRoleReplicas`, its ModelRoute on
`spec.modelName`). An update that changes such a field is refused with 422 every time, so a controller that
would write another value must know it before writing, or it retries the same refusal forever.

Only rules that are exactly an equality of `self` and `oldSelf` (either order, any spacing) are read: they are
the only ones whose meaning is "this field never changes". Paths go through object properties only; a rule
under a list item or a map value names no single field. The walk is bounded in depth: a schema is data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from reconciler.runtime.paths import Path

MAX_DEPTH: Final = 32
_IMMUTABLE_RULES: Final = frozenset({"self==oldSelf", "oldSelf==self"})


def _says_immutable(node: Mapping[str, Any]) -> bool:
    rules = node.get("x-kubernetes-validations") or ()
    texts = [rule["rule"] for rule in rules if isinstance(rule, Mapping) and isinstance(rule.get("rule"), str)]
    return any("".join(text.split()) in _IMMUTABLE_RULES for text in texts)


def immutable_paths(schema: Mapping[str, Any] | None) -> tuple[Path, ...]:
    """The paths (from the object's root) of the fields the schema declares immutable, in schema order."""
    found: list[Path] = []

    def walk(node: Any, path: Path) -> None:
        if not isinstance(node, Mapping) or len(path) > MAX_DEPTH:
            return
        if path and _says_immutable(node):
            found.append(path)
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, child in properties.items():
                walk(child, (*path, str(name)))

    walk(schema, ())
    return tuple(found)
