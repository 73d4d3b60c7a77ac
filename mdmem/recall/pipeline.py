"""One recall pipeline for every source: named stages over one run.

A recall is a :class:`RecallRun` — the query, the source it reads (the live
indexes, or a snapshot of the vault at a commit), the settings, the reader
and the few signals the vault lends (trust, who wrote a block, the model) —
pushed through :data:`STAGES` in order, each stage a small function reading
the run and moving a :class:`Pass` forward::

    candidates  keyword (BM25F) and vector (FAISS) candidates, deeper for the
                people a query names (mdmem.recall.expansion); the substring
                fallback and a scan when the indexes cannot answer
    fuse        a calibrated blend (or RRF) of the two lists
    admit       filters (status, scope, kind, tags, dates, controls), the one
                visibility rule (mdmem.store.visibility), the relevance floor
    threads     a reply inherits part of its question's relevance
    adjust      tag boost, recency, trust, human weight, per-scope weights
    rerank      the fitted re-ranker's features (mdmem.recall.signals)
    importance  a memory's importance nudges its final score
    exact       an identifier the query names (a code, an id, a path, a name)
                puts the few blocks holding it first (mdmem.recall.identifiers)
    collapse    one hit per piece of knowledge (mdmem.recall.families)
    model_rerank  a re-ranker model's order of the top hits ([recall] reranker)
    llm_rerank  the optional model re-rank of the top hits ([recall] rerank)
    gate        whether anything is relevant, and how many items are worth
                reading (mdmem.recall.gate; fitted in gate_weights.py)
    named       the rule no fit vetoes: a hit holding an identifier the query
                names goes first and is kept (mdmem.recall.identifiers)
    trim        the k hits asked for (the gate reads at least its few whatever k)
    tier        abstracts or overviews instead of full text (``tier``)
    scrub       the hit as handed out: secrets typed by hand redacted, the
                commit of a snapshot
    notes       hit counts for the usefulness signals

Live recall and ``recall(as_of=...)`` run the same stages; only the source
differs (:class:`RecallSource`).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from mdmem.errors import EmbedderError, IndexError_
from mdmem.files.ids import written_id
from mdmem.models import Block, Hit, Recall, Relevance
from mdmem.recall import (
    expansion,
    families,
    gate,
    identifiers,
    llm_rerank,
    model_rerank,
    multihop,
    ranking,
    signals,
)
from mdmem.recall.controls import at_tier, substring_candidates
from mdmem.recall.conversation import Threads, people_of, thread_bonus
from mdmem.recall.gate_weights import GATE
from mdmem.recall.neighbours import Neighbourhood
from mdmem.recall.search import (
    RecallQuery,
    keyword_candidates,
    may_fall_back,
    scan_candidates,
    scannable,
    vector_candidates,
    vector_query_text,
)
from mdmem.store.importance import importance_factor, importance_of
from mdmem.store.visibility import EVERYONE, Reader, Visibility

if TYPE_CHECKING:
    from mdmem.config import RecallSettings
    from mdmem.index.keyword import KeywordIndex
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.embedders import F32
    from mdmem.providers.llm import LLMClient

__all__ = ["NEIGHBOUR_DEPTH", "STAGES", "Pass", "RecallRun", "RecallSource", "run"]

NEIGHBOUR_DEPTH = 20  # candidates that get the neighbour features (neighbours.py)
# Found only by the widened second-round query: kept if at least this good.
SECOND_ROUND_FLOOR = 0.5


class RecallSource(Protocol):
    """What recall reads: the live vault, or a snapshot of it at one commit."""

    @property
    def commit(self) -> str | None: ...  # the snapshot's commit; None when live
    @property
    def keyword(self) -> KeywordIndex: ...  # raises IndexError_ when unusable
    @property
    def vectors(self) -> VectorIndex | None: ...
    @property
    def missing_vectors(self) -> set[str]: ...
    @property
    def threads(self) -> Threads | None: ...
    @property
    def visibility(self) -> Visibility: ...
    def block(self, block_id: str) -> Block | None: ...
    def blocks(self) -> Iterable[Block]: ...  # every block: the scan of last resort
    def frontmatter(self, path: str) -> Mapping[str, object]: ...
    def gaps(self) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class RecallRun:
    """Everything one recall reads, in one object."""

    query: RecallQuery
    source: RecallSource
    settings: RecallSettings
    now: datetime
    reader: Reader = EVERYONE
    # How the query's vector is made (None: no vectors this time).
    embed_query: Callable[[str], F32] | None = None
    trust_of: Callable[[str], float | None] | None = None
    # Whether a person wrote any line of a block (git blame), for human_weight.
    human_of: Callable[[Block], bool] | None = None
    # Text as recall hands it out: a secret a person typed into a file, redacted.
    shown: Callable[[str], str] | None = None
    llm: LLMClient | None = None  # for the optional re-rank of the top hits
    reranker: Any | None = None  # a re-ranker model ([recall] reranker; model_rerank.py)
    note_hits: Callable[[Iterable[str]], None] | None = None


@dataclass(slots=True)
class Scored:
    """A candidate on its way through the stages, with its score's parts."""

    score: float
    cand: ranking.Candidate
    block: Block
    relevance: float
    thread: float = 0.0
    boost: float = 0.0
    recency: float | None = None
    trust: float | None = None
    human: float = 0.0
    importance: int | None = None
    base: float | None = None  # the score before re-ranking
    features: dict[str, float] | None = None
    named: bool = False  # holds an identifier the query names (the exact stage)
    # The score with its recency term as an old memory's, dated or not: what the
    # relevance gate reads (None: as ``score``, no recency weighed in).
    timeless: float | None = None

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
        if self.timeless is not None:
            scores["gate_score"] = round(self.timeless, 6)
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
        if self.named:
            # Put first by rule (mdmem.recall.identifiers): a bench that re-scores
            # candidates offline (bench/rerank_fit.py) applies the same rule.
            scores["named"] = 1.0
        block = self.block
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
            score=round(self.score, 6),
            scores=scores,
            scope=block.scope,
            fields=block.fields,
        )


