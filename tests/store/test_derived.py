"""Derived copies: which pieces of an episode copy which source, and marking them in place."""

from __future__ import annotations

from mdmem.files import blocks as blk
from mdmem.files.textfile import decode
from mdmem.store.derived import COPY_SHARE, CopyPlan, Links, words

E = "m-01aaaaaaaa00e1"
S1 = "m-01aaaaaaaa0001"  # the source being purged or redacted
S2 = "m-01aaaaaaaa0002"
F1 = "m-01aaaaaaaa00f1"
F2 = "m-01aaaaaaaa00f2"

NOTE = f"""---
kind: episode
title: Pond heron morning
sources:
- '[[sessions/a#^{S1}]]'
- '[[sessions/a#^{S2}]]'
facts:
- '[[MEMORY#^{F1}]]'
pending:
- Check the grey heron nest by the Pemberly pond
- Buy more tea
---
# Pond heron morning

A grey heron nests by the Pemberly pond. The user drinks tea every morning. ^{E}

## Facts

- A grey heron nests by the Pemberly pond. ([[MEMORY#^{F1}]])
- The user drinks tea every morning. ([[USER#^{F2}]])

## Open items

- Check the grey heron nest by the Pemberly pond
- Buy more tea

## Sources

- [[sessions/a#^{S1}|10:00 user]]
"""

DAILY = (
    "# Daily log\r\n\r\n## 10:05 · Consolidation\r\n"
    f"Consolidated 2 session entries into [[episodes/x#^{E}]] (extractive): "
    f"A grey heron nests by the Pemberly pond. ^m-01aaaaaaaa00d1\r\n"
)


def _links() -> Links:
    links = Links()
    links.add_file(blk.parse("episodes/x.md", decode(NOTE.encode())))
    links.add_file(blk.parse("daily/2026-01-01.md", decode(DAILY.encode())))
    links.sources[E][S1] |= {"Hi! A grey heron nests by the Pemberly pond, I saw it."}
    links.sources[E][S2] |= {"I drink tea every morning."}
    return links


def test_words_fold_case_plurals_and_stop_words() -> None:
    assert words("The Herons nest by THE pond, it's true") == {"heron", "nest", "pond", "true"}
    assert words("ok") == {"ok"} and words("e") == frozenset()


def test_a_piece_is_a_copy_of_the_source_that_covers_it_best() -> None:
    plan = CopyPlan.build(_links(), mark="[X]", targets={S1})
    assert plan.episodes == {E} and 0 < COPY_SHARE < 1
    assert plan.copied_from("A grey heron nests by the Pemberly pond.", E) == S1
    assert plan.copied_from("The user drinks tea every morning.", E) is None  # S2's
    assert plan.copied_from("Pemberly", E) == S1
    # Mentioning the heron is not copying the sentence: 3 of 7 content words.
    assert plan.copied_from("Ask whether the heron came back to the Pemberly pond", E) is None
    assert plan.copied_from("The weather was fine near the lake.", E) is None  # nobody's
    # A tie counts: the words came from S1 at least as much as from anything else.
    tie = CopyPlan(
        mark="[X]",
        targets=frozenset({S1}),
        facts=frozenset(),
        sources={E: {S1: frozenset({"tea every morning"}), S2: frozenset({"tea every morning"})}},
    )
    assert tie.copied_from("Tea every morning.", E) == S1


def test_marking_replaces_only_the_copied_pieces_and_keeps_every_other_byte() -> None:
    plan = CopyPlan.build(_links(), mark="[X]", targets={S1}, facts={F1})
    tf = decode(NOTE.encode())
    assert plan.redact(tf, blk.parse("episodes/x.md", tf))
    new = tf.to_bytes().decode()
    expected = (
        NOTE.replace(
            f"A grey heron nests by the Pemberly pond. The user drinks tea every morning. ^{E}",
            f"[X] The user drinks tea every morning. ^{E}",
        )
        .replace(
            f"- A grey heron nests by the Pemberly pond. ([[MEMORY#^{F1}]])",
            f"- [X] ([[MEMORY#^{F1}]])",
        )
        .replace(
            "- Check the grey heron nest by the Pemberly pond\n- Buy more tea\n---",
            "- '[X]'\n- Buy more tea\n---",
        )
        .replace(
            "- Check the grey heron nest by the Pemberly pond\n- Buy more tea\n\n## Sources",
            "- [X]\n- Buy more tea\n\n## Sources",
        )
        # The title's words came from S1 (pond, heron) more than from S2: a copy.
        .replace("title: Pond heron morning", "title: '[X]'")
        .replace("# Pond heron morning", "# [X]")
    )
    assert new == expected
    assert not plan.redact(tf, blk.parse("episodes/x.md", tf))  # nothing left to mark

    daily = decode(DAILY.encode())
    assert plan.redact(daily, blk.parse("daily/2026-01-01.md", daily))
    assert daily.to_bytes().decode() == DAILY.replace(
        "(extractive): A grey heron nests by the Pemberly pond.", "(extractive): [X]"
    )


def test_a_plan_for_a_memory_no_episode_names_changes_nothing() -> None:
    plan = CopyPlan.build(_links(), mark="[X]", targets={"m-01aaaaaaaa0zzz"})
    tf = decode(NOTE.encode())
    assert not plan and not plan.redact(tf, blk.parse("episodes/x.md", tf))
    assert tf.to_bytes() == NOTE.encode()
