"""The test CRD: a namespaced `Widget` in two served versions, exercising every schema feature the fake
implements (enum, bounds, pattern, defaults, set and map lists, preserved unknown fields, CEL rules)."""

from __future__ import annotations

from typing import Any, Final

GROUP: Final = "example.fakeapi.io"
VERSION: Final = "v1"
PLURAL: Final = "widgets"
API_VERSION: Final = f"{GROUP}/{VERSION}"

_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {
                    "type": "string",
                    "enum": ["small", "medium", "large"],
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "size is immutable"}],
                },
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "color": {"type": "string", "maxLength": 10, "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "tags": {
                    "type": "array",
                    "maxItems": 3,
                    "items": {"type": "string", "maxLength": 20},
                    "x-kubernetes-list-type": "set",
                },
                "parts": {
                    "type": "array",
                    "maxItems": 8,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "maxLength": 20},
                            "count": {"type": "integer", "default": 1},
                        },
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "legacy": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "primary": {"type": "string", "maxLength": 20},
                "secondary": {"type": "string", "maxLength": 20},
                "note": {"type": "string", "nullable": True},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.legacy)",
                    "message": "legacy is not supported; use config",
                    "reason": "FieldValueForbidden",
                    "fieldPath": ".legacy",
                },
                {
                    "rule": "!(has(self.primary) && has(self.secondary))",
                    "message": "set primary or secondary, not both",
                },
            ],
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "observedGeneration": {"type": "integer"},
                "conditions": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {
                        "type": "object",
                        "required": ["type", "status"],
                        "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
                    },
                },
            },
        },
    },
}

WIDGET_CRD: Final[dict[str, Any]] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": _SCHEMA},
                "subresources": {"status": {}},
            },
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "schema": {"openAPIV3Schema": _SCHEMA},
                "subresources": {"status": {}},
            },
        ],
    },
}

GADGET_CRD: Final[dict[str, Any]] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def widget(name: str, *, namespace: str = "default", size: str = "small", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": size, **spec},
    }