@dataclass
class Pass:
    """What one stage hands the next."""

    pool: int
    reasons: list[str] = field(default_factory=list)  # why the answer is degraded
    keyword: list[tuple[str, float]] = field(default_factory=list)
    vector: list[tuple[str, float]] = field(default_factory=list)
    query_vec: F32 | None = None
    fused: list[ranking.Candidate] = field(default_factory=list)
    admitted: list[tuple[ranking.Candidate, Block]] = field(default_factory=list)
    inherited: dict[str, float] = field(default_factory=dict)
    ranked: list[Scored] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    reranked: bool = False
    exact: set[str] = field(default_factory=set)  # hits holding an identifier the query names
    lifted: int = 0  # blocks the exact stage put first
    relevance: Relevance | None = None

    def note(self, why: str) -> None:
        if why not in self.reasons:
            self.reasons.append(why)


# ------------------------------------------------------------------ stages --


def candidates(r: RecallRun, p: Pass) -> None:
    """Keyword and vector candidates that pass the query's filters."""
    q, source = r.query, r.source
    # A query naming known people searches deeper for what they said (expansion.py).
    people = source.threads.people() if source.threads is not None else ()
    focus = expansion.Focus.of(q.query, people)
    keyword_ok = q.mode == "vector"
    if q.mode != "vector":
        try:
            depth = focus.depth(p.pool) if focus is not None else p.pool
            p.keyword = keyword_candidates(q, source.keyword, depth, source.block)
            if focus is not None:
                p.keyword = focus.trim(p.keyword, p.pool, source.block)
            keyword_ok = True
        except IndexError_ as exc:
            p.note(f"keyword index unusable: {_line(exc)}")
        if keyword_ok and not p.keyword and r.shown is not None and may_fall_back(q):
            p.keyword = substring_candidates(
                q.query, source.blocks(), scannable(q), p.pool, r.shown
            )
    if q.mode != "keyword":
        _vector_side(r, p, focus)
    for part, why in source.gaps():
        if part == "keyword" and q.mode != "vector":
            p.note(why)
    if not keyword_ok and not p.vector:
        # Neither index can answer: read the blocks themselves.
        p.keyword = scan_candidates(q, source.blocks(), p.pool)
        p.note("answered by scanning the files")


