"""Recall over a handful of blocks with no index: the pipeline's own rules.

A repository's team tier is a few dozen lines read on every prompt; building
a Whoosh index and vectors for them would cost more than the prompt's
budget. So they are ranked here, by the functions recall itself uses, never
by copies of its words or rules:

* **candidates** as recall's index-free scan finds them
  (:func:`mdmem.recall.search.scan_candidates`: the share of the query's
  words a block holds, with recall's question words and stop words left out
  and its light stemming), plus the **tag boost**
  (:func:`mdmem.recall.ranking.tag_boost`);
* **exact identifiers** (:mod:`mdmem.recall.identifiers`, as recall's
  ``exact`` and ``named`` stages): a block holding, whole, an identifier the
  query names (``PAYMENTS_SANDBOX``, ``E1234``, ``src/pay/api.py``) that at
  most ``identifiers.FEW`` blocks hold goes first and is kept, whatever else
  says (a rule no fitted gate vetoes);
* **"nothing relevant"**: the gate's answer from the keyword side alone (the
  share of the IDF weight of the query's known words the best hits hold, at
  least ``keyword_cover``: the scan's scores are not the index's, so the
  keyword model's score feature can't be read here); then **how many**: the
  gate's stopping rule (:func:`mdmem.recall.gate.keep`), at most ``k``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mdmem.index.blocktext import indexable
from mdmem.models import Block
from mdmem.recall import gate, identifiers, ranking, search
from mdmem.recall.gate_weights import GATE

__all__ = ["Found", "rank_few"]


@dataclass(frozen=True)
class Found:
    """One block kept for a query: its score and whether it holds an identifier the
    query names (kept whatever the gate said)."""

    block: Block
    score: float
    exact: bool


def rank_few(query: str, blocks: Sequence[Block], k: int) -> list[Found]:
    """The blocks relevant to ``query``, best first, at most ``k`` (see the module doc)."""
    pool = [b for b in blocks if b.status == "active" and indexable(b)]
    query = query.strip()[:4000]
    if not pool or not query or k <= 0:
        return []
    q = search.RecallQuery.build(query, 1, None, None, None, None, None, False, "keyword")
    by_id = {b.id: b for b in pool}
    order = {b.id: n for n, b in enumerate(pool)}
    words = ranking.query_words(query)
    scored = {
        block_id: share + ranking.tag_boost(words, by_id[block_id].tags)
        for block_id, share in search.scan_candidates(q, pool, len(pool))
    }
    named = _named(query, pool)
    if not scored and not named:
        return []
    ranked = sorted(scored, key=lambda i: (-scored[i], order[i]))
    relevant = bool(ranked) and _cover(query, pool, ranked) >= GATE.keyword_cover
    kept = ranked[: gate.keep([scored[i] for i in ranked])] if relevant else []
    # The named first, in the scan's order among themselves, then the gate's choice.
    first = sorted(named, key=lambda i: (-scored.get(i, 0.0), order[i]))
    kept = [*first, *(i for i in kept if i not in named)][:k]
    return [Found(by_id[i], round(scored.get(i, 0.0), 6), i in named) for i in kept]


def _named(query: str, pool: Sequence[Block]) -> set[str]:
    """Ids of the blocks holding, whole, an identifier the query names that at most
    ``identifiers.FEW`` of them hold."""
    found: set[str] = set()
    for token in identifiers.named_identifiers(query):
        holders = [b.id for b in pool if identifiers.holds_exactly(b.text, token)]
        if 0 < len(holders) <= identifiers.FEW:
            found.update(holders)
    return found


def _cover(query: str, pool: Sequence[Block], ranked: Sequence[str]) -> float:
    """The gate's ``cover`` feature, over these blocks as the whole collection."""
    forms = {w: ranking.query_words(w) for w in search.scan_words(query)}
    held: dict[str, frozenset[str]] = {}
    for b in pool:
        have = search.block_words(b)
        held[b.id] = frozenset(w for w, f in forms.items() if f & have)
    df = Counter(w for terms in held.values() for w in terms)
    row = gate.features(
        gate.GateInput(
            query_terms=list(forms),
            doc_count=len(pool),
            df=df,
            hit_terms=[held[i] for i in ranked[: gate.DEPTH]],
            cosines=[],
            top_keyword_rank=None,
            top_vector_rank=None,
            top_score=0.0,
            exact=False,
        )
    )
    return row["cover"]
