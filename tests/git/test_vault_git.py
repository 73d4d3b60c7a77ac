"""The Vault's git-native methods are thin views of the modules in mdmem.git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main


def test_diff_blame_provenance(vault: Vault) -> None:
    start = vault.git.head()
    m = vault.remember("Pandas eat bamboo")
    changes = vault.git.changes(str(start))
    assert [c.id for c in changes.remembered] == [m.id]
    lines = vault.git.blame(m.path, m.line, m.line_end)
    assert lines and lines[0].is_agent
    assert not vault.git.provenance(m.id).written_by_human


def test_forget_purge_needs_confirmation_and_scrubs_everything(vault: Vault) -> None:
    keep = vault.remember("Koalas sleep twenty hours a day")
    secret = vault.remember("The vault door code is swordfish-hedgehog")
    vault.recall("vault door", as_of=str(vault.git.head()))  # leaves a time-travel snapshot
    with pytest.raises(InvalidInputError):
        vault.git.purge(secret.id, confirm=False)
    vault.git.purge(secret.id, confirm=True)
    log = subprocess.run(
        ["git", "log", "--all", "-p"], cwd=vault.root, capture_output=True, text=True, check=True
    ).stdout
    assert "swordfish" not in log
    assert not (vault.admin.state_dir / "asof").exists()
    assert vault.recall("vault door code swordfish").items == []
    assert vault.get(keep.id).text.startswith("Koalas")
    for path in vault.admin.state_dir.rglob("*"):
        if path.is_file() and path.suffix in (".sqlite", ".json"):
            assert b"swordfish" not in path.read_bytes(), path


def test_cli_forget_purge_routes_to_purge(vault: Vault) -> None:
    m = vault.remember("Temporary launch codename: bluefin")
    runner = CliRunner()
    refused = runner.invoke(main, ["--vault", str(vault.root), "forget", m.id, "--purge"])
    assert refused.exit_code == 1 and "error:" in refused.output
    done = runner.invoke(main, ["--vault", str(vault.root), "forget", m.id, "--purge", "--yes"])
    assert done.exit_code == 0, done.output


def test_sync_between_two_clones(tmp_path: Path, vault: Vault) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    vault.admin.store.git.run("remote", "add", "origin", str(remote))
    vault.git.sync()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    other = Vault.open(clone, agent="laptop")
    a = vault.remember("Written on the desktop")
    b = other.remember("Written on the laptop")
    assert vault.git.sync().ok
    assert other.git.sync().ok
    assert vault.git.sync().ok
    for v in (vault, other):
        assert {a.id, b.id} <= {m.id for m in v.library.list()}
        assert v.recall("written on the laptop", mode="keyword").items


def test_human_weight_ranks_human_written_memories_higher(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "hv", recall={"human_weight": 0.5, "recency_weight": 0.0})
    agent = vault.remember("The printer on floor two jams on Mondays")
    with open(vault.root / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("- The printer on floor two jams on Mondays too often ^m-01jd3k5x7q0abc\n")
    vault.admin.commit_human_edits()
    hits = vault.recall("printer floor two jams", k=2).items
    assert hits[0].id == "m-01jd3k5x7q0abc" and hits[0].scores.get("human") == 0.5
    assert hits[1].id == agent.id and "human" not in hits[1].scores
