"""Purge touches the purged memory (and what was copied from it) and nothing else.

Every test compares the history before and after: each other block, note,
``mdmem.toml`` and commit message must keep its bytes in every commit.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from mdmem import InvalidInputError, MemoryNotFoundError, Vault
from mdmem.cli import main
from mdmem.files import blocks as blk
from mdmem.files.sidecar import is_sidecar
from mdmem.files.textfile import SkipFile, decode
from mdmem.git.purge import PURGED, purge, rewrite_file, scrub_message
from mdmem.store.derived import Rewrite

from ..conftest import git


@dataclass(frozen=True)
class Commit:
    message: str
    files: dict[str, object]  # path -> {block id: raw lines} (markdown) or bytes


def commits(root: Path) -> list[str]:
    return git(root, "rev-list", "--reverse", "--topo-order", "HEAD").split()


def snapshot(root: Path, exclude: set[str] = frozenset()) -> list[Commit]:  # type: ignore[assignment]
    """Every commit of HEAD, oldest first: its message and each file's blocks (or bytes)."""
    out = []
    for sha in commits(root):
        message = git(root, "log", "-1", "--format=%B", sha)
        files: dict[str, object] = {}
        for path in git(root, "ls-tree", "-r", "--name-only", sha).splitlines():
            raw = subprocess.run(
                ["git", "show", f"{sha}:{path}"], cwd=root, capture_output=True, check=True
            ).stdout
            if path.endswith(".md"):
                files[path] = _blocks(path, raw, exclude)
            elif is_sidecar(path):
                files[path] = _records(raw, exclude)
            else:
                files[path] = raw
        out.append(Commit(message, files))
    return out


def _records(raw: bytes, exclude: set[str]) -> list[bytes]:
    """A fields file's lines but the records of excluded memories (those leave with them)."""
    return [
        line
        for line in raw.splitlines(keepends=True)
        if not any(f'"id":"{i}"'.encode() in line for i in exclude)
    ]


def _blocks(path: str, raw: bytes, exclude: set[str]) -> object:
    try:
        tf = decode(raw)
        parsed = blk.parse(path, tf)
    except SkipFile:
        return raw
    found: dict[str, str] = {}
    if f"{path}#frontmatter" not in exclude:
        found["frontmatter"] = "".join(tf.lines[: parsed.frontmatter_lines])
    for b in parsed.blocks:
        if b.id not in exclude:
            found[b.id] = "".join(tf.lines[b.line_start - 1 : b.line_end])
    return found


def assert_only_purged_changed(
    before: list[Commit], after: list[Commit], ids: set[str], *, extra_commits: int = 1
) -> None:
    """Same commits; outside ``ids`` every block and file has its bytes; messages change
    only in commits that name a purged id."""
    assert len(after) == len(before) + extra_commits
    for old, new in zip(before, after, strict=False):
        assert new.files == old.files
        if new.message != old.message:
            assert any(f"Memory-Id: {i}" in old.message for i in ids), old.message


def places_holding(vault: Vault, needle: bytes) -> list[str]:
    """Where ``needle`` still is: any git object (reachable or not), any file of the
    vault (.git included: reflogs, packed refs, stash logs) or of its state dir."""
    found = []
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout
    if needle in objects:
        found.append("git objects")
    if needle.decode() in git(vault.root, "log", "-p", "--all", "--format=%H%n%B"):
        found.append("git log -p --all")
    for base in (vault.root, vault.admin.state_dir):
        for path in base.rglob("*"):
            if path.is_file() and needle in path.read_bytes():
                found.append(str(path))
    return found


def item_lines(vault: Vault, text: str) -> list[str]:
    """Lines of any blob in the object database that hold ``text`` as a list item."""
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    return re.findall(rf"(?m)^- {re.escape(text)}(?: #\w+)? \^m-\w+$", objects)


# -- the examples --------------------------------------------------------------


def test_a_two_letter_memory_inside_other_words_is_left_in_them(vault: Vault) -> None:
    # Before: "The t[PURGED]en for the [PURGED]api exhibit was bo…" in every commit.
    other = vault.remember("The token for the okapi exhibit was booked.")
    short = vault.remember("ok")
    later = vault.remember("Okay, the booking is confirmed.")
    before = snapshot(vault.root, {short.id})

    result = purge(vault.admin.store, short.id, confirm=True)

    assert_only_purged_changed(before, snapshot(vault.root, {short.id}), {short.id})
    assert vault.get(other.id).text == "The token for the okapi exhibit was booked."
    assert vault.get(later.id).text == "Okay, the booking is confirmed."
    assert item_lines(vault, "ok") == []
    assert PURGED.encode() not in (vault.root / "MEMORY.md").read_bytes()
    assert "remember fact: [PURGED]" in git(vault.root, "log", "--format=%s")
    assert result.also_in == () and result.forgotten_now
    with pytest.raises(MemoryNotFoundError):
        vault.get(short.id)


