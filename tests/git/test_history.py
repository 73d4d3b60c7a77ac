"""Git-native views: changes since, blame/provenance, and purge (history rewrite)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import ConflictError, InvalidInputError, MemoryNotFoundError, Vault
from mdmem.cli import main
from mdmem.git.history import changes
from mdmem.git.provenance import blame, provenance
from mdmem.git.purge import purge
from mdmem.git.sync import sync

from ..conftest import HUMAN_ENV, git


def head(vault: Vault) -> str:
    return git(vault.root, "rev-parse", "HEAD").strip()


def human_edit(vault: Vault, rel: str, old: str, new: str) -> None:
    path = vault.root / rel
    path.write_text(path.read_text().replace(old, new))


def human_commit(vault: Vault, message: str = "my edit") -> None:
    git(vault.root, "commit", "-qam", message, human=True)


# ---------------------------------------------------------------- changes ----


def test_changes_since_a_commit_lists_every_kind_of_event(vault: Vault) -> None:
    start = head(vault)
    tea = vault.remember("The user drinks tea")
    logged = vault.log("Looked into the flaky test", category="Research")
    coffee = vault.supersede(tea.id, "The user drinks coffee")
    bug = vault.remember("Login fails on Safari", kind="bug_fix")
    vault.resolve(bug.id)
    temp = vault.remember("A temporary note")
    vault.forget(temp.id)
    kept = vault.remember("The office opens at 9")
    human_edit(vault, "MEMORY.md", "opens at 9", "opens at 8")
    human_commit(vault, "fix opening hour")

    result = changes(vault.admin.store, start)
    assert result.base == start and result.head == head(vault)
    assert result.commits == 9 and result.human_commits == 1 and result.agent_commits == 8
    remembered = {c.id: c for c in result.remembered}
    assert set(remembered) == {tea.id, logged.id, coffee.id, bug.id, kept.id}
    assert str(remembered[logged.id].path).startswith("daily/")
    assert remembered[logged.id].op == "log"
    assert remembered[kept.id].text == "The office opens at 8"  # text as it is now
    assert remembered[tea.id].status == "superseded"
    assert [(s.old_id, s.new_id) for s in result.superseded] == [(tea.id, coffee.id)]
    assert result.superseded[0].old_text == "The user drinks tea"
    assert result.superseded[0].new_text == "The user drinks coffee"
    assert [r.id for r in result.resolved] == [bug.id]
    assert [(f.id, f.text, f.op) for f in result.forgotten] == [
        (temp.id, "A temporary note", "forget")
    ]
    (edit,) = result.human_edits
    assert edit.author == HUMAN_ENV["GIT_AUTHOR_NAME"] and edit.email == "ada@example.org"
    assert edit.paths == ("MEMORY.md",) and edit.memory_ids == (kept.id,)
    assert edit.subject == "fix opening hour"


def test_changes_finds_the_memory_a_human_edit_touched_off_the_id_line(vault: Vault) -> None:
    multi = vault.remember("First line of a long memory\nsecond line to fix")
    start = head(vault)
    human_edit(vault, "MEMORY.md", "second line to fix", "second line, fixed")
    vault.admin.commit_human_edits()
    (edit,) = changes(vault.admin.store, start).human_edits
    assert edit.memory_ids == (multi.id,)
    assert not edit.email.endswith("@agents.mdmem")


def test_a_memory_deleted_by_hand_shows_as_forgotten_by_the_human(vault: Vault) -> None:
    doomed = vault.remember("Delete me by hand")
    start = head(vault)
    human_edit(vault, "MEMORY.md", f"- Delete me by hand ^{doomed.id}\n", "")
    human_commit(vault)
    result = changes(vault.admin.store, start)
    assert [(f.id, f.text, f.is_agent) for f in result.forgotten] == [
        (doomed.id, "Delete me by hand", False)
    ]
    assert result.human_edits[0].memory_ids == (doomed.id,)


def test_changes_since_dates(vault: Vault) -> None:
    vault.remember("Something new")
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    assert changes(vault.admin.store, tomorrow).empty
    assert changes(vault.admin.store, tomorrow.date().isoformat()).commits == 0
    everything = changes(vault.admin.store, "2000-01-01")
    assert everything.base is None and everything.commits == 2  # init + remember
    assert changes(vault.admin.store, "1 week ago").commits == 2


def test_changes_rejects_garbage(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        changes(vault.admin.store, "not-a-commit-or-date")
    with pytest.raises(InvalidInputError):
        changes(vault.admin.store, "")


def test_changes_cli_text_and_json(vault: Vault) -> None:
    start = head(vault)
    fact = vault.remember("The deploy key rotates monthly")
    runner = CliRunner()
    text = runner.invoke(main, ["--vault", str(vault.root), "git", "changes", "--since", start])
    assert text.exit_code == 0, text.output
    assert "Remembered (1)" in text.output and fact.id in text.output
    assert "The deploy key rotates monthly" in text.output
    as_json = runner.invoke(
        main, ["--vault", str(vault.root), "git", "changes", "--since", start, "--json"]
    )
    data = json.loads(as_json.stdout)
    assert set(data) == {
        "since", "base", "head", "commits", "agent_commits", "human_commits",
        "remembered", "superseded", "resolved", "forgotten", "human_edits",
    }  # fmt: skip
    assert data["remembered"][0]["id"] == fact.id
    assert set(data["remembered"][0]) == {
        "id", "text", "path", "kind", "status", "commit", "author", "date", "is_agent", "op",
    }  # fmt: skip
    empty = runner.invoke(main, ["--vault", str(vault.root), "git", "changes", "--since", "HEAD"])
    assert empty.exit_code == 0 and "No changes" in empty.output
    bad = runner.invoke(main, ["--vault", str(vault.root), "git", "changes", "--since", "nonsense"])
    assert bad.exit_code == 1 and bad.output.startswith("error:")


# ------------------------------------------------------------- provenance ----


def test_blame_reports_agent_and_human_lines_and_is_cached(vault: Vault) -> None:
    first = vault.remember("Agent wrote this")
    second = vault.remember("Human will rewrite this")
    human_edit(vault, "MEMORY.md", "Human will rewrite this", "A person rewrote this")
    human_commit(vault)
    blk1, blk2 = vault.get(first.id), vault.get(second.id)
    lines = blame(vault.admin.store, "MEMORY.md", blk1.line, blk2.line)
    assert [(la.line, la.is_agent) for la in lines] == [(blk1.line, True), (blk2.line, False)]
    assert lines[0].author == "test-agent" and lines[1].email == "ada@example.org"
    assert lines[0].summary.startswith("remember fact:")

    calls: list[tuple[str, ...]] = []
    real = vault.admin.store.git.execute

    def counting(*args: str, **kwargs: object) -> tuple[int, str, str]:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    vault.admin.store.git.execute = counting  # type: ignore[method-assign]
    again = blame(vault.admin.store, "MEMORY.md", blk1.line, blk2.line)
    assert again == lines
    assert not [c for c in calls if c[0] == "blame"]  # served from the (path, blob) cache


def test_blame_errors(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        blame(vault.admin.store, "MEMORY.md", 5, 2)
    with pytest.raises(InvalidInputError, match="does not exist"):
        blame(vault.admin.store, "nope.md", 1, 1)
    with pytest.raises(InvalidInputError, match="has only"):
        blame(vault.admin.store, "MEMORY.md", 500, 501)


def test_provenance_of_agent_human_and_uncommitted_memories(vault: Vault) -> None:
    agent_made = vault.remember("Written by the agent")
    created = head(vault)
    prov = provenance(vault.admin.store, agent_made.id)
    assert prov.written_by_human is False and prov.authors == ("test-agent",)
    assert prov.created_commit == created and prov.created_by == "test-agent"
    # Resolving moves the line to MEMORY.earlier.md: the creation commit is still the first.
    vault.resolve(agent_made.id)
    assert provenance(vault.admin.store, agent_made.id).created_commit == created

    human_edit(vault, "MEMORY.earlier.md", "Written by the agent", "Reworded by a person")
    human_commit(vault)
    prov = provenance(vault.admin.store, agent_made.id)
    assert prov.written_by_human and prov.last_author == "Ada Human"
    assert prov.created_commit == created

    with (vault.root / "MEMORY.md").open("a") as handle:
        handle.write("- Typed in an editor, not saved to git yet ^m-01abcdefghjk\n")
    prov = provenance(vault.admin.store, "m-01abcdefghjk")
    assert prov.authors == ("(uncommitted)",) and prov.written_by_human
    assert prov.created_commit is None


def test_provenance_cli(vault: Vault) -> None:
    memory = vault.remember("Provenance via the CLI")
    result = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "provenance", memory.id, "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["memory_id"] == memory.id and data["written_by_human"] is False
    assert data["lines"][0]["author"] == "test-agent"


# ------------------------------------------------------------------ purge ----

SECRET = "The vault door code is 7391-alpha and it opens the archive room on the third floor"


def _history_text(vault: Vault) -> str:
    return git(vault.root, "log", "--all", "-p", "--format=%H%n%B")


def _purge_and_check(vault: Vault, method: str) -> None:
    keep = vault.remember("The user likes green tea")
    secret = vault.remember(SECRET, tags=["security"])
    vault.log("Some other log entry")
    vault.resolve(secret.id)
    later = vault.remember("Facts after the secret stay too")
    count = len(git(vault.root, "rev-list", "--all").split())
    assert "7391-alpha" in _history_text(vault)

    result = purge(vault.admin.store, secret.id, confirm=True, method=method)

    assert result.method == method and result.forgotten_now
    history = _history_text(vault)
    assert SECRET not in history and "7391-alpha" not in history
    assert "The vault door code is" not in history  # truncated commit subjects too
    assert git(vault.root, "log", "--all", "--oneline", "-S", SECRET) == ""
    assert git(vault.root, "log", "--all", "--oneline", "-S", "7391-alpha") == ""
    subprocess.run(["git", "fsck", "--strict"], cwd=vault.root, check=True, capture_output=True)
    assert len(git(vault.root, "rev-list", "--all").split()) == count + 1  # + the forget commit
    assert result.commits == count + 1 and result.commits_rewritten >= 4
    assert git(vault.root, "status", "--porcelain") == ""
    assert vault.get(keep.id).text == "The user likes green tea"
    assert vault.get(later.id).text == "Facts after the secret stay too"
    with pytest.raises(MemoryNotFoundError):
        vault.get(secret.id)
    assert "[PURGED]" in history
    # nothing of it left in loose or packed objects either
    objects = subprocess.run(
        "git cat-file --batch-all-objects --batch", shell=True, cwd=vault.root, capture_output=True
    ).stdout
    assert b"7391-alpha" not in objects
    # ...nor in any file of the vault, .git included (COMMIT_EDITMSG, logs, packs)
    for file in vault.root.rglob("*"):
        if file.is_file():
            assert b"7391-alpha" not in file.read_bytes(), file


def test_purge_rewrites_history_with_git_plumbing(vault: Vault) -> None:
    _purge_and_check(vault, "fast-export")


def test_purge_needs_confirmation(vault: Vault) -> None:
    memory = vault.remember("Keep unless confirmed")
    with pytest.raises(InvalidInputError, match="clones"):
        purge(vault.admin.store, memory.id, confirm=False)
    assert vault.get(memory.id).text == "Keep unless confirmed"
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "git", "purge", memory.id])
    assert result.exit_code == 1 and "--yes" in result.output
    assert vault.get(memory.id).text == "Keep unless confirmed"


def test_purge_of_an_already_forgotten_multiline_memory(vault: Vault) -> None:
    memory = vault.remember("Line one of the secret plan\nline two mentions project zebra-99")
    other = vault.remember("Unrelated memory")
    vault.forget(memory.id)
    result = purge(vault.admin.store, memory.id, confirm=True, method="fast-export")
    assert not result.forgotten_now and result.strings >= 2
    history = _history_text(vault)
    assert "zebra-99" not in history and "secret plan" not in history
    assert vault.get(other.id).text == "Unrelated memory"
    with pytest.raises(MemoryNotFoundError):
        purge(vault.admin.store, "m-0000000000zz", confirm=True)


def test_sync_after_purge_needs_force_push(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    vault = Vault.init(tmp_path / "v", agent="a")
    git(vault.root, "remote", "add", "origin", str(remote))
    # Upper case: no memory id or commit hash can hold it by chance.
    secret = vault.remember("Secret to scrub everywhere OKAPI-42X")
    sync(vault.admin.store)
    purge(vault.admin.store, secret.id, confirm=True, method="fast-export")
    with pytest.raises(ConflictError, match="force-push"):
        sync(vault.admin.store)
    result = sync(vault.admin.store, force_push=True)
    assert result.forced and result.ok
    assert git(remote, "rev-parse", "main") == git(vault.root, "rev-parse", "HEAD")
    assert "OKAPI-42X" not in git(remote, "log", "-p", "main")
    assert sync(vault.admin.store).ok  # back to normal


def test_purge_cli(vault: Vault) -> None:
    memory = vault.remember("Purge me from the CLI, code 5511-echo")
    result = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "purge", memory.id, "--yes", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["memory_id"] == memory.id and data["commits_rewritten"] >= 2
    assert "5511-echo" not in _history_text(vault)  # digits alone: a sha may hold them
