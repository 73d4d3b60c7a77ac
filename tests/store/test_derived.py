"""Derived copies: the links they record, what a change reaches, and the edits in place."""

from __future__ import annotations

from mdmem import Vault
from mdmem.files import blocks as blk
from mdmem.files.textfile import decode
from mdmem.store.derived import (
    NoteText,
    Provenance,
    Rewrite,
    origins_of,
    sources_of,
)

E = "m-01aaaaaaaa00e1"
E2 = "m-01aaaaaaaa00e2"
S1 = "m-01aaaaaaaa0001"  # the source being purged or redacted
S2 = "m-01aaaaaaaa0002"
F1 = "m-01aaaaaaaa00f1"
F2 = "m-01aaaaaaaa00f2"
F3 = "m-01aaaaaaaa00f3"
D1 = "m-01aaaaaaaa00d1"
D2 = "m-01aaaaaaaa00d2"

NOTE = f"""---
kind: episode
title: Pond heron morning
entries: 2
sources:
- '[[sessions/a.md#^{S1}]]'
- '[[sessions/a.md#^{S2}]]'
facts:
- '[[MEMORY.md#^{F1}]]'
- '[[USER.md#^{F2}]]'
pending:
- Check the grey heron nest by the Pemberly pond
tone: calm
consolidated: '2026-01-01T10:05:00+00:00'
---
# Pond heron morning

A grey heron nests by the Pemberly pond. The user drinks tea every morning. ^{E}

## Facts

- A grey heron nests by the Pemberly pond. ([[MEMORY.md#^{F1}]])
- The user drinks tea every morning. ([[USER.md#^{F2}]])

## Open items

- Check the grey heron nest by the Pemberly pond

## Sources

- [[sessions/a.md#^{S1}|10:00 user]]
- [[sessions/a.md#^{S2}|10:01 user]]
"""

SESSION = f"""---
session: a
---
# Session a

## 2026-01-01 10:00:00 · user
A grey heron nests by the Pemberly pond. [role:: user] [consolidated:: ^{E}] ^{S1}

## 2026-01-01 10:01:00 · user
I drink tea every morning. [role:: user] [consolidated:: ^{E}] ^{S2}
"""

MEMORY = f"""# Memory

- A grey heron nests by the Pemberly pond. [episode:: ^{E}] [sources:: ^{S1}] ^{F1}
- An old fact from before the links. [episode:: ^{E}] ^{F3}
"""

USER = f"""# User

- The user drinks tea every morning. [episode:: ^{E}] [sources:: ^{S2}] ^{F2}
"""

DAILY = (
    "# Daily log\r\n\r\n## 10:05 · Consolidation\r\n"
    f"Consolidated 2 session entries into [[episodes/x.md#^{E}]] (extractive): "
    f"A grey heron nests by the Pemberly pond. [sources:: ^{E}] ^{D1}\r\n\r\n"
    "## 10:06 · Consolidation\r\n"
    f"Consolidated 2 session entries into [[episodes/x.md#^{E}]] (extractive): "
    f"An older line without its field. ^{D2}\r\n"
)

FILES = {
    "episodes/x.md": NOTE,
    "sessions/a.md": SESSION,
    "MEMORY.md": MEMORY,
    "USER.md": USER,
    "daily/2026-01-01.md": DAILY,
}


def _parsed(path: str, text: str) -> blk.ParsedFile:
    return blk.parse(path, decode(text.encode()))


def _graph(files: dict[str, str] = FILES) -> Provenance:
    return Provenance.of(_parsed(p, t) for p, t in files.items())


# -- the links -----------------------------------------------------------------------------------


def test_each_copy_names_its_sources() -> None:
    graph = _graph()
    assert graph.sources(E) == (S1, S2)
    assert graph.sources(F1) == (S1,) and graph.sources(F2) == (S2,)
    assert graph.sources(F3) == (S1, S2)  # no links of its own: its episode's sources
    assert graph.sources(D1) == (E,) and graph.sources(D2) == (E,)
    assert graph.sources(S1) == ()  # a turn is nobody's copy
    assert graph.episodes_of(S1) == {E} and graph.logs_of(E) == {D1, D2}


def test_a_person_linking_an_episode_in_the_daily_log_writes_no_copy() -> None:
    human = (
        "# Daily log\n\n## 11:00 · Note\n"
        f"See [[episodes/x.md#^{E}]] (my words): about the heron. ^m-01aaaaaaaa00h1\n"
    )
    assert _graph({"daily/2026-01-02.md": human}).pieces == {}


def test_sources_of_reads_the_catalog(vault: Vault) -> None:
    s = vault.session("chat-1", contact="bo")
    s.record("user", "Remember that the boat is moored at pier nine.")
    s.record("assistant", "Noted.")
    result = vault.consolidate()
    (episode,) = result.episodes
    (fact,) = result.facts
    summary = vault.sessions.summarize("chat-1")
    turns = [m.id for m in s.entries()]
    catalog = vault.admin.store.catalog
    block = vault.admin.store.catalog.block
    assert sources_of(block(episode.id), catalog) == tuple(turns)  # type: ignore[arg-type]
    assert sources_of(block(fact.id), catalog) == (turns[0],)  # type: ignore[arg-type]
    assert summary is not None
    assert sources_of(block(summary.id), catalog) == tuple(turns)  # type: ignore[arg-type]
    log = next(b for b in catalog.blocks(memories_only=True) if b.kind == "log")
    assert sources_of(log, catalog) == (episode.id,)
    assert origins_of(log, catalog) == tuple(turns)
    assert sources_of(block(turns[0]), catalog) == ()  # type: ignore[arg-type]
    bug = vault.remember("Gate stuck", kind="gotcha")
    assert sources_of(block(bug.id), catalog) == ()  # type: ignore[arg-type]


