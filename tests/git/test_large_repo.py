"""Git that stays fast: index v4, maintenance scheduled by mdmem, the history journal.

The settings are mdmem's own (given on every call): a vault whose own
``.git/config`` turns them off, or names a hook, changes nothing, and the
maintenance mdmem starts runs no program of the vault's.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.git.journal import JOURNAL_FILE
from mdmem.store import gitstore

from ..conftest import git


def index_version(root: Path) -> int:
    return int.from_bytes((root / ".git" / "index").read_bytes()[4:8], "big")


def wait_for(predicate: object, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_settings_and_maintenance_ignore_the_vault_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitstore, "MAINTAIN_EVERY", 3)
    Vault.init(tmp_path / "v", agent="a").close()
    root = tmp_path / "v"
    marker = tmp_path / "hook-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("pre-auto-gc", "post-commit", "pre-commit", "post-index-change"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(0o755)
    git(root, "update-index", "--index-version", "2")
    # The vault's own config asks for the opposite of mdmem's settings.
    for key, value in (
        ("core.hooksPath", str(hooks)),
        ("index.version", "2"),
        ("core.splitIndex", "false"),
        ("core.untrackedCache", "false"),
        ("core.commitGraph", "false"),
        ("gc.auto", "1"),
    ):
        git(root, "config", key, value)
    assert index_version(root) == 2
    vault = Vault.open(root, agent="a")
    for i in range(7):
        vault.remember(f"Fact {i} about the lighthouse keeper")
    vault.close()
    # The first commit of the process put the index in version 4, split.
    assert index_version(root) == 4
    assert list((root / ".git").glob("sharedindex.*"))
    # Maintenance ran (twice: every 3 commits) detached: first the commit
    # graph with changed-path filters, then git's own tasks.
    graphs = root / ".git" / "objects" / "info"
    assert wait_for(
        lambda: (graphs / "commit-graphs").is_dir() or (graphs / "commit-graph").exists()
    )
    # Counted across processes: init's commit and 7 remembers, 8 = 2 x 3 + 2.
    assert (root / ".git" / "mdmem-maintenance").read_text() == "2"
    assert not marker.exists()
    # Plain git reads what mdmem wrote.
    git(root, "config", "--unset", "core.hooksPath")
    assert "lighthouse" in git(root, "log", "-1", "-p")
    assert git(root, "status", "--porcelain") == ""


def test_history_reads_the_journal_and_catches_up(vault: Vault) -> None:
    m = vault.remember("The ferry leaves at nine")
    vault.supersede(m.id, "The ferry leaves at ten")
    first = vault.history(m.id)
    assert [v.status for v in first] == ["active", "superseded"]
    journal = vault.admin.state_dir / JOURNAL_FILE
    assert journal.exists()
    with sqlite3.connect(journal) as db:
        (commits,) = db.execute("SELECT COUNT(*) FROM commits").fetchone()
    # A person edits the line (in MEMORY.earlier.md now): the next call reads only the new commit.
    path = vault.root / vault.get(m.id).path
    path.write_text(
        path.read_text().replace("The ferry leaves at nine", "The ferry left at nine"),
        encoding="utf-8",
    )
    git(vault.root, "commit", "-qam", "my edit", human=True)
    after = vault.history(m.id)
    assert after[-1].text == "The ferry left at nine" and not after[-1].is_agent
    with sqlite3.connect(journal) as db:
        (now,) = db.execute("SELECT COUNT(*) FROM commits").fetchone()
    assert now == commits + 1


def test_a_damaged_or_outdated_journal_is_made_again(vault: Vault) -> None:
    m = vault.remember("The harbour opens at dawn")
    expected = [v.text for v in vault.history(m.id)]
    journal = vault.admin.state_dir / JOURNAL_FILE
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    journal.write_bytes(b"not a database" * 64)
    assert [v.text for v in vault.history(m.id)] == expected
    # History rewritten under the journal (here: the commit it stopped at is
    # gone from the branch): it starts again rather than mixing histories.
    git(vault.root, "reset", "-q", "--hard", "HEAD~1")
    vault.admin.refresh()
    other = vault.remember("The harbour opens at noon")
    assert [v.text for v in vault.history(other.id)] == ["The harbour opens at noon"]
    with pytest.raises(Exception, match="no memory"):
        vault.history(m.id)
