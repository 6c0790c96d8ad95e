"""Child-CRD sets shaped like each generation of Kthena's own child CRDs, written from the facts in
docs/design/kthena-generations.md (not from Kthena's files), for the fake API server, which prunes what a schema
does not declare just as kube-apiserver does.

- `v0.1`: the child CRDs we ship (they are Kthena v0.1.0's shapes).
- `v0.2`: Kthena v0.2.0 to v0.4.0: the Binding holds `homogeneousTarget` / `heterogeneousTarget`, a target's
  extra pod labels sit in `metricEndpoint.labelSelector`; ModelServing declares no `topologySpreadConstraints`
  and (from v0.4.0) has a scale subresource.
- `v1.0`: Kthena v1.0.0: no Binding CRD; the AutoscalingPolicy carries the targets and names its metrics `name`;
  ModelServing as in v0.4.0.

Only the autoscaling kinds and ModelServing differ between generations; ModelServer and ModelRoute are ours.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from tests.reconciler.harness import crd_documents

Obj = dict[str, Any]

GROUP: Final = "workload.serving.volcano.sh"
GENERATIONS: Final = ("v0.1", "v0.2", "v1.0")


def _ours(plural: str) -> Obj:
    for document in crd_documents():
        if document["spec"]["names"]["plural"] == plural:
            return copy.deepcopy(document)
    raise KeyError(plural)


def _obj(properties: Obj, *, required: list[str] | None = None) -> Obj:
    node: Obj = {"type": "object", "properties": properties}
    if required:
        node["required"] = required
    return node


def _crd(*, kind: str, plural: str, spec: Obj, scale: bool = False) -> Obj:
    subresources: Obj = {"status": {}}
    if scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                    "schema": {
                        "openAPIV3Schema": _obj(
                            {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            }
                        )
                    },
                }
            ],
        },
    }


_STRING: Final[Obj] = {"type": "string"}
_INT: Final[Obj] = {"type": "integer"}
_QUANTITY: Final[Obj] = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
_TARGET_REF: Final = _obj({"apiVersion": _STRING, "kind": _STRING, "name": _STRING, "namespace": _STRING})
_LABEL_SELECTOR: Final = _obj(
    {
        "matchLabels": {"type": "object", "additionalProperties": _STRING},
        "matchExpressions": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
)
_BOUNDS: Final = {"minReplicas": {"type": "integer", "minimum": 0}, "maxReplicas": {"type": "integer", "minimum": 1}}
_BEHAVIOR: Final = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _targets(target: Obj) -> Obj:
    """`homogeneousTarget` and `heterogeneousTarget` around one generation's target shape."""
    return {
        "homogeneousTarget": _obj({"target": target, **_BOUNDS}, required=["minReplicas", "maxReplicas"]),
        "heterogeneousTarget": _obj(
            {
                "params": {
                    "type": "array",
                    "minItems": 1,
                    "items": _obj({"target": target, "cost": _INT, **_BOUNDS}, required=["minReplicas", "maxReplicas"]),
                },
                "costExpansionRatePercent": {"type": "integer", "minimum": 0, "default": 200},
            }
        ),
    }


def _binding_v02() -> Obj:
    target = _obj(
        {
            "targetRef": _TARGET_REF,
            "metricEndpoint": _obj(
                {
                    "uri": {"type": "string", "default": "/metrics"},
                    "port": {"type": "integer", "default": 8100},
                    "labelSelector": _LABEL_SELECTOR,
                }
            ),
            "subTargets": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        required=["targetRef"],
    )
    # No rule that one target be set: a Binding in v0.1's shape is stored with only its policyRef, no error
    # (seen on a real API server with Kthena v0.2-v0.4's CRDs).
    spec = _obj({"policyRef": _obj({"name": _STRING}), **_targets(target)}, required=["policyRef"])
    return _crd(kind="AutoscalingPolicyBinding", plural="autoscalingpolicybindings", spec=spec)


def _policy_v10() -> Obj:
    pod_source = _obj(
        {
            "name": _STRING,
            "uri": {"type": "string", "default": "/metrics"},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 8100},
            "labelSelector": _LABEL_SELECTOR,
        }
    )
    source = _obj({"pod": pod_source, "prometheus": _obj({"serverURL": _STRING, "query": _STRING})})
    target = _obj(
        {"targetRef": _TARGET_REF, "metricSources": {"type": "object", "additionalProperties": source}},
        required=["targetRef"],
    )
    metric = _obj(
        {"name": {"type": "string", "minLength": 1}, "targetValue": _QUANTITY}, required=["name", "targetValue"]
    )
    spec = _obj(
        {
            "tolerancePercent": {"type": "integer", "minimum": 0, "maximum": 100, "default": 10},
            "metrics": {"type": "array", "items": metric},
            "behavior": _BEHAVIOR,
            **_targets(target),
            "disaggregatedTarget": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }
    )
    return _crd(kind="AutoscalingPolicy", plural="autoscalingpolicies", spec=spec)


