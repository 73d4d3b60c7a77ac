"""Index-only context: event dates, relative dates, speaker and the turn before."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.index.context import DateRange, context_of, date_words, resolve_relative
from mdmem.models import Block


def _block(text: str, when: datetime, **fields: str) -> Block:
    return Block(
        id="m-x",
        path="MEMORY.md",
        line_start=1,
        line_end=1,
        heading="",
        text=text,
        kind="fact",
        tags=(),
        scope="",
        status="active",
        created=when,
        updated=None,
        content_hash="h",
        fields=tuple(fields.items()),
    )


MONDAY = date(2023, 5, 8)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("I went there yesterday", date(2023, 5, 7), date(2023, 5, 7)),
        ("see you tomorrow", date(2023, 5, 9), date(2023, 5, 9)),
        ("last week was busy", date(2023, 5, 1), date(2023, 5, 7)),
        ("last Friday we met", date(2023, 5, 5), date(2023, 5, 5)),
        ("two weeks ago", date(2023, 4, 24), date(2023, 4, 30)),
        ("3 days ago", date(2023, 5, 5), date(2023, 5, 5)),
        ("last month", date(2023, 4, 1), date(2023, 4, 30)),
        ("last year", date(2022, 1, 1), date(2022, 12, 31)),
        ("last weekend", date(2023, 5, 6), date(2023, 5, 7)),
        ("last summer", date(2022, 6, 1), date(2022, 8, 31)),
        ("a few days ago", date(2023, 5, 5), date(2023, 5, 5)),
    ],
)
def test_relative_dates_resolve_against_the_given_day(text: str, start: date, end: date) -> None:
    found = resolve_relative(text, MONDAY)
    assert len(found) == 1
    phrase, span = found[0]
    assert phrase in text
    assert span == DateRange(start, end)


def test_no_time_expression_resolves_nothing() -> None:
    assert resolve_relative("We painted the fence blue.", MONDAY) == []


def test_context_holds_the_event_date_resolved_dates_speaker_and_previous_turn() -> None:
    before = _block(
        "Did you go to the support group?", datetime(2023, 5, 8, 13, 50, tzinfo=UTC), speaker="Mel"
    )
    turn = _block(
        "Yes, I went yesterday!", datetime(2023, 5, 8, 13, 56, tzinfo=UTC), speaker="Caroline"
    )
    ctx = context_of(turn, before)
    assert date_words(MONDAY) in ctx  # the event date as words
    assert "Sunday 7 May 2023" in ctx  # "yesterday", from the turn's own date
    assert "Caroline" in ctx  # the speaker, absent from the text
    assert "support group" in ctx and "Mel" in ctx  # the turn it answers


def test_a_turn_hours_apart_or_a_plain_memory_gets_no_previous_turn() -> None:
    before = _block("Old topic about gardening", datetime(2023, 5, 1, tzinfo=UTC), speaker="Mel")
    turn = _block("Yes!", datetime(2023, 5, 8, tzinfo=UTC), speaker="Caroline")
    assert "gardening" not in context_of(turn, before)
    plain = _block("Plain fact", datetime(2023, 5, 8, tzinfo=UTC))
    assert "gardening" not in context_of(
        plain, _block("gardening", datetime(2023, 5, 8, tzinfo=UTC))
    )


def test_context_is_index_only_and_makes_a_short_turn_findable(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="t")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with vault.batch("chat"):
        vault.remember(
            "Which pottery workshop did you pick?", fields=[("speaker", "Mel")], created=when
        )
        answer = vault.remember(
            "The one by the lake, yesterday.", fields=[("speaker", "Caroline")], created=when
        )
    stored = (tmp_path / "v" / answer.path).read_text()
    # The file holds the text as written, without any of the context.
    assert "pottery" not in stored.split("Which pottery")[1].split("\n", 1)[1]
    assert "7 May 2023" not in stored
    hits = vault.recall("pottery workshop Caroline", k=5, mode="keyword").items
    assert answer.id in [h.id for h in hits]
    # The date words of "yesterday" (7 May 2023) find the turn by keyword.
    dated = vault.recall("Sunday 7 May 2023", k=5, mode="keyword").items
    assert [h.id for h in dated][:1] == [answer.id]
    # A fresh process (a rebuilt index) finds it the same way.
    vault.close()
    again = Vault.open(tmp_path / "v")
    again.reindex(full=True)
    assert answer.id in [h.id for h in again.recall("pottery workshop", k=5, mode="keyword").items]
    again.close()
