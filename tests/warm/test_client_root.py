"""The thin client finds the vault a command line means, as the full CLI does:
a subfolder of a vault is the vault, another repository inside it is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.warm.client import find_root

from ..conftest import git


def test_a_subfolder_of_a_vault_finds_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "v"
    Vault.init(root).close()
    sub = root / "projects" / "deep"
    sub.mkdir(parents=True)
    real = os.path.realpath(root)
    assert find_root(["--vault", str(sub), "recall", "x"]) == real
    assert find_root(["recall", "--vault=" + str(sub), "x"]) == real
    monkeypatch.setenv("MDMEM_VAULT", str(sub))
    assert find_root(["recall", "x"]) == real
    monkeypatch.delenv("MDMEM_VAULT")
    code = root / "code"
    code.mkdir()
    git(code, "init", "-q")
    assert find_root(["--vault", str(code), "recall", "x"]) is None
    assert find_root(["--vault", str(tmp_path / "elsewhere"), "recall", "x"]) is None
