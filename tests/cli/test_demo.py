"""``mdmem demo``: the README's first step after the one install command."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main


def test_demo_tours_a_fresh_vault_and_leaves_it_usable(tmp_path: Path) -> None:
    target = tmp_path / "demo-vault"
    result = CliRunner().invoke(main, ["demo", str(target)])
    assert result.exit_code == 0, result.output
    for step in ("== remember", "== supersede", "== recall", "consolidate", "== history"):
        assert step in result.output
    assert "was_new=False" in result.output  # the same fact again is stored once
    assert "Thursdays" in result.output.split("== recall", 1)[1]  # the successor is recalled
    vault = Vault.open(target)
    try:
        assert vault.recall("deploy day").items[0].text.startswith("Production deploys")
        assert vault.git.reviews() == [] and len(vault.history(vault.recall("metric").items[0].id))
    finally:
        vault.close()


def test_demo_refuses_a_folder_that_exists(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.md").write_text("mine\n")
    result = CliRunner().invoke(main, ["demo", str(tmp_path / "taken")])
    assert result.exit_code != 0
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 2
    assert (tmp_path / "taken" / "notes.md").read_text() == "mine\n"