def _vector_side(r: RecallRun, p: Pass, focus: expansion.Focus | None) -> None:
    source = r.source
    vectors = source.vectors
    why_not: list[str] = []
    if vectors is None or r.embed_query is None:
        why_not.append("vectors unavailable")
    elif len(vectors) == 0:
        if p.keyword:  # blocks exist, none has a vector yet
            why_not.append("the vector index is empty")
    else:
        if source.missing_vectors:
            why_not.append(f"{len(source.missing_vectors)} block(s) without a vector")
        try:
            p.query_vec = r.embed_query(vector_query_text(r.query.query, source.threads))
        except EmbedderError as exc:
            why_not.append(f"query not embedded: {_line(exc)}")
        else:
            depth = focus.depth(p.pool) if focus is not None else p.pool
            p.vector = vector_candidates(r.query, vectors, p.query_vec, depth, source.block)
            if focus is not None:
                p.vector = focus.trim(p.vector, p.pool, source.block)
    # The source's own account (asked now, after this recall's attempts)
    # names the cause better than what this recall saw of it.
    known = [why for part, why in source.gaps() if part == "vector"]
    for why in known or why_not:
        p.note(why)


def fuse(r: RecallRun, p: Pass) -> None:
    s = r.settings
    if s.fusion == "blend":
        p.fused = ranking.fuse_blend(
            p.keyword, p.vector, weights=(s.keyword_weight, s.vector_weight)
        )
    else:
        p.fused = ranking.fuse_rrf(p.keyword, p.vector)


def _min_vector(r: RecallRun) -> float | None:
    return r.settings.min_vector if r.query.mode != "keyword" else None


def _admits(r: RecallRun, block: Block | None) -> bool:
    return (
        block is not None and r.query.admits(block) and r.source.visibility.may_see(r.reader, block)
    )


def admit(r: RecallRun, p: Pass) -> None:
    """The query's filters, the visibility rule and the relevance floor."""
    for cand in p.fused:
        block = r.source.block(cand.id)
        if block is None or not _admits(r, block):
            continue
        if ranking.passes_floor(
            cand, min_relevance=r.settings.min_relevance, min_vector=_min_vector(r)
        ):
            p.admitted.append((cand, block))


def threads(r: RecallRun, p: Pass) -> None:
    """A reply inherits part of its question's relevance (and may come in below the floor)."""
    conversation = r.source.threads
    if conversation is None:
        return
    # Only the strongest candidates pass relevance on: a share of a weak one
    # cannot lift its reply into the top k, and each costs a lookup.
    sources = heapq.nlargest(max(2 * r.query.k, 20), p.admitted, key=lambda a: a[0].relevance)
    p.inherited = thread_bonus(
        {cand.id: cand.relevance for cand, _ in sources},
        r.source.block,
        conversation,
        reply_weight=r.settings.thread_reply_weight,
        continuation_weight=r.settings.thread_continuation_weight,
    )
    have = {cand.id for cand, _ in p.admitted}
    missing = sorted(p.inherited.keys() - have)
    below_floor = {cand.id: cand for cand in p.fused} if missing else {}
    for turn_id in missing:
        # A reply ranked under the relevance floor is here for its question's
        # sake, but only if it is about the query itself (a keyword match or a
        # cosine over the floor): a 20 KB tool output nothing like the query
        # must not ride in on its question.
        turn = r.source.block(turn_id)
        cand = below_floor.get(turn_id)
        if (
            turn is not None
            and cand is not None
            and _admits(r, turn)
            and ranking.passes_floor(cand, min_relevance=0.0, min_vector=_min_vector(r))
        ):
            p.admitted.append((cand, turn))