def test_a_name_inside_another_memory_stays_there(vault: Vault) -> None:
    client = vault.remember("Ashcombe Ltd")
    invoice = vault.remember("We invoiced Ashcombe Ltd in March for the survey.", tags=["billing"])
    before = snapshot(vault.root, {client.id})

    result = purge(vault.admin.store, client.id, confirm=True)

    assert_only_purged_changed(before, snapshot(vault.root, {client.id}), {client.id})
    assert (
        vault.get(invoice.id).text == "We invoiced Ashcombe Ltd in March for the survey. #billing"
    )
    assert result.also_in == (invoice.id,)  # reported, not touched
    assert item_lines(vault, "Ashcombe Ltd") == []
    subjects = git(vault.root, "log", "--format=%s").splitlines()
    assert "remember fact: We invoiced Ashcombe Ltd in March for the survey." in subjects


def test_purging_e_leaves_mdmem_toml_and_every_other_file_alone(vault: Vault) -> None:
    toml = (vault.root / "mdmem.toml").read_bytes()
    vault.remember("Elephants remember everything they see.")
    one_letter = vault.remember("e")
    vault.log("e is also a letter in the daily log")
    before = snapshot(vault.root, {one_letter.id})

    purge(vault.admin.store, one_letter.id, confirm=True)

    assert_only_purged_changed(before, snapshot(vault.root, {one_letter.id}), {one_letter.id})
    assert (vault.root / "mdmem.toml").read_bytes() == toml
    fresh = Vault.open(vault.root, agent="another-process")
    assert fresh.recall("elephants remember").items
    assert item_lines(vault, "e") == []


def test_a_short_tagged_memory_leaves_no_trace(vault: Vault) -> None:
    # Why it leaked: the block's text is "qx7 #tag" (mdmem appends the tag),
    # but the commit subject quotes the caller's text "qx7"; the old purge
    # only looked for the block's text, and skipped lines under 4 characters.
    vault.remember("Keep this one about the garden.")
    short = vault.remember("qx7", tags=["tag"])
    before = snapshot(vault.root, {short.id})

    purge(vault.admin.store, short.id, confirm=True)

    assert places_holding(vault, b"qx7") == []
    assert_only_purged_changed(before, snapshot(vault.root, {short.id}), {short.id})


def test_a_multi_line_memory_goes_line_by_line_and_nothing_else(vault: Vault) -> None:
    vault.remember("Project zebra is an ordinary codename elsewhere.")
    plan = vault.remember("Line one of the secret plan\nsecond line names zebra-99\nok")
    vault.remember("ok")  # the same short line as a memory of its own stays
    before = snapshot(vault.root, {plan.id})

    result = purge(vault.admin.store, plan.id, confirm=True)

    assert places_holding(vault, b"zebra-99") == []
    assert places_holding(vault, b"secret plan") == []
    assert_only_purged_changed(before, snapshot(vault.root, {plan.id}), {plan.id})
    assert result.strings >= 2
    assert "- ok ^m-" in (vault.root / "MEMORY.md").read_text()


def test_every_version_of_an_edited_memory_is_gone(vault: Vault) -> None:
    keep = vault.remember("The router sits in the hallway closet.")
    edited = vault.remember("The alarm code is alpha-one.")
    for old, new in (("alpha-one", "bravo-two"), ("bravo-two", "charlie-three")):
        path = vault.root / "MEMORY.md"
        path.write_text(path.read_text().replace(old, new))
        vault.admin.commit_human_edits()  # committed as the human, a version of its own
    vault.resolve(edited.id)
    vault.admin.store.resolve(edited.id, status="active")
    assert len(vault.history(edited.id)) >= 4
    before = snapshot(vault.root, {edited.id})

    purge(vault.admin.store, edited.id, confirm=True)

    for version in (b"alpha-one", b"bravo-two", b"charlie-three", b"The alarm code"):
        assert places_holding(vault, version) == [], version
    assert_only_purged_changed(before, snapshot(vault.root, {edited.id}), {edited.id})
    assert vault.get(keep.id).text == "The router sits in the hallway closet."


