"""Recall over a live vault: refresh what changed on disk, search, remember what was shown.

:class:`Recaller` composes the pure ranking pipeline (:func:`run_recall`)
with the store it reads: edits saved since the last call are indexed first
(sharing one model call with the query), and every hit feeds the
usefulness signals kept in the state dir.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from mdmem.models import Block, Hit, Recall
from mdmem.recall import aliases, multihop
from mdmem.recall.controls import at_tier
from mdmem.recall.conversation import FileOrder
from mdmem.recall.search import RecallQuery, run_recall, vector_query_text
from mdmem.recall.usefulness import UsefulnessStore
from mdmem.store.memories import MemoryStore
from mdmem.store.secret_guard import scrub

__all__ = ["Recaller"]


class Recaller:
    """Hybrid recall over one store; ``human_of`` tells whether a person wrote a block."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        human_of: Callable[[Block], bool] | None = None,
    ) -> None:
        self.store = store
        self.human_of = human_of
        self.threads = FileOrder(store.catalog.blocks_in, store.catalog.people)
        self._usefulness: UsefulnessStore | None = None

    @property
    def usefulness(self) -> UsefulnessStore:
        """Hit counts and trust per memory (state dir, not markdown), opened on first use."""
        if self._usefulness is None:
            with self.store.writer.mutex:  # parallel recalls (prompt_context) share one store
                if self._usefulness is None:
                    self._usefulness = UsefulnessStore(self.store.state_dir / "usefulness.sqlite")
        return self._usefulness

    def close(self) -> None:
        if self._usefulness is not None:
            self._usefulness.close()

    def recall(self, q: RecallQuery) -> Recall:
        """The memories most relevant to ``q``, best first; edits on disk are indexed first."""
        started = time.perf_counter()
        store = self.store
        indexer = store.indexer
        asked = q.query
        q = replace(q, query=self._understood(q.query))
        if q.mode == "keyword":
            store.refresh()
        else:
            # Blocks the refresh embeds (an edit) share one model call with the
            # query, and so do vectors left missing while the embedder was down.
            with store.embedding.query_ahead(vector_query_text(q.query, self.threads)):
                store.refresh()
                indexer.fill_missing_vectors()
        indexer.catch_up()
        settings = store.settings.recall
        usefulness = self.usefulness
        usefulness.ensure_open()
        result = run_recall(
            q,
            indexer,
            store.catalog.block,
            settings,
            trust_of=usefulness.trust,
            human_of=self.human_of if settings.human_weight > 0 else None,
            threads=self.threads,
            embed_query=store.embedding.embed_query
            if store.embedding.embedder is not None
            else None,
            gaps=indexer.recall_gaps,
            scan=lambda: store.catalog.blocks(memories_only=False),
            shown=lambda text: scrub(text, store.settings.secrets),
            now=store.clock.local(),
            second_round=multihop.second_round(lambda: indexer.keyword, q.query, q.k * 4)
            if q.mode != "vector"
            else None,
        )
        self._note_hits(result.items)
        items = result.items
        if q.controls is not None:  # abstracts or overviews instead of full text (tier)
            items = at_tier(items, q.controls.tier, store.catalog.block, self._frontmatter)
        items = [self._shown(hit) for hit in items]  # after: a tier's text is scrubbed too
        return replace(
            result,
            query=asked,
            items=items,
            took_ms=(time.perf_counter() - started) * 1000,
        )

    def _understood(self, query: str) -> str:
        """The query with the names it calls known people by resolved (aliases.py)."""
        indexer = self.store.indexer
        return aliases.understood(
            query,
            self.threads.people(),
            lambda word, limit: indexer.keyword.search(word, limit=limit, statuses=None),
            self.store.catalog.block,
            self.threads.neighbours,
        )

    def _frontmatter(self, path: str) -> dict[str, Any]:
        state = self.store.catalog.files.get(path)
        return state.parsed.frontmatter if state is not None else {}

    def _shown(self, hit: Hit) -> Hit:
        """The hit as recall hands it out: a secret typed into the file by hand
        is redacted (the file keeps it), so recall output, context blocks and
        the prompts built from them never carry it."""
        mode = self.store.settings.secrets
        text, heading = scrub(hit.text, mode), scrub(hit.heading, mode)
        if text is hit.text and heading is hit.heading:
            return hit
        return replace(hit, text=text, heading=heading)

    def _note_hits(self, hits: Iterable[Hit]) -> None:
        self.usefulness.record_hits(h.id for h in hits)