def adjust(r: RecallRun, p: Pass) -> None:
    """Tag boost, recency, trust, human weight and per-scope weights."""
    s, q = r.settings, r.query
    words = ranking.query_words(q.query)
    for cand, block in p.admitted:
        thread = p.inherited.get(cand.id, 0.0)
        relevance = cand.relevance + thread
        boost = ranking.tag_boost(words, (*block.tags, *people_of(block)), boost=s.tag_boost)
        recency = (
            ranking.recency(block.created, r.now, half_life_days=s.recency_half_life_days)
            if s.recency_weight > 0
            else None
        )
        trust = r.trust_of(block.id) if r.trust_of is not None and s.trust_weight > 0 else None
        score = ranking.final_score(
            relevance,
            recency_value=recency,
            recency_weight=s.recency_weight,
            boost=boost,
            trust=trust,
            trust_weight=s.trust_weight,
        )
        # How relevant it is, whatever its date: recency as for an old memory.
        # A note without a date otherwise kept relevance's whole weight where a
        # dated one kept 1 - recency_weight of it, and the gate (fitted on dated
        # memories) said "nothing relevant" to the dated copy of the same note.
        timeless = (
            ranking.final_score(
                relevance,
                recency_value=0.0,
                recency_weight=s.recency_weight,
                boost=boost,
                trust=trust,
                trust_weight=s.trust_weight,
            )
            if s.recency_weight > 0
            else None
        )
        human = 0.0
        if r.human_of is not None and s.human_weight > 0 and r.human_of(block):
            human = s.human_weight
            score += human
            timeless = None if timeless is None else timeless + human
        if q.controls is not None and q.controls.scope_weights:
            weight = q.controls.weight(block)
            score *= weight
            timeless = None if timeless is None else timeless * weight
        scored = Scored(
            round(score, 6),
            cand,
            block,
            relevance,
            thread,
            boost,
            recency,
            trust,
            human,
            importance_of(block),
        )
        scored.timeless = timeless
        p.ranked.append(scored)


def rerank(r: RecallRun, p: Pass) -> None:
    """Add the fitted re-ranking features (mdmem.recall.signals) to each score."""
    if not p.ranked:
        return
    q, conversation = r.query, r.source.threads
    kmax = max((s for _, s in p.keyword), default=0.0)
    when = signals.query_time(q.query, r.now.date())
    people = conversation.people() if conversation is not None else ()
    asked = {w for w in ranking.query_words(q.query) if w in people}
    second: dict[str, float] = {}
    # The second round only matters when its fitted weight lifts what it finds.
    if q.mode != "vector" and signals.RERANK_WEIGHTS.get("second", 0.0) > 0:
        second = _second_round(r, p)
    nearby: dict[str, tuple[float, float]] = {}
    # Only the first stage's best: measured on the fitting rows, giving the
    # features to the top 20 alone ranks as well as giving them to all, at a
    # fifth of the lookups.
    if conversation is not None:
        best = heapq.nsmallest(NEIGHBOUR_DEPTH, p.ranked, key=lambda s: (-s.score, s.block.id))
        nearby = _neighbourhood(r, p, conversation).features(s.block for s in best)
    for s in p.ranked:
        cand = s.cand
        neighbour, coverage = nearby.get(s.block.id, (0.0, 0.0))
        row = signals.feature_row(
            keyword_norm=(cand.keyword or 0.0) / kmax if kmax > 0 else 0.0,
            cosine=cand.vector,
            keyword_rank=cand.keyword_rank,
            vector_rank=cand.vector_rank,
            thread=s.thread,
            people=bool(asked and asked & ranking.query_words(" ".join(people_of(s.block)))),
            block=s.block,
            when=when,
            second=second.get(s.block.id, 0.0),
            neighbour=neighbour,
            coverage=coverage,
        )
        s.features = row
        s.base = s.score
        lift = signals.rerank_score(row)
        s.score = round(s.score + lift, 6)
        if s.timeless is not None:
            s.timeless += lift


def _second_round(r: RecallRun, p: Pass) -> dict[str, float]:
    """Scores of a second keyword round widened from the three best blocks; blocks it
    alone finds join the candidates (if they match at least half as well as the best)."""
    widened = multihop.second_round(lambda: r.source.keyword, r.query.query, p.pool)
    top = sorted(p.ranked, key=lambda s: -s.score)[:3]
    second = widened([s.block for s in top])
    have = {s.block.id for s in p.ranked}
    found = [i for i in sorted(second.keys() - have) if second[i] >= SECOND_ROUND_FLOOR]
    # Such a block matched words of the widened query, not of the one asked: it
    # joins only on evidence of its own, a cosine with the query over the floor
    # every candidate passes (none without vectors). Without it, a session
    # summary with no keyword and no vector score was listed under a question.
    vectors = r.source.vectors if p.query_vec is not None else None
    stored = vectors.vectors(found) if vectors is not None and found else {}
    floor = _min_vector(r)
    for block_id in found:
        vec = stored.get(block_id)
        block = r.source.block(block_id)
        if vec is None or p.query_vec is None or block is None or not _admits(r, block):
            continue
        cosine = float(vec @ p.query_vec)
        cand = ranking.Candidate(block_id, 0.0, None, cosine, None, None)
        if ranking.passes_floor(cand, min_relevance=r.settings.min_relevance, min_vector=floor):
            p.ranked.append(Scored(0.0, cand, block, 0.0))
    return second


