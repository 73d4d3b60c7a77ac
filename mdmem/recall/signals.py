"""What a query asks about time and people, and the re-ranking features it gives.

Recall's first stage (keyword + vector, fused; :mod:`mdmem.recall.search`)
finds candidates by their words. This module adds what words miss, each a
number in [0, 1] per candidate, and :func:`rerank_score` combines them with
weights fitted by leave-one-conversation-out cross-validation
(``bench/rerank_fit.py``; the constants are :data:`RERANK_WEIGHTS`):

* ``keyword`` / ``vector``: the first stage's two signals (BM25 over the best
  BM25 of the query, cosine clipped at 0) and their reciprocal ranks;
* ``thread``: relevance inherited from the question a turn answers;
* ``people``: the query names the block's speaker or contact;
* ``date``: the query names a time ("in May 2023", "last week", "yesterday",
  "2022") and the block's event date, or a date its text means relative to
  that event date ("yesterday" in a turn of 8 May 2023), falls in it;
* ``when``: the query asks *when* and the block says a time (a date, a month,
  a weekday, "last week", "two days ago");
* ``second``: found again by the second retrieval round (the query widened
  with the first round's best blocks' rarest words, for questions whose
  evidence spans turns);
* ``neighbour`` / ``coverage``: what the turns right before and after a
  candidate add (their best cosine with the query; the share of the query's
  terms the candidate and they hold), see :mod:`mdmem.recall.neighbours`.

Time words are the calendar's (month and day names, numbers, relative
phrases), never a data set's phrasing; relative phrases in the query count
from the vault's clock, those in a memory from the memory's own date.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date

from mdmem.index.context import DateRange, month_number, resolve_relative
from mdmem.models import Block
from mdmem.recall.rerank_weights import RERANK_WEIGHTS

__all__ = [
    "FEATURES",
    "RERANK_WEIGHTS",
    "QueryTime",
    "feature_row",
    "has_time",
    "query_time",
    "rerank_score",
]

FEATURES = (
    "keyword",
    "vector",
    "keyword_rr",
    "vector_rr",
    "thread",
    "people",
    "date",
    "when",
    "second",
    "neighbour",
    "coverage",
)

_WHEN = re.compile(r"\b(when|what (?:date|day|month|year|time)|how long ago|since when)\b", re.I)
_YEAR = re.compile(r"\b(19[5-9]\d|20\d\d)\b")
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})\b")
_MONTH_DAY_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_MONTH_YEAR = re.compile(r"\b([A-Za-z]{3,9})\.?,?\s+(?:of\s+)?(\d{4})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WORD = re.compile(r"[A-Za-z]+")
_DAY_NAMES = frozenset(d.casefold() for d in calendar.day_name)
_TIME_WORDS = frozenset(
    {"yesterday", "today", "tonight", "tomorrow", "ago", "weekend", "week", "month", "year"}
    | {"morning", "evening", "night", "recently", "lately", "earlier", "soon"}
)


@dataclass(frozen=True)
class QueryTime:
    """The time a query is about: ``ranges`` (any may match) and whether it asks *when*."""

    ranges: tuple[DateRange, ...]
    asks_when: bool


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _absolute(text: str) -> list[DateRange]:
    out: list[DateRange] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in taken)

    for m in _ISO.finditer(text):
        day = _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if day:
            out.append(DateRange(day, day))
            taken.append(m.span())
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for m in pattern.finditer(text):
            if not free(m):
                continue
            d_s, m_s = (m.group(1), m.group(2)) if order == "dmy" else (m.group(2), m.group(1))
            month = month_number(m_s)
            day = _safe_date(int(m.group(3)), month, int(d_s)) if month else None
            if day:
                out.append(DateRange(day, day))
                taken.append(m.span())
    for m in _MONTH_YEAR.finditer(text):
        month = month_number(m.group(1))
        if month and free(m):
            year = int(m.group(2))
            out.append(DateRange(date(year, month, 1), _month_end(year, month)))
            taken.append(m.span())
    for m in _YEAR.finditer(text):
        if free(m):
            year = int(m.group(1))
            out.append(DateRange(date(year, 1, 1), date(year, 12, 31)))
    return out


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def query_time(query: str, today: date) -> QueryTime:
    """The dates ``query`` names (absolute, or relative to ``today``) and
    whether it asks when something happened."""
    ranges = _absolute(query) + [span for _, span in resolve_relative(query, today)]
    return QueryTime(tuple(ranges), bool(_WHEN.search(query)))


def has_time(text: str) -> bool:
    """Whether ``text`` says a time: a year, a month or day name, a date, a
    relative phrase ("last week", "two days ago")."""
    if _YEAR.search(text) or _ISO.search(text):
        return True
    for word in _WORD.findall(text):
        w = word.casefold()
        if w in _TIME_WORDS or w in _DAY_NAMES or (len(w) > 3 and month_number(w)):
            return True
    return bool(resolve_relative(text, date(2000, 1, 1)))


def _in_ranges(block: Block, ranges: Collection[DateRange]) -> bool:
    day = block.created.date()
    if any(r.holds(day) for r in ranges):
        return True
    for _, span in resolve_relative(block.text, day):
        if any(span.start <= r.end and r.start <= span.end for r in ranges):
            return True
    return any(
        span.start <= r.end and r.start <= span.end
        for span in _absolute(block.text)
        for r in ranges
    )


def feature_row(
    *,
    keyword_norm: float,
    cosine: float | None,
    keyword_rank: int | None,
    vector_rank: int | None,
    thread: float,
    people: bool,
    block: Block,
    when: QueryTime,
    second: float,
    neighbour: float = 0.0,
    coverage: float = 0.0,
) -> dict[str, float]:
    """The features of one candidate (see the module doc), by name."""
    return {
        "keyword": keyword_norm,
        "vector": max(0.0, cosine) if cosine is not None else 0.0,
        "keyword_rr": 1.0 / keyword_rank if keyword_rank else 0.0,
        "vector_rr": 1.0 / vector_rank if vector_rank else 0.0,
        "thread": thread,
        "people": 1.0 if people else 0.0,
        "date": 1.0 if when.ranges and _in_ranges(block, when.ranges) else 0.0,
        "when": 1.0 if when.asks_when and has_time(block.text) else 0.0,
        "second": second,
        "neighbour": neighbour,
        "coverage": coverage,
    }


def rerank_score(row: Mapping[str, float], weights: Mapping[str, float] = RERANK_WEIGHTS) -> float:
    """The fitted linear combination of a candidate's features."""
    return sum(weights.get(name, 0.0) * value for name, value in row.items())
