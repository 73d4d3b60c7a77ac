"""Hybrid recall: keyword + vector candidates, fusion, adjustments, floor.

query → Whoosh BM25F candidates and FAISS candidates (the query embedded once,
without the names of known people) → fused (a calibrated blend by default, or
RRF) → status/scope/kind/date filters and a floor, so an unrelated query
returns nothing → conversation turns inherit part of the relevance of the
question before them → tag boost (tags and people), recency blend (and trust,
human weight when configured) → hits that carry file, line range and
citation. See :mod:`mdmem.recall.ranking` and :mod:`mdmem.recall.conversation`.
"""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Protocol

from mdmem.errors import EmbedderError, IndexError_, InvalidInputError
from mdmem.files.blocks import parse_datetime, validate_scope
from mdmem.files.ids import written_id
from mdmem.index.blocktext import indexable
from mdmem.index.keyword import QUESTION_WORDS
from mdmem.models import KINDS, Block, Hit, Recall
from mdmem.recall import expansion, families, ranking, signals
from mdmem.recall.controls import RecallControls, substring_candidates
from mdmem.recall.conversation import Threads, people_of, strip_people, thread_bonus
from mdmem.recall.neighbours import Neighbourhood
from mdmem.store.importance import importance_factor, importance_of

if TYPE_CHECKING:
    from mdmem.config import RecallSettings
    from mdmem.index.keyword import KeywordIndex
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.embedders import F32


class Indexes(Protocol):
    """What recall reads: the live Indexer, or a time-travel Snapshot."""

    @property
    def keyword(self) -> KeywordIndex: ...
    @property
    def vectors(self) -> VectorIndex | None: ...
    @property
    def missing_vectors(self) -> set[str]: ...


__all__ = ["MODES", "RecallQuery", "cite_context", "render_context", "run_recall", "to_datetime"]

MODES = ("hybrid", "keyword", "vector")
SECOND_ROUND_FLOOR = 0.5
NEIGHBOUR_DEPTH = 20  # candidates that get the neighbour features (neighbours.py)
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
        kind_set = _kinds_wanted(_as_set(kinds))
        if kind_set is not None:
            unknown = kind_set - set(KINDS)
            if unknown:
                raise InvalidInputError(f"unknown kind(s): {', '.join(sorted(unknown))}")
        tag_set = _as_set(tags)
        if tag_set is not None:
            tag_set = frozenset(t.lstrip("#").lower() for t in tag_set)
        scope_set = _as_set(scope)
        if scope_set is not None:
            scope_set = frozenset(validate_scope(s) for s in scope_set)
        return cls(
            query=query.strip(),
            k=k,
            kinds=kind_set,
            tags=tag_set,
            scopes=scope_set,
            since=to_datetime(since),
            until=to_datetime(until, end=True),
            include_inactive=include_inactive or bool(controls and controls.widens_status),
            mode=mode,
            controls=controls,
        )

    def admits(self, block: Block) -> bool:
        if not self.include_inactive and block.status != "active":
            return False
        if self.controls is not None and not self.controls.admits(block):
            return False
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


