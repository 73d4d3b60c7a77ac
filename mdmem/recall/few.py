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
* **exact identifiers** (:mod:`mdmem.recall.gate`, as recall's ``exact``
  stage): a query token shaped like an identifier (``PAYMENTS_SANDBOX``,
  ``E1234``, ``src/pay/api.py``) that a few blocks hold whole puts them
  first; an ordinary rare word does so (at third place) only among as many
  blocks as the stage asks for;
* **"nothing relevant"**: the gate's keyword-only answer (the share of the
  IDF weight of the query's known words the best hits hold, at least
  ``keyword_cover``), which an exact identifier passes whatever it says (a
  rule no fitted gate vetoes); then **how many**: the gate's stopping rule
  (:func:`mdmem.recall.gate.keep`), at most ``k``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mdmem.index.blocktext import indexable
from mdmem.models import Block
from mdmem.recall import gate, ranking, search
from mdmem.recall.gate_weights import GATE

__all__ = ["Found", "rank_few"]


@dataclass(frozen=True)
class Found:
    """One block kept for a query: its score and whether an exact identifier lifted it."""

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
    lifted = _exact(query, pool)
    if lifted:
        top = max(scored.values(), default=0.0)
        rest = sorted((s for i, s in scored.items() if i not in lifted), reverse=True)
        third = rest[2] if len(rest) >= 3 else None
        for block_id, shaped in lifted.items():
            base = scored.get(block_id, 0.0)
            nudge = 0.001 * min(max(base, 0.0), 1.0)  # their own order among themselves
            if shaped:
                scored[block_id] = top + 0.01 + nudge
            elif third is not None and base <= third:
                scored[block_id] = third + 0.0001 + nudge / 10
            else:
                scored.setdefault(block_id, base)
    if not scored:
        return []
    ranked = sorted(scored, key=lambda i: (-scored[i], order[i]))
    exact_top = any(lifted.get(i) for i in ranked[:3])
    if not exact_top and _cover(query, pool, ranked) < GATE.keyword_cover:
        return []
    keep = gate.keep([scored[i] for i in ranked])
    kept = ranked[: min(keep, k)]
    return [Found(by_id[i], round(scored[i], 6), i in lifted) for i in kept]


def _exact(query: str, pool: Sequence[Block]) -> dict[str, bool]:
    """Block id -> whether an identifier-shaped token (else an ordinary rare word)
    of the query, held whole by at most ``GATE.exact_most`` blocks, lifts it."""
    lifted: dict[str, bool] = {}
    for token in gate.exact_tokens(query):
        shaped = gate.identifier_like(token)
        if not shaped and len(pool) < GATE.exact_vault:
            continue  # rarity means nothing among a few blocks (see recall's exact stage)
        holders = [b for b in pool if gate.holds_exactly(b.text, token)]
        if 0 < len(holders) <= GATE.exact_most:
            for b in holders:
                lifted[b.id] = lifted.get(b.id, False) or shaped
    return lifted


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
            hit_terms=[held[i] for i in ranked[:3]],
            cosines=[],
            top_keyword_rank=None,
            top_vector_rank=None,
            top_score=0.0,
            exact=False,
        )
    )
    return row["cover"]
