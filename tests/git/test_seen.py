"""What changed since the last session (issue 18 item 14): marks, rebuild, surfaces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.agent.prompt import prompt_context
from mdmem.cli import main
from mdmem.git.history import Changes
from mdmem.mcp.tools import Toolset
from tests.conftest import git


def _ids(changes: Changes) -> set[str]:
    return {c.id for c in changes.remembered}


def test_last_session_lists_what_came_after_the_previous_session_started(vault: Vault) -> None:
    old = vault.remember("The staging host is stage-1.")
    first = vault.git.changes("last-session", session="s1")
    assert old.id in _ids(first)  # never marked: the whole history
    vault.git.mark_seen(session="s1")
    during = vault.remember("Deploys go through the release branch.")
    other = Vault.open(vault.root, agent="other-bot")
    theirs = other.remember("The on-call rotation changed to Carol.")
    # Inside session s1 the list is stable: since before s1 started.
    assert {old.id, during.id, theirs.id} <= _ids(vault.git.changes(session="s1"))
    # The next session sees what came after s1 began, not what it had seen.
    nxt = vault.git.changes("last-session", session="s2")
    assert _ids(nxt) >= {during.id, theirs.id} and old.id not in _ids(nxt)
    authors = {c.id: c.author for c in nxt.remembered}
    assert authors[theirs.id] == "other-bot"
    # Marks are per agent: other-bot never marked anything.
    assert old.id in _ids(other.git.changes())
    other.close()
    # A commit or a date still works as before.
    assert _ids(vault.git.changes(git(vault.root, "rev-parse", "HEAD~1").strip())) == {theirs.id}


def test_marks_survive_reindex_and_are_rebuilt_from_git_when_lost(vault: Vault) -> None:
    s = vault.session("s1")
    s.record("user", "Ship the invoice export on Monday.")
    vault.git.mark_seen(session="s1")
    after_mark = vault.remember("Invoices are exported as CSV.")
    vault.reindex(full=True)
    assert after_mark.id in _ids(vault.git.changes())
    assert vault.git.changes().base is not None
    summary = vault.sessions.summarize("s1")
    assert summary is not None
    later = vault.remember("The export runs at 02:00 UTC.")
    # The state dir is lost: the base becomes the last summary commit.
    (vault.admin.state_dir / "seen.sqlite").unlink()
    rebuilt = vault.git.changes()
    assert later.id in _ids(rebuilt) and after_mark.id not in _ids(rebuilt)
    # A mark naming a commit that no longer exists (a purge rewrote history).
    vault.git.mark_seen()
    import sqlite3

    with sqlite3.connect(vault.admin.state_dir / "seen.sqlite") as db:
        db.execute("UPDATE marks SET sha=?", ("0" * 40,))
    assert later.id in _ids(vault.git.changes())


def test_changes_cli_tool_and_session_start_context(vault: Vault) -> None:
    vault.remember("Old news: the wiki moved.")
    vault.git.mark_seen(session="s1")
    news = vault.remember("The database password rotates monthly.", scope="project:ops")
    private = vault.remember("Alice's birthday is in May.", scope="user:alice")
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(vault.root), "git", "changes", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {c["id"] for c in data["remembered"]} == {news.id, private.id}
    human = runner.invoke(main, ["--vault", str(vault.root), "git", "changes"])
    assert news.id in human.output
    # The tool is confined to the host's scopes.
    tools = Toolset(vault, allowed_scopes=["project:ops"], tools=["changes"])
    result = tools.dispatch("changes", {})
    assert news.id in result["text"] and private.id not in result["text"]
    assert [c["id"] for c in result["added"]] == [news.id]
    # The session-start section, then the mark moves on.
    ctx = prompt_context(vault, "start", scope="project:ops", session_start=True, session="s2")
    section = ctx["changes"]
    assert section.title == "## Changed since your last session"
    assert news.id in section.text and private.id not in section.text
    assert news.id in ctx.render()
    again = prompt_context(vault, "start", session_start=True, session="s3")
    assert news.id not in again["changes"].text
    # An MCP-only agent marks through the tool: shown, then marked.
    later = vault.remember("The ops wiki moved to /ops.", scope="project:ops")
    marked = tools.dispatch("changes", {"mark_seen": True})
    assert [c["id"] for c in marked["added"]] == [later.id]
    assert tools.dispatch("changes", {})["added"] == []


def test_changes_over_mcp(vault: Vault) -> None:
    from tests.mcp_client import mcp_session

    vault.git.mark_seen()
    news = vault.remember("The CI runners moved to arm64.")
    hidden = vault.remember("Bob's pager number changed.", scope="user:bob")
    seen = mcp_session(vault, [("changes", "changes", {})], "root")
    assert "changes" in seen["tools"]  # type: ignore[operator]
    result = seen["changes"].structured_content  # type: ignore[attr-defined]
    assert [c["id"] for c in result["added"]] == [news.id]
    assert hidden.id not in json.dumps(result)


def test_changes_tool_and_section_redact_a_secret_typed_by_hand(vault: Vault) -> None:
    vault.git.mark_seen()
    token = "ghp_" + "Zq8vLm3Rt6Yp1Wx4Nc7Bd0Fg2Hj5Kk9Ls1Qa"
    memory = vault.remember("The mirror token lives in the CI settings.")
    path = vault.root / memory.path
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("in the CI settings", f"in the CI settings: {token}"), "utf-8")
    git(vault.root, "commit", "-qam", "add token", human=True)
    result = Toolset(vault, tools=["changes"]).dispatch("changes", {})
    assert token not in json.dumps(result)
    ctx = prompt_context(vault, "start", session_start=True)
    assert token not in ctx.render()
    assert memory.id in ctx["changes"].text


def test_a_long_absence_looks_back_a_bounded_number_of_commits(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem.git import seen

    monkeypatch.setattr(seen, "MAX_COMMITS", 3)
    vault.git.mark_seen()
    made = [vault.remember(f"Fact number {n} about the garden.") for n in range(5)]
    result = vault.git.changes()
    assert _ids(result) == {m.id for m in made[-3:]}
    assert "the last 3 commits" in result.since


def test_a_damaged_marks_file_is_set_aside_and_rebuilt(vault: Vault) -> None:
    vault.git.mark_seen()
    after = vault.remember("The backup window is 01:00-03:00.")
    (vault.admin.state_dir / "seen.sqlite").write_bytes(b"this is not a database" * 100)
    result = vault.git.changes()  # no crash: the file is quarantined, the base rebuilt from git
    assert after.id in _ids(result)
    vault.git.mark_seen()
    assert vault.git.changes().empty
    assert (vault.admin.state_dir / "seen.sqlite.corrupt").exists()


def test_a_supersede_reads_as_x_replaced_y_once_in_every_door(vault: Vault, tmp_path: Path) -> None:
    # Reproduced: the session-start hook listed the new memory twice ("new:" and
    # "replaced:", both with the new text) and never what it replaced; the prompt
    # section listed the old one as added, the new one as added, then the change.
    from dataclasses import replace as copy

    from mdmem.hookkit.policy import Policy
    from mdmem.hookkit.runner import run_event

    repo = tmp_path / "repo"
    repo.mkdir()
    start = {
        "session_id": "s1",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    old = vault.remember("The staging database lives on host db-07.")
    policy = copy(Policy(), session_tokens=2000)
    run_event(vault, "claude-code", "session-start", start, policy)  # the host's mark
    vault.git.mark_seen(session="p1")  # prompt_context's mark
    new = vault.supersede(old.id, "The staging database lives on host db-12.")
    hook = json.loads(run_event(vault, "claude-code", "session-start", start, policy))
    hooked = hook["hookSpecificOutput"]["additionalContext"]
    tool = Toolset(vault, tools=["changes"]).dispatch("changes", {})["text"]
    section = prompt_context(vault, "start", session_start=True, session="p2")["changes"].text
    said = (
        '"The staging database lives on host db-12." replaced '
        '"The staging database lives on host db-07."'
    )
    for text in (hooked, section, tool):
        # Once, as "X replaced Y": neither memory is also listed as new.
        assert text.count(said) == 1, text
        assert text.count("db-12") == 1 and text.count("db-07") == 1, text
        assert new.id in text
    assert "- replaced: [^" + new.id in hooked
    assert f"- replaced ^{old.id} with ^{new.id}: " in section
