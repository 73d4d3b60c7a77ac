"""Team writes through the write engine's lock and compare-and-swap: concurrent
proposals in real processes, a person's save in the middle of a write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import TeamError
from mdmem.files.textfile import TextFile
from mdmem.store.editors import Edit, item_appender
from mdmem.team import TeamFolder, check
from mdmem.team.lines import render
from mdmem.team.repo import find_checkout
from tests.team.history import code_checkout, git

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = code_checkout(tmp_path, first_file=False)
    git(root, "commit", "-q", "--allow-empty", "-m", "the shop")
    TeamFolder.at(root).init()
    return root


@pytest.mark.slow
def test_eight_concurrent_proposals_into_one_file_all_land(repo: Path, tmp_path: Path) -> None:
    """Before the lock, 3-4 of 8 were refused: each saw another's file written
    and not yet committed ("uncommitted changes")."""
    with Vault.init(tmp_path / "vault", agent="ada-agent") as vault:
        ids = [
            vault.remember(f"Service {n} needs WORKERS_{n}=4 in staging.", kind="gotcha").id
            for n in range(8)
        ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "mdmem", "--vault", str(tmp_path / "vault"), "team"]
    procs = [
        subprocess.Popen(
            [*command, "propose", memory_id, "--repo", str(repo), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for memory_id in ids
    ]
    for proc, memory_id in zip(procs, ids, strict=True):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        assert json.loads(out)["ids"] == [memory_id]
    text = (repo / ".mdmem" / "team" / "gotchas.md").read_text()
    assert all(text.count(memory_id) == 1 for memory_id in ids)
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert sum(s.startswith("team: propose ^") for s in subjects) == 8
    assert git(repo, "status", "--porcelain") == ""
    folder = TeamFolder.at(repo)
    assert {line.id for line in folder.proposals()} == set(ids)
    assert {line.captured_by for line in folder.lines()} == {"agent ada-agent"}
    checkout = find_checkout(repo)
    assert checkout is not None and check(checkout) == []


def test_a_persons_save_during_a_write_stops_it_and_puts_back_what_it_replaced(
    repo: Path,
) -> None:
    folder = TeamFolder.at(repo)
    head = git(repo, "rev-parse", "HEAD")
    decisions = repo / ".mdmem" / "team" / "decisions.md"
    gotchas = repo / ".mdmem" / "team" / "gotchas.md"
    before = decisions.read_bytes()
    theirs = gotchas.read_text() + "- A line the person saved meanwhile\n"

    def person_saves(tf: TextFile, parsed: object) -> Edit:
        # The person's editor writes the file after mdmem read it, before its rename.
        gotchas.write_text(theirs)
        tf.append_lines(["- Gotcha: Ours. \u2014 proposed by Ada ^m-0000000000ab02"])
        return Edit()

    edits = {
        ".mdmem/team/decisions.md": [
            item_appender(
                ".mdmem/team/decisions.md",
                render("Ours too.", "m-0000000000ab01", "decision", "proposed by Ada"),
            )
        ],
        ".mdmem/team/gotchas.md": [person_saves],
    }
    with folder.writer.writing(), pytest.raises(TeamError, match="changed while mdmem"):
        folder.writer.commit(
            edits, folder.parser(), ("team: test", "", [("Op", "test")]), folder.person()
        )
    assert git(repo, "rev-parse", "HEAD") == head  # nothing committed
    assert decisions.read_bytes() == before  # our first file put back
    assert gotchas.read_text() == theirs  # theirs kept, not committed as ours
    assert "m-0000000000ab" not in gotchas.read_text()


def test_a_team_file_a_person_is_editing_is_never_swept_into_a_commit(
    repo: Path, tmp_path: Path
) -> None:
    from datetime import UTC, datetime

    from mdmem.team.folder import Source

    gotchas = repo / ".mdmem" / "team" / "gotchas.md"
    gotchas.write_text(gotchas.read_text() + "\nA draft paragraph.\n")
    source = Source("m-0000000000ab03", "Ours.", "gotcha", (), "", (), datetime.now(UTC), "x")
    with pytest.raises(TeamError, match="uncommitted changes"):
        TeamFolder.at(repo).propose(source)
    assert gotchas.read_text().endswith("A draft paragraph.\n")
    assert "m-0000000000ab03" not in gotchas.read_text()