def run_recall(
    q: RecallQuery,
    indexer: Indexes,
    block_of: Callable[[str], Block | None],
    settings: RecallSettings,
    *,
    now: datetime | None = None,
    trust_of: Callable[[str], float | None] | None = None,
    human_of: Callable[[Block], bool] | None = None,
    threads: Threads | None = None,
    embed_query: Callable[[str], F32] | None = None,
    gaps: Callable[[], list[tuple[str, str]]] | None = None,
    scan: Callable[[], Iterable[Block]] | None = None,
    shown: Callable[[str], str] | None = None,
    second_round: Callable[[list[Block]], dict[str, float]] | None = None,
) -> Recall:
    """The ranking pipeline over already-fresh indexes.

    ``threads`` (the vault's conversation order and known people) enables
    the people and thread signals of :mod:`mdmem.recall.conversation`.
    ``embed_query``: how the query's vector is made, if not by the indexes'
    embedder (the live indexer may have embedded it already).
    ``second_round``: scores of a second retrieval widened from the first
    round's best blocks (a re-ranking feature, see mdmem.recall.multihop).
    ``gaps``: what the indexes lack right now, as ``(part, reason)`` pairs
    (see Indexer.recall_gaps); ``scan``: every block, read when neither
    index can answer; ``shown``: text as the indexes hold it (a secret typed
    by hand redacted), which the substring fallback matches against (no
    ``shown``, no fallback). A part that fails here (a keyword index that cannot
    be read, an embedder that does not answer) degrades the recall instead
    of failing it.
    """
    started = time.perf_counter()
    now = now or datetime.now(UTC)
    pool = max(settings.candidates, q.k * 4)
    statuses: Collection[str] | None = None if q.include_inactive else ("active",)
    # What this recall could not use, one clause each: the answer is
    # ``degraded`` while any part is missing, and says why.
    reasons: list[str] = []
    # A query naming known people searches deeper for what they said (expansion.py).
    focus = expansion.Focus.of(q.query, threads.people()) if threads is not None else None
    depth = focus.depth(pool) if focus is not None else pool

    keyword: list[tuple[str, float]] = []
    keyword_ok = q.mode == "vector"
    if q.mode != "vector":
        try:
            keyword = _keyword_candidates(q, indexer, depth, statuses, block_of)
            if focus is not None:
                keyword = focus.trim(keyword, pool, block_of)
            keyword_ok = True
        except IndexError_ as exc:
            _note(reasons, f"keyword index unusable: {_line(exc)}")
        if keyword_ok and not keyword and scan and shown and _may_fall_back(q):
            keyword = substring_candidates(q.query, scan(), _scannable(q), pool, shown)

    vector: list[tuple[str, float]] = []
    query_vec: F32 | None = None
    if q.mode != "keyword":
        vectors = indexer.vectors
        vector_reasons: list[str] = []
        if vectors is None or embed_query is None:
            vector_reasons.append("vectors unavailable")
        elif len(vectors) == 0:
            if keyword:  # blocks exist, none has a vector yet
                vector_reasons.append("the vector index is empty")
        else:
            if indexer.missing_vectors:
                vector_reasons.append(f"{len(indexer.missing_vectors)} block(s) without a vector")
            text = vector_query_text(q.query, threads)
            try:
                query_vec = embed_query(text)
            except EmbedderError as exc:
                vector_reasons.append(f"query not embedded: {_line(exc)}")
            else:
                vector = _vector_candidates(q, vectors, query_vec, depth, block_of)
                if focus is not None:
                    vector = focus.trim(vector, pool, block_of)
        # The indexes' own account (asked now, after this recall's attempts)
        # names the cause better than what this recall saw of it.
        known = [why for part, why in (gaps() if gaps is not None else []) if part == "vector"]
        for why in known or vector_reasons:
            _note(reasons, why)
    if gaps is not None:
        for part, why in gaps():
            if part == "keyword" and q.mode != "vector":
                _note(reasons, why)
    if not keyword_ok and not vector and scan is not None:
        # Neither index can answer: read the blocks themselves.
        keyword = _scan_candidates(q, scan(), pool)
        _note(reasons, "answered by scanning the files")
    degraded = bool(reasons)

    if settings.fusion == "blend":
        fused = ranking.fuse_blend(
            keyword, vector, weights=(settings.keyword_weight, settings.vector_weight)
        )
    else:
        fused = ranking.fuse_rrf(keyword, vector)

    min_vector = settings.min_vector if q.mode != "keyword" else None
    admitted: list[tuple[ranking.Candidate, Block]] = []
    for cand in fused:
        block = block_of(cand.id)
        if block is None or not q.admits(block):
            continue
        if ranking.passes_floor(cand, min_relevance=settings.min_relevance, min_vector=min_vector):
            admitted.append((cand, block))
    inherited: dict[str, float] = {}
    if threads is not None:
        # Only the strongest candidates pass relevance on: a share of a weak
        # one cannot lift its reply into the top k, and each costs a lookup.
        sources = heapq.nlargest(max(2 * q.k, 20), admitted, key=lambda a: a[0].relevance)
        inherited = thread_bonus(
            {cand.id: cand.relevance for cand, _ in sources},
            block_of,
            threads,
            reply_weight=settings.thread_reply_weight,
            continuation_weight=settings.thread_continuation_weight,
        )
        have = {cand.id for cand, _ in admitted}
        missing = sorted(inherited.keys() - have)
        below_floor = {cand.id: cand for cand in fused} if missing else {}
        for turn_id in missing:
            # A reply ranked under the relevance floor is here for its
            # question's sake, but only if it is about the query itself (a
            # keyword match or a cosine over the floor): a 20 KB tool output
            # nothing like the query must not ride in on its question.
            turn = block_of(turn_id)
            cand_below = below_floor.get(turn_id)
            if (
                turn is not None
                and cand_below is not None
                and q.admits(turn)
                and ranking.passes_floor(cand_below, min_relevance=0.0, min_vector=min_vector)
            ):
                admitted.append((cand_below, turn))
    words = ranking.query_words(q.query)
    ranked: list[_Scored] = []
    for cand, block in admitted:
        thread = inherited.get(cand.id, 0.0)
        relevance = cand.relevance + thread
        boost = ranking.tag_boost(words, (*block.tags, *people_of(block)), boost=settings.tag_boost)
        recency_value = (
            ranking.recency(block.created, now, half_life_days=settings.recency_half_life_days)
            if settings.recency_weight > 0
            else None
        )
        trust = trust_of(block.id) if trust_of is not None and settings.trust_weight > 0 else None
        score = ranking.final_score(
            relevance,
            recency_value=recency_value,
            recency_weight=settings.recency_weight,
            boost=boost,
            trust=trust,
            trust_weight=settings.trust_weight,
        )
        human_bonus = 0.0
        if human_of is not None and settings.human_weight > 0 and human_of(block):
            human_bonus = settings.human_weight
            score += human_bonus
        level = importance_of(block)
        if q.controls is not None and q.controls.scope_weights:
            score *= q.controls.weight(block)
        ranked.append(
            _Scored(
                round(score, 6),
                cand,
                block,
                relevance,
                thread,
                boost,
                recency_value,
                trust,
                human_bonus,
                level,
            )
        )
    if ranked:
        around = _neighbourhood(q, indexer, threads, query_vec) if threads is not None else None
        _rerank(q, ranked, keyword, now, threads, second_round, block_of, around)
    for r in ranked:
        # Importance (1-10, a field): a small documented nudge of the final
        # score (after re-ranking, so its bound holds), and a signal in `scores`.
        r.score = round(r.score * importance_factor(r.importance, settings.importance_weight), 6)
    ranked.sort(key=lambda r: (-r.score, r.block.id))
    # One hit per piece of knowledge (a turn, its fact, its episode);
    # bookkeeping lines never. Hits (and score breakdowns) only for what is returned.
    if threads is not None:
        members = families.collapse(
            [(r, r.block) for r in ranked], threads.blocks_in, q.k, lambda r: r.relevance
        )
        hits = [
            replace(m.item.hit(), sources=tuple(m.sources), derived=tuple(m.derived))
            for m in members
        ]
    else:
        hits = [r.hit() for r in ranked[: q.k]]
    return Recall(
        query=q.query,
        items=hits,
        degraded=degraded,
        reranked=False,
        took_ms=(time.perf_counter() - started) * 1000,
        degraded_reason="; ".join(reasons) if reasons else None,
    )


