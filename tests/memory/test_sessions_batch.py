"""Recording turns fast: durable on return, and many turns in one commit inside vault.batch()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mdmem import Vault

from ..conftest import git


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def when(i: int) -> datetime:
    return datetime(2024, 3, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=i)


def test_a_recorded_turn_is_committed_and_recallable_by_a_fresh_process(vault: Vault) -> None:
    before = commit_count(vault.root)
    turn = vault.session("chat-1", source="telegram").record(
        "user", "The launch moved to May 12", event_id="t1"
    )
    assert commit_count(vault.root) == before + 1
    assert git(vault.root, "status", "--porcelain").strip() == ""
    out = subprocess.run(
        [sys.executable, "-m", "mdmem", "--vault", str(vault.root), "recall", "launch", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MDMEM_NO_SERVER": "1"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["items"][0]["id"] == turn.id


def test_turns_recorded_inside_a_batch_make_one_commit(vault: Vault) -> None:
    session = vault.session("import-1", source="chatgpt", contact="alice")
    before = commit_count(vault.root)
    with vault.batch("import chatgpt export"):
        ids = [
            session.record(
                "user" if i % 2 == 0 else "assistant",
                f"message {i} about the allotment garden plot {i % 7}",
                event_id=f"msg-{i}",
                when=when(i),
            ).id
            for i in range(30)  # the default threshold: no consolidation commit after
        ]
    assert commit_count(vault.root) == before + 1
    assert git(vault.root, "log", "-1", "--format=%s").startswith("import chatgpt export")
    assert git(vault.root, "status", "--porcelain").strip() == ""
    assert [m.id for m in session.entries()] == ids
    # Searchable on return from the batch, in this process and a fresh one.
    found = vault.recall("allotment garden plot", k=40, kinds=["chat_message"])
    assert set(ids) <= {h.id for h in found.items}
    with Vault.open(vault.root) as fresh:
        assert fresh.get(ids[-1]).text == "message 29 about the allotment garden plot 1"
        assert fresh.get(ids[0]).created == when(0)


def test_a_repeated_event_inside_the_batch_is_dropped(vault: Vault) -> None:
    session = vault.session("import-2", source="claude")
    with vault.batch():
        first = session.record("user", "hello there", event_id="e-1", when=when(0))
        again = session.record("user", "hello there", event_id="e-1", when=when(0))
        other = session.record("user", "hello there", event_id="e-2", when=when(1))
    assert again.was_new is False and again.id == first.id
    assert other.was_new is True
    assert [m.id for m in session.entries()] == [first.id, other.id]
    # Importing the same export again adds nothing.
    before = commit_count(vault.root)
    with vault.batch():
        repeat = session.record("user", "hello there", event_id="e-1", when=when(0))
    assert repeat.was_new is False
    assert commit_count(vault.root) == before


def test_large_tool_output_inside_a_batch_lands_in_the_same_commit(vault: Vault) -> None:
    session = vault.session("tools-1")
    big = "\n".join(f"line {i}: compiling module {i}" for i in range(3000))
    before = commit_count(vault.root)
    with vault.batch():
        session.record("user", "build it")
        out = session.record_tool_output("bash", big)
    assert commit_count(vault.root) == before + 1
    key = out.text.split("`")[-2]
    assert vault.sessions.read_tool_output(key) == big
    changed = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert f"tool-outputs/{key}.md" in changed and "sessions/tools-1.md" in changed


def test_turns_before_an_error_in_the_batch_are_kept(vault: Vault) -> None:
    session = vault.session("chat-err")
    with pytest.raises(RuntimeError), vault.batch():
        kept = session.record("user", "this one is kept")
        raise RuntimeError("importer crashed")
    assert vault.get(kept.id).text == "this one is kept"
    assert git(vault.root, "status", "--porcelain").strip() == ""


def test_automatic_consolidation_runs_once_after_the_batch(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_CONSOLIDATION_THRESHOLD", "5")
    monkeypatch.setenv("MDMEM_CONSOLIDATION_BATCH", "5")
    v = Vault.open(vault.root)
    session = v.session("chat-auto", source="slack")
    before = commit_count(v.root)
    with v.batch("import slack"):
        for i in range(12):
            session.record("user", f"standup note {i}: the deploy pipeline is green", when=when(i))
        # Nothing consolidated mid-batch (it would need a commit of its own).
        assert commit_count(v.root) == before
    subjects = git(v.root, "log", f"-{commit_count(v.root) - before}", "--format=%s").splitlines()
    assert len(subjects) == 2
    assert subjects[1].startswith("import slack")
    assert "consolidat" in subjects[0].lower()
    assert len(session.entries()) == 12
    v.close()
