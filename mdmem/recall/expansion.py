"""Candidates from everywhere a person the query names has spoken.

"What sports does Kevin play?" is answered by Kevin's turns scattered over
weeks: intramural soccer in one session, football in another, a chess club
in a third. Each of those is a weak match for the question, and a
conversation has hundreds of turns that match "sports" as weakly, most of
them said by the *other* person; a first stage that keeps the best 50 of
each retriever loses most instances. Measured on the dev chats (LoCoMo and
REALTALK), 95-99 % of the evidence of a question that names one participant
is that participant's own turns.

So when a query names people the vault knows (``speaker``/``contact``
fields, see :mod:`mdmem.recall.conversation`), each retriever is asked
:data:`DEPTH_FACTOR` times deeper, and beyond its usual pool it keeps up to
:data:`EXTRA` more candidates that those people said: the named person's
turns get a deeper pool than everyone else's, and the fitted re-ranker
(the ``people`` feature) decides among them. Queries that name nobody are
untouched. The cost is one deeper search per retriever (a flat vector index
scans every vector either way) and the features of the extra candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from mdmem.models import Block
from mdmem.recall.conversation import people_of
from mdmem.recall.ranking import query_words

__all__ = ["DEPTH_FACTOR", "EXTRA", "Focus"]

DEPTH_FACTOR = 4
EXTRA = 50


@dataclass(frozen=True)
class Focus:
    """The known people a query names (casefolded name words)."""

    named: frozenset[str]

    @classmethod
    def of(cls, query: str, people: Collection[str]) -> Focus | None:
        """The focus of ``query``, or None when it names no one the vault knows."""
        named = frozenset(w for w in query_words(query) if w in people)
        return cls(named) if named else None

    def depth(self, pool: int) -> int:
        """How deep to search for a pool of ``pool``."""
        return pool * DEPTH_FACTOR

    def said_by_named(self, block: Block) -> bool:
        return any(self.named & query_words(name) for name in people_of(block))

    def trim(
        self,
        found: Sequence[tuple[str, float]],
        pool: int,
        block_of: Callable[[str], Block | None],
    ) -> list[tuple[str, float]]:
        """The first ``pool`` of ``found`` (a deeper search, best first), then up
        to :data:`EXTRA` more said by the named people, in their order."""
        kept = list(found[:pool])
        for block_id, score in found[pool:]:
            if len(kept) >= pool + EXTRA:
                break
            block = block_of(block_id)
            if block is not None and self.said_by_named(block):
                kept.append((block_id, score))
        return kept
