"""docs/design/validation.md §6: where a model comes from and where it is cached (PVC reachability).

Expected lines are written by hand from docs/design/validation.md, with the exact text a user sees.
"""

from __future__ import annotations

import pytest

from tests.unit.factories import backend, modelbooster
from tests.unit.validation.support import lines

PVC_CACHE_DETAIL = (
    "when modelURI uses pvc://, cacheURI must also use pvc://. The downloader only has access to the volume mounted "
    "via cacheURI. Set cacheURI to the PVC that holds the model (e.g. pvc://<claimName>) and set modelURI to the "
    "path within that PVC (e.g. pvc:///<claimName>/<path-to-model>)"
)


def test_pvc_model_needs_a_pvc_cache() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/qwen", cacheURI="hostpath://cache"))
    assert lines(obj) == [f'spec.backends[0].cacheURI: Invalid value: "hostpath://cache": {PVC_CACHE_DETAIL}']


@pytest.mark.parametrize("model_uri", ["pvc:///models/qwen", "pvc://models/qwen"])
def test_a_pvc_model_without_a_cache_is_told_the_cache_is_required_and_which_claim(model_uri: str) -> None:
    """Missing, not wrong: Required, and the claim to name (modelURI's first segment), without the reference's
    long text about a wrong cacheURI and its three-slash example."""
    assert lines(modelbooster(backend(modelURI=model_uri))) == [
        "spec.backends[0].cacheURI: Required value: a pvc:// modelURI is read through the PVC that cacheURI names; "
        "set cacheURI: pvc://models (the claim that holds the model, the first segment of modelURI)"
    ]


def test_pvc_model_may_not_climb_out_with_dot_dot() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/../etc", cacheURI="pvc://models"))
    assert lines(obj) == [
        "spec.backends[0].modelURI: Invalid value: \"pvc:///models/../etc\": pvc:// modelURI must not contain '..' "
        "path segments"
    ]


def test_pvc_cache_must_name_a_single_claim() -> None:
    obj = modelbooster(backend(modelURI="pvc:///models/qwen", cacheURI="pvc://models/sub"))
    assert lines(obj) == [
        'spec.backends[0].cacheURI: Invalid value: "pvc://models/sub": pvc:// cacheURI must contain a single PVC '
        "claim name with no path separator (e.g. pvc://<claimName>); claim names cannot contain '/'"
    ]


def test_pvc_model_must_be_reachable_through_the_cache_mount() -> None:
    obj = modelbooster(backend(modelURI="pvc://other/qwen", cacheURI="pvc://models"))
    assert lines(obj) == [
        'spec.backends[0].modelURI: Invalid value: "pvc://other/qwen": PVC source path "/other/qwen" is not '
        'reachable via cacheURI mount "/models". The downloader only has access to PVCs mounted via cacheURI. If the '
        "source model and the cache are on the same PVC, set cacheURI to the PVC name and include that name as the "
        "first path segment of modelURI. Example: cacheURI: pvc://<claimName>, modelURI: "
        "pvc:///<claimName>/<path-to-model>"
    ]


@pytest.mark.parametrize(
    "model_uri", ["pvc:///models/qwen", "pvc://models/qwen/", "pvc:////models//qwen", "pvc://models"]
)
def test_reachable_pvc_models_pass(model_uri: str) -> None:
    assert lines(modelbooster(backend(modelURI=model_uri, cacheURI="pvc://models/"))) == []


def test_cache_uris_that_name_nothing_are_rejected() -> None:
    assert lines(modelbooster(backend(cacheURI="pvc:///"))) == [
        'spec.backends[0].cacheURI: Invalid value: "pvc:///": invalid cacheURI "pvc:///": must include a PVC claim name'
    ]
    assert lines(modelbooster(backend(cacheURI="hostpath:////"))) == [
        'spec.backends[0].cacheURI: Invalid value: "hostpath:////": invalid cacheURI "hostpath:////": must include a '
        "host path"
    ]
