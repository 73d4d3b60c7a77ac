"""Whether anything recalled is relevant, and how many items are worth reading:
the relevance gate recall, ``prompt_context`` and the hooks share.

Recall ranks; on its own it never says "nothing". A vault always has a
nearest neighbour, so a question about people the vault never met, or an
ordinary coding question that shares "before" or "team" with a memory, got
the nearest few anyway. The gate reads the finished ranking and answers:

* :func:`features`: numbers that keep their meaning from a vault of ten
  memories to one of thousands — how much of the IDF weight of the query's
  words the vault knows the best hits hold (a query's rare words are what it
  is about), how much of it the vault has never seen at all (weighed by how
  big the vault is), the best cosine and how far it stands above
  the rest of the vault's cosines for this query, whether the keyword and
  vector sides agree on the best hit, its final score, and whether a rare
  exact identifier matched;
* :func:`confidence`: a logistic model of those (weights fitted on dev data,
  :mod:`mdmem.recall.gate_weights`); below the fitted threshold the answer is
  "nothing relevant" (:attr:`mdmem.models.Recall.nothing_relevant`);
* :func:`keep`: of a relevant answer, the leading items worth putting in
  front of a model: each next item must score at least a fitted share of the
  best (few when the best hit stands far above the rest, more when many score
  alike), never more than a safety bound. It is the one stopping rule:
  recall's ``relevant_items``, ``prompt_context`` and the hooks read it.

The gate is a fit, and a fit may not veto a rule: a memory holding an
identifier the prompt names (:mod:`mdmem.recall.identifiers`) is put first
and kept whatever the gate says (recall's ``named`` stage, after this one).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from mdmem.recall.gate_weights import GATE

__all__ = [
    "DEPTH",
    "GATE_FEATURES",
    "GateInput",
    "confidence",
    "features",
    "keep",
]

GATE_FEATURES = ("cover", "absent", "cos1", "cos_gap", "agree", "score1", "exact")
# The best hits whose words the gate reads (``cover``), however few were asked for.
DEPTH = 3


@dataclass(frozen=True)
class GateInput:
    """What the gate reads of one finished recall."""

    query_terms: Sequence[str]  # the query's terms as the keyword index analyses them
    doc_count: int  # documents in the keyword index
    df: Mapping[str, int]  # documents holding each query term
    hit_terms: Sequence[Collection[str]]  # terms of the best hits, best first
    cosines: Sequence[float]  # the vector side's cosines, best first (the pool)
    top_keyword_rank: int | None  # the best hit's rank on each side (1 = first)
    top_vector_rank: int | None
    top_score: float  # the best hit's final score without its recency part
    exact: bool  # a rare exact identifier matched a hit


def _idf(df: int, n: int) -> float:
    return math.log(1.0 + (n + 1) / (df + 0.5))


def features(g: GateInput) -> dict[str, float]:
    """The gate's features of one recall (see the module doc), each in about [0, 1]."""
    terms = list(dict.fromkeys(g.query_terms))
    n = max(g.doc_count, 1)
    weight = {t: _idf(g.df.get(t, 0), n) for t in terms}
    total = sum(weight.values())
    known = sum(w for t, w in weight.items() if g.df.get(t, 0) > 0)
    cover = 0.0
    absent = 0.0
    if known > 0:
        for held in g.hit_terms[:3]:
            cover = max(cover, sum(w for t, w in weight.items() if t in held) / known)
    if total > 0:
        # A word the vault never saw says the query is about something else only
        # as far as the vault is big enough to have seen it: in five memories
        # "work" is absent from a question about deploys that they answer.
        absent = (total - known) / total * n / (n + GATE.absent_prior)
    cos = sorted((max(0.0, c) for c in g.cosines), reverse=True)
    cos1 = cos[0] if cos else 0.0
    # The rest of the vault's cosines for this query: a best match means
    # something only as far as it stands above them (a bigger vault has closer
    # look-alikes, a small one none).
    rest = cos[1:]
    typical = sorted(rest)[len(rest) // 2] if rest else 0.0
    agree = float(
        g.top_keyword_rank is not None
        and g.top_vector_rank is not None
        and g.top_keyword_rank <= 3
        and g.top_vector_rank <= 3
    )
    return {
        "cover": cover,
        "absent": absent,
        "cos1": cos1,
        "cos_gap": cos1 - typical,
        "agree": agree,
        "score1": g.top_score,
        "exact": float(g.exact),
    }


def confidence(row: Mapping[str, float], weights: Mapping[str, float] | None = None) -> float:
    """The gate's probability that the recall holds something relevant."""
    w = weights if weights is not None else GATE.weights
    z = w.get("bias", 0.0) + sum(w.get(name, 0.0) * row.get(name, 0.0) for name in GATE_FEATURES)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def keep(scores: Sequence[float], *, ratio: float | None = None, most: int | None = None) -> int:
    """How many leading items, of final scores ``scores`` (best first, recency
    taken out), are worth reading: they stop at the first that scores below
    ``ratio`` of the best (fitted), and at ``most`` (a safety bound) whatever
    they score (:data:`mdmem.recall.gate_weights.GATE`)."""
    if not scores:
        return 0
    ratio = GATE.ratio if ratio is None else ratio
    most = GATE.most if most is None else most
    best = scores[0]
    count = 1
    for score in scores[1:most]:
        if best > 0 and score < ratio * best:
            break
        count += 1
    return count
