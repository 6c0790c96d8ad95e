"""CustomResourceDefinitions generated from the models: ModelBooster, the five child kinds, and Inferno's kinds.

The chart's `crds/` directory holds exactly what `crds()` returns (a test fails on drift), so every schema
fact lives once, in the models: types, enums, bounds, patterns, defaults, list-map keys and the CEL rules
that reject the unsupported ModelBooster features. What a model cannot say (names, printer columns, the
child CRDs' own CEL rules, which Kthena declares per path) is in the table below; adding a kind is one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import yaml
from pydantic import BaseModel

from shared.api import children
from shared.api.inferno import GROUP as INFERNO_GROUP
from shared.api.inferno import INFERNO_KINDS, SHORT_NAMES
from shared.api.inferno import VERSION as INFERNO_VERSION
from shared.api.modelbooster import ModelBooster
from shared.constants import (
    KIND_AUTOSCALING_POLICY,
    KIND_AUTOSCALING_POLICY_BINDING,
    KIND_MODEL_BOOSTER,
    KIND_MODEL_ROUTE,
    KIND_MODEL_SERVER,
    KIND_MODEL_SERVING,
    NETWORKING_GROUP,
    PLURAL_AUTOSCALING_POLICIES,
    PLURAL_AUTOSCALING_POLICY_BINDINGS,
    PLURAL_MODEL_BOOSTERS,
    PLURAL_MODEL_ROUTES,
    PLURAL_MODEL_SERVERS,
    PLURAL_MODEL_SERVINGS,
    VERSION,
    WORKLOAD_GROUP,
)
from shared.crd_digest import DIGEST_ANNOTATION, spec_digest
from shared.schema import apiserver_form, structural_problems, structural_schema

Rule = Mapping[str, Any]

OWN_CRDS_DIRECTORY: Final = "crds"
CHILD_CRDS_DIRECTORY: Final = "charts/child-crds/crds"
INFERNO_CRDS_DIRECTORY: Final = "charts/inferno-crds/crds"


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    description: str = ""

    def to_crd(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            column["description"] = self.description
        return column


AGE: Final = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class CrdKind:
    """Everything about one CRD that its model does not say."""

    group: str
    kind: str
    plural: str
    model: type[BaseModel]
    version: str = VERSION
    description: str = ""
    short_names: Sequence[str] = ()
    categories: Sequence[str] = ()
    printer_columns: Sequence[PrinterColumn] = ()
    # dotted schema path (`[]` steps into list items) -> CEL rules / extra keywords placed there
    rules: Mapping[str, Sequence[Rule]] = field(default_factory=dict)
    keywords: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    core_descriptions: bool = True
    # Where the chart keeps the file, relative to the chart: the child kinds live in a subchart so that
    # `crds.installChildCRDs: false` can leave them to Kthena, and the Inferno kinds in one so that
    # `inferno.enabled: false` leaves them out (Helm installs every crds/ file of an enabled chart).
    chart_directory: str = OWN_CRDS_DIRECTORY
    # The `scale` subresource (specReplicasPath, statusReplicasPath, labelSelectorPath), when the kind has one.
    scale: Mapping[str, str] | None = None

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


def _cel(pairs: Mapping[str, Sequence[tuple[str, str]]]) -> dict[str, list[Rule]]:
    return {path: [{"rule": rule, "message": message} for rule, message in rules] for path, rules in pairs.items()}


def _condition_column(condition: str, description: str) -> PrinterColumn:
    return PrinterColumn(condition, "string", f".status.conditions[?(@.type=='{condition}')].status", description)


KINDS: Final[tuple[CrdKind, ...]] = (
    CrdKind(
        WORKLOAD_GROUP,
        KIND_MODEL_BOOSTER,
        PLURAL_MODEL_BOOSTERS,
        ModelBooster,
        description="ModelBooster deploys one LLM with one or more inference backends, and everything that serves "
        "it: ModelServing, ModelServer, ModelRoute and autoscaling objects.",
        short_names=("mb",),
        categories=("kthena",),
        printer_columns=(
            _condition_column("Active", "Whether every backend's ModelServing is available"),
            _condition_column("Failed", "Whether the last reconcile failed"),
            PrinterColumn("Backends", "integer", ".status.backendCount", "Number of backends"),
            AGE,
        ),
    ),
    CrdKind(
        WORKLOAD_GROUP,
        KIND_MODEL_SERVING,
        PLURAL_MODEL_SERVINGS,
        children.ModelServing,
        chart_directory=CHILD_CRDS_DIRECTORY,
        description="ModelServing runs groups of pods (roles) that serve a model; Kthena's ModelServing "
        "controller owns its pods.",
        printer_columns=(
            PrinterColumn("Replicas", "integer", ".status.replicas", "Total number of serving groups"),
            PrinterColumn("Available", "integer", ".status.availableReplicas", "Number of ready serving groups"),
            PrinterColumn("Updated", "integer", ".status.updatedReplicas", "Serving groups at the latest revision"),
            AGE,
        ),
        rules=_cel(children.MODEL_SERVING_RULES),
        # `self == oldSelf` costs in proportion to the map; a ModelServing has at most 4 roles.
        keywords={"spec.template.gangPolicy.minRoleReplicas": {"maxProperties": 4}},
        # Two full PodSpecs per role: their descriptions alone would push the CRD past a megabyte.
        core_descriptions=False,
        scale=children.MODEL_SERVING_SCALE,
    ),
    CrdKind(
        WORKLOAD_GROUP,
        KIND_AUTOSCALING_POLICY,
        PLURAL_AUTOSCALING_POLICIES,
        children.AutoscalingPolicy,
        chart_directory=CHILD_CRDS_DIRECTORY,
        description="AutoscalingPolicy says which metrics drive scaling and how fast to scale.",
        printer_columns=(AGE,),
    ),
    CrdKind(
        WORKLOAD_GROUP,
        KIND_AUTOSCALING_POLICY_BINDING,
        PLURAL_AUTOSCALING_POLICY_BINDINGS,
        children.AutoscalingPolicyBinding,
        chart_directory=CHILD_CRDS_DIRECTORY,
        description="AutoscalingPolicyBinding applies an AutoscalingPolicy to ModelServings.",
        rules=_cel({"spec": ((children.BINDING_ONE_CONFIGURATION_RULE, children.BINDING_ONE_CONFIGURATION_MESSAGE),)}),
    ),
    CrdKind(
        NETWORKING_GROUP,
        KIND_MODEL_SERVER,
        PLURAL_MODEL_SERVERS,
        children.ModelServer,
        chart_directory=CHILD_CRDS_DIRECTORY,
        description="ModelServer tells Kthena's router which pods serve a model and how to reach them.",
        printer_columns=(
            PrinterColumn("Engine", "string", ".spec.inferenceEngine", "Inference engine used to serve the model"),
            PrinterColumn("Port", "integer", ".spec.workloadPort.port", "Model server port"),
            PrinterColumn("Protocol", "string", ".spec.workloadPort.protocol", "Model server protocol"),
            AGE,
        ),
    ),
    CrdKind(
        NETWORKING_GROUP,
        KIND_MODEL_ROUTE,
        PLURAL_MODEL_ROUTES,
        children.ModelRoute,
        chart_directory=CHILD_CRDS_DIRECTORY,
        description="ModelRoute tells Kthena's router which ModelServers take the requests for a model name.",
        printer_columns=(AGE,),
        rules=_cel(children.MODEL_ROUTE_RULES),
    ),
    *(
        CrdKind(
            INFERNO_GROUP,
            kind,
            plural,
            model,
            version=INFERNO_VERSION,
            short_names=SHORT_NAMES.get(kind, ()),
            categories=("inferno",),
            chart_directory=INFERNO_CRDS_DIRECTORY,
        )
        for kind, plural, model in INFERNO_KINDS
    ),
)


class CrdError(ValueError):
    """The table and the models disagree (a path that does not exist, a schema that is not structural)."""


def crd(kind: CrdKind) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    schema = _root_schema(kind)
    for path, rules in kind.rules.items():
        node = _node_at(schema, path, kind=kind)
        node.setdefault("x-kubernetes-validations", []).extend(dict(rule) for rule in rules)
    for path, keywords in kind.keywords.items():
        _node_at(schema, path, kind=kind).update(keywords)
    schema = apiserver_form(schema)
    problems = structural_problems(schema)
    if problems:
        raise CrdError(f"{kind.name}: not a structural schema: {'; '.join(problems[:5])}")
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    if kind.categories:
        names["categories"] = list(kind.categories)
    version: dict[str, Any] = {
        "name": kind.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        "subresources": {"status": {}, **({"scale": dict(kind.scale)} if kind.scale else {})},
    }
    if kind.printer_columns:
        version["additionalPrinterColumns"] = [column.to_crd() for column in kind.printer_columns]
    spec = {"group": kind.group, "names": names, "scope": "Namespaced", "versions": [version]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        # The digest lets the reconciler tell whether the cluster serves this very CRD (shared/crd_digest.py).
        "metadata": {"name": kind.name, "annotations": {DIGEST_ANNOTATION: spec_digest(spec)}},
        "spec": spec,
    }


def crds() -> list[dict[str, Any]]:
    return [crd(kind) for kind in KINDS]


def chart_files() -> dict[str, str]:
    """Path relative to the chart directory -> file content, for every CRD the chart ships."""
    return {
        f"{kind.chart_directory}/{file_name(definition)}": to_yaml(definition)
        for kind, definition in zip(KINDS, crds(), strict=True)
    }


def file_name(definition: Mapping[str, Any]) -> str:
    """`<group>_<plural>.yaml`, the name controller-gen gives a CRD file."""
    spec = definition["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def to_yaml(definition: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(definition), sort_keys=False, allow_unicode=True, width=120)


def _root_schema(kind: CrdKind) -> dict[str, Any]:
    model_schema = structural_schema(kind.model, core_descriptions=kind.core_descriptions)
    body = {
        name: node
        for name, node in model_schema.get("properties", {}).items()
        if name not in ("apiVersion", "kind", "metadata")
    }
    root: dict[str, Any] = {"type": "object"}
    if kind.description:
        root["description"] = kind.description
    root["properties"] = {
        "apiVersion": {
            "type": "string",
            "description": "APIVersion defines the versioned schema of this representation of an object.",
        },
        "kind": {"type": "string", "description": "Kind is a string value representing the REST resource."},
        "metadata": {"type": "object"},
        **body,
    }
    required = [name for name in model_schema.get("required", []) if name in body]
    if required:
        root["required"] = required
    return root


def _node_at(schema: dict[str, Any], path: str, *, kind: CrdKind) -> dict[str, Any]:
    node = schema
    for segment in path.split("."):
        steps_into_items = segment.endswith("[]")
        name = segment.removesuffix("[]")
        properties = node.get("properties", {})
        if name not in properties:
            raise CrdError(f"{kind.name}: no field {path!r} in the schema")
        node = properties[name]
        if steps_into_items:
            node = node["items"]
    return node


def expected_digests(*, include_children: bool = True, include_inferno: bool = True) -> dict[str, str]:
    """CRD name -> the digest this version generates; without the child kinds when Kthena provides them, without
    Inferno's when its controller does not run."""
    return {
        kind.name: definition["metadata"]["annotations"][DIGEST_ANNOTATION]
        for kind, definition in zip(KINDS, crds(), strict=True)
        if (include_children or kind.chart_directory != CHILD_CRDS_DIRECTORY)
        and (include_inferno or kind.group != INFERNO_GROUP)
    }


def digest_table() -> dict[str, dict[str, Any]]:
    """What shared/crd_digests.json records for each CRD (shared/crd_digest.py reads it)."""
    return {
        kind.name: {
            "digest": definition["metadata"]["annotations"][DIGEST_ANNOTATION],
            "chartDirectory": kind.chart_directory,
            "child": kind.chart_directory == CHILD_CRDS_DIRECTORY,
            "inferno": kind.group == INFERNO_GROUP,
        }
        for kind, definition in zip(KINDS, crds(), strict=True)
    }


def chart_directories() -> dict[str, str]:
    """CRD name -> the directory of the chart that holds its file (what to apply it from)."""
    return {kind.name: kind.chart_directory for kind in KINDS}