def _may_fall_back(q: RecallQuery) -> bool:
    """Substring fallback (controls.py) unless turned off, or the query is only
    common words, which every block holds."""
    if q.controls is not None and not q.controls.fallback:
        return False
    words = _WORD.findall(q.query.casefold())
    return not words or not all(w in _SCAN_STOP for w in words)


def _scannable(q: RecallQuery) -> Callable[[Block], bool]:
    return lambda block: indexable(block) and q.admits(block)


def _rerank(
    q: RecallQuery,
    ranked: list[_Scored],
    keyword: list[tuple[str, float]],
    now: datetime,
    threads: Threads | None,
    second_round: Callable[[list[Block]], dict[str, float]] | None,
    block_of: Callable[[str], Block | None],
    around: Neighbourhood | None,
) -> None:
    """Add the fitted re-ranking features (mdmem.recall.signals) to each score."""
    kmax = max((s for _, s in keyword), default=0.0)
    when = signals.query_time(q.query, now.date())
    people = threads.people() if threads is not None else ()
    asked = {w for w in ranking.query_words(q.query) if w in people}
    second: dict[str, float] = {}
    # The second round only matters when its fitted weight lifts what it finds.
    if second_round is not None and signals.RERANK_WEIGHTS.get("second", 0.0) > 0:
        top = sorted(ranked, key=lambda r: -r.score)[:3]
        second = second_round([r.block for r in top])
        have = {r.block.id for r in ranked}
        for block_id in sorted(second.keys() - have):
            # Found only by the widened query: a candidate on that match alone,
            # if it matches it at least half as well as the best (weak matches
            # of the added words are noise, not the hop).
            if second[block_id] < SECOND_ROUND_FLOOR:
                continue
            block = block_of(block_id)
            if block is not None and q.admits(block):
                cand = ranking.Candidate(block_id, 0.0, None, None, None, None)
                ranked.append(_Scored(0.0, cand, block, 0.0, 0.0, 0.0, None, None, 0.0))
    nearby: dict[str, tuple[float, float]] = {}
    if around is not None:
        # Only the first stage's best: measured on the fitting rows, giving the
        # features to the top 20 alone ranks as well as giving them to all, at
        # a fifth of the lookups.
        best = heapq.nsmallest(NEIGHBOUR_DEPTH, ranked, key=lambda r: (-r.score, r.block.id))
        nearby = around.features(r.block for r in best)
    for r in ranked:
        cand = r.cand
        neighbour, coverage = nearby.get(r.block.id, (0.0, 0.0))
        row = signals.feature_row(
            keyword_norm=(cand.keyword or 0.0) / kmax if kmax > 0 else 0.0,
            cosine=cand.vector,
            keyword_rank=cand.keyword_rank,
            vector_rank=cand.vector_rank,
            thread=r.thread,
            people=bool(asked and asked & ranking.query_words(" ".join(people_of(r.block)))),
            block=r.block,
            when=when,
            second=second.get(r.block.id, 0.0),
            neighbour=neighbour,
            coverage=coverage,
        )
        r.features = row
        r.base = r.score
        r.score = round(r.score + signals.rerank_score(row), 6)