def _serving_without_spread(*, scale: bool, default_scheduler: bool = False) -> Obj:
    """Kthena v0.2's and later ModelServing CRDs: no `topologySpreadConstraints`; v1.0.0's defaults
    `schedulerName` to `volcano` (its converter leaves an empty one out for that default to apply)."""
    crd = _ours("modelservings")
    version = crd["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del spec["properties"]["topologySpreadConstraints"]
    if default_scheduler:
        spec["properties"]["schedulerName"] = {**spec["properties"]["schedulerName"], "default": "volcano"}
    if scale:
        version.setdefault("subresources", {})["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
        }
    return crd


def child_crds(generation: str, *, binding: bool = True) -> list[Obj]:
    """The child CRDs of `generation` ("v0.1", "v0.2", "v1.0"); `binding=False` leaves the Binding CRD out."""
    common = [_ours("modelservers"), _ours("modelroutes")]
    if generation == "v0.1":
        crds = [_ours("modelservings"), *common, _ours("autoscalingpolicies")]
        return [*crds, _ours("autoscalingpolicybindings")] if binding else crds
    if generation == "v0.2":
        crds = [_serving_without_spread(scale=True), *common, _ours("autoscalingpolicies")]
        return [*crds, _binding_v02()] if binding else crds
    if generation == "v1.0":
        return [_serving_without_spread(scale=True, default_scheduler=True), *common, _policy_v10()]
    raise ValueError(generation)


def binding_crd(generation: str) -> Obj:
    return _ours("autoscalingpolicybindings") if generation == "v0.1" else _binding_v02()


def model_booster_crd() -> Obj:
    return _ours("modelboosters")


def _any(description: str) -> Obj:
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "description": description}


_WORKER: Final = _obj(
    {
        "type": {"type": "string", "default": "server"},
        "image": _STRING,
        "replicas": {"type": "integer", "format": "int32"},
        "pods": {"type": "integer", "format": "int32"},
        "resources": _any("core/v1 ResourceRequirements"),
        "affinity": _any("core/v1 Affinity"),
        "tolerations": {"type": "array", "items": _any("core/v1 Toleration")},
        "config": _any("engine arguments"),
    }
)
_POLICY: Final = _obj(
    {
        "tolerancePercent": {"type": "integer", "minimum": 0, "maximum": 100},
        "metrics": {"type": "array", "items": _obj({"metricName": _STRING, "targetValue": _QUANTITY})},
        "behavior": _BEHAVIOR,
    }
)
_BACKEND_COMMON: Final = {
    "name": _STRING,
    "type": _STRING,
    "modelURI": _STRING,
    "cacheURI": _STRING,
    "env": {"type": "array", "items": _any("core/v1 EnvVar")},
    "envFrom": {"type": "array", "items": _any("core/v1 EnvFromSource")},
    "schedulerName": _STRING,
    "workers": {"type": "array", "items": _WORKER},
}


def kthena_model_booster_crd(release: str) -> Obj:
    """Kthena's own ModelBooster CRD of a release ("v0.1.0", "v0.4.0" for v0.2.0-v0.4.0, "v1.0.0"), shaped from
    the facts of each (docs/migrating-from-kthena.md): the list of backends with replica ranges and autoscaling,
    one backend with a replica range and a model-level policy, or one backend with a fixed count. No CEL rules;
    status conditions as Kthena writes them."""
    if release == "v0.1.0":
        backend = _obj({
            **_BACKEND_COMMON,
            "minReplicas": {"type": "integer", "minimum": 0},
            "maxReplicas": {"type": "integer", "minimum": 1},
            "scalingCost": {"type": "integer"},
            "routeWeight": {"type": "integer", "default": 100},
            "scaleToZeroGracePeriod": _STRING,
            "loraAdapters": {"type": "array", "items": _obj({"name": _STRING, "artifactURL": _STRING})},
            "autoscalingPolicy": _POLICY,
        })  # fmt: skip
        spec = _obj({"name": _STRING, "backends": {"type": "array", "items": backend},
                     "autoscalingPolicy": _POLICY, "costExpansionRatePercent": {"type": "integer"},
                     "modelMatch": _any("networking ModelMatch")}, required=["backends"])  # fmt: skip
    elif release == "v0.4.0":
        backend = _obj({**_BACKEND_COMMON, "runtimeClassName": _STRING,
                        "minReplicas": {"type": "integer", "minimum": 0, "maximum": 1_000_000},
                        "maxReplicas": {"type": "integer", "minimum": 1, "maximum": 1_000_000}},
                       required=["name", "type", "modelURI", "minReplicas", "maxReplicas", "workers"])  # fmt: skip
        spec = _obj({"name": _STRING, "owner": _STRING, "backend": backend, "autoscalingPolicy": _POLICY,
                     "modelMatch": _any("networking ModelMatch")}, required=["backend"])  # fmt: skip
    elif release == "v1.0.0":
        backend = _obj({**_BACKEND_COMMON, "runtimeClassName": _STRING, "replicas": {"type": "integer"}},
                       required=["name", "type", "modelURI", "replicas", "workers"])  # fmt: skip
        spec = _obj({"name": _STRING, "owner": _STRING, "backend": backend,
                     "modelMatch": _any("networking ModelMatch")}, required=["backend"])  # fmt: skip
    else:
        raise ValueError(release)
    crd = _crd(kind="ModelBooster", plural="modelboosters", spec=spec)
    crd["spec"]["names"]["shortNames"] = []
    return crd