def test_an_entry_of_the_daily_log_goes_with_its_heading(vault: Vault) -> None:
    first = vault.log("Checked the boiler pressure.", category="House")
    gone = vault.log("Called Dr Vellacott about the results.", category="Health")
    last = vault.log("Watered the tomatoes.", category="Garden")
    before = snapshot(vault.root, {gone.id})

    purge(vault.admin.store, gone.id, confirm=True)

    assert places_holding(vault, b"Vellacott") == []
    assert_only_purged_changed(before, snapshot(vault.root, {gone.id}), {gone.id})
    assert [vault.get(m.id).text for m in (first, last)] == [
        "Checked the boiler pressure.",
        "Watered the tomatoes.",
    ]


# -- derived copies ------------------------------------------------------------------------


def _without(commits: list[Commit], paths: set[str]) -> list[Commit]:
    kept = [(c, {p: f for p, f in c.files.items() if p not in paths}) for c in commits]
    return [Commit(c.message, files) for c, files in kept]


def test_a_consolidated_entry_takes_its_fact_along_and_its_episode_is_regenerated(
    vault: Vault,
) -> None:
    s = vault.session("chat-7", source="cli", contact="alice")
    s.record("user", "I prefer dark mode in every editor, dark mode in every terminal.")
    s.record("assistant", "Understood, dark mode for every editor and every terminal.")
    secret = s.record("user", "Remember that the Quillfeather vault opens every night at two.")
    s.record("assistant", "I will remember when the vault opens each night.")
    result = vault.consolidate()
    episode = result.episodes[0]
    by_text = {m.text: m for m in result.facts}
    fact = by_text["The Quillfeather vault opens every night at two."]
    kept = by_text["The user prefers dark mode in every editor, dark mode in every terminal."]
    assert vault.get(fact.id).field("sources") == f"^{secret.id}"  # the fact names its source
    daily = next(b for b in vault.admin.store.catalog.blocks(memories_only=True) if b.kind == "log")
    note = (vault.root / episode.path).read_text()
    assert "Quillfeather" in note
    # The copies: the fact, the whole episode note (its summary, title, tiers,
    # lists), the daily-log line announcing it. Nothing else changes.
    copies = {secret.id, fact.id, daily.id}
    before = _without(snapshot(vault.root, copies), {episode.path})

    purged = purge(vault.admin.store, secret.id, confirm=True)

    assert purged.derived == (fact.id,) and purged.episodes == (episode.id,)
    assert set(purged.regenerated) == {episode.id, daily.id}
    assert places_holding(vault, b"Quillfeather") == []
    assert places_holding(vault, b"quillfeather") == []
    paths = {episode.path, *(new for _, new in purged.renamed)}
    after = _without(snapshot(vault.root, copies), paths)
    assert_only_purged_changed(before, after, {secret.id, fact.id, episode.id})
    path = vault.admin.store.catalog.path_of(episode.id)
    assert path is not None
    note = (vault.root / path).read_text()
    meta = yaml.safe_load(note.split("---\n")[1])
    # Written again from the three entries left, and saying so.
    assert meta["entries"] == 3 and meta["extractive"] is True and meta["regenerated"]
    assert secret.id not in note and fact.id not in note
    assert meta["facts"] == [f"[[USER.md#^{kept.id}]]"]
    assert f"- {kept.text} ([[USER.md#^{kept.id}]])" in note
    summary = vault.get(episode.id).text
    assert "dark mode in every editor" in summary and PURGED not in summary
    line = vault.get(daily.id)
    assert line.text.startswith(f"Consolidated 3 session entries with alice into [[{path}#^")
    assert line.field("sources") == f"^{episode.id}"
    assert vault.get(kept.id).text == kept.text
    with pytest.raises(MemoryNotFoundError):
        vault.get(fact.id)
    hits = vault.recall("Quillfeather vault opens at night", include_inactive=True).items
    assert all("Quillfeather" not in h.text for h in hits)


def test_a_note_named_after_the_purged_turn_is_renamed_everywhere(vault: Vault) -> None:
    s = vault.session("gate-1", contact="bo")
    secret = s.record("user", "The Zorbulax gate code opens the north gate at dawn.")
    s.record("assistant", "Noted, the north gate code.")
    s.record("user", "I prefer tea.")
    (episode,) = vault.consolidate().episodes
    assert "zorbulax" in episode.path  # the title came from the secret turn

    purged = purge(vault.admin.store, secret.id, confirm=True)

    (renamed,) = purged.renamed
    assert renamed[0] == episode.path and "zorbulax" not in renamed[1]
    assert places_holding(vault, b"Zorbulax") == places_holding(vault, b"zorbulax") == []
    assert (vault.root / renamed[1]).is_file() and not (vault.root / episode.path).exists()
    assert vault.admin.store.catalog.path_of(episode.id) == renamed[1]
    for sha in commits(vault.root):  # every commit holds the new name only
        names = git(vault.root, "ls-tree", "-r", "--name-only", sha)
        assert episode.path not in names
    log = git(vault.root, "log", "--all", "--format=%B")
    assert f"Episode: {renamed[1]}" in log
    daily = next(b for b in vault.admin.store.catalog.blocks(memories_only=True) if b.kind == "log")
    assert f"[[{renamed[1]}#^{episode.id}]]" in daily.text
    assert git(vault.root, "status", "--porcelain") == ""


