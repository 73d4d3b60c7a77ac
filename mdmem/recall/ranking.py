"""Pure scoring functions of recall: fusion, recency, tag boost, floor.

Recall gets two ranked lists — keyword (Whoosh BM25F scores, unbounded) and
vector (FAISS cosines in [-1, 1]) — and must turn them into one ordering with
scores a caller can threshold. Every step is a small pure function here, so
the formulas can be table-tested and tuned on a benchmark without touching
the indexes. The defaults follow the seed systems:

* operator_use: ``score = relevance × 0.7 + recency × 0.3`` with
  ``recency = 1 / (1 + age_days / 30)`` and a ``min_relevance`` floor (0.5 on
  cosine) so unrelated queries return nothing instead of noise; its
  holographic provider blends a ``trust`` signal the same way.
* Otto: memories whose tags appear in the query get ``+0.1``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from mdmem.errors import InvalidInputError
from mdmem.files.blocks import UNDATED

__all__ = [
    "Candidate",
    "final_score",
    "fuse_blend",
    "fuse_rrf",
    "passes_floor",
    "query_words",
    "recency",
    "tag_boost",
]


@dataclass(frozen=True)
class Candidate:
    """One fused result: its relevance in [0, 1] and the raw signals behind it.

    ``keyword`` is the BM25F score and ``vector`` the cosine, each None when
    the id was absent from that list; ranks are 1-based.
    """

    id: str
    relevance: float
    keyword: float | None
    vector: float | None
    keyword_rank: int | None
    vector_rank: int | None


def _ranks(results: Sequence[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    # The first occurrence wins if an id repeats (the lists are best first).
    out: dict[str, tuple[int, float]] = {}
    for rank, (cid, score) in enumerate(results, start=1):
        out.setdefault(cid, (rank, float(score)))
    return out


def _check_weights(weights: tuple[float, float]) -> tuple[float, float]:
    wk, wv = float(weights[0]), float(weights[1])
    if wk < 0 or wv < 0 or not math.isfinite(wk + wv) or wk + wv == 0:
        raise InvalidInputError(f"fusion weights must be non-negative, not both 0: {weights}")
    return wk, wv


def _sorted(cands: list[Candidate]) -> list[Candidate]:
    # Deterministic order: relevance, then the better rank in either list, then id.
    def key(c: Candidate) -> tuple[float, int, str]:
        ranks = [r for r in (c.keyword_rank, c.vector_rank) if r is not None]
        return (-c.relevance, min(ranks) if ranks else 1 << 30, c.id)

    return sorted(cands, key=key)


def fuse_rrf(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    *,
    k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
) -> list[Candidate]:
    """Reciprocal rank fusion: ``Σ weight / (k + rank)`` over the two lists.

    Why: BM25 and cosine live on unrelated scales; RRF only uses ranks, so it
    needs no calibration and is robust when one retriever is noisy (Cormack
    et al. 2009; k=60 is their constant). Relevance is that sum divided by
    the best attainable one — rank 1 in every list that was *supplied
    non-empty* — so it lands in [0, 1], a document first in both lists gets
    1.0, and a keyword-only recall (vectors missing: degraded mode) is not
    capped at 0.5. RRF says nothing about absolute relevance; pair it with
    :func:`passes_floor`'s ``min_vector`` to drop unrelated queries.
    """
    if k < 0:
        raise InvalidInputError(f"RRF k must be >= 0, not {k}")
    wk, wv = _check_weights(weights)
    kw, vec = _ranks(keyword), _ranks(vector)
    best = (wk / (k + 1) if kw else 0.0) + (wv / (k + 1) if vec else 0.0)
    out: list[Candidate] = []
    for cid in dict.fromkeys([*kw, *vec]):
        kr = kw.get(cid)
        vr = vec.get(cid)
        raw = (wk / (k + kr[0]) if kr else 0.0) + (wv / (k + vr[0]) if vr else 0.0)
        out.append(
            Candidate(
                id=cid,
                relevance=min(1.0, raw / best) if best > 0 else 0.0,
                keyword=kr[1] if kr else None,
                vector=vr[1] if vr else None,
                keyword_rank=kr[0] if kr else None,
                vector_rank=vr[0] if vr else None,
            )
        )
    return _sorted(out)


def _cosine01(cos: float) -> float:
    # Negative cosine means "unrelated or opposite" for text embeddings; it
    # should add nothing rather than be rescued by a (cos+1)/2 mapping, which
    # would give every unrelated text ~0.5.
    return min(1.0, max(0.0, cos))


def fuse_blend(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    *,
    weights: tuple[float, float] = (0.5, 0.5),
    keyword_norm: str = "max",
) -> list[Candidate]:
    """Calibrated blend: ``(wk·bm25_norm + wv·cosine01) / (wk + wv)``.

    Why: unlike RRF this keeps score *magnitudes*, so a weak best match stays
    weak (its cosine is low) and a min-relevance floor means something.
    BM25 has no fixed scale, so it is normalised within this result list:
    ``"max"`` divides by the best score (the top keyword hit gets 1.0, ratios
    kept), ``"minmax"`` maps [min, max] to [0, 1] (sharper, but the last hit
    gets 0; a single hit gets 1). Cosine is clipped to [0, 1]. A signal
    missing for a candidate counts 0. As in :func:`fuse_rrf`, the weights
    are renormalised over the lists supplied non-empty, so keyword-only
    recall still reaches 1.0.
    """
    if keyword_norm not in ("max", "minmax"):
        raise InvalidInputError(f"keyword_norm must be 'max' or 'minmax', not {keyword_norm!r}")
    wk, wv = _check_weights(weights)
    kw, vec = _ranks(keyword), _ranks(vector)
    kscores = [s for _, s in kw.values()]
    kmax = max(kscores, default=0.0)
    kmin = min(kscores, default=0.0)

    def knorm(score: float) -> float:
        if keyword_norm == "max":
            return score / kmax if kmax > 0 else 0.0
        if kmax == kmin:
            return 1.0
        return (score - kmin) / (kmax - kmin)

    total = (wk if kw else 0.0) + (wv if vec else 0.0)
    out: list[Candidate] = []
    for cid in dict.fromkeys([*kw, *vec]):
        kr = kw.get(cid)
        vr = vec.get(cid)
        raw = (wk * knorm(kr[1]) if kr else 0.0) + (wv * _cosine01(vr[1]) if vr else 0.0)
        out.append(
            Candidate(
                id=cid,
                relevance=min(1.0, max(0.0, raw / total)) if total > 0 else 0.0,
                keyword=kr[1] if kr else None,
                vector=vr[1] if vr else None,
                keyword_rank=kr[0] if kr else None,
                vector_rank=vr[0] if vr else None,
            )
        )
    return _sorted(out)


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt


def recency(created: datetime, now: datetime, *, half_life_days: float = 30.0) -> float | None:
    """``1 / (1 + age_days / half_life_days)``, in (0, 1]; None for a note
    whose date is unknown (``blocks.UNDATED``): neither new nor old, it is
    ranked by the other signals (:func:`final_score` drops the term).

    Why: operator_use's hyperbolic decay — 1.0 for a memory made now, 0.5 at
    one half-life (30 days), 0.25 at three — fades old memories slowly
    instead of erasing them as an exponential would. A memory "from the
    future" (clock skew) counts as brand new. Naive datetimes are UTC.
    """
    if not half_life_days > 0:
        raise InvalidInputError(f"half_life_days must be positive, not {half_life_days}")
    if _utc(created) == UNDATED:
        return None
    age_days = (_utc(now) - _utc(created)).total_seconds() / 86400.0
    return 1.0 / (1.0 + max(0.0, age_days) / half_life_days)


_WORD = re.compile(r"\w+")
_PART = re.compile(r"[-_]+")


def _variants(word: str) -> set[str]:
    # Just enough stemming for tags: "deploys"/"deploy", "boxes"/"box".
    out = {word}
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        out.add(word[:-1])
        if word.endswith("es"):
            out.add(word[:-2])
    return out


def query_words(query: str) -> frozenset[str]:
    """The casefolded, lightly stemmed words of a query, for :func:`tag_boost`."""
    words: set[str] = set()
    for w in _WORD.findall(query.casefold()):
        words |= _variants(w)
    return frozenset(words)


def tag_boost(query: str | frozenset[str], tags: Collection[str], *, boost: float = 0.1) -> float:
    """``boost`` when a query word names one of ``tags``, else 0.0.

    Why: Otto adds +0.1 similarity when a memory's tags appear in the query —
    a tag is a deliberate label, stronger evidence than a word in passing.
    Words are casefolded and lightly stemmed (plural ``s``/``es``); a
    hierarchical tag ``a/b`` matches on any segment, and a segment made of
    parts (``machine-learning``, ``bug_fix``) matches when all its parts are
    query words. Added once per memory, however many tags match. ``query``
    may be given as :func:`query_words` (recall computes them once).
    """
    words = query_words(query) if isinstance(query, str) else query
    if not words or not tags:
        return 0.0
    for tag in tags:
        for segment in tag.casefold().lstrip("#").split("/"):
            parts = [p for p in _PART.split(segment) if p]
            if not parts:
                continue
            if (segment in words or _variants(segment) & words) or (
                len(parts) > 1 and all(_variants(p) & words for p in parts)
            ):
                return boost
    return 0.0


def final_score(
    relevance: float,
    *,
    recency_value: float | None,
    recency_weight: float = 0.3,
    boost: float = 0.0,
    trust: float | None = None,
    trust_weight: float = 0.0,
) -> float:
    """``relevance·(1 − rw − tw) + recency·rw + trust·tw + boost``.

    Why: operator_use ranks by ``relevance × 0.7 + recency × 0.3`` (so among
    equally relevant memories the newer wins, yet a much better old match
    still beats a weak new one), and its holographic store adds ``trust``
    (``0.5/0.3/0.2``). ``recency_weight=0`` turns recency off; a missing
    recency (None) or trust (None) drops that term and gives its weight back
    to relevance. The boost (tag boost) is added on top, so scores may exceed
    1.0 by at most the boost.
    """
    rw = recency_weight if recency_value is not None else 0.0
    tw = trust_weight if trust is not None else 0.0
    if rw < 0 or tw < 0 or rw + tw > 1:
        raise InvalidInputError(
            f"recency_weight and trust_weight must be >= 0 and sum to <= 1: {rw}, {tw}"
        )
    score = relevance * (1.0 - rw - tw) + boost
    if rw:
        score += float(recency_value or 0.0) * rw
    if tw:
        score += float(trust or 0.0) * tw
    return score


def passes_floor(
    candidate: Candidate,
    *,
    min_relevance: float,
    min_vector: float | None = None,
) -> bool:
    """Keep a candidate only if it is plausibly about the query.

    Why: vector search always returns *something*; operator_use drops matches
    under a cosine of 0.5 so an unrelated question gets no memories rather
    than noise. A candidate passes when (a) it matched a keyword, or its
    cosine is at least ``min_vector`` (None: no cosine gate), and (b) its
    fused relevance is at least ``min_relevance``.
    """
    if candidate.relevance < min_relevance:
        return False
    if candidate.keyword is not None or min_vector is None:
        return True
    return candidate.vector is not None and candidate.vector >= min_vector