def _neighbourhood(
    q: RecallQuery, indexer: Indexes, threads: Threads, query_vec: F32 | None
) -> Neighbourhood:
    """The neighbour features of this query: coverage from the keyword index's
    terms (not in vector-only mode), cosines from the stored vectors."""
    terms_of: Callable[[str], frozenset[str]] | None = None
    query_terms: frozenset[str] = frozenset()
    if q.mode != "vector":
        try:
            keyword = indexer.keyword
            named = keyword.query_terms(vector_query_text(q.query, threads))
            query_terms = frozenset(term for field, term, _ in named if field == "text")
            terms_of = keyword.terms_of
        except IndexError_:
            pass  # the feature is 0; the keyword side's failure is reported already
    vectors = indexer.vectors if query_vec is not None else None
    return Neighbourhood(
        threads,
        query_terms=query_terms,
        terms_of=terms_of,
        query_vec=query_vec,
        vectors_of=vectors.vectors if vectors is not None else None,
    )


def _note(reasons: list[str], why: str) -> None:
    if why not in reasons:
        reasons.append(why)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _scan_candidates(q: RecallQuery, blocks: Iterable[Block], pool: int) -> list[tuple[str, float]]:
    """Candidates without any index: the share of the query's words each block
    holds (text, heading and tags, lightly stemmed as the tag boost does).
    The last resort while the keyword index is unusable and vectors are out."""
    words = [w for w in dict.fromkeys(_WORD.findall(q.query.casefold())) if w not in _SCAN_STOP]
    forms = [ranking.query_words(w) for w in words]  # each word with its plural/singular
    if not forms:
        return []
    scored: list[tuple[float, str]] = []
    for block in blocks:
        if not indexable(block) or not q.admits(block):
            continue
        have = ranking.query_words(" ".join((block.text, block.heading or "", *block.tags)))
        hits = sum(1 for f in forms if f & have)
        if hits:
            scored.append((hits / len(forms), block.id))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [(block_id, score) for score, block_id in scored[:pool]]


def vector_query_text(query: str, threads: Threads | None) -> str:
    """The text embedded for ``query``: without the names of people, who in
    a small embedding model outweigh the topic."""
    return strip_people(query, threads.people() if threads is not None else ())


def _keyword_candidates(
    q: RecallQuery,
    indexer: Indexes,
    pool: int,
    statuses: Collection[str] | None,
    block_of: Callable[[str], Block | None],
) -> list[tuple[str, float]]:
    """BM25F candidates that pass the filters.

    Unfiltered first (Whoosh can then skip postings by block quality, several
    times faster than its filtered path), filtered in Python; a selective
    filter that leaves too few is asked again with Whoosh's own filter.
    """
    raw = indexer.keyword.search(q.query, limit=pool * 2, statuses=None)
    kept = [(i, s) for i, s in raw if (b := block_of(i)) is not None and q.admits(b)]
    if len(kept) >= pool or len(raw) < pool * 2:
        return kept[:pool]
    # Whoosh compares dates to the minute; run_recall checks exact bounds.
    return indexer.keyword.search(
        q.query,
        limit=pool,
        kinds=q.kinds,
        tags=q.tags,
        scopes=q.scopes,
        statuses=statuses,
        since=q.since,
        until=q.until,
    )