def test_purging_an_episode_takes_its_note_and_daily_log_line_and_leaves_its_sources(
    vault: Vault,
) -> None:
    s = vault.session("chat-8", contact="carol")
    s.record("user", "The greenhouse thermostat is set to nineteen degrees.")
    s.record("assistant", "Noted, nineteen degrees for the greenhouse.")
    result = vault.consolidate()
    episode = result.episodes[0]
    daily = next(
        b
        for b in vault.admin.store.catalog.blocks(memories_only=True)
        if f"#^{episode.id}]]" in b.text
    )
    assert daily.text.endswith("The greenhouse thermostat is set to nineteen degrees.")
    before = _without(snapshot(vault.root, {daily.id}), {episode.path})

    purged = purge(vault.admin.store, episode.id, confirm=True)

    assert purged.derived == (daily.id,)  # its facts are the entries' copies, not the summary's
    after = _without(snapshot(vault.root, {daily.id}), {episode.path})
    assert_only_purged_changed(before, after, {episode.id, daily.id})
    assert not (vault.root / episode.path).exists()
    history = git(vault.root, "log", "-p", "--all")
    assert not re.search(rf"\^{episode.id}\s*$", history, re.MULTILINE)
    assert episode.path not in history  # the commit trailers named it: [PURGED] there
    assert s.entries()[0].text.startswith("The greenhouse thermostat")
    assert all(vault.get(m.id).text for m in result.facts)


def test_a_raw_tool_output_only_the_entry_pointed_at_leaves_history(vault: Vault) -> None:
    s = vault.session("tools-1")
    payload = "\n".join(f"row {i}: sample-reading-{i} Pemberton" for i in range(600))
    entry = s.record_tool_output("sensor", payload)
    keep = vault.remember("The sensor sits on the roof.")
    assert "Pemberton" in "".join(p.read_text() for p in (vault.root / "tool-outputs").glob("*.md"))

    purge(vault.admin.store, entry.id, confirm=True)

    assert places_holding(vault, b"Pemberton") == []
    assert not list((vault.root / "tool-outputs").glob("*.md"))
    assert vault.get(keep.id).text == "The sensor sits on the roof."
    assert git(vault.root, "status", "--porcelain") == ""


# -- what else holds history -----------------------------------------------------------------


def test_nothing_is_left_in_refs_reflogs_stashes_tags_or_the_state_dir(vault: Vault) -> None:
    keep = vault.remember("The boat is moored at pier nine.")
    secret = vault.remember("The safe combination is Harrowgate-7731.")
    git(vault.root, "tag", "-a", "v1", "-m", "release one")
    git(vault.root, "tag", "light")
    git(vault.root, "branch", "side")
    memory = vault.root / "MEMORY.md"
    for n, version in enumerate(("Harrowgate-7732", "Harrowgate-7733")):
        memory.write_text(memory.read_text().replace("Harrowgate-7731", version))
        git(vault.root, "stash", "push", "-q", "-m", f"try {n}", human=True)
    vault.recall("safe combination")  # usefulness and index rows
    vault.recall("safe combination", as_of=str(vault.git.head()))  # a time-travel snapshot
    assert places_holding(vault, b"Harrowgate-77")

    vault.git.purge(secret.id, confirm=True)

    assert places_holding(vault, b"Harrowgate-77") == []
    assert places_holding(vault, b"safe combination is") == []
    stashes = git(vault.root, "stash", "list").splitlines()
    assert len(stashes) == 2 and "try 1" in stashes[0] and "try 0" in stashes[1]
    assert sorted(git(vault.root, "tag").split()) == ["light", "v1"]
    assert "release one" in git(vault.root, "tag", "-n1", "v1")
    assert "pier nine" in git(vault.root, "show", "side:MEMORY.md")
    assert vault.get(keep.id).text == "The boat is moored at pier nine."
    hits = vault.recall("safe combination", include_inactive=True).items
    assert all(h.id != secret.id and "Harrowgate" not in h.text for h in hits)
    subprocess.run(["git", "fsck", "--strict"], cwd=vault.root, check=True, capture_output=True)


