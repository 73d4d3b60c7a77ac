"""Old module paths keep importing, as the very module they became, with a dated warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import mdmem
from mdmem.moved_modules import MOVED_MODULES, REMOVED_IN


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_an_old_path_is_the_new_module_and_warns(old: str) -> None:
    new = MOVED_MODULES[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}; .* goes in {REMOVED_IN}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new  # one module: its name, spec and state are the new path's


def test_no_old_path_outlives_its_release() -> None:
    assert _release(mdmem.__version__) < _release(REMOVED_IN), (
        f"mdmem {mdmem.__version__} reached {REMOVED_IN}: remove the old module paths "
        "in mdmem/moved_modules.py (and list them as removed in docs/upgrading.md)"
    )


def test_no_file_stays_at_an_old_path() -> None:
    # A file left at an old path would shadow the finder and split git history.
    root = Path(mdmem.__file__).parent.parent
    for old in MOVED_MODULES:
        assert not (root / Path(*old.split("."))).with_suffix(".py").exists(), old


def test_from_import_of_an_old_path_works_in_a_fresh_process() -> None:
    code = "from mdmem.agent.tools import Toolset; from mdmem.memory.sessions import Session"
    run = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and "moved to mdmem.mcp.tools" in run.stderr
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