def _neighbourhood(r: RecallRun, p: Pass, conversation: Threads) -> Neighbourhood:
    """The neighbour features of this query: coverage from the keyword index's
    terms (not in vector-only mode), cosines from the stored vectors."""
    terms_of: Callable[[str], frozenset[str]] | None = None
    query_terms: frozenset[str] = frozenset()
    if r.query.mode != "vector":
        try:
            keyword = r.source.keyword
            named = keyword.query_terms(vector_query_text(r.query.query, conversation))
            query_terms = frozenset(term for fld, term, _ in named if fld == "text")
            terms_of = keyword.terms_of
        except IndexError_:
            pass  # the feature is 0; the keyword side's failure is reported already
    vectors = r.source.vectors if p.query_vec is not None else None
    return Neighbourhood(
        conversation,
        query_terms=query_terms,
        terms_of=terms_of,
        query_vec=p.query_vec,
        vectors_of=vectors.vectors if vectors is not None else None,
    )


def importance(r: RecallRun, p: Pass) -> None:
    """Importance (1-10, a field): a small documented nudge of the final score,
    after re-ranking so that its bound holds."""
    for s in p.ranked:
        factor = importance_factor(s.importance, r.settings.importance_weight)
        s.score = round(s.score * factor, 6)
        if s.timeless is not None:
            s.timeless *= factor
    p.ranked.sort(key=lambda s: (-s.score, s.block.id))


def exact(r: RecallRun, p: Pass) -> None:
    """The blocks that hold, whole, an identifier the query names and that at most
    a few blocks hold go first, whatever the vectors said (mdmem.recall.identifiers):
    who asks for E1234 or parse_config wants the block that says it, not its
    look-alikes. They are noted in ``p.exact``; the ``named`` stage keeps them
    after the gate. Runs in every mode, and even when nothing else was found.

    Only identifiers: an ordinary query word that few blocks of a big vault hold
    used to put them in at third place, and that cost what it moved down (LoCoMo
    dev as recall returns it, R@5 0.751 -> 0.731; 24 questions lost evidence
    from the top 5, 4 gained; REALTALK 0.508 -> 0.495)."""
    few = identifiers.FEW
    named = identifiers.named_identifiers(r.query.query)
    if few <= 0 or not named:
        return
    try:
        keyword = r.source.keyword
        lifted: list[tuple[Block, float]] = []
        seen: set[str] = set()
        for token in named:
            found = keyword.search(token, limit=4 * few + 8, statuses=None)
            holders = [
                (b, score)
                for b, score in ((r.source.block(i), score) for i, score in found)
                if b is not None and identifiers.holds_exactly(b.text, token)
            ]
            if not 0 < len(holders) <= few:
                continue
            for b, score in holders:
                if b.id not in seen and _admits(r, b):
                    seen.add(b.id)
                    lifted.append((b, score))
    except IndexError_:
        return  # the keyword side's failure is reported already
    if not lifted:
        return
    ranked = {s.block.id: s for s in p.ranked}
    top = max((s.score for s in p.ranked), default=0.0)
    top_timeless = max((s.timeless or 0.0 for s in p.ranked), default=0.0)
    for block, bm25 in lifted:
        s = ranked.get(block.id)
        if s is None:
            # Outside the candidates (the token is one word among many, or under
            # the floor): what it is here for is its keyword match, its evidence.
            cand = ranking.Candidate(block.id, 0.0, bm25, None, None, None)
            s = Scored(0.0, cand, block, 0.0)
            p.ranked.append(s)
        nudge = 0.001 * min(max(s.score, 0.0), 1.0)  # their own order among themselves
        s.score = round(top + 0.01 + nudge, 6)  # above the best
        if s.timeless is not None or top_timeless:
            s.timeless = top_timeless + 0.01 + nudge
        s.named = True
        p.exact.add(written_id(block.id))
    p.lifted = len(lifted)
    p.ranked.sort(key=lambda s: (-s.score, s.block.id))


