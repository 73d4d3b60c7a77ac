"""Merging outside mdmem: plain `git pull` never silently loses an entry.

The vault's .gitattributes gives append-only files the ``mdmem-append``
merge driver, which only mdmem defines. Plain git (git pull, Obsidian Git)
falls back to its normal text merge: a conflict with markers where both
clones appended, or a clean merge - never git's built-in union, which glues
two entries into one and loses an id. ``mdmem sync`` merges them block by
block, under the new name and under the ``union`` of vaults made before.
"""

from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.files.blocks import parse
from mdmem.files.textfile import decode

from ..conftest import HUMAN_ENV, git

WHEN = datetime(2026, 1, 15, 10, 0)
DAILY = "daily/2026-01-15.md"
OLD_ATTRIBUTES = (
    "# Append-only files merge by union, so agents on two machines appending to the\n"
    "# same day's log never conflict (mdmem sync).\n"
    "daily/*.md merge=union\n"
    "JOURNAL.md merge=union\n"
    "sessions/**/*.md merge=union\n"
    "scopes/**/daily/*.md merge=union\n"
    "scopes/**/JOURNAL.md merge=union\n"
    "scopes/**/sessions/**/*.md merge=union\n"
    "*.md diff=markdown\n"
)


def memory_ids(root: Path, rel: str) -> list[str]:
    parsed = parse(rel, decode((root / rel).read_bytes()))
    return sorted(b.id for b in parsed.blocks if b.is_memory)


def two_clones(tmp_path: Path, attributes: str | None = None) -> tuple[Vault, Vault]:
    """Vault a, pushed to a bare remote with one daily-log entry, and its clone b."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a = Vault.init(tmp_path / "a", agent="agent-a")
    if attributes is not None:  # a vault made before: its template said merge=union
        (a.root / ".gitattributes").write_text(attributes, encoding="utf-8")
        git(a.root, "commit", "-qam", "old template", "--allow-empty", human=True)
    git(a.root, "remote", "add", "origin", str(remote))
    a.log("Watered the monstera", when=WHEN)
    assert a.git.sync().ok
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    return a, Vault.open(tmp_path / "b", agent="agent-b")


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_plain_git_pull_conflicts_instead_of_losing_an_id(tmp_path: Path, how: str) -> None:
    a, b = two_clones(tmp_path)
    # Same day, same minute, same category: git's union glues these two entries.
    mine = a.log("Agent A checked the printer", when=WHEN)
    theirs = b.log("Agent B restocked the printer", when=WHEN)
    git(b.root, "push", "-q", "origin", "main")
    # A person's plain git pull: nothing of mdmem's configured, exit status kept.
    pull = subprocess.run(
        ["git", "pull", how, "--no-edit", "origin", "main"],
        cwd=a.root,
        capture_output=True,
        text=True,
        env={**os.environ, **HUMAN_ENV},
    )
    text = (a.root / DAILY).read_text(encoding="utf-8")
    if pull.returncode != 0:
        assert "CONFLICT (content)" in pull.stdout + pull.stderr
        assert "<<<<<<<" in text and mine.id in text and theirs.id in text
    else:  # a clean text merge must keep both entries as entries
        assert mine.id in memory_ids(a.root, DAILY) and theirs.id in memory_ids(a.root, DAILY)


@pytest.mark.parametrize("attributes", [None, OLD_ATTRIBUTES], ids=["mdmem-append", "union"])
def test_mdmem_sync_merges_both_entries_block_by_block(
    tmp_path: Path, attributes: str | None
) -> None:
    a, b = two_clones(tmp_path, attributes)
    mine = a.log("Agent A checked the printer", when=WHEN)
    theirs = b.log("Agent B restocked the printer", when=WHEN)
    assert b.git.sync().ok
    result = a.git.sync()
    assert result.ok and result.pulled == 1
    assert {mine.id, theirs.id} <= set(memory_ids(a.root, DAILY))
    assert "<<<<<<<" not in (a.root / DAILY).read_text(encoding="utf-8")
