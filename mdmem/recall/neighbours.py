"""What the turns around a candidate say about the query: two re-ranking features.

In a chat the answer is often split across neighbouring turns: "Lost my job
as a banker yesterday" and, next, "so I'm starting a dance studio"; a
question about either half names words of both. A candidate therefore gets
two numbers from the turns right before and after it in its conversation
(:meth:`mdmem.recall.conversation.FileOrder.neighbours`):

* ``neighbour``: the best cosine between the query and those turns' stored
  vectors (0 without vectors); a memory without such turns (a fact, a note,
  a tool output) counts its own;
* ``coverage``: the share of the query's content terms (as the keyword index
  analyses them, names of known people left out, since every turn of a
  person names them) that the candidate and those turns hold together.

Both are features of :mod:`mdmem.recall.signals`, weighted by the fitted
re-ranker, and given to the first stage's best
:data:`~mdmem.recall.search.NEIGHBOUR_DEPTH` candidates only. Measured with
``bench/rerank_fit.py`` (leave-one-conversation-out, ListNet): LoCoMo dev
R@5 / MRR 0.744 / 0.658 without them, 0.754 / 0.668 with them; over dev and
the short-chat set together 0.763 / 0.671 -> 0.772 / 0.686 (the short-chat
part 0.851 / 0.741 -> 0.851 / 0.756); on the short-chat set fitted on dev
alone R@5 0.851 -> 0.841, MRR 0.748 -> 0.754 (mixed there: one or two
questions of 154).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from mdmem.models import Block
from mdmem.recall.conversation import Threads

if TYPE_CHECKING:
    from mdmem.providers.embedders import F32

__all__ = ["Neighbourhood"]

TOOL_OUTPUT = "tool_output"


class Neighbourhood:
    """The ``neighbour`` and ``coverage`` features of candidates of one query.

    ``terms_of`` gives a text's index terms (None: no keyword index, coverage
    0); ``vectors_of`` the stored vectors of block ids and ``query_vec`` the
    query's (either None: neighbour 0). Terms and cosines are computed once
    per block and query.
    """

    def __init__(
        self,
        threads: Threads,
        *,
        query_terms: frozenset[str],
        terms_of: Callable[[str], frozenset[str]] | None,
        query_vec: F32 | None,
        vectors_of: Callable[[Iterable[str]], Mapping[str, np.ndarray]] | None,
    ) -> None:
        self._threads = threads
        self._query_terms = query_terms if terms_of is not None else frozenset()
        self._terms_of = terms_of
        self._query_vec = query_vec if vectors_of is not None else None
        self._vectors_of = vectors_of
        self._terms: dict[str, frozenset[str]] = {}
        self._cosine: dict[str, float] = {}

    def features(self, blocks: Iterable[Block]) -> dict[str, tuple[float, float]]:
        """``(neighbour, coverage)`` by block id."""
        around = {b.id: (b, self._surroundings(b)) for b in blocks}
        if self._query_vec is not None and self._vectors_of is not None:
            wanted = {n.id for _, turns in around.values() for n in turns}
            vectors = self._vectors_of(sorted(wanted - self._cosine.keys()))
            for block_id, vec in vectors.items():
                self._cosine[block_id] = max(0.0, float(np.dot(vec, self._query_vec)))
        out: dict[str, tuple[float, float]] = {}
        for block_id, (block, turns) in around.items():
            neighbour = max((self._cosine.get(t.id, 0.0) for t in turns), default=0.0)
            out[block_id] = (neighbour, self._coverage(block, turns))
        return out

    def _surroundings(self, block: Block) -> list[Block]:
        """The turns around ``block``; a memory with none (a fact, a note, a
        lone turn) stands for itself, so it is not ranked below turns for
        lacking neighbours. Tool outputs are never surroundings: a long
        output holds most words of any query about its session."""
        if block.kind != TOOL_OUTPUT:
            turns = [t for t in self._threads.neighbours(block) if t.kind != TOOL_OUTPUT]
            if turns:
                return turns
        return [block]

    def _coverage(self, block: Block, turns: list[Block]) -> float:
        if not self._query_terms:
            return 0.0
        held = set(self._terms_for(block))
        for turn in turns:
            held |= self._terms_for(turn)
        return len(self._query_terms & held) / len(self._query_terms)

    def _terms_for(self, block: Block) -> frozenset[str]:
        terms = self._terms.get(block.id)
        if terms is None:
            assert self._terms_of is not None
            terms = self._terms[block.id] = self._terms_of(block.text)
        return terms