def collapse(r: RecallRun, p: Pass) -> None:
    """One hit per piece of knowledge (a turn, its fact, its episode); bookkeeping
    lines never. Hits (and score breakdowns) only for what is returned."""
    conversation = r.source.threads
    # The gate reads the best few whatever k was asked (trimmed to k after it):
    # one query gets one verdict from recall(k=1), context and the hooks alike.
    depth = max(r.query.k, gate.DEPTH)
    if conversation is None:
        p.hits = [s.hit() for s in p.ranked[:depth]]
        return
    members = families.collapse(
        [(s, s.block) for s in p.ranked],
        conversation.blocks_in,
        depth,
        lambda s: s.relevance,
    )
    p.hits = [
        replace(m.item.hit(), sources=tuple(m.sources), derived=tuple(m.derived)) for m in members
    ]


def rerank_with_model(r: RecallRun, p: Pass) -> None:
    """A re-ranker model orders the top hits ([recall] reranker; model_rerank.py)."""
    if r.reranker is None or not p.hits:
        return
    shown = [_shown(r, hit) for hit in p.hits]
    result = model_rerank.rerank(
        r.reranker, Recall(r.query.query, shown), top=r.settings.reranker_top
    )
    if result.reranked:
        p.hits, p.reranked = list(result.items), True


def rerank_with_llm(r: RecallRun, p: Pass) -> None:
    """The model orders the top hits ([recall] rerank); it reads them as handed out."""
    s = r.settings
    if r.llm is None or not s.rerank or not p.hits:
        return
    shown = [_shown(r, hit) for hit in p.hits]
    result = llm_rerank.rerank(
        r.llm, Recall(r.query.query, shown), top=s.rerank_top, budget_ms=s.rerank_budget_ms
    )
    p.hits, p.reranked = list(result.items), p.reranked or result.reranked


def gate_stage(r: RecallRun, p: Pass) -> None:
    """The relevance gate's verdict on the finished ranking (mdmem.recall.gate)."""
    if not p.hits:
        p.relevance = Relevance(confidence=0.0, keep=0)
        return
    # Recency taken out alike for dated and undated memories (adjust's
    # "timeless" score): how new a memory is orders hits, it doesn't make one relevant.
    weight = r.settings.recency_weight
    scores = [
        h.scores.get("gate_score", h.score - weight * h.scores.get("recency", 0.0))
        for h in p.hits
    ]
    terms: list[str] = []
    df: dict[str, int] = {}
    count = 0
    hit_terms: list[frozenset[str]] = []
    try:
        keyword = r.source.keyword
        terms = [t for fld, t, _ in keyword.query_terms(r.query.query) if fld == "text"]
        count, df = keyword.document_frequencies(terms)
        hit_terms = [keyword.terms_of(f"{h.heading}\n{h.text}") for h in p.hits[: gate.DEPTH]]
    except IndexError_:
        pass  # features of the keyword side stay 0; the failure is reported already
    top = p.hits[0]
    keyword_rank = top.scores.get("keyword_rank")
    vector_rank = top.scores.get("vector_rank")
    row = gate.features(
        gate.GateInput(
            query_terms=terms,
            doc_count=count,
            df=df,
            hit_terms=hit_terms,
            # The same depth of the vector side whatever k was asked (its pool
            # grows with k): the lead of the best cosine is measured over it.
            cosines=[c for _, c in p.vector[: r.settings.candidates]],
            top_keyword_rank=int(keyword_rank) if keyword_rank else None,
            top_vector_rank=int(vector_rank) if vector_rank else None,
            top_score=scores[0],
            exact=any(h.id in p.exact for h in p.hits[: gate.DEPTH]),
        )
    )
    if p.query_vec is None:
        # Keyword-only (asked for, or no vectors: a hook without its warm server):
        # missing vector features would read as "unrelated" to the hybrid model,
        # so a model of its own over the features it has (gate_weights.py), fitted
        # to the same answer; without one, the share of the query's known words a
        # best hit holds decides alone.
        if GATE.keyword_weights:
            sure, bar = gate.confidence(row, GATE.keyword_weights), GATE.keyword_threshold
        else:
            sure, bar = row["cover"], GATE.keyword_cover
    else:
        sure, bar = gate.confidence(row), GATE.threshold
    keep = gate.keep(scores) if sure >= bar else 0
    # "lifted" and "docs" are not features of the gate: they tell a bench whether
    # the exact stage changed this ranking, and the vault's size.
    features = {**row, "lifted": float(p.lifted), "docs": float(count)}
    p.relevance = Relevance(confidence=round(sure, 6), keep=keep, features=features)


