"""SGLang backends on a real kube-apiserver v1.36: each API shape is admitted by our webhook and by the CRD's
rules alone, and the children we render for it are accepted, field by field (strict field validation), by each
generation of Kthena's child CRDs (tests/reconciler/kthena_crds.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisSettings, synthesize
from shared.autoscaling_generations import UNDECLARED_FIELDS, Generation
from shared.validation import parse_modelbooster
from tests.e2e.user import custom
from tests.realapi.session import RealSession
from tests.realapi.test_kthena_generations import child_crds_of  # noqa: F401 (a fixture)
from tests.realapi.webhook import Registration
from tests.unit.engines.support import SHAPES, sglang_doc, worker

VERSION = "v1alpha1"
NAMES = dict(zip(SHAPES, ("sg-list", "sg-range", "sg-single"), strict=True))
PLURALS = {"ModelServing": "modelservings", "ModelServer": "modelservers", "ModelRoute": "modelroutes"}


def _named(shape: str, namespace: str) -> dict[str, Any]:
    document = sglang_doc(shape, workers=[worker(pods=2, resources={"limits": {"nvidia.com/gpu": "1"}})])
    document["metadata"] = {"name": NAMES[shape], "namespace": namespace}
    return document


def _create(user: RealSession, namespace: str, plural: str, document: dict[str, Any]) -> dict[str, Any]:
    group, version = document["apiVersion"].split("/")
    created: dict[str, Any] = custom(user).create_namespaced_custom_object(
        group, version, namespace, plural, document, field_validation="Strict"
    )
    return created


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_admitted_by_the_webhook(real_webhook: Registration, real_user: RealSession, shape: str) -> None:
    document = _named(shape, real_webhook.namespace)
    stored = _create(real_user, real_webhook.namespace, "modelboosters", document)
    backend = stored["spec"]["backends"][0] if "backends" in stored["spec"] else stored["spec"]["backend"]
    assert backend["type"] == "SGLang"


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_admitted_by_the_crd_rules_alone(
    real_crds: list[dict[str, Any]], real_namespace: str, real_user: RealSession, shape: str
) -> None:
    stored = _create(real_user, real_namespace, "modelboosters", _named(shape, real_namespace))
    assert stored["metadata"]["uid"]


@pytest.mark.parametrize("generation", list(Generation))
def test_the_children_are_accepted_by_each_generations_child_crds(
    child_crds_of: Any,  # noqa: F811
    real_namespace: str,
    real_user: RealSession,
    generation: Generation,
) -> None:
    child_crds_of(str(generation))
    for shape in SHAPES:
        document = _named(shape, real_namespace)
        document["metadata"]["uid"] = "7d5c6a3e-0000-4000-8000-0000000000aa"
        children = synthesize(parse_modelbooster(copy.deepcopy(document)), SynthesisSettings(), generation=generation)
        for child in children:
            if child["kind"] not in PLURALS:
                continue
            # The owner this test names does not exist: the garbage collector of the session's controller manager
            # would delete the child between its create and the test's own delete.
            child["metadata"].pop("ownerReferences", None)
            # What the reconciler leaves out for a generation whose CRD does not declare it (reconciler.md §13).
            for path in UNDECLARED_FIELDS[generation].get(child["kind"], ()):
                parent = child
                for key in path[:-1]:
                    parent = parent[key]
                parent.pop(path[-1], None)
            created = _create(real_user, real_namespace, PLURALS[child["kind"]], child)
            if child["kind"] == "ModelServer":
                assert created["spec"]["inferenceEngine"] == "SGLang"
            if child["kind"] == "ModelServing":
                # Stored as written: nothing of the engine's pods pruned.
                for template in ("entryTemplate", "workerTemplate"):
                    sent = child["spec"]["template"]["roles"][0][template]["spec"]["containers"]
                    stored = created["spec"]["template"]["roles"][0][template]["spec"]["containers"]
                    assert [c["command"] for c in stored if "command" in c] == [
                        c["command"] for c in sent if "command" in c
                    ]
            custom(real_user).delete_namespaced_custom_object(
                child["apiVersion"].split("/")[0],
                VERSION,
                real_namespace,
                PLURALS[child["kind"]],
                child["metadata"]["name"],
            )
