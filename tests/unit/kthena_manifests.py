"""What the tests of manifests written for another Kthena release share: reading one, running a CLI command on
it, and the gates of the CRD (schema without a pruned field, CEL rules) it must pass."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

import pytest

from modelbooster.manifests import load_documents
from tests.unit.crd_support import cel_denials, openapi_schema, undeclared_fields

jsonschema: Any = importlib.import_module("jsonschema")


def only_document(path: Path) -> dict[str, Any]:
    (document,) = load_documents(str(path))
    return document


def run(module: Any, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    code = module.run(parser.parse_args(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_passes_the_crd(document: dict[str, Any]) -> None:
    schema = openapi_schema("ModelBooster")
    assert [error.message for error in jsonschema.Draft4Validator(schema).iter_errors(document)] == []
    assert undeclared_fields(document, schema) == []
    assert cel_denials(document, schema) == []
