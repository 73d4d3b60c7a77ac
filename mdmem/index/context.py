"""Index-only context of a memory: its event date, its speaker, the turn before it.

A chat turn read alone often says little ("Yes, that was the one!", "I went
there yesterday"): what it is about lives in the turn before it, who said it
in a field, and when it happened in its date. Contextual retrieval (Anthropic,
2024) prepends such context to each chunk *for the index only*; here it is
the same: :func:`context_of` builds a short text the keyword index holds in a
field of its own (``context``, weighted below the text) and the embedder sees
after the text, while the stored markdown never changes.

The context holds, each only when known:

* the event date as words (``8 May 2023``, ``May 2023``): the ``created``
  date the host gave the turn or memory, so "in May 2023" can match;
* relative dates in the text resolved against that date (``yesterday`` in a
  turn of 8 May 2023 adds ``7 May 2023``), see :func:`resolve_relative`;
* the speaker (``speaker`` field, else the session ``contact``) when the text
  does not already name them;
* for a short turn (up to :data:`SHORT_TURN_CHARS`, not a tool output), the
  previous turn of the same conversation (the same file, at most six hours
  earlier), cut to :data:`PREVIOUS_CHARS`.

Only blocks of a conversation (a ``speaker`` or ``role`` field) get a
previous turn; every memory gets its date. Nothing here reads the vault: the
indexer hands in the block and the one before it.
"""

from __future__ import annotations

import bisect
import calendar
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta

from mdmem.models import Block

__all__ = [
    "CONTEXT_VERSION",
    "PREVIOUS_CHARS",
    "DateRange",
    "IndexedBlock",
    "TurnOrder",
    "context_of",
    "date_words",
    "is_turn",
    "month_number",
    "resolve_relative",
]

#: Part of the index version: an index built with another context is rebuilt.
CONTEXT_VERSION = "1"
PREVIOUS_CHARS = 240
# A turn longer than this stands on its own (and a tool output is content, not
# a reply): only shorter turns get the turn before them as context.
SHORT_TURN_CHARS = 400
_THREAD_GAP = timedelta(hours=6)

_MONTHS = [m.casefold() for m in calendar.month_name[1:]]
_MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(_MONTHS)} | {"sept": 9}
_WEEKDAYS = [d.casefold() for d in calendar.day_name]
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
    "a few": 3,
    "several": 3,
}


@dataclass(frozen=True)
class IndexedBlock(Block):
    """A block as the indexes hold it: the block plus its index-only ``context``."""

    context: str = ""


@dataclass(frozen=True)
class DateRange:
    """Days from ``start`` to ``end``, both included."""

    start: date
    end: date

    def holds(self, day: date) -> bool:
        return self.start <= day <= self.end


def month_number(word: str) -> int | None:
    """1-12 for a month's name or its three-letter abbreviation, else None."""
    w = word.casefold().rstrip(".")
    if w in _MONTHS:
        return _MONTHS.index(w) + 1
    # "may" is a month only when spelled out: the abbreviation of the rest
    # needs three letters and no common-word clash ("mar", "jun" are fine).
    return _MONTH_ABBR.get(w) if len(w) in (3, 4) and w != "may" else None


def date_words(day: date) -> str:
    """``Monday 8 May 2023``: the day as the words people ask with."""
    return (
        f"{calendar.day_name[day.weekday()]} {day.day} {calendar.month_name[day.month]} {day.year}"
    )


def _month_range(year: int, month: int) -> DateRange:
    last = calendar.monthrange(year, month)[1]
    return DateRange(date(year, month, 1), date(year, month, last))


def _week_of(day: date) -> DateRange:
    start = day - timedelta(days=day.weekday())
    return DateRange(start, start + timedelta(days=6))


_COUNT = (
    r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|a few|few|several|a couple of|couple of)"
)
_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<simple>yesterday|today|tonight|tomorrow|last night|this morning|this evening)"
    r"|(?P<rel>last|this|next|past)\s+(?P<unit>week|weekend|month|year|summer|winter|spring|fall|autumn"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    rf"|(?P<count>{_COUNT})\s+(?P<cunit>day|week|month|year)s?\s+(?P<dir>ago|later|from now)"
    r")\b",
    re.IGNORECASE,
)
_SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "fall": (9, 11),
    "autumn": (9, 11),
    "winter": (12, 2),
}


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _season(year: int, name: str) -> DateRange:
    first, last = _SEASONS[name]
    if first > last:  # winter runs into the next year
        return DateRange(date(year, first, 1), _month_range(year + 1, last).end)
    return DateRange(date(year, first, 1), _month_range(year, last).end)


