"""Consolidation under review: branch commits, counts, merge, reject, undo (real git repos)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import ConfigError, ConflictError, InvalidInputError, Memory, Vault
from mdmem.cli import main
from mdmem.git.review import BRANCH_PREFIX
from mdmem.memory.consolidation.consolidate import pending_entries
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, llm_vault

from ..conftest import git

BRANCH = re.compile(r"^mdmem/consolidate-\d{4}-\d\d-\d\d$")


def chat(vault: Vault, session: str, *lines: str, contact: str = "al") -> list[Memory]:
    s = vault.session(session, source="cli", contact=contact)
    return [s.record("user", line) for line in lines]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }


def rev(vault: Vault, ref: str) -> str:
    return git(vault.root, "rev-parse", ref).strip()


def message(vault: Vault, ref: str) -> str:
    return git(vault.root, "log", "-1", "--format=%B", ref)


def review_branches(vault: Vault) -> list[str]:
    out = git(vault.root, "for-each-ref", "--format=%(refname:short)", "refs/heads/mdmem/")
    return out.split()


def pending_ids(vault: Vault) -> list[str]:
    return [b.id for b in pending_entries(vault.admin.store)]


def fact_texts(vault: Vault, query: str) -> list[str]:
    return [h.text for h in vault.recall(query, kinds=["fact", "preference"]).items]


def person_edits(vault: Vault, rel: str, old: str, new: str) -> tuple[dict[str, bytes], str]:
    """A person changes ``old`` to ``new`` in a file and it is committed; (files, HEAD)."""
    path = vault.root / rel
    path.write_text(path.read_text().replace(old, new))
    vault.admin.commit_human_edits()
    return snapshot(vault.root), rev(vault, "HEAD")


def assert_untouched(vault: Vault, files: dict[str, bytes], head: str) -> None:
    assert snapshot(vault.root) == files
    assert rev(vault, "HEAD") == head
    assert git(vault.root, "status", "--porcelain") == ""
    for marker in ("MERGE_HEAD", "REVERT_HEAD", "CHERRY_PICK_HEAD"):
        assert not (vault.root / ".git" / marker).exists()


# -- the branch ------------------------------------------------------------------------


def test_review_run_commits_to_a_branch_and_leaves_the_vault_alone(vault: Vault) -> None:
    entries = chat(vault, "c1", "I prefer dark mode in every editor.", "My editor is Helix.")
    files, head = snapshot(vault.root), rev(vault, "HEAD")

    result = vault.consolidate(review=True)

    assert result.branch is not None and BRANCH.match(result.branch)
    assert result.consolidated == 2 and len(result.facts) == 2 and len(result.episodes) == 1
    # Working tree, index, HEAD and the checked-out branch are as they were.
    assert_untouched(vault, files, head)
    assert git(vault.root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(vault.root, "diff", "--cached", "--name-only") == ""
    # One commit on the branch, on top of HEAD, authored by the agent.
    assert rev(vault, result.branch) == result.commit
    assert rev(vault, f"{result.branch}^") == head
    assert git(vault.root, "log", "-1", "--format=%an", result.branch).strip() == "test-agent"
    body = message(vault, result.branch)
    assert body.startswith("consolidate: 2 entries → 1 episode, 2 new facts")
    assert f"Entries: {entries[0].id} {entries[1].id}" in body
    assert f"Review: {result.branch}" in body and body.rstrip().endswith("Op: consolidate")
    assert f"Episode: {result.episodes[0].path}" in body
    memory_md = git(vault.root, "show", f"{result.branch}:MEMORY.md")
    assert "- The user's editor is Helix. ^m-" in memory_md
    # What mdmem knows of each line is beside it: the fact's episode, the entries' mark.
    kept = git(vault.root, "show", f"{result.branch}:.fields/MEMORY.md.jsonl")
    assert '"episode":"^' in kept
    assert "+++ b/sessions/.fields/c1.md.jsonl" in result.diff
    assert '"consolidated":"^' in result.diff
    # Until the branch is merged: nothing is recalled, the entries are held, not pending.
    assert fact_texts(vault, "editor Helix") == []
    assert pending_ids(vault) == []
    assert [r.branch for r in vault.git.reviews()] == [result.branch]


def test_review_counts_added_superseded_and_dropped(tmp_path: Path) -> None:
    # Thresholds set around the hash embedder's cosine of "The user's city is ..." pairs.
    vault = Vault.init(
        tmp_path / "vault",
        agent="test-agent",
        consolidation={"same_context_threshold": 0.75, "other_context_threshold": 0.75},
    )
    chat(vault, "c0", "My editor is Helix.")
    vault.consolidate()  # "The user's editor is Helix." becomes a known fact of this contact
    porto = vault.remember("The user's city is Porto.")
    chat(vault, "c1", "My city is Lisbon.", "My dog is Rex.", "My team is Platform.", "Hi.")

    result = vault.consolidate(review=True)

    assert result.superseded == [porto.id]
    assert result.dropped == ["The user's editor is Helix."]  # given, not carried
    assert "Dropped: The user's editor is Helix." in message(vault, result.branch or "")
    found = vault.git.review()
    assert found.branch == result.branch and found.base == rev(vault, "HEAD")
    assert (found.added, found.superseded, found.dropped) == (3, 1, 1)
    assert (found.episodes, found.entries) == (1, 4)
    assert found.dropped_facts == ["The user's editor is Helix."]
    assert f"+++ b/{result.episodes[0].path}" in found.diff
    assert f'"status":"superseded","by":"^{result.facts[0].id}"' in found.diff

    # A person amends the review before merging: a proposed fact removed is simply
    # not added; a memory main has, removed, counts as dropped.
    git(vault.root, "checkout", "-q", found.branch)
    # (Porto, superseded on the branch, is in MEMORY.md's archive there.)
    for memory_md in (vault.root / "MEMORY.md", vault.root / "MEMORY.earlier.md"):
        lines = memory_md.read_text().splitlines(keepends=True)
        kept = [x for x in lines if "dog is Rex" not in x and "Porto" not in x]
        memory_md.write_text("".join(kept))
    git(vault.root, "commit", "-qam", "no dogs, no Porto", human=True)
    git(vault.root, "checkout", "-q", "main")
    amended = vault.git.review(found.branch)
    assert (amended.added, amended.superseded, amended.dropped) == (2, 0, 2)
    assert amended.dropped_facts == ["The user's editor is Helix.", "The user's city is Porto."]


def test_a_second_run_does_not_redraft_entries_under_review(vault: Vault) -> None:
    first_entries = chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    first = vault.consolidate(review=True)

    again = vault.consolidate(review=True)
    assert again.branch is None and again.consolidated == 0 and again.pending_before == 0
    assert vault.consolidate().consolidated == 0  # nor does a normal run

    newer = chat(vault, "c1", "My team is Platform.")
    second = vault.consolidate(review=True)
    assert second.branch == f"{first.branch}-2" and second.consolidated == 1
    body = message(vault, second.branch)
    assert f"Entries: {newer[0].id}\n" in body
    assert second.episodes[0].path != first.episodes[0].path  # held paths are not reused

    # Both merge, one after the other: MEMORY.md, the daily log and the session file
    # were appended to or edited on both branches, block by block.
    vault.git.merge_review(first.branch)
    vault.git.merge_review(second.branch)
    assert pending_ids(vault) == [] and vault.git.reviews() == [] and review_branches(vault) == []
    session_md = (vault.root / "sessions/c1.md").read_text()
    for entry in (*first_entries, *newer):
        assert vault.get(entry.id).field("consolidated")
    assert "consolidated" not in session_md  # the mark is kept beside each entry
    marks = (vault.root / "sessions/.fields/c1.md.jsonl").read_text()
    assert marks.count('"consolidated":"^') == 3
    memory_md = (vault.root / "MEMORY.md").read_text()
    assert "The user's editor is Helix." in memory_md
    assert "The user's team is Platform." in memory_md
    assert "<<<<<<<" not in memory_md + session_md


def test_review_setting_and_auto_trigger_hold_entries(tmp_path: Path) -> None:
    vault = Vault.init(
        tmp_path / "vault",
        agent="test-agent",
        consolidation={"threshold": 3, "batch": 3, "auto": True, "review": True},
    )
    head = rev(vault, "HEAD")
    first = chat(vault, "auto", *[f"Message {i} about the garden fence." for i in range(4)])
    # The 4th record crossed the threshold: the 3 oldest went to a review branch.
    (branch,) = review_branches(vault)
    assert f"Entries: {' '.join(m.id for m in first[:3])}\n" in message(vault, branch)
    assert pending_ids(vault) == [first[3].id]
    assert not list((vault.root / "episodes").glob("*.md"))
    assert git(vault.root, "log", "--format=%s", f"{head}..HEAD").count("consolidate") == 0
    more = chat(vault, "auto", *[f"Message {i} about the shed roof." for i in range(3)])
    # The next batch takes the entries no branch holds.
    assert len(review_branches(vault)) == 2
    second = vault.git.reviews()[1]
    assert f"Entries: {first[3].id} {more[0].id} {more[1].id}\n" in message(vault, second.branch)
    assert pending_ids(vault) == [more[2].id]


def test_review_needs_git(tmp_path: Path) -> None:
    Vault.init(tmp_path / "vault")
    vault = Vault.open(tmp_path / "vault", git={"enabled": False})
    chat(vault, "c1", "My editor is Helix.")
    with pytest.raises(ConfigError, match="needs git"):
        vault.consolidate(review=True)
    assert vault.consolidate(review=True, dry_run=True).branch is None  # a dry run never commits


def test_refs_under_reads_the_ref_files(vault: Vault) -> None:
    prefix = f"refs/heads/{BRANCH_PREFIX}"
    assert vault.admin.store.git.refs_under(prefix) == {}
    chat(vault, "c1", "My editor is Helix.")
    result = vault.consolidate(review=True)
    assert vault.admin.store.git.refs_under(prefix) == {
        f"refs/heads/{result.branch}": result.commit
    }
    git(vault.root, "pack-refs", "--all")
    assert not (vault.root / ".git/refs/heads/mdmem").exists()
    assert vault.admin.store.git.refs_under(prefix) == {
        f"refs/heads/{result.branch}": result.commit
    }
    assert pending_ids(vault) == []
    vault.git.reject_review(result.branch)
    assert vault.admin.store.git.refs_under(prefix) == {}
    assert len(pending_ids(vault)) == 1


def test_a_branch_is_built_only_on_files_that_match_head(vault: Vault) -> None:
    from mdmem.git.review import create_branch

    memory_md = vault.root / "MEMORY.md"
    # A person's save that slipped in after the lock committed human edits is
    # committed as theirs first, so the review commit holds only the agent's change.
    memory_md.write_text(memory_md.read_text() + "\n- A human note. ^m-01jd3k5x7q0000\n")
    read = memory_md.read_bytes()
    branch, commit = create_branch(
        vault.admin.store,
        [("MEMORY.md", read, read + b"- Agent fact.\n")],
        "consolidate: test",
        [],
        [],
    )
    assert "Op: edit" in message(vault, "HEAD") and rev(vault, f"{commit}^") == rev(vault, "HEAD")
    assert "A human note." in git(vault.root, "show", "HEAD:MEMORY.md")
    diff = git(vault.root, "diff", "HEAD", commit).splitlines()
    assert [x for x in diff if x.startswith("+") and not x.startswith("+++")] == ["+- Agent fact."]
    # Bytes that are neither on disk nor in HEAD: nothing is written.
    with pytest.raises(ConflictError, match="changed while the consolidation ran"):
        create_branch(
            vault.admin.store, [("MEMORY.md", b"stale", b"new")], "consolidate: test", [], []
        )
    assert review_branches(vault) == [branch]


# -- merge and reject ------------------------------------------------------------------


def test_merge_while_main_moved_on_merges_cleanly_and_recall_finds_the_facts(
    vault: Vault,
) -> None:
    chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    result = vault.consolidate(review=True)
    # Meanwhile on main: a new memory, a new turn in the same session, a log entry today.
    other = vault.remember("The staging database resets every night at two.")
    (later,) = chat(vault, "c1", "Thanks, that is all for today.")
    vault.log("Deployed the new build.")
    before = rev(vault, "HEAD")

    decision = vault.git.merge_review(result.branch)

    assert decision.action == "merged" and decision.branch == result.branch
    assert decision.commit == rev(vault, "HEAD")
    assert (decision.review.added, decision.review.entries) == (2, 2)
    parents = git(vault.root, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
    assert parents == [before, result.commit]
    body = message(vault, "HEAD")
    assert body.startswith(f"review-merge: {result.branch} into main")
    assert "Op: review-merge" in body and f"Review-Commit: {result.commit}" in body
    assert git(vault.root, "log", "-1", "--format=%an", "HEAD").strip() == "test-agent"
    assert review_branches(vault) == [] and vault.git.reviews() == []
    assert git(vault.root, "status", "--porcelain") == ""
    # The facts are recalled; what main wrote meanwhile is all still there.
    assert "The user's editor is Helix." in fact_texts(vault, "which editor does the user use")
    assert "The user prefers dark mode in every editor." in fact_texts(vault, "dark mode")
    assert vault.recall("staging database").items[0].id == other.id
    assert pending_ids(vault) == [later.id]
    daily = next((vault.root / "daily").glob("*.md")).read_text()
    assert "Deployed the new build." in daily and "Consolidated 2 session entries" in daily
    assert vault.admin.doctor().ok


def test_reject_deletes_the_branch_and_leaves_entries_pending(vault: Vault) -> None:
    entries = chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    result = vault.consolidate(review=True)
    assert pending_ids(vault) == []

    decision = vault.git.reject_review()

    assert decision.action == "rejected" and decision.branch == result.branch
    assert review_branches(vault) == [] and vault.git.reviews() == []
    assert pending_ids(vault) == [m.id for m in entries]
    assert fact_texts(vault, "editor Helix") == []
    assert "Op: log" in message(vault, "HEAD")
    daily = next((vault.root / "daily").glob("*.md")).read_text()
    assert f"Rejected the consolidation under review {result.branch}" in daily
    # They can be consolidated again.
    assert vault.consolidate().consolidated == 2
    with pytest.raises(InvalidInputError, match="no consolidation is waiting"):
        vault.git.reject_review()


def test_status_lists_open_reviews_until_merged(vault: Vault) -> None:
    chat(vault, "c1", "My editor is Helix.")
    result = vault.consolidate(review=True)
    assert vault.status().reviews == [result.branch]
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "status"])
    assert f"waiting for review: {result.branch}" in out.output
    vault.git.merge_review()
    assert vault.status().reviews == []


def test_merging_two_reviews_that_add_the_same_fact_keeps_one(vault: Vault) -> None:
    chat(vault, "c1", "I prefer dark mode in every editor.")
    first = vault.consolidate(review=True)
    # Another contact (the same words from the same one would be a duplicate event).
    chat(vault, "c2", "I prefer dark mode in every editor.", contact="bo")
    second = vault.consolidate(review=True)
    assert first.branch != second.branch
    vault.git.merge_review(first.branch)
    merged = vault.git.merge_review(second.branch)
    active = fact_texts(vault, "dark mode editor")
    assert len(active) == 1  # the copy the second review added is retired
    copy_id = merged.review.facts[0]
    copy = vault.admin.store.catalog.block(copy_id)
    assert copy is not None and copy.status == "superseded"
    assert copy.field("by") == f"^{first.facts[0].id}"
    assert "Op: dedupe" in message(vault, "HEAD")


def test_a_conflicting_merge_is_reported_and_changes_nothing(vault: Vault) -> None:
    chat(vault, "c1", "My editor is Helix.")
    result = vault.consolidate(review=True)
    # A person rewrites the same entry on main meanwhile.
    files, head = person_edits(vault, "sessions/c1.md", "editor is Helix.", "editor is Zed.")

    with pytest.raises(ConflictError) as info:
        vault.git.merge_review(result.branch)

    assert "sessions/c1.md" in str(info.value) and "nothing was merged" in str(info.value)
    assert_untouched(vault, files, head)
    assert review_branches(vault) == [result.branch]  # kept, to reject or merge by hand
    assert [r.branch for r in vault.git.reviews()] == [result.branch]


def test_names_are_checked(vault: Vault) -> None:
    with pytest.raises(InvalidInputError, match="not a review branch"):
        vault.git.review("main")
    with pytest.raises(InvalidInputError, match="no review branch"):
        vault.git.merge_review("consolidate-2020-01-01")
    chat(vault, "a", "My editor is Helix.")
    first = vault.consolidate(review=True)
    chat(vault, "b", "My team is Platform.")
    vault.consolidate(review=True)
    with pytest.raises(InvalidInputError, match="2 reviews are open"):
        vault.git.review()
    short = (first.branch or "").removeprefix("mdmem/")
    assert vault.git.review(short).branch == first.branch


# -- undo ------------------------------------------------------------------------------


def test_undo_a_consolidation_makes_its_entries_pending_again(vault: Vault) -> None:
    entries = chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    result = vault.consolidate()
    assert result.commit and pending_ids(vault) == []
    later = vault.remember("The staging database resets every night at two.")  # MEMORY.md too

    undone = vault.git.undo(result.commit)

    assert undone.reverted == result.commit and not undone.merge
    assert undone.commit == rev(vault, "HEAD")
    body = message(vault, "HEAD")
    assert body.startswith("revert: consolidate: 2 entries")
    assert f"Reverts: {result.commit}" in body and "Op: revert" in body
    assert pending_ids(vault) == [m.id for m in entries]
    assert not any("Helix" in t for t in fact_texts(vault, "which editor does the user use"))
    assert vault.recall("editor", kinds=["episode"]).items == []
    assert not (vault.root / result.episodes[0].path).exists()
    assert vault.get(later.id).text == later.text
    with pytest.raises(InvalidInputError, match="already undone"):
        vault.git.undo(result.commit)
    assert git(vault.root, "status", "--porcelain") == ""


def test_undo_a_merged_review(vault: Vault) -> None:
    entries = chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    result = vault.consolidate(review=True)
    other = vault.remember("The staging database resets every night at two.")
    decision = vault.git.merge_review(result.branch)
    assert decision.commit is not None

    undone = vault.git.undo(decision.commit)

    assert undone.merge and undone.reverted == decision.commit
    assert pending_ids(vault) == [m.id for m in entries]
    assert not any("Helix" in t for t in fact_texts(vault, "which editor does the user use"))
    assert vault.recall("staging database").items[0].id == other.id
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_conflicting_undo_is_reported_and_changes_nothing(vault: Vault) -> None:
    chat(vault, "c1", "My editor is Helix.")
    result = vault.consolidate()
    assert result.commit
    # A person edits the fact the consolidation wrote.
    files, head = person_edits(vault, "MEMORY.md", "editor is Helix", "editor is Helix 24")

    with pytest.raises(ConflictError) as info:
        vault.git.undo(result.commit)

    assert "MEMORY.md" in str(info.value) and "nothing was changed" in str(info.value)
    assert_untouched(vault, files, head)
    with pytest.raises(InvalidInputError, match="no commit"):
        vault.git.undo("not-a-commit")


def test_a_plain_git_revert_by_a_person_leaves_a_working_vault(vault: Vault) -> None:
    entries = chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    result = vault.consolidate()
    assert result.commit
    vault.journal("Spent the afternoon on the garden fence.")
    assert fact_texts(vault, "which editor does the user use")
    root = vault.root
    vault.close()

    git(root, "revert", "--no-edit", result.commit, human=True)

    reopened = Vault.open(root, agent="test-agent")
    assert pending_ids(reopened) == [m.id for m in entries]
    assert not any("Helix" in t for t in fact_texts(reopened, "which editor does the user use"))
    assert reopened.recall("editor", kinds=["episode"]).items == []
    assert reopened.recall("garden fence").items[0].kind == "journal"
    # ...and consolidates them again.
    again = reopened.consolidate()
    assert again.consolidated == 2
    assert "The user's editor is Helix." in fact_texts(reopened, "which editor does the user use")
    reopened.close()


# -- with the local LLM server ---------------------------------------------------------


def test_llm_review_with_the_judge_superseding_a_preference(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    model.judge = lambda new, cands: [i for i, text in cands.items() if "imperial" in text]
    vault = llm_vault(tmp_path, server)
    old = vault.remember("The user prefers imperial units.", kind="preference")
    chat(vault, "c1", "I prefer metric units.", "My name is Ada.")
    files, head = snapshot(vault.root), rev(vault, "HEAD")

    result = vault.consolidate(review=True)

    assert_untouched(vault, files, head)
    assert result.superseded == [old.id] and model.calls["consolidate"] == 1
    found = vault.git.review()
    assert (found.added, found.superseded, found.dropped, found.entries) == (2, 1, 0, 2)
    assert vault.get(old.id).status == "active"  # until the merge
    vault.git.merge_review()
    assert vault.get(old.id).status == "superseded"
    units = vault.recall("which units does the user prefer", kinds=["preference"]).items
    assert [h.text for h in units] == ["The user prefers metric units."]


# -- CLI -------------------------------------------------------------------------------


def test_cli_review_flow_and_json(vault: Vault) -> None:
    chat(vault, "c1", "My editor is Helix.", "I prefer dark mode in every editor.")
    runner = CliRunner()
    base = ["--vault", str(vault.root)]

    made = runner.invoke(main, [*base, "consolidate", "--review", "--json"])
    assert made.exit_code == 0, made.output
    data = json.loads(made.output)
    branch = data["branch"]
    assert BRANCH.match(branch) and data["consolidated"] == 2 and data["commit"]
    human = runner.invoke(main, [*base, "consolidate", "--review"])
    assert human.exit_code == 0 and "nothing to consolidate" in human.output

    listed = runner.invoke(main, [*base, "git", "review", "--json"])
    assert listed.exit_code == 0, listed.output
    (item,) = json.loads(listed.output)
    assert item["branch"] == branch and item["added"] == 2 and item["entries"] == 2
    assert item["diff"] == ""
    shown = runner.invoke(main, [*base, "git", "review"])  # the only open one, in full
    assert shown.exit_code == 0, shown.output
    assert "2 facts added, 0 superseded, 0 dropped" in shown.output
    assert "+++ b/MEMORY.md" in shown.output
    one = json.loads(runner.invoke(main, [*base, "git", "review", branch, "--json"]).output)
    assert one["branch"] == branch and "+++ b/sessions/.fields/c1.md.jsonl" in one["diff"]

    merged = runner.invoke(main, [*base, "git", "review", "--merge", branch, "--json"])
    assert merged.exit_code == 0, merged.output
    decision = json.loads(merged.output)
    assert decision["action"] == "merged" and decision["review"]["added"] == 2

    undone = runner.invoke(main, [*base, "git", "undo", decision["commit"], "--json"])
    assert undone.exit_code == 0, undone.output
    assert json.loads(undone.output)["merge"] is True
    assert len(pending_entries(vault.admin.store)) == 2

    runner.invoke(main, [*base, "consolidate", "--review"])
    rejected = runner.invoke(main, [*base, "git", "review", "--reject"])
    assert rejected.exit_code == 0, rejected.output
    assert "rejected mdmem/consolidate-" in rejected.output
    assert "2 entries are pending" in rejected.output

    for args, words in (
        (["review", "--merge"], "no consolidation is waiting for review"),
        (["review", "--reject", "main"], "is not a review branch"),
        (["review", "--merge", "--reject"], "not both"),
        (["undo", "nope"], "no commit 'nope'"),
    ):
        out = runner.invoke(main, [*base, *args])
        assert out.exit_code != 0 and words in out.output, out.output
        assert "Traceback" not in out.output