# -- what a change reaches -----------------------------------------------------------------------


def test_purging_a_source_removes_its_facts_and_regenerates_the_episode() -> None:
    reached = _graph().affected({S1}, remove=True)
    # F3 names no sources: it counts as made from all of its episode's.
    assert reached.removed == {S1, F1, F3}
    assert reached.regenerated == {E, D1, D2} and not reached.dropped_notes


def test_an_episode_with_no_source_left_leaves_with_its_log_line() -> None:
    files = {**FILES, "episodes/x.md": NOTE.replace(f"- '[[sessions/a.md#^{S2}]]'\n", "")}
    reached = _graph(files).affected({S1}, remove=True)
    assert {E, D1, D2} <= reached.removed and reached.dropped_notes == {E}
    assert reached.regenerated == frozenset()


def test_an_episode_given_a_removed_fact_is_regenerated_too() -> None:
    later = (
        NOTE.replace(E, E2)
        .replace(S1, "m-01aaaaaaaa0003")
        .replace(S2, "m-01aaaaaaaa0004")
        .replace("consolidated:", f"given:\n- '[[MEMORY.md#^{F1}]]'\nconsolidated:")
    )
    reached = _graph({**FILES, "episodes/y.md": later}).affected({S1}, remove=True)
    assert E2 in reached.regenerated and E2 not in reached.removed


def test_retention_regenerates_but_never_removes() -> None:
    reached = _graph().affected({S1}, remove=False)
    assert reached.removed == {S1}  # the retired memory itself: its text goes, not its block
    assert reached.regenerated == {E, D1, D2}  # facts keep their text


# -- the edits ------------------------------------------------------------------------------------


def test_a_regenerated_note_changes_only_its_derived_lines() -> None:
    front = {
        "title": "Tea every morning",
        "entries": 1,
        "pending": [],
        "tone": None,
        "regenerated": "2026-02-01T00:00:00+00:00",
    }
    rewrite = Rewrite(
        mark="[X]",
        removed=frozenset({S1, F1}),
        texts={E: "The user drinks tea every morning."},
        notes={E: NoteText("Tea every morning", (), front)},
    )
    tf = decode(NOTE.encode())
    assert rewrite.apply(tf, blk.parse("episodes/x.md", tf))
    expected = (
        NOTE.replace("title: Pond heron morning", "title: Tea every morning")
        .replace("entries: 2", "entries: 1")
        .replace(f"- '[[sessions/a.md#^{S1}]]'\n", "")
        .replace(f"- '[[MEMORY.md#^{F1}]]'\n", "")
        .replace("pending:\n- Check the grey heron nest by the Pemberly pond\n", "pending: []\n")
        .replace("tone: calm\n", "")
        .replace("---\n# Pond", "regenerated: '2026-02-01T00:00:00+00:00'\n---\n# Pond")
        .replace("# Pond heron morning", "# Tea every morning")
        .replace(
            f"A grey heron nests by the Pemberly pond. The user drinks tea every morning. ^{E}",
            f"The user drinks tea every morning. ^{E}",
        )
        .replace(f"- A grey heron nests by the Pemberly pond. ([[MEMORY.md#^{F1}]])\n", "")
        .replace("## Open items\n\n- Check the grey heron nest by the Pemberly pond\n\n", "")
        .replace(f"- [[sessions/a.md#^{S1}|10:00 user]]\n", "")
    )
    assert tf.to_bytes().decode() == expected
    assert not rewrite.apply(tf, blk.parse("episodes/x.md", tf))  # nothing left to change


def test_a_log_line_gets_its_new_text_and_every_other_byte_stays() -> None:
    rewrite = Rewrite(mark="[X]", texts={D1: "Consolidated 1 session entry: tea."})
    tf = decode(DAILY.encode())
    assert rewrite.apply(tf, blk.parse("daily/2026-01-01.md", tf))
    assert tf.to_bytes().decode() == DAILY.replace(
        f"Consolidated 2 session entries into [[episodes/x.md#^{E}]] (extractive): "
        f"A grey heron nests by the Pemberly pond. [sources:: ^{E}] ^{D1}",
        f"Consolidated 1 session entry: tea. [sources:: ^{E}] ^{D1}",
    )


def test_a_dropped_note_leaves_whole_and_retention_marks_fact_lines() -> None:
    tf = decode(NOTE.encode())
    assert Rewrite(mark="[X]", dropped=frozenset({E})).apply(tf, blk.parse("x.md", tf)) is None
    marked = Rewrite(mark="[X]", marked=frozenset({F2}))
    assert marked.apply(tf, blk.parse("episodes/x.md", tf))
    assert f"- [X] ([[USER.md#^{F2}]])" in tf.text
    assert tf.text.replace(f"- [X] ([[USER.md#^{F2}]])", "") == NOTE.replace(
        f"- The user drinks tea every morning. ([[USER.md#^{F2}]])", ""
    )
