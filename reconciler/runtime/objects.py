"""Reading Kubernetes objects as the JSON they are: the metadata view, JSON equality, and the parts of an object
a cache never reads (managedFields). One home for each, used by every controller.

Objects come from the API server, from caches and from users: any field may be missing, null or of the wrong
type (anyone with write access can put a string where a map belongs). These helpers answer "nothing there"
for all of those instead of raising, so a hostile object is reported, never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MANAGED_FIELDS = "managedFields"


def metadata(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """`obj.metadata` when it is an object, else an empty one (read-only use: the empty dict is a fresh one)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, dict) else {}


def meta_text(obj: Mapping[str, Any] | None, key: str) -> str:
    """A text field of `obj.metadata` (name, namespace, uid, resourceVersion, ...); "" when absent or null."""
    return str(metadata(obj).get(key) or "")


def json_equal(a: object, b: object) -> bool:
    """JSON equality: like `==`, except that `true` is not `1` (Python's bool is an int)."""
    # `==` (in C) settles the common case, a difference, at once; only equal values are walked again.
    return a == b and _strict(a, b)


def _strict(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_strict(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_strict(x, y) for x, y in zip(a, b, strict=True))
    return not isinstance(b, dict | list) and a == b


def without_managed_fields(obj: dict[str, Any], *, annotations: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`obj` without `metadata.managedFields` (and the named annotations): a shallow copy where something is
    dropped, `obj` itself where nothing is. Informer transforms use it: managedFields are often a third of an
    object and no cache reads them whole."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    held = meta.get("annotations")
    drop_annotations = isinstance(held, dict) and not annotations.isdisjoint(held)
    if MANAGED_FIELDS not in meta and not drop_annotations:
        return obj
    meta = {key: value for key, value in meta.items() if key != MANAGED_FIELDS}
    if drop_annotations:
        assert isinstance(held, dict)
        meta["annotations"] = {key: value for key, value in held.items() if key not in annotations}
    return {**obj, "metadata": meta}
