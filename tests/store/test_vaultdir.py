"""Where a vault is: a subfolder of a vault means the vault, and no vault nests in another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem.cli import main
from mdmem.errors import VaultExistsError, VaultNotFoundError
from mdmem.store.vaultdir import enclosing_vault, resolve_vault_path
from mdmem.vault import Vault

from ..conftest import git


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    path = tmp_path / "v"
    result = CliRunner().invoke(main, ["--agent", "cli-agent", "init", str(path)])
    assert result.exit_code == 0, result.output
    (path / "projects" / "deep").mkdir(parents=True)
    return path


def test_vault_flag_on_a_subfolder_opens_the_vault(vault_dir: Path) -> None:
    sub = vault_dir / "projects" / "deep"
    runner = CliRunner()
    result = runner.invoke(main, ["--vault", str(sub), "remember", "Sub works", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["path"] == "MEMORY.md"
    assert "Sub works" in (vault_dir / "MEMORY.md").read_text(encoding="utf-8")
    # Nothing was made in the subfolder: no second vault, no second repository.
    assert not (sub / "mdmem.toml").exists() and not (sub / ".git").exists()
    result = runner.invoke(main, ["recall", "Sub works", "--json"], env={"MDMEM_VAULT": str(sub)})
    assert result.exit_code == 0, result.output
    assert "Sub works" in result.output
    assert resolve_vault_path(sub).resolve() == vault_dir.resolve()


def test_a_folder_outside_any_vault_still_says_init(tmp_path: Path) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    result = CliRunner().invoke(main, ["--vault", str(lone), "recall", "x"])
    assert result.exit_code == 1
    assert "is not an mdmem vault" in result.output and "mdmem init" in result.output
    with pytest.raises(VaultNotFoundError):
        Vault.open(lone)


def test_another_repository_inside_a_vault_is_not_the_vault(vault_dir: Path) -> None:
    # A code checkout kept inside the vault folder is its own repository.
    code = vault_dir / "projects" / "code"
    code.mkdir()
    git(code, "init", "-q")
    with pytest.raises(VaultNotFoundError):
        resolve_vault_path(code)


@pytest.mark.parametrize("where", ["projects/deep", "projects/new/sub", "."])
def test_init_inside_a_vault_refuses_naming_the_vault(vault_dir: Path, where: str) -> None:
    target = vault_dir / where
    result = CliRunner().invoke(main, ["init", str(target)])
    assert result.exit_code == 1
    line = result.output.strip()
    assert "\n" not in line and line.startswith("error:")
    assert str(vault_dir.resolve()) in line or str(vault_dir) in line
    if where != ".":
        assert "is inside the mdmem vault" in line
        assert not (vault_dir / "projects" / "new").exists()
    assert not (vault_dir / "projects" / "deep" / "mdmem.toml").exists()
    assert git(vault_dir, "status", "--porcelain") == ""


def test_init_api_refuses_inside_a_vault(vault_dir: Path) -> None:
    with pytest.raises(VaultExistsError, match="inside the mdmem vault"):
        Vault.init(vault_dir / "projects" / "deep")


def test_init_beside_a_vault_or_in_its_own_repository_works(vault_dir: Path) -> None:
    beside = vault_dir.parent / "w"
    Vault.init(beside).close()
    assert (beside / "mdmem.toml").is_file()
    code = vault_dir / "projects" / "code"
    code.mkdir()
    git(code, "init", "-q")
    # A repository of its own inside the vault folder is not the vault's.
    assert enclosing_vault(code / "notes") is None