def test_cli_purge_reports_mentions_it_left_alone(vault: Vault) -> None:
    gone = vault.remember("Blue Heron Ltd")
    other = vault.remember("Blue Heron Ltd sent the contract.")
    result = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "purge", gone.id, "--yes"]
    )
    assert result.exit_code == 0, result.output
    assert other.id in result.output and "left as they are" in result.output
    again = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "purge", gone.id, "--yes", "--json"]
    )
    assert again.exit_code == 1 and "error:" in again.output  # nothing left to purge
    assert vault.get(other.id).text == "Blue Heron Ltd sent the contract."


def test_filter_repo_is_refused_with_one_line(vault: Vault) -> None:
    memory = vault.remember("Purge me with filter-repo")
    with pytest.raises(InvalidInputError, match="filter-repo"):
        purge(vault.admin.store, memory.id, confirm=True, method="filter-repo")
    assert vault.get(memory.id).text == "Purge me with filter-repo"


# -- the pieces --------------------------------------------------------------------------------


def test_rewrite_file_removes_the_block_by_id_and_keeps_every_other_byte() -> None:
    raw = (
        "\ufeff# Memory\r\n\r\n- ok ^m-01aaaaaaaa0001\r\n- token okapi ok ^m-01aaaaaaaa0002\r\n"
        "- ok #tag ^m-01aaaaaaaa0003\r\n\r\n## Notes\r\nok, said the human"
    ).encode()
    gone = Rewrite(mark=PURGED, removed=frozenset({"m-01aaaaaaaa0003", "m-01aaaaaaaa0001"}))
    new = rewrite_file("MEMORY.md", raw, gone)
    assert (
        new
        == (
            "\ufeff# Memory\r\n\r\n- token okapi ok ^m-01aaaaaaaa0002\r\n\r\n## Notes\r\n"
            "ok, said the human"
        ).encode()
    )
    assert rewrite_file("mdmem.toml", b"e = 1 ^m-01aaaaaaaa0001\n", gone) == (
        b"e = 1 ^m-01aaaaaaaa0001\n"
    )


def test_rewrite_file_reuses_a_known_block_start_and_gives_the_same_bytes() -> None:
    ids = Rewrite(mark=PURGED, removed=frozenset({"m-01aaaaaaaa0001"}))
    v1 = "# Memory\n\n```\n- quoted ^m-01aaaaaaaa0001\n```\n\n- gone ^m-01aaaaaaaa0001\n"
    v2 = v1 + "- later ^m-01aaaaaaaa0002\n"
    v3 = "- a line above changes the prefix ^m-01aaaaaaaa0004\n" + v2
    spans: dict[tuple[str, bytes], int | None] = {}
    for version in (v1, v2, v2, v3, v3):
        cached = rewrite_file("MEMORY.md", version.encode(), ids, spans)
        assert cached is not None and cached == rewrite_file("MEMORY.md", version.encode(), ids)
        assert b"- quoted ^m-01aaaaaaaa0001" in cached and b"gone" not in cached
    assert sorted(v for v in spans.values() if v is not None) == [0, 0]  # one per prefix
    assert list(spans.values()).count(None) == 2  # the fenced id is not a block


def test_scrub_message_reads_subjects_of_own_commits_only() -> None:
    forms = {"ok"}
    own = "remember fact: ok\n\nMemory-Id: m-1\nKind: fact\nScope: root\nOp: remember\n"
    assert scrub_message(own, forms).splitlines()[0] == f"remember fact: {PURGED}"
    assert "Kind: fact" in scrub_message("remember fact: fact\n\nKind: fact\n", {"fact"})
    other = "remember fact: The token for the okapi exhibit ok\n\nDropped: ok\n"
    assert scrub_message(other, forms, own=False) == (
        f"remember fact: The token for the okapi exhibit ok\n\nDropped: {PURGED}\n"
    )
    long = "A long memory that goes on and on until the subject line has to be cut short"
    cut = f"remember fact: {long[:56]}…"
    assert scrub_message(cut, {long}) == f"remember fact: {PURGED}"
    assert (
        scrub_message("remember fact: ok (+2 more)", forms) == f"remember fact: {PURGED} (+2 more)"
    )
    assert scrub_message('Revert "remember fact: ok"', forms) == f'Revert "remember fact: {PURGED}"'
