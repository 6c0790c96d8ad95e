"""Load a generator from scripts/ (not a package) as a module, for the tests that compare its output with
what is committed."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.chart.render import REPO_ROOT


def load_script(name: str) -> ModuleType:
    path = REPO_ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module
