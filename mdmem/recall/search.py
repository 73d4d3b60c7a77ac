"""What a recall asks and where its candidates come from.

:class:`RecallQuery` is a checked question (query, k, kinds, tags, scopes,
dates, mode, controls); the candidate functions ask the keyword index
(BM25F), the vector index (FAISS), a substring scan or a plain scan for the
blocks that pass its filters. The stages that rank candidates are
:mod:`mdmem.recall.pipeline`; :mod:`mdmem.recall.asdata` turns an answer into
a prompt block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cached_property
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.files.blocks import parse_datetime, validate_scope
from mdmem.index.blocktext import indexable
from mdmem.index.keyword import QUESTION_WORDS
from mdmem.models import KINDS, Block
from mdmem.recall import ranking
from mdmem.recall.controls import RecallControls
from mdmem.recall.conversation import Threads, strip_people

if TYPE_CHECKING:
    from mdmem.index.keyword import KeywordIndex
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.embedders import F32


__all__ = [
    "MODES",
    "BlockFilter",
    "RecallQuery",
    "block_words",
    "keyword_candidates",
    "may_fall_back",
    "scan_candidates",
    "scan_words",
    "scannable",
    "to_datetime",
    "vector_candidates",
    "vector_query_text",
]

MODES = ("hybrid", "keyword", "vector")
_WORD = re.compile(r"\w+")
# Words too common to tell blocks apart in the index-free scan.
_SCAN_STOP = QUESTION_WORDS | frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "i", "in", "is", "it"}
    | {"me", "my", "of", "on", "or", "our", "that", "the", "this", "to", "we", "with", "you"}
)


def to_datetime(value: datetime | date | str | None, *, end: bool = False) -> datetime | None:
    """A since/until bound; a bare date means the whole day."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        parsed = parse_datetime(value)
        if parsed is None:
            raise InvalidInputError(f"not a date or datetime: {value!r}")
        if len(str(value).strip()) > 10:
            return parsed
        moment = parsed
    return moment.replace(hour=23, minute=59, second=59) if end else moment


@dataclass(frozen=True)
class BlockFilter:
    """What a block must be to be listed or recalled, as a caller asks it: its
    kinds (``-kind`` leaves one out; an unknown kind is an error), its tags (a
    tag matches its children: ``project`` matches ``project/alpha``), its scopes
    (``""`` the vault root) and its creation dates (a bare day is the whole day).
    ``vault.recall`` and ``vault.library.list`` both filter with it."""

    kinds: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    scopes: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def build(
        cls,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        scopes: Iterable[str] | str | None = None,
        since: datetime | date | str | None = None,
        until: datetime | date | str | None = None,
    ) -> BlockFilter:
        kind_set = _kinds_wanted(_as_set(kinds))
        if kind_set is not None:
            unknown = kind_set - set(KINDS)
            if unknown:
                raise InvalidInputError(f"unknown kind(s): {', '.join(sorted(unknown))}")
        tag_set = _as_set(tags)
        if tag_set is not None:
            tag_set = frozenset(t.strip().lstrip("#").lower() for t in tag_set)
        scope_set = _as_set(scopes)
        if scope_set is not None:
            scope_set = frozenset(validate_scope(s) for s in scope_set)
        return cls(kind_set, tag_set, scope_set, to_datetime(since), to_datetime(until, end=True))

    def admits(self, block: Block) -> bool:
        if self.kinds is not None and block.kind not in self.kinds:
            return False
        if self.scopes is not None and block.scope not in self.scopes:
            return False
        if self.tags is not None and not any(
            t == want or t.startswith(want + "/") for t in block.tags for want in self.tags
        ):
            return False
        if self.since is not None and block.created < self.since:
            return False
        return not (self.until is not None and block.created > self.until)


@dataclass(frozen=True)
class RecallQuery:
    query: str
    k: int = 5
    kinds: frozenset[str] | None = None
    tags: frozenset[str] | None = None
    scopes: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_inactive: bool = False
    mode: str = "hybrid"
    controls: RecallControls | None = None  # exclude_ids, field filters, weights (controls.py)

    @classmethod
    def build(
        cls,
        query: str,
        k: int,
        kinds: Iterable[str] | str | None,
        tags: Iterable[str] | str | None,
        scope: Iterable[str] | str | None,
        since: datetime | date | str | None,
        until: datetime | date | str | None,
        include_inactive: bool,
        mode: str,
        controls: RecallControls | None = None,
    ) -> RecallQuery:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("recall needs a non-empty query")
        if len(query) > 4_000:
            raise InvalidInputError("recall query longer than 4,000 characters")
        # bool is an int in Python; k=True is a caller mistake, not k=1.
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 200:
            raise InvalidInputError("k must be an integer from 1 to 200")
        if mode not in MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(MODES)}")
        where = BlockFilter.build(kinds, tags, scope, since, until)
        return cls(
            query=query.strip(),
            k=k,
            kinds=where.kinds,
            tags=where.tags,
            scopes=where.scopes,
            since=where.since,
            until=where.until,
            include_inactive=include_inactive or bool(controls and controls.widens_status),
            mode=mode,
            controls=controls,
        )

    @cached_property
    def where(self) -> BlockFilter:
        """The block filter the query's kinds, tags, scopes and dates make (made once)."""
        return BlockFilter(self.kinds, self.tags, self.scopes, self.since, self.until)

    def admits(self, block: Block) -> bool:
        if not self.include_inactive and block.status != "active":
            return False
        if self.controls is not None and not self.controls.admits(block):
            return False
        return self.where.admits(block)


