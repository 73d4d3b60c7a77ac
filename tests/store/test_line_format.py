"""The line format (issue 39): a line is the note, what mdmem knows lives beside it.

A memory line holds its text, its tags, its kind's word and its id; every
other field is in the fields file beside the note (mdmem.files.sidecar).
These tests read the files as a person, git and a fresh process would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.files.sidecar import sidecar_of

from ..conftest import git, kept_fields

_ID = re.compile(r"(?:^|\s)\^m-[0-9a-z]{6,32}\s*$")
_MACHINE = re.compile(r"\[[\w-]+::[^\]]*\]|\([\w-]+::[^)]*\)|%%.*?%%|<!--.*?-->")


def readable(line: str) -> float:
    """The share of a memory line that is not machine text (its id aside)."""
    body = _ID.sub("", line).strip()
    if not body:
        return 1.0
    return 1 - sum(len(m.group(0)) for m in _MACHINE.finditer(body)) / len(body)


def memory_lines(vault: Vault) -> list[tuple[str, str]]:
    out = []
    for block in vault.admin.store.catalog.blocks(memories_only=True):
        lines = (vault.root / block.path).read_text(encoding="utf-8").splitlines()
        out += [(block.path, x) for x in lines[block.line_start - 1 : block.line_end] if x.strip()]
    return out


def test_every_memory_line_reads_as_text(vault: Vault) -> None:
    vault.remember(
        "Production deploys go out on Tuesdays after the standup.",
        kind="decision",
        tags=["deploy", "ops"],
        importance=8,
        fields=[("ticket", "OPS-142")],
    )
    old = vault.remember("The staging database lives on host db-07.", kind="world")
    vault.supersede(old.id, "The staging database lives on host db-12.")
    chat = vault.session("standup", source="slack", contact="slack:u42")
    chat.record("user", "The billing job runs at 02:00 every night.", speaker="Ana")
    chat.record("user", "My manager is Joao and I live in Lisbon.", speaker="Ana")
    chat.record("user", "I prefer tea over coffee in the mornings.")
    vault.consolidate()
    lines = memory_lines(vault)
    assert len(lines) >= 10
    worst = min(lines, key=lambda x: readable(x[1]))
    assert readable(worst[1]) == 1.0, worst  # nothing on a line but what a person reads
    # ... and everything mdmem knows is beside the lines.
    decision = next(b for b in vault.recall("deploys Tuesdays").items if b.kind == "decision")
    assert (decision.field("ticket"), decision.field("importance")) == ("OPS-142", "8")
    memory_md = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    said = "Production deploys go out on Tuesdays after the standup."
    assert f"- Decision: {said} #deploy #ops ^{decision.id}" in memory_md
    session = (vault.root / "sessions/standup.md").read_text(encoding="utf-8")
    assert re.search(r"^\*\*Ana\*\* \(\d\d:\d\d\): The billing job runs at 02:00", session, re.M)


def test_a_line_typed_into_user_md_is_a_memory_at_once(vault: Vault) -> None:
    vault.remember("The user prefers metric units.", kind="preference")
    user_md = vault.root / "USER.md"
    with user_md.open("a", encoding="utf-8") as fh:
        fh.write("- I run on Saturdays.\n")
    # No session start, no doctor, no write: the next read has it as its own item.
    hits = vault.recall("On which day do I run?").items
    assert hits and hits[0].text == "I run on Saturdays." and hits[0].kind == "preference"
    assert hits[0].path == "USER.md"
    # A write gives it its stable id (from the person's commit, no blame), as theirs.
    past = time.time() - 60  # saved a while ago: no one is typing into it
    os.utime(user_md, (past, past))
    vault.remember("An unrelated fact.")
    line = next(x for x in user_md.read_text().splitlines() if "Saturdays" in x)
    memory_id = line.rsplit("^", 1)[1]
    assert line == f"- I run on Saturdays. ^{memory_id}"
    assert vault.get(memory_id).field("captured") == "human"
    # Deleting the line ends it.
    user_md.write_text(user_md.read_text().replace(line + "\n", ""), encoding="utf-8")
    assert all("Saturdays" not in h.text for h in vault.recall("On which day do I run?").items)


def test_a_person_who_rewrites_a_line_keeps_its_kind_tags_and_fields(vault: Vault) -> None:
    memory = vault.remember(
        "Deploys go out on Tuesdays.", kind="decision", tags=["deploy"], importance=8
    )
    memory_md = vault.root / "MEMORY.md"
    text = memory_md.read_text(encoding="utf-8")
    # The whole line rewritten, its word and tag dropped: what mdmem knows stays.
    line = next(x for x in text.splitlines() if memory.id in x)
    memory_md.write_text(
        text.replace(line, f"- Deploys go out on Thursdays now. ^{memory.id}"), encoding="utf-8"
    )
    got = vault.get(memory.id)
    assert got.text == "Deploys go out on Thursdays now."
    assert (got.kind, got.status, got.field("importance")) == ("decision", "active", "8")
    assert "deploy" in got.tags
    # A kind's word the person types is theirs: it wins.
    memory_md.write_text(
        memory_md.read_text().replace("- Deploys go", "- Gotcha: Deploys go"), encoding="utf-8"
    )
    assert vault.get(memory.id).kind == "gotcha"
    assert vault.get(memory.id).text == "Deploys go out on Thursdays now."


def test_a_line_moved_to_another_note_keeps_what_mdmem_knows(vault: Vault) -> None:
    memory = vault.remember("The backup runs at midnight.", kind="world", importance=9)
    vault.resolve(memory.id)
    archive = vault.root / "WORLD.earlier.md"
    line = next(x for x in archive.read_text().splitlines() if memory.id in x)
    archive.write_text(archive.read_text().replace(line + "\n", ""), encoding="utf-8")
    notes = vault.root / "notes"
    notes.mkdir()
    (notes / "ops.md").write_text(f"# Ops\n\n{line}\n", encoding="utf-8")
    got = vault.get(memory.id)
    assert got.path == "notes/ops.md"
    assert (got.kind, got.status, got.field("importance")) == ("world", "resolved", "9")


def test_retired_memories_leave_the_reading_flow_linked_to_what_replaced_them(
    vault: Vault,
) -> None:
    keep = vault.remember("The wiki lives at /wiki.")
    old = vault.remember("The office wifi is CoffeeNet.")
    new = vault.supersede(old.id, "The office wifi is BeanNet.")
    memory_md = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert "CoffeeNet" not in memory_md and "BeanNet" in memory_md and keep.id in memory_md
    earlier = (vault.root / "MEMORY.earlier.md").read_text(encoding="utf-8")
    assert f"- The office wifi is CoffeeNet. → [[MEMORY.md#^{new.id}|newer]] ^{old.id}" in earlier
    got = vault.get(old.id)
    assert (got.text, got.status, got.field("by")) == (
        "The office wifi is CoffeeNet.",
        "superseded",
        f"^{new.id}",
    )
    assert old.id not in {h.id for h in vault.recall("office wifi").items}
    assert old.id in {h.id for h in vault.recall("office wifi", include_inactive=True).items}
    assert [v.status for v in vault.history(old.id)] == ["active", "superseded"]
    # Made active again, it comes back to its note.
    back = vault.resolve(old.id, status="active")
    assert back.path == "MEMORY.md" and back.field("by") is None
    assert old.id not in (vault.root / "MEMORY.earlier.md").read_text(encoding="utf-8")


def test_a_field_change_leaves_the_note_byte_for_byte(vault: Vault) -> None:
    chat = vault.session("s1")
    turn = chat.record("user", "My editor is Helix.")
    before = (vault.root / "sessions/s1.md").read_bytes()
    vault.consolidate()
    assert (vault.root / "sessions/s1.md").read_bytes() == before
    assert vault.get(turn.id).field("consolidated")
    changed = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert "sessions/.fields/s1.md.jsonl" in changed and "sessions/s1.md" not in changed


def _clone(source: Path, target: Path, agent: str) -> Vault:
    git(source.parent, "clone", "-q", str(source), str(target))
    git(target, "config", "user.name", agent)
    git(target, "config", "user.email", f"{agent}@example.org")
    return Vault.open(target, agent=agent)


def test_two_clones_changing_different_memories_of_one_file_merge_with_plain_git(
    tmp_path: Path,
) -> None:
    origin = Vault.init(tmp_path / "origin", agent="a")
    ids = [origin.remember(f"Fact number {n} about the garden shed.").id for n in range(3)]
    origin.close()
    git(tmp_path / "origin", "config", "receive.denyCurrentBranch", "ignore")
    one = _clone(tmp_path / "origin", tmp_path / "one", "one")
    two = _clone(tmp_path / "origin", tmp_path / "two", "two")
    one.admin.store.writer  # noqa: B018 - opened
    # Different memories of MEMORY.md: one resolves the first, two archives the last
    # and records a field on the second.
    one.resolve(ids[0])
    two.archive(ids[2])
    with two.batch():
        pass
    two.close()
    one.close()
    git(tmp_path / "one", "push", "-q", "origin", "HEAD:main")
    # Plain git, no driver of mdmem's: it merges, and nothing of either side is lost.
    merged = subprocess.run(
        ["git", "pull", "-q", "--no-rebase", "--no-edit", str(tmp_path / "origin"), "main"],
        cwd=tmp_path / "two",
        capture_output=True,
        text=True,
        env={**_git_env(), "GIT_MERGE_AUTOEDIT": "no"},
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    again = Vault.open(tmp_path / "two", agent="two")
    assert again.get(ids[0]).status == "resolved"
    assert again.get(ids[2]).status == "archived"
    assert again.get(ids[1]).status == "active"
    again.close()


def test_the_same_field_changed_on_both_sides_is_a_conflict_in_mdmems_merge(
    tmp_path: Path,
) -> None:
    origin = Vault.init(tmp_path / "origin", agent="a")
    fact = origin.remember("The shed key is under the mat.", kind="world")
    origin.close()
    git(tmp_path / "origin", "config", "receive.denyCurrentBranch", "ignore")
    one = _clone(tmp_path / "origin", tmp_path / "one", "one")
    two = _clone(tmp_path / "origin", tmp_path / "two", "two")
    one.admin.store.writer.transaction  # noqa: B018
    with one.admin.store.writer.transaction("one") as tx:
        tx.set_fields(fact.id, {"importance": "9"}, op="set", subject="importance 9")
    with two.admin.store.writer.transaction("two") as tx:
        tx.set_fields(fact.id, {"importance": "2"}, op="set", subject="importance 2")
    from mdmem.git.merge_driver import merge_texts

    side = sidecar_of("WORLD.md")
    base = git(tmp_path / "origin", "show", f"HEAD:{side}")
    ours = (tmp_path / "one" / side).read_text(encoding="utf-8")
    theirs = (tmp_path / "two" / side).read_text(encoding="utf-8")
    assert merge_texts(base, ours, theirs, side) is None  # a conflict, as for one line
    assert merge_texts(base, ours, ours, side) == ours
    one.close()
    two.close()


def _git_env() -> dict[str, str]:
    return {
        **os.environ,
        "GIT_AUTHOR_NAME": "p",
        "GIT_AUTHOR_EMAIL": "p@example.org",
        "GIT_COMMITTER_NAME": "p",
        "GIT_COMMITTER_EMAIL": "p@example.org",
    }


def test_the_fields_files_are_under_git_and_rebuild_nothing_lost(
    vault: Vault, tmp_path: Path
) -> None:
    memory = vault.remember("The door code changes monthly.", kind="gotcha", importance=7)
    vault.close()
    tracked = git(vault.root, "ls-files").split()
    assert ".fields/MEMORY.md.jsonl" in tracked
    record = json.loads((vault.root / ".fields/MEMORY.md.jsonl").read_text().splitlines()[-1])
    assert record["id"] == memory.id and record["kind"] == "gotcha"
    # Every derived file gone: the vault alone says everything.
    fresh = Vault.open(vault.root, state_dir=str(tmp_path / "new-state"))
    got = fresh.get(memory.id)
    assert (got.kind, got.field("importance")) == ("gotcha", "7")
    assert kept_fields(vault.root, "MEMORY.md")[memory.id]["importance"] == "7"
    fresh.close()


@pytest.mark.parametrize("text", ["Decision: keep the old wording.", "Bug fix: a leading word."])
def test_a_kind_word_in_the_text_stays_text(vault: Vault, text: str) -> None:
    memory = vault.remember(text)  # a fact: the word is the text's
    got = vault.get(memory.id)
    assert (got.text, got.kind) == (text, "fact")
    line = next(x for x in (vault.root / "MEMORY.md").read_text().splitlines() if memory.id in x)
    assert line.startswith(f"- {text.split(':')[0]}\\:")  # escaped, as markdown shows it plain
