"""CustomResourceDefinitions: validation of the CRD itself and the resource it makes the fake serve."""

from __future__ import annotations

from typing import Any, Final

from tests.fakeapi import errors as e
from tests.fakeapi import meta, schema
from tests.fakeapi.errors import FieldError
from tests.fakeapi.resources import CustomResourceStrategy, ResourceInfo, Strategy, VersionInfo
from tests.fakeapi.util import deep_copy, json_equal

Obj = dict[str, Any]

CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"

# kube-apiserver decodes a CRD into Go structs whose `omitempty` fields vanish when empty, so what it stores
# (and serves back) lacks them (seen on v1.36: `properties: {}`, `required: []`, `description: ""`,
# `nullable: false`, `x-kubernetes-validations: []`, a printer column's `priority: 0`, ...).
_SCHEMA_OMITEMPTY: Final = frozenset(
    {
        "id", "$schema", "$ref", "description", "type", "format", "title", "pattern", "required", "enum",
        "allOf", "oneOf", "anyOf", "properties", "patternProperties", "dependencies", "definitions",
        "x-kubernetes-list-map-keys", "x-kubernetes-validations",
    }
)  # fmt: skip
_SCHEMA_OMITFALSE: Final = frozenset(
    {
        "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable", "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    }
)  # fmt: skip
_COLUMN_OMITEMPTY: Final = frozenset({"format", "description", "priority"})


def _omit_empty(node: Any) -> Any:
    """A JSONSchemaProps as the API server stores it."""
    if not isinstance(node, dict):
        return node
    result: Obj = {}
    for key, raw in node.items():
        if key in _SCHEMA_OMITEMPTY and raw in ({}, [], ""):
            continue
        if key in _SCHEMA_OMITFALSE and raw is False:
            continue
        value = raw
        if key in ("properties", "patternProperties", "definitions") and isinstance(raw, dict):
            value = {name: _omit_empty(child) for name, child in raw.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(raw, dict):
            value = _omit_empty(raw)
        elif key in ("allOf", "oneOf", "anyOf") and isinstance(raw, list):
            value = [_omit_empty(option) for option in raw]
        result[key] = value
    return result


def normalise_versions(spec: Obj) -> None:
    """Drop from every version what kube-apiserver would not store (see `_SCHEMA_OMITEMPTY`)."""
    for version in spec.get("versions") or []:
        if not isinstance(version, dict):
            continue
        holder = version.get("schema")
        if isinstance(holder, dict) and isinstance(holder.get("openAPIV3Schema"), dict):
            holder["openAPIV3Schema"] = _omit_empty(holder["openAPIV3Schema"])
        columns = version.get("additionalPrinterColumns")
        if isinstance(columns, list):
            version["additionalPrinterColumns"] = [
                {k: v for k, v in column.items() if not (k in _COLUMN_OMITEMPTY and v in ("", 0))}
                if isinstance(column, dict)
                else column
                for column in columns
            ]


class CrdStrategy(Strategy):
    tracks_generation = True
    top_level_fields = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})

    def default(self, obj: Obj) -> None:
        # apiextensions/v1 defaulting runs while the request is decoded: the creator owns these fields.
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("conversion", {"strategy": "None"})
        names = spec.get("names")
        if isinstance(names, dict):
            names.setdefault("singular", str(names.get("kind", "")).lower())
            names.setdefault("listKind", f"{names.get('kind', '')}List")

    def prepare_for_create(self, obj: Obj) -> None:
        spec = obj.setdefault("spec", {})
        self.default(obj)
        normalise_versions(spec)
        storage = [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
        # As kube-apiserver v1.36.2 stores a new CRD: no conditions yet (null), the storage version recorded.
        obj["status"] = {
            "conditions": None,
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": storage[:1],
        }

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        spec = new.setdefault("spec", {})
        spec.setdefault("conversion", {"strategy": "None"})
        normalise_versions(spec)
        names = spec.get("names") or {}
        if isinstance(names, dict):
            names.setdefault("singular", str(names.get("kind", "")).lower())
            names.setdefault("listKind", f"{names.get('kind', '')}List")
        if "status" in old:
            new["status"] = deep_copy(old["status"])

    def validate(self, obj: Obj, old: Obj | None, *, version: str) -> list[FieldError]:
        return validate_crd(obj, old)


def validate_crd(crd: Obj, old: Obj | None) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    name = crd.get("metadata", {}).get("name", "")
    if name != f"{plural}.{group}":
        errs.append(e.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(e.required("spec.group", ""))
    elif "." not in group:
        errs.append(e.invalid("spec.group", group, "should be a domain with at least one dot"))
    else:
        errs.extend(e.invalid("spec.group", group, p) for p in meta.dns1123_subdomain_errors(group))
    if not plural:
        errs.append(e.required("spec.names.plural", ""))
    else:
        errs.extend(e.invalid("spec.names.plural", plural, p) for p in meta.dns1123_label_errors(plural))
    if not names.get("kind"):
        errs.append(e.required("spec.names.kind", ""))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errs.append(e.not_supported("spec.scope", scope or "", ["Cluster", "Namespaced"]))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        errs.append(e.invalid("spec.versions", e.OMIT, "must have exactly one version marked as storage version"))
        return errs
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errs.append(e.invalid("spec.versions", e.OMIT, "must have exactly one version marked as storage version"))
    # kube-apiserver validates the internal form of a CRD, where a schema all versions share is hoisted to
    # `spec.validation`: its errors name that path (seen on v1.36.2).
    schemas = [(v.get("schema") or {}).get("openAPIV3Schema") if isinstance(v, dict) else None for v in versions]
    shared = schemas[0] if all(isinstance(x, dict) and json_equal(x, schemas[0]) for x in schemas) else None
    seen: set[str] = set()
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        if not isinstance(version, dict):
            errs.append(e.invalid(path, version, "must be an object"))
            continue
        version_name = str(version.get("name", ""))
        if not version_name:
            errs.append(e.required(f"{path}.name", ""))
        elif version_name in seen:
            errs.append(e.invalid("spec.versions", version_name, "must contain unique version names"))
        seen.add(version_name)
        open_api = (version.get("schema") or {}).get("openAPIV3Schema")
        schema_path = f"{path}.schema.openAPIV3Schema"
        if not isinstance(open_api, dict):
            errs.append(e.required(schema_path, "schemas are required"))
            continue
        if shared is not None:
            if index == 0:  # one schema for every version: checked once, where the internal API holds it
                errs.extend(_schema_errors(open_api, "spec.validation.openAPIV3Schema"))
            continue
        errs.extend(_schema_errors(open_api, schema_path))
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("group") != spec.get("group"):
            errs.append(e.invalid("spec.group", group, "field is immutable"))
        if (old_spec.get("names") or {}).get("plural") != plural:
            errs.append(e.invalid("spec.names.plural", plural, "field is immutable"))
        if old_spec.get("scope") != scope:
            errs.append(e.invalid("spec.scope", scope, "field is immutable"))
    return errs


def _schema_errors(open_api: Obj, path: str) -> list[FieldError]:
    return [
        *_structural_errors(open_api, path, root=True),
        *schema.check_rule_placement(open_api, path),
        *schema.check_rule_costs(open_api, path),
    ]


def _structural_errors(node: Obj, path: str, *, root: bool = False) -> list[FieldError]:
    """The part of the structural-schema rules that catches real mistakes: every node has a type."""
    errs: list[FieldError] = []
    free = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
    if not node.get("type") and not free:
        errs.append(e.required(f"{path}.type", "must not be empty for specified object fields"))
    if root and node.get("type") not in (None, "object"):
        errs.append(e.invalid(f"{path}.type", node.get("type"), 'must be "object" at the root'))
    for name, prop in (node.get("properties") or {}).items():
        if isinstance(prop, dict):
            errs.extend(_structural_errors(prop, f"{path}.properties[{name}]"))
    items = node.get("items")
    if isinstance(items, dict):
        errs.extend(_structural_errors(items, f"{path}.items"))
    elif node.get("type") == "array":
        errs.append(e.required(f"{path}.items", "must be specified"))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        errs.extend(_structural_errors(extra, f"{path}.additionalProperties"))
    if node.get("x-kubernetes-list-type") == "map" and not node.get("x-kubernetes-list-map-keys"):
        errs.append(
            e.required(f"{path}.x-kubernetes-list-map-keys", 'must not be empty if x-kubernetes-list-type is "map"')
        )
    return errs


def established_status(crd: Obj, now: str) -> Obj:
    """What the CRD controllers report once the names are accepted and the resource is served."""
    spec = crd.get("spec") or {}
    names = deep_copy(spec.get("names") or {})
    stored = [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
    previous = (crd.get("status") or {}).get("storedVersions") or []
    return {
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": now,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "acceptedNames": names,
        "storedVersions": list(dict.fromkeys([*previous, *stored])),
    }


def resource_from_crd(crd: Obj) -> ResourceInfo:
    spec = crd["spec"]
    names = spec["names"]
    versions: dict[str, VersionInfo] = {}
    status_versions: set[str] = set()
    for version in spec["versions"]:
        if version.get("served") is False:
            continue
        subresources = version.get("subresources") or {}
        has_status = "status" in subresources
        if has_status:
            status_versions.add(version["name"])
        versions[version["name"]] = VersionInfo(
            name=version["name"],
            schema=deep_copy((version.get("schema") or {}).get("openAPIV3Schema")),
            status_subresource=has_status,
            printer_columns=deep_copy(version.get("additionalPrinterColumns") or []),
            storage=bool(version.get("storage")),
            scale=deep_copy((version.get("subresources") or {}).get("scale")),
        )
    return ResourceInfo(
        group=spec["group"],
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec.get("scope") == "Namespaced",
        versions=versions,
        strategy=CustomResourceStrategy(status_versions=frozenset(status_versions)),
        short_names=list(names.get("shortNames") or []),
        categories=list(names.get("categories") or []),
        custom=True,
        crd_uid=str(crd.get("metadata", {}).get("uid", "")),
    )
