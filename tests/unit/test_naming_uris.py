"""Child names and cache paths (docs/design/synthesis.md §2, §6)."""

from __future__ import annotations

import pytest

from shared.naming import backend_resource_name, is_dns1123_label, model_download_dir_name, route_name
from shared.uris import cache_mount_path, cache_path, claim_name, download_path


def test_child_names() -> None:
    assert backend_resource_name("llama", "a100") == "llama-a100"
    assert backend_resource_name("llama", "") == "llama"
    assert route_name("llama") == "llama"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("a", True),
        ("a-b-1", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-a", False),
        ("a-", False),
        ("A", False),
        ("a.b", False),
        ("", False),
    ],
)
def test_dns1123_label(value: str, ok: bool) -> None:
    assert is_dns1123_label(value) is ok


def test_download_dir_is_md5_of_the_uri() -> None:
    # md5("hf://Qwen/Qwen2.5-0.5B-Instruct"), computed independently with `printf %s ... | md5sum`.
    assert model_download_dir_name("hf://Qwen/Qwen2.5-0.5B-Instruct") == "/18488ba95d6e1baca4a2755a6748053e"


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("pvc://my-cache-path////", "/my-cache-path"),
        ("pvc:///my-cache-path", "/my-cache-path"),
        ("pvc:////my-cache-path", "/my-cache-path"),
        ("", ""),
        ("invalidpath", ""),
        ("pvc://path/with/multiple/separators", "/path/with/multiple/separators"),
        ("pvc://path/with://separator", "/path/with://separator"),
        ("hostpath://cache/", "/cache"),
        ("hostpath://tmp/cache", "/tmp/cache"),
    ],
)
def test_cache_path_examples_of_the_newer_line(uri: str, path: str) -> None:
    assert cache_path(uri) == path


def test_empty_cache_uri_mounts_an_emptydir_at_cache() -> None:
    assert cache_mount_path(None) == "/cache"
    assert cache_mount_path("") == "/cache"
    assert cache_mount_path("pvc://models") == "/models"


def test_claim_name_and_download_path() -> None:
    assert claim_name("pvc://models/") == "models"
    assert claim_name("pvc:///models") == "models"
    assert download_path(cache_uri="pvc://models", source_uri="hf://Qwen/Qwen2.5-0.5B-Instruct") == (
        "/models/18488ba95d6e1baca4a2755a6748053e"
    )