def resolve_relative(text: str, on: date) -> list[tuple[str, DateRange]]:
    """The relative time expressions of ``text`` and the days they mean,
    counted from ``on`` (the memory's own date, or the clock for a query).

    ``yesterday`` -> the day before; ``last week`` -> the week (Monday to
    Sunday) before ``on``'s; ``last Friday`` -> the latest Friday before
    ``on``; ``two weeks ago`` -> the week around ``on`` minus 14 days;
    ``last summer`` -> June-August of the year before (or of this year when
    it is over). Words are the calendar's, not a data set's.
    """
    out: list[tuple[str, DateRange]] = []
    for m in _RELATIVE.finditer(text):
        phrase = m.group(0)
        if m.group("simple"):
            word = m.group("simple").casefold()
            offset = {"yesterday": -1, "tomorrow": 1}.get(word, 0)
            day = on + timedelta(days=offset)
            out.append((phrase, DateRange(day, day)))
            continue
        if m.group("rel"):
            rel, unit = m.group("rel").casefold(), m.group("unit").casefold()
            step = {"last": -1, "past": -1, "this": 0, "next": 1}[rel]
            if unit == "week":
                out.append((phrase, _week_of(on + timedelta(weeks=step))))
            elif unit == "weekend":
                saturday = _week_of(on + timedelta(weeks=step)).start + timedelta(days=5)
                out.append((phrase, DateRange(saturday, saturday + timedelta(days=1))))
            elif unit == "month":
                shifted = _shift_months(on, step)
                out.append((phrase, _month_range(shifted.year, shifted.month)))
            elif unit == "year":
                year = on.year + step
                out.append((phrase, DateRange(date(year, 1, 1), date(year, 12, 31))))
            elif unit in _SEASONS:
                this = _season(on.year, unit)
                if step < 0:
                    year = on.year if this.end < on else on.year - 1
                    out.append((phrase, _season(year, unit)))
                elif step > 0:
                    year = on.year if this.start > on else on.year + 1
                    out.append((phrase, _season(year, unit)))
                else:
                    out.append((phrase, this))
            else:
                weekday = _WEEKDAYS.index(unit)
                if step < 0:
                    back = (on.weekday() - weekday) % 7 or 7
                    day = on - timedelta(days=back)
                elif step > 0:
                    ahead = (weekday - on.weekday()) % 7 or 7
                    day = on + timedelta(days=ahead)
                else:
                    day = _week_of(on).start + timedelta(days=weekday)
                out.append((phrase, DateRange(day, day)))
            continue
        count_word = m.group("count").casefold()
        count = int(count_word) if count_word.isdigit() else _NUMBER_WORDS.get(count_word, 1)
        count = count if m.group("dir").casefold() != "ago" else -count
        unit = m.group("cunit").casefold()
        if unit == "day":
            day = on + timedelta(days=count)
            out.append((phrase, DateRange(day, day)))
        elif unit == "week":
            out.append((phrase, _week_of(on + timedelta(weeks=count))))
        elif unit == "month":
            shifted = _shift_months(on, count)
            out.append((phrase, _month_range(shifted.year, shifted.month)))
        else:
            year = on.year + count
            out.append((phrase, DateRange(date(year, 1, 1), date(year, 12, 31))))
    return out


def _range_words(span: DateRange) -> str:
    if span.start == span.end:
        return date_words(span.start)
    if (span.start.year, span.start.month) == (span.end.year, span.end.month):
        if span.start.day == 1 and span.end == _month_range(span.start.year, span.start.month).end:
            return f"{calendar.month_name[span.start.month]} {span.start.year}"
        month = calendar.month_name[span.start.month]
        return f"{span.start.day}-{span.end.day} {month} {span.start.year}"
    if span.start.month == 1 and span.start.day == 1 and span.end == date(span.start.year, 12, 31):
        return str(span.start.year)
    return f"{date_words(span.start)} to {date_words(span.end)}"


def is_turn(block: Block) -> bool:
    """A conversation turn: a block with a ``speaker`` or session ``role`` field."""
    return bool(block.field("speaker") or block.field("role"))


def _speaker(block: Block) -> str:
    for key in ("speaker", "contact"):
        value = block.field(key)
        if value and value.strip():
            return value.strip()
    return ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def context_of(block: Block, previous: Block | None = None) -> str:
    """The index-only context of ``block`` (see the module doc); ``previous``
    is the memory right before it in its file, if any."""
    parts: list[str] = []
    day = block.created.date()
    parts.append(f"on {date_words(day)}")
    resolved = resolve_relative(block.text, day)
    if resolved:
        parts.append("; ".join(f"{phrase} = {_range_words(span)}" for phrase, span in resolved))
    speaker = _speaker(block)
    if speaker and speaker.casefold() not in block.text[: len(speaker) + 40].casefold():
        parts.append(f"said by {speaker}")
    if (
        previous is not None
        and len(block.text) <= SHORT_TURN_CHARS
        and block.kind != "tool_output"
        and is_turn(block)
        and is_turn(previous)
        and timedelta(0) <= block.created - previous.created <= _THREAD_GAP
        and previous.text.strip()
    ):
        who = _speaker(previous)
        said = _clip(previous.text, PREVIOUS_CHARS)
        parts.append(
            f"after {who}: {said}"
            if who and who.casefold() not in said[:80].casefold()
            else f"after: {said}"
        )
    return " | ".join(parts)


class TurnOrder:
    """The memory before a block in its file, from ``blocks_in(path)`` (the
    catalog's parse); the sorted memories of a file are cached until its
    block list changes."""

    def __init__(self, blocks_in: Callable[[str], Sequence[Block]]) -> None:
        self._blocks_in = blocks_in
        # path -> (its block list as seen, its length, sorted memories, their lines)
        self._order: dict[str, tuple[Sequence[Block], int, list[Block], list[int]]] = {}

    def previous(self, block: Block) -> Block | None:
        blocks = self._blocks_in(block.path)
        cached = self._order.get(block.path)
        if cached is None or cached[0] is not blocks or cached[1] != len(blocks):
            memories = sorted((b for b in blocks if b.is_memory), key=lambda b: b.line_start)
            cached = (blocks, len(blocks), memories, [b.line_start for b in memories])
            self._order[block.path] = cached
        memories, starts = cached[2], cached[3]
        at = bisect.bisect_left(starts, block.line_start)
        return memories[at - 1] if at > 0 else None
