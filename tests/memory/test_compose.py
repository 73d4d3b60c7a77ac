"""The reading view's one compose: the person's memories and a repository's team
lines in one budget, the one thing every door calls; and no door redacts or
composes on its own."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.team import TeamFolder
from tests.conftest import git
from tests.team.history import ADA, reviewed

PACKAGE = Path(__file__).resolve().parents[2] / "mdmem"
DOORS = ["cli", "hookkit", "mcp", "agent", "warm", "ui"]  # the hook entry lives in hookkit
GOTCHA = "The ledger job needs LEDGER_TZ=UTC set, or nightly totals drift by a day."
QUERY = "Why do the ledger totals drift? LEDGER_TZ"
# A GitHub token shape the secret guard knows (made up, never valid).
TOKEN = "ghp_" + "Zq7XvB2mK9pL4wR8tY1nC6dF3hJ5sA0eG2uQ"


def test_no_door_redacts_or_composes_on_its_own() -> None:
    """The reading view redacts once and composes once; a door that calls these
    again (or instead) is a second home for a rule."""
    forbidden = re.compile(r"\.shown\(|\bscrub\(|\bteam_context\(|\bsplit_budget\(")
    offenders = []
    for name in DOORS:
        where = PACKAGE / name
        for path in [where] if where.is_file() else sorted(where.rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if forbidden.search(line):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    for args in (("init", "-q", "-b", "main"), ("config", "user.name", ADA[0])):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "config", "user.email", ADA[1]], cwd=root, check=True)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=root, check=True
    )
    TeamFolder.at(root).init()
    reviewed(
        root,
        [
            ("m-0000000000cd01", "Billing exports use ISO week numbers.", "2026-10-01"),
            ("m-0000000000cd02", GOTCHA, "2026-11-02"),
        ],
    )
    return root


def test_the_persons_memories_and_the_teams_lines_in_one_budget(
    vault: Vault, repo: Path
) -> None:
    mine = vault.remember("Ada checks the ledger totals every Monday; LEDGER_TZ bit her once.")
    reading = vault.reading()
    composed = reading.compose(QUERY, 6000, repo=repo)
    assert composed.ids == [mine.id] and composed.team_ids == ["m-0000000000cd02"]
    assert composed.text.startswith("## Recalled Memory\n\n")
    assert composed.team_block and composed.team_block in composed.text
    assert composed.text.index(mine.id) < composed.text.index("### Team memory")
    assert composed.team_json()["items"][0]["accepted_by"] == "Bob"
    # Within the budget, whatever it is: an item that does not fit is skipped.
    for budget in (200, 400, 700, 1000):
        tight = reading.compose(QUERY, budget, repo=repo)
        assert len(tight.text) <= budget
        assert set(tight.shown) <= {mine.id, "m-0000000000cd02"}
    # No repository: the person's part alone, the team's status "none".
    alone = reading.compose(QUERY, 6000)
    assert alone.team.status == "none" and alone.team_ids == [] and alone.ids == [mine.id]
    # At a session's start (no query): the team's most recently accepted first.
    start = reading.compose(None, 6000, repo=repo, sections=[], team_k=2)
    assert start.team_ids == ["m-0000000000cd02", "m-0000000000cd01"]


def test_a_memory_both_hold_is_shown_once_in_the_teams_section(
    vault: Vault, repo: Path
) -> None:
    """The person's own copy of a line the team accepted: the team's line says
    who accepted it, so the copy goes (as the prompt hook always did)."""
    composed = vault.reading().compose(
        QUERY,
        6000,
        repo=repo,
        sections=[("", [("m-0000000000cd02", f"- [^m-0000000000cd02 · mine] {GOTCHA}")])],
    )
    assert composed.ids == [] and composed.team_ids == ["m-0000000000cd02"]
    assert composed.text.count(GOTCHA) == 1


def test_changes_and_pending_messages_come_out_redacted(vault: Vault) -> None:
    """The doors used to redact these themselves: now the view does, once."""
    secret = TOKEN
    vault.git.mark_seen()
    memory = vault.root / "MEMORY.md"
    memory.write_text(memory.read_text() + f"- The deploy key is {secret} ^m-0000000000cd09\n")
    git(vault.root, "commit", "-qam", f"a note with {secret}", human=True)
    vault.admin.refresh()
    reading = vault.reading()
    changes = reading.changes("last-session")
    texts = [c.text or "" for c in changes.remembered] + [h.subject for h in changes.human_edits]
    assert texts and not any(secret in t for t in texts)
    # Queued raw (a caller that turned the guard off for its messages).
    vault.sessions.pending.push(f"use {secret} to deploy", channel="ops", secrets="off")
    [waiting] = reading.take_pending("ops")
    assert secret not in waiting.text and reading.take_pending("ops") == []
