"""Cache URI -> cache volume, mount path and download paths (docs/design/synthesis.md §6, Q11 fixed)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.modelbooster.synthesis import SynthesisError, synthesize
from shared.api.modelbooster import ModelBooster
from tests.unit.synthesis.support import entry_pod, render, vllm_doc

MODEL_MD5 = "7d13ed142997ab6b7db5a77ec8c9e194"  # md5 of "hf://org/model"


@pytest.mark.parametrize(
    ("cache_uri", "volume", "mount"),
    [
        (None, {"emptyDir": {}}, "/cache"),
        ("pvc://model-cache", {"persistentVolumeClaim": {"claimName": "model-cache"}}, "/model-cache"),
        ("pvc://model-cache////", {"persistentVolumeClaim": {"claimName": "model-cache"}}, "/model-cache"),
        ("pvc:///model-cache", {"persistentVolumeClaim": {"claimName": "model-cache"}}, "/model-cache"),
        ("hostpath:///tmp/test", {"hostPath": {"path": "/tmp/test", "type": "DirectoryOrCreate"}}, "/tmp/test"),
        ("hostpath://tmp/cache", {"hostPath": {"path": "/tmp/cache", "type": "DirectoryOrCreate"}}, "/tmp/cache"),
        ("hostpath://cache/", {"hostPath": {"path": "/cache", "type": "DirectoryOrCreate"}}, "/cache"),
    ],
)
def test_cache_volume_mount_and_download_path(cache_uri: str | None, volume: dict[str, Any], mount: str) -> None:
    backend: dict[str, Any] = {} if cache_uri is None else {"cacheURI": cache_uri}
    pod = entry_pod(render(vllm_doc(**backend))[0])
    assert pod["volumes"][0] == {"name": "b-weights", **volume}
    downloader = pod["initContainers"][0]
    assert downloader["volumeMounts"] == [{"name": "b-weights", "mountPath": mount}]
    assert downloader["args"][3] == f"{mount.rstrip('/')}/{MODEL_MD5}"
    engine = pod["containers"][1]
    assert engine["volumeMounts"][0] == {"name": "b-weights", "mountPath": mount}
    assert engine["command"][4] == f"{mount.rstrip('/')}/{MODEL_MD5}"


@pytest.mark.parametrize(
    ("cache_uri", "message"),
    [
        ("nfs://server/cache", "not support prefix in CacheURI: nfs://server/cache"),
        ("Pvc://cache", "not support prefix in CacheURI: Pvc://cache"),
        ("pvc:///", 'invalid cacheURI "pvc:///": must include a PVC claim name'),
        ("hostpath:///", 'invalid cacheURI "hostpath:///": must include a host path'),
    ],
)
def test_cache_uris_synthesis_cannot_use(cache_uri: str, message: str) -> None:
    # The CRD pattern and validation reject these; synthesis still refuses them with a clear message.
    booster = ModelBooster.model_validate(vllm_doc())
    booster.spec.backends[0].cache_uri = cache_uri
    with pytest.raises(SynthesisError) as caught:
        synthesize(booster)
    assert str(caught.value) == message
