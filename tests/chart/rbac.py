"""RBAC of the rendered chart as data, and the authorizer's decision for one request.

The chart's Roles and ClusterRoles are flattened into `Grant`s, one per (apiGroup, resource, verb, namespace,
resourceNames) — `namespace=None` means cluster-wide. `ApiRequest` is one HTTP request a process sent, as the
RBAC authorizer sees it (`request_from_http` derives it from method, path and query the way kube-apiserver's
request-info resolver does). The end-to-end tests record every request each process makes against the fake
API server and check both directions with `is_allowed` and `unused_grants`: no request that is not granted,
no grant that no request used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs

Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]


@dataclass(frozen=True, order=True)
class Grant:
    api_group: str
    resource: str  # "modelboosters" or a subresource "modelboosters/status"
    verb: str
    namespace: str | None  # None: every namespace, and cluster-scoped objects
    resource_names: frozenset[str] = field(default_factory=frozenset)  # empty: any name


@dataclass(frozen=True)
class ApiRequest:
    api_group: str
    resource: str
    verb: str
    namespace: str | None  # None: a cluster-scoped object, or a list/watch across all namespaces
    name: str | None = None  # the object's name; for list/watch, from `fieldSelector=metadata.name=<name>`


class RbacError(ValueError):
    """The chart's RBAC objects are inconsistent (a binding to a missing role, a wildcard, ...)."""


def _subject_matches(subject: Mapping[str, Any], *, service_account: str, namespace: str) -> bool:
    return (
        subject.get("kind") == "ServiceAccount"
        and subject.get("name") == service_account
        and subject.get("namespace") == namespace
    )


def _rule_grants(rule: Mapping[str, Any], *, namespace: str | None) -> Iterable[Grant]:
    if rule.get("nonResourceURLs"):
        raise RbacError(f"nonResourceURLs are not expected in this chart: {rule}")
    names = frozenset(rule.get("resourceNames") or ())
    for group in rule.get("apiGroups") or ():
        for resource in rule.get("resources") or ():
            for verb in rule.get("verbs") or ():
                if "*" in (group, resource, verb):
                    raise RbacError(f"wildcard in rule {rule}: the chart grants exact rights only")
                yield Grant(group, resource, verb, namespace, names)


def grants_for_service_account(
    objects: Sequence[Mapping[str, Any]], *, service_account: str, namespace: str
) -> frozenset[Grant]:
    """Every grant that the rendered RBAC objects give to one ServiceAccount."""
    roles = {
        (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj
        for obj in objects
        if obj["kind"] in ("Role", "ClusterRole")
    }
    grants: set[Grant] = set()
    for binding in objects:
        kind = binding["kind"]
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = binding.get("subjects") or ()
        if not any(_subject_matches(s, service_account=service_account, namespace=namespace) for s in subjects):
            continue
        ref = binding["roleRef"]
        binding_ns = binding["metadata"].get("namespace") if kind == "RoleBinding" else None
        role_ns = binding_ns if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        if role is None:
            raise RbacError(f"{kind} {binding['metadata']['name']} refers to missing {ref['kind']} {ref['name']}")
        # A ClusterRole bound by a RoleBinding grants only inside the binding's namespace.
        for rule in role.get("rules") or ():
            grants.update(_rule_grants(rule, namespace=binding_ns))
    return frozenset(grants)


def _grant_covers(grant: Grant, request: ApiRequest) -> bool:
    if (grant.api_group, grant.resource, grant.verb) != (request.api_group, request.resource, request.verb):
        return False
    if grant.namespace is not None and grant.namespace != request.namespace:
        return False
    # resourceNames never authorize create, nor a list/watch that does not name its object.
    return not grant.resource_names or (request.name is not None and request.name in grant.resource_names)


def is_allowed(grants: Iterable[Grant], request: ApiRequest) -> bool:
    return any(_grant_covers(grant, request) for grant in grants)


def unused_grants(grants: Iterable[Grant], requests: Iterable[ApiRequest]) -> frozenset[Grant]:
    """Grants that no request needed (each named resource counts as its own grant)."""
    seen = list(requests)
    unused: set[Grant] = set()
    for grant in grants:
        if grant.resource_names:
            for name in grant.resource_names:
                single = Grant(grant.api_group, grant.resource, grant.verb, grant.namespace, frozenset({name}))
                if not any(_grant_covers(single, request) for request in seen):
                    unused.add(single)
        elif not any(_grant_covers(grant, request) for request in seen):
            unused.add(grant)
    return frozenset(unused)


def _verb(method: str, *, has_name: bool, watch: bool) -> str:
    method = method.upper()
    if method == "GET":
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    raise RbacError(f"HTTP method {method} has no RBAC verb")


def request_from_http(method: str, path: str, query: str = "") -> ApiRequest:
    """The RBAC attributes of one resource request, e.g. ("PATCH", "/apis/g/v1/namespaces/ns/things/a/status")."""
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        raise RbacError(f"not a resource path: {path}")
    params = parse_qs(query)
    watch = params.get("watch", [""])[0] in ("true", "1")
    if rest[:1] == ["watch"]:  # the deprecated /watch/ prefix
        watch, rest = True, rest[1:]
    namespace: str | None = None
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    elif rest[:1] == ["namespaces"]:
        rest = ["namespaces", *rest[1:]]  # the Namespace objects themselves
    if not rest:
        raise RbacError(f"no resource in path: {path}")
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else None
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    verb = _verb(method, has_name=name is not None, watch=watch)
    if name is None and verb in ("list", "watch"):
        for selector in params.get("fieldSelector", []):
            for term in selector.split(","):
                key, _, value = term.partition("=")
                if key == "metadata.name" and value and not value.startswith("="):
                    name = value
                elif key == "metadata.name" and value.startswith("="):  # metadata.name==x
                    name = value[1:]
    return ApiRequest(api_group=group, resource=resource, verb=verb, namespace=namespace, name=name)
