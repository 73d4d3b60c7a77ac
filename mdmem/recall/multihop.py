"""A second retrieval round for questions whose evidence spans several blocks.

"What did Ana buy after moving to Porto?" matches the turn about moving; the
turn about the purchase names the flat, the street or the shop the first
turn named, not the question's words. Pseudo-relevance feedback (Rocchio;
RM3 in Lavrenko and Croft's relevance models) widens the query with the
best first-round blocks' distinctive words: here the rarest index terms of
the top three blocks (those at least two blocks share, so each can find
another), searched by keyword only (one more BM25 query, a few ms). The
scores, over their best, are the ``second`` re-ranking feature; its weight
is fitted with the others (``bench/rerank_fit.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mdmem.errors import IndexError_
from mdmem.index.keyword import KeywordIndex
from mdmem.models import Block

__all__ = ["TERMS_PER_BLOCK", "second_round"]

TERMS_PER_BLOCK = 3


def second_round(
    keyword_index: Callable[[], KeywordIndex], query: str, pool: int
) -> Callable[[Sequence[Block]], dict[str, float]]:
    """The second round for ``query``: first-round blocks -> score by block id.
    ``keyword_index`` is asked only when the round runs (it may be unusable)."""

    def run(top: Sequence[Block]) -> dict[str, float]:
        try:
            keyword = keyword_index()
            skip = {t for _, t, _ in keyword.query_terms(query)}
            extra: list[str] = []
            for block in top:
                for term in keyword.rarest_terms(block.text, TERMS_PER_BLOCK, skip=skip):
                    if term not in extra:
                        extra.append(term)
                        skip.add(term)
            if not extra:
                return {}
            found = keyword.search(f"{query} {' '.join(extra)}", limit=pool, statuses=None)
        except IndexError_:
            return {}  # the first round stands alone
        best = max((s for _, s in found), default=0.0)
        return {i: s / best for i, s in found} if best > 0 else {}

    return run