def named(r: RecallRun, p: Pass) -> None:
    """The rule no fit may veto: a hit holding an identifier the query names
    (found by the ``exact`` stage; mdmem.recall.identifiers) goes first and is
    kept, whatever the gate said and wherever a re-ranker put it. A hit stands
    for the copies collapsed into it, so a turn's fact counts for the turn."""
    if not p.exact or p.relevance is None:
        return

    def holds(hit: Hit) -> bool:
        return hit.id in p.exact or any(i in p.exact for i in (*hit.sources, *hit.derived))

    held = [h for h in p.hits if holds(h)]
    if not held:
        return
    # The gate's own choice among the others stays as it was.
    others = sum(1 for h in p.hits[: p.relevance.keep] if not holds(h))
    p.hits = held + [h for h in p.hits if not holds(h)]
    p.relevance = replace(p.relevance, keep=len(held) + others, named=len(held))


def trim(r: RecallRun, p: Pass) -> None:
    """The k hits asked for (the gate read at least its few; see collapse)."""
    k = r.query.k
    if len(p.hits) > k:
        p.hits = p.hits[:k]
        if p.relevance is not None:
            keep = min(p.relevance.keep, k)
            p.relevance = replace(p.relevance, keep=keep, named=min(p.relevance.named, keep))


def tier(r: RecallRun, p: Pass) -> None:
    """Abstracts (0) or overviews (1) instead of the full text (2) when asked."""
    controls = r.query.controls
    if controls is not None:
        p.hits = at_tier(p.hits, controls.tier, r.source.block, r.source.frontmatter)


def stamp(r: RecallRun, p: Pass) -> None:
    """A snapshot's hits carry its commit. (What a person typed is shown redacted
    by the reading view, as it hands the hits out: mdmem.memory.desks.reading.)"""
    commit = r.source.commit
    if commit:
        p.hits = [replace(h, commit=commit) for h in p.hits]


def _shown(r: RecallRun, hit: Hit) -> Hit:
    if r.shown is None:
        return hit
    text, heading = r.shown(hit.text), r.shown(hit.heading)
    if text is hit.text and heading is hit.heading:
        return hit
    return replace(hit, text=text, heading=heading)


def notes(r: RecallRun, p: Pass) -> None:
    if r.note_hits is not None and p.hits:
        r.note_hits(h.id for h in p.hits)


Stage = Callable[[RecallRun, Pass], None]

STAGES: tuple[tuple[str, Stage], ...] = (
    ("candidates", candidates),
    ("fuse", fuse),
    ("admit", admit),
    ("threads", threads),
    ("adjust", adjust),
    ("rerank", rerank),
    ("importance", importance),
    ("exact", exact),
    ("collapse", collapse),
    ("model_rerank", rerank_with_model),
    ("llm_rerank", rerank_with_llm),
    ("gate", gate_stage),
    ("named", named),
    ("trim", trim),
    ("tier", tier),
    ("stamp", stamp),
    ("notes", notes),
)


def run(r: RecallRun) -> Recall:
    """Push ``r`` through every stage; the answer, degraded with reasons when a part was missing."""
    started = time.perf_counter()
    p = Pass(pool=max(r.settings.candidates, r.query.k * 4))
    for _name, stage in STAGES:
        stage(r, p)
    return Recall(
        query=r.query.query,
        items=p.hits,
        degraded=bool(p.reasons),
        reranked=p.reranked,
        took_ms=(time.perf_counter() - started) * 1000,
        degraded_reason="; ".join(p.reasons) if p.reasons else None,
        nothing_relevant=p.relevance is not None and p.relevance.keep == 0,
        relevance=p.relevance,
    )


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
