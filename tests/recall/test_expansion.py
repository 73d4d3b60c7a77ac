"""Candidates from everywhere a named person has spoken (mdmem.recall.expansion)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.recall import expansion, signals
from tests.recall.test_conversation import turn

T0 = datetime(2024, 1, 5, 20, 0, tzinfo=UTC)


def test_focus_names_only_known_people() -> None:
    assert expansion.Focus.of("What sports does Kevin play?", {"kevin", "paola"}) == (
        expansion.Focus(frozenset({"kevin"}))
    )
    assert expansion.Focus.of("What sports are popular?", {"kevin", "paola"}) is None


def test_trim_keeps_the_pool_then_the_named_peoples_blocks() -> None:
    blocks = {
        f"m-{n:012d}": turn(n, f"turn {n}", "Kevin" if n % 3 == 0 else "Paola")
        for n in range(1, 40)
    }
    found = [(block_id, 1.0 - i / 100) for i, block_id in enumerate(blocks)]
    focus = expansion.Focus(frozenset({"kevin"}))
    kept = focus.trim(found, 5, blocks.get)
    assert kept[:5] == found[:5]
    extra = kept[5:]
    assert extra and all(blocks[i].field("speaker") == "Kevin" for i, _ in extra)
    assert [i for i, _ in extra] == [
        i for i, _ in found[5:] if blocks[i].field("speaker") == "Kevin"
    ]


@pytest.mark.parametrize("focused", [True, False])
def test_a_named_persons_weak_match_reaches_the_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, focused: bool
) -> None:
    """Kevin's one turn about the club matches the query worse than the many
    turns Paola wrote about Kevin and the club; without the focus it falls
    outside the keyword pool. (The people weight is raised so that any of
    Kevin's turns in the pool would come first.)"""
    monkeypatch.setitem(signals.RERANK_WEIGHTS, "people", 5.0)
    if not focused:
        monkeypatch.setattr(expansion.Focus, "of", classmethod(lambda cls, q, people: None))
    vault = Vault.init(
        tmp_path / "v",
        agent="t",
        embedder={"provider": "hash"},
        consolidation={"auto": False},
        recall={"candidates": 5, "min_relevance": 0.0, "recency_weight": 0.0},
    )
    with vault.batch("chat"):
        for n in range(30):
            vault.remember(
                f"Kevin and I met at the book club, club {n} of the club league, Kevin said",
                kind="fact",
                fields=[("speaker", "Paola")],
                created=T0,
            )
        chess = vault.remember(
            "I joined the chess club", kind="fact", fields=[("speaker", "Kevin")], created=T0
        )
    ids = [h.id for h in vault.recall("Which club does Kevin like?", k=5, mode="keyword").items]
    assert (chess.id in ids) is focused
    vault.close()
