"""Recall over a vault: choose the source, lend the vault's signals, run the pipeline.

:class:`Recaller` is where :mod:`mdmem.recall.pipeline` meets a store. For a
live recall the source is the catalog and the indexes, brought up to date
first (edits saved since the last call are indexed, sharing one model call
with the query); for ``as_of`` it is a snapshot of the vault at a commit,
which the git side builds (``past``). Either way the same stages run with the
same trust, human weight, clock, model and visibility rule, and every hit
feeds the usefulness signals kept in the state dir.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from mdmem.models import Block, Recall
from mdmem.recall import aliases, pipeline
from mdmem.recall.conversation import FileOrder
from mdmem.recall.damage import with_damage
from mdmem.recall.model_rerank import Reranking
from mdmem.recall.pipeline import RecallRun, RecallSource
from mdmem.recall.search import RecallQuery, vector_query_text
from mdmem.recall.usefulness import UsefulnessStore
from mdmem.store.memories import MemoryStore
from mdmem.store.secret_guard import scrub
from mdmem.store.visibility import EVERYONE, Reader, Visibility

if TYPE_CHECKING:
    from mdmem.index.keyword import KeywordIndex
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.llm import LLMClient

__all__ = ["LiveSource", "Recaller"]

PastSource = Callable[[str | date | datetime], RecallSource]


class LiveSource:
    """The vault as it is now: its catalog and indexes (see :class:`RecallSource`)."""

    commit: str | None = None

    def __init__(self, store: MemoryStore, threads: FileOrder, visibility: Visibility) -> None:
        self._store = store
        self.threads = threads
        self.visibility = visibility

    @property
    def keyword(self) -> KeywordIndex:
        return self._store.indexer.keyword

    @property
    def vectors(self) -> VectorIndex | None:
        return self._store.indexer.vectors

    @property
    def missing_vectors(self) -> set[str]:
        return self._store.indexer.missing_vectors

    def block(self, block_id: str) -> Block | None:
        return self._store.catalog.block(block_id)

    def blocks(self) -> Iterable[Block]:
        return self._store.catalog.blocks(memories_only=False)

    def frontmatter(self, path: str) -> Mapping[str, Any]:
        state = self._store.catalog.files.get(path)
        return state.parsed.frontmatter if state is not None else {}

    def gaps(self) -> list[tuple[str, str]]:
        return self._store.indexer.recall_gaps()


class Recaller:
    """Recall over one store, live or as of a commit (see the module docstring).

    ``human_of`` tells whether a person wrote a block, ``llm`` gives the model
    for the optional re-rank, ``past`` the source of the vault at a commit or
    date; the vault hands these in (they live above recall).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        human_of: Callable[[Block], bool] | None = None,
        llm: Callable[[], LLMClient | None] | None = None,
        past: PastSource | None = None,
    ) -> None:
        self.store = store
        self.human_of = human_of
        self._llm = llm
        self._past = past
        self.threads = FileOrder(store.catalog.blocks_in, store.catalog.people)
        self._live = LiveSource(store, self.threads, store.visibility)
        self._usefulness: UsefulnessStore | None = None
        self._reranking = Reranking(store.settings)  # [recall] reranker, built on first use
        self._usefulness_lock = threading.Lock()

    @property
    def usefulness(self) -> UsefulnessStore:
        """Hit counts and trust per memory (state dir, not markdown), opened on first use."""
        if self._usefulness is None:
            # Parallel recalls (prompt_context, the warm server) share one store; its
            # own lock, not the writer's: a first recall need not wait for a write.
            with self._usefulness_lock:
                if self._usefulness is None:
                    self._usefulness = UsefulnessStore(self.store.state_dir / "usefulness.sqlite")
        return self._usefulness

    def close(self) -> None:
        if self._usefulness is not None:
            self._usefulness.close()

    def recall(
        self,
        q: RecallQuery,
        *,
        as_of: str | date | datetime | None = None,
        reader: Reader = EVERYONE,
    ) -> Recall:
        """The memories most relevant to ``q``, best first, as ``reader`` may see them."""
        started = time.perf_counter()
        store = self.store
        asked = q.query
        source: RecallSource
        if as_of is None:
            q = replace(q, query=self._understood(q.query))
            self._freshen(q)
            source = self._live
        else:
            if self._past is None:
                raise ValueError("this recaller has no past source (as_of)")
            source = self._past(as_of)
        settings = store.settings.recall
        usefulness = self.usefulness
        usefulness.ensure_open()
        embedding = store.embedding
        result = pipeline.run(
            RecallRun(
                q,
                source,
                settings,
                now=store.clock.local(),
                reader=reader,
                embed_query=embedding.embed_query if embedding.embedder is not None else None,
                trust_of=usefulness.trust,
                human_of=self.human_of if settings.human_weight > 0 else None,
                shown=lambda text: scrub(text, store.settings.secrets),
                llm=self._llm() if settings.rerank and self._llm is not None else None,
                reranker=self._reranking.reranker,
                note_hits=usefulness.record_hits,
            )
        )
        result = replace(result, query=asked, took_ms=(time.perf_counter() - started) * 1000)
        return with_damage(result, store.catalog.damaged) if as_of is None else result

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

    def _freshen(self, q: RecallQuery) -> None:
        """Index what changed on disk since the last call (and catch up with other processes)."""
        store = self.store
        if q.mode == "keyword":
            store.refresh()
        else:
            # Blocks the refresh embeds (an edit) share one model call with the
            # query, and so do vectors left missing while the embedder was down.
            with store.embedding.query_ahead(vector_query_text(q.query, self.threads)):
                store.refresh()
                store.indexer.fill_missing_vectors()
        store.indexer.catch_up()