def _vector_candidates(
    q: RecallQuery,
    vectors: object,
    query_vec: object,
    pool: int,
    block_of: Callable[[str], Block | None],
) -> list[tuple[str, float]]:
    """Nearest blocks that pass the filters.

    Over-fetch and filter in Python: cheap when most blocks pass (the usual
    "active only" case). If filters leave too few, ask FAISS again with an
    explicit allow-list, which is exact however selective the filter is.
    """
    from mdmem.index.vector import VectorIndex

    assert isinstance(vectors, VectorIndex)
    raw = vectors.search(query_vec, pool * 2)  # type: ignore[arg-type]
    kept = [(i, s) for i, s in raw if (b := block_of(i)) is not None and q.admits(b)]
    if len(kept) >= min(pool, len(raw)) // 2 or len(raw) < pool * 2:
        return kept[:pool]
    allowed = [i for i in vectors.ids() if (b := block_of(i)) is not None and q.admits(b)]
    return vectors.search(query_vec, pool, allowed=allowed)  # type: ignore[arg-type]


@dataclass(slots=True)
class _Scored:
    score: float
    cand: ranking.Candidate
    block: Block
    relevance: float
    thread: float
    boost: float
    recency: float | None
    trust: float | None
    human: float
    importance: int | None = None
    base: float | None = None  # the score before re-ranking
    features: dict[str, float] | None = None

    def hit(self) -> Hit:
        cand = self.cand
        scores = {"relevance": round(self.relevance, 6)}
        if self.base is not None:
            scores["base"] = round(self.base, 6)
        for name, value in (self.features or {}).items():
            if value:
                scores[f"f_{name}"] = round(value, 6)
        if cand.keyword is not None:
            scores["keyword"] = round(cand.keyword, 6)
            scores["keyword_rank"] = float(cand.keyword_rank or 0)
        if cand.vector is not None:
            scores["vector"] = round(cand.vector, 6)
            scores["vector_rank"] = float(cand.vector_rank or 0)
        if self.recency is not None:
            scores["recency"] = round(self.recency, 6)
        if self.thread:
            scores["thread"] = round(self.thread, 6)
        if self.boost:
            scores["tag_boost"] = self.boost
        if self.trust is not None:
            scores["trust"] = self.trust
        if self.human:
            scores["human"] = self.human
        if self.importance is not None:
            scores["importance"] = float(self.importance)
        return _hit(self.block, self.score, scores)


def _hit(block: Block, score: float, scores: dict[str, float]) -> Hit:
    return Hit(
        # A copied line is keyed by its place inside; its hit shows the id as
        # written, so the citation (path#^id) points at that very line.
        id=written_id(block.id),
        path=block.path,
        line_start=block.line_start,
        line_end=block.line_end,
        heading=block.heading,
        text=block.text,
        kind=block.kind,
        tags=block.tags,
        status=block.status,
        created=block.created,
        score=round(score, 6),
        scores=scores,
        scope=block.scope,
        fields=block.fields,
    )


def render_context(
    recall: Recall, max_chars: int = 6000, *, title: str = "## Recalled Memory"
) -> str:
    """A prompt block of recalled memories within ``max_chars``, each cited ``path#^id``."""
    return cite_context(recall, max_chars, title=title)[0]


def cite_context(
    recall: Recall, max_chars: int = 6000, *, title: str = "## Recalled Memory"
) -> tuple[str, list[Hit]]:
    """:func:`render_context` and the hits the block cites (those that fit), best first."""
    if max_chars < len(title) + 20:
        raise InvalidInputError(f"max_chars must be at least {len(title) + 20}")
    lines = [title, ""]
    used = len(title) + 2
    if not recall.items:
        return f"{title}\n\n(no relevant memories)\n", []
    cited: list[Hit] = []
    for hit in recall.items:
        meta = f" ({hit.citation}; {hit.kind}; {hit.created:%Y-%m-%d})"
        text = " ".join(hit.text.split())
        room = max_chars - used - len(meta) - 3
        if room < 20:
            break
        if len(text) > room:
            text = text[: room - 1].rstrip() + "…"
        line = f"- {text}{meta}"
        lines.append(line)
        cited.append(hit)
        used += len(line) + 1
    return "\n".join(lines) + "\n", cited
