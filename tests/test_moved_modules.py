"""Old module paths keep importing, as the very module they became, with a dated warning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mdmem
from mdmem.aliases import MODULES


@pytest.mark.parametrize("old", sorted(MODULES))
def test_an_old_path_is_the_new_module_and_warns(old: str) -> None:
    alias = MODULES[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(alias.message)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(alias.new)
    assert module.__name__ == alias.new  # one module: its name, spec and state are the new path's


def test_no_file_stays_at_an_old_path() -> None:
    # A file left at an old path would shadow the finder and split git history.
    root = Path(mdmem.__file__).parent.parent
    for old in MODULES:
        assert not (root / Path(*old.split("."))).with_suffix(".py").exists(), old


def test_importing_mdmem_reads_no_alias_table() -> None:
    code = "import sys, mdmem; print('mdmem.aliases' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


def test_from_import_of_an_old_path_works_in_a_fresh_process() -> None:
    code = "from mdmem.agent.tools import Toolset; from mdmem.memory.sessions import Session"
    run = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code],
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and "use mdmem.mcp.tools" in run.stderr
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
