"""Loading bench/ scripts in tests.

bench/ is not a package: its scripts import each other by bare name (each
puts bench/ on sys.path), so a script is loaded from its file under a module
name of its own and registered in sys.modules, where dataclasses look their
module up.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str, *, as_name: str | None = None) -> ModuleType:
    """``bench/<name>.py`` as a module named ``as_name`` (default: ``name``)."""
    module_name = as_name or name
    spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
