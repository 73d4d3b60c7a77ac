"""Time and people in queries, the re-ranking features, and the second round."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.index.context import DateRange
from mdmem.models import Block
from mdmem.recall.signals import (
    FEATURES,
    RERANK_WEIGHTS,
    feature_row,
    has_time,
    query_time,
    rerank_score,
)

TODAY = date(2026, 11, 25)


@pytest.mark.parametrize(
    ("query", "span"),
    [
        ("What did we decide in May 2023?", DateRange(date(2023, 5, 1), date(2023, 5, 31))),
        ("anything on 8 May 2023", DateRange(date(2023, 5, 8), date(2023, 5, 8))),
        ("what happened on May 8, 2023", DateRange(date(2023, 5, 8), date(2023, 5, 8))),
        ("notes from 2023-05-08", DateRange(date(2023, 5, 8), date(2023, 5, 8))),
        ("the trip in 2022", DateRange(date(2022, 1, 1), date(2022, 12, 31))),
        ("what did I say yesterday", DateRange(date(2026, 11, 24), date(2026, 11, 24))),
        ("plans from last week", DateRange(date(2026, 11, 16), date(2026, 11, 22))),
    ],
)
def test_time_in_a_query_becomes_a_date_range(query: str, span: DateRange) -> None:
    assert span in query_time(query, TODAY).ranges


def test_a_query_without_time_has_no_range_and_when_is_seen() -> None:
    assert query_time("Who leads the search team?", TODAY).ranges == ()
    assert query_time("When did Ana move to Porto?", TODAY).asks_when
    assert not query_time("Where did Ana move?", TODAY).asks_when
    # "may" the verb is no month
    assert query_time("may I ask about the deploy", TODAY).ranges == ()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("I went there last Friday", True),
        ("It was in July", True),
        ("Two days ago we met", True),
        ("We painted it blue", False),
    ],
)
def test_has_time(text: str, says: bool) -> None:
    assert has_time(text) is says


def _block(text: str, when: datetime) -> Block:
    return Block("m-a", "MEMORY.md", 1, 1, "", text, "fact", (), "", "active", when, None, "h")


def test_a_date_feature_fires_for_the_event_date_or_a_relative_date_in_the_text() -> None:
    may = query_time("what happened on 7 May 2023", TODAY)
    same_day = _block("We met.", datetime(2023, 5, 7, tzinfo=UTC))
    next_day = _block("We met yesterday.", datetime(2023, 5, 8, tzinfo=UTC))
    other = _block("We met.", datetime(2023, 6, 1, tzinfo=UTC))

    def row(b: Block) -> dict[str, float]:
        return feature_row(
            keyword_norm=0.5,
            cosine=0.4,
            keyword_rank=1,
            vector_rank=2,
            thread=0.0,
            people=False,
            block=b,
            when=may,
            second=0.0,
        )

    assert row(same_day)["date"] == 1.0
    assert row(next_day)["date"] == 1.0  # "yesterday" of 8 May is 7 May
    assert row(other)["date"] == 0.0
    assert set(row(other)) == set(FEATURES)
    assert rerank_score(row(same_day), {"date": 0.5}) == pytest.approx(0.5)


def test_hits_carry_their_features_and_the_date_in_the_query_counts(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="t")
    with vault.batch("two trips"):
        june = vault.remember(
            "Ana took the train to Porto.", created=datetime(2023, 6, 3, tzinfo=UTC)
        )
        may = vault.remember(
            "Bruno flew to Lisbon for the conference.", created=datetime(2023, 5, 3, tzinfo=UTC)
        )
    assert may.id != june.id
    hits = vault.recall("Porto or Lisbon in May 2023", k=2).items
    scores = {h.id: h.scores for h in hits}
    assert scores[may.id].get("f_date") == 1.0
    assert "f_date" not in scores[june.id]
    assert "base" in scores[may.id]


def test_the_second_round_finds_a_turn_that_shares_only_the_first_ones_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The round runs when its weight is positive (as fitted, or here by hand).
    monkeypatch.setitem(RERANK_WEIGHTS, "second", 0.1)
    # No cosine floor (as bench/locomo.py measures): a block the second round
    # alone finds joins on its cosine with the query, its evidence of its own.
    vault = Vault.init(tmp_path / "v", agent="t", recall={"min_vector": -1.0})
    with vault.batch("notes"):
        first = vault.remember("Ana moved into the Bonfim flat near Marques garden.")
        second = vault.remember("The Bonfim flat needed a new Marques-made oven.")
        for i in range(6):
            vault.remember(f"Unrelated note {i} about the weather in Lisbon.")
    hits = vault.recall("where did Ana move", k=5).items
    by_id = {h.id: h.scores for h in hits}
    assert hits[0].id == first.id
    assert by_id.get(second.id, {}).get("f_second", 0.0) > 0.0
    assert "vector" in by_id[second.id]
    # Keyword-only it has no evidence of the query at all (it shares no word
    # with it): found by the widened query, it is never listed.
    hits = vault.recall("where did Ana move", k=5, mode="keyword").items
    assert hits[0].id == first.id and second.id not in {h.id for h in hits}