def _kinds_wanted(kinds: frozenset[str] | None) -> frozenset[str] | None:
    """``-kind`` entries exclude a kind (``kinds="-document_chunk"``: all but documents)."""
    if kinds is None or not any(str(k).startswith("-") for k in kinds):
        return kinds
    if not all(str(k).startswith("-") for k in kinds):
        raise InvalidInputError("kinds: give kinds to keep or -kinds to leave out, not both")
    left_out = frozenset(str(k)[1:] for k in kinds)
    unknown = left_out - set(KINDS)
    if unknown:
        raise InvalidInputError(f"unknown kind(s): {', '.join(sorted(unknown))}")
    return frozenset(KINDS) - left_out


def _as_set(value: Iterable[str] | str | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset([value])
    return frozenset(value)


def may_fall_back(q: RecallQuery) -> bool:
    """Substring fallback (controls.py) unless turned off, or the query is only
    common words, which every block holds."""
    if q.controls is not None and not q.controls.fallback:
        return False
    words = _WORD.findall(q.query.casefold())
    return not words or not all(w in _SCAN_STOP for w in words)


def scannable(q: RecallQuery) -> Callable[[Block], bool]:
    return lambda block: indexable(block) and q.admits(block)


def scan_words(query: str) -> list[str]:
    """The words of ``query`` the index-free scan matches blocks by, each once:
    casefolded, without question words and the commonest function words."""
    return [w for w in dict.fromkeys(_WORD.findall(query.casefold())) if w not in _SCAN_STOP]


def block_words(block: Block) -> frozenset[str]:
    """The words a block offers the index-free scan (text, heading, tags), lightly
    stemmed as the tag boost stems them."""
    return ranking.query_words(" ".join((block.text, block.heading or "", *block.tags)))


def scan_candidates(q: RecallQuery, blocks: Iterable[Block], pool: int) -> list[tuple[str, float]]:
    """Candidates without any index: the share of the query's words each block
    holds (text, heading and tags, lightly stemmed as the tag boost does).
    The last resort while the keyword index is unusable and vectors are out."""
    forms = [ranking.query_words(w) for w in scan_words(q.query)]  # with plural/singular
    if not forms:
        return []
    scored: list[tuple[float, str]] = []
    for block in blocks:
        if not indexable(block) or not q.admits(block):
            continue
        have = block_words(block)
        hits = sum(1 for f in forms if f & have)
        if hits:
            scored.append((hits / len(forms), block.id))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [(block_id, score) for score, block_id in scored[:pool]]


def vector_query_text(query: str, threads: Threads | None) -> str:
    """The text embedded for ``query``: without the names of people, who in
    a small embedding model outweigh the topic."""
    return strip_people(query, threads.people() if threads is not None else ())


def keyword_candidates(
    q: RecallQuery,
    keyword: KeywordIndex,
    pool: int,
    block_of: Callable[[str], Block | None],
) -> list[tuple[str, float]]:
    """BM25F candidates that pass the filters.

    Unfiltered first (Whoosh can then skip postings by block quality, several
    times faster than its filtered path), filtered in Python; a selective
    filter that leaves too few is asked again with Whoosh's own filter.
    """
    raw = keyword.search(q.query, limit=pool * 2, statuses=None)
    kept = [(i, s) for i, s in raw if (b := block_of(i)) is not None and q.admits(b)]
    if len(kept) >= pool or len(raw) < pool * 2:
        return kept[:pool]
    statuses: Collection[str] | None = None if q.include_inactive else ("active",)
    # Whoosh compares dates to the minute; the pipeline checks exact bounds.
    return keyword.search(
        q.query,
        limit=pool,
        kinds=q.kinds,
        tags=q.tags,
        scopes=q.scopes,
        statuses=statuses,
        since=q.since,
        until=q.until,
    )


def vector_candidates(
    q: RecallQuery,
    vectors: VectorIndex,
    query_vec: F32,
    pool: int,
    block_of: Callable[[str], Block | None],
) -> list[tuple[str, float]]:
    """Nearest blocks that pass the filters.

    Over-fetch and filter in Python: cheap when most blocks pass (the usual
    "active only" case). If filters leave too few, ask FAISS again with an
    explicit allow-list, which is exact however selective the filter is.
    """
    raw = vectors.search(query_vec, pool * 2)
    kept = [(i, s) for i, s in raw if (b := block_of(i)) is not None and q.admits(b)]
    if len(kept) >= min(pool, len(raw)) // 2 or len(raw) < pool * 2:
        return kept[:pool]
    allowed = [i for i in vectors.ids() if (b := block_of(i)) is not None and q.admits(b)]
    return vectors.search(query_vec, pool, allowed=allowed)
