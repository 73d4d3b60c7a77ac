"""The embedding service of one vault: its embedder, the cache and the health gate.

Both the indexer (block vectors) and recall (the query vector) embed text;
neither should know how the embedder is chosen, cached or rested. This
service owns that:

* the embedder is resolved from the settings on first use (``provider =
  none`` switches vectors off; ``auto`` follows a trusted LLM endpoint) and
  stays None with a reason when it cannot be made;
* vectors are cached by (model, hash of the embedded text) in the state dir,
  so moving, renaming or re-indexing a block never calls the model again;
* a remote embedder that failed is left alone for
  :data:`~mdmem.files.health.RETRY_SECONDS` (recall runs on keywords meanwhile);
* a recall right after an edit embeds its query in the same forward pass as
  the edited blocks (:meth:`EmbeddingService.query_ahead`).

Nothing here raises for a cache's sake: a cache that can't be read or written
only costs the work it would have saved.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mdmem.errors import EmbedderError, IndexError_
from mdmem.files.health import DERIVED_ERRORS, Gate
from mdmem.index.blocktext import embed_key, embed_text
from mdmem.index.queryvectors import QueryVectors
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.config import Settings
    from mdmem.index.vector import EmbeddingCache
    from mdmem.providers.embedders import Embedder

__all__ = ["EMBED_BATCH", "EmbeddingService"]

log = logging.getLogger("mdmem")

EMBED_BATCH = 256  # blocks per model call


class EmbeddingService:
    """Embeds blocks and queries for one vault (see the module docstring)."""

    def __init__(self, state_dir: Path, settings: Settings) -> None:
        self.state_dir = state_dir
        self.settings = settings
        self._embedder: Embedder | None = None
        self.error: str | None = None  # why there is no embedder at all (None: there may be)
        self._gate = Gate("embedder")
        self._cache: EmbeddingCache | None = None
        # A recall's query text, embedded in the same call as the blocks its
        # refresh embeds (one forward pass instead of two), and its vector.
        self._ahead: str | None = None
        self._query_vector: tuple[str, str, np.ndarray] | None = None
        self.queries = QueryVectors()

    # ------------------------------------------------------- the embedder --

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, or None when vectors are off or unavailable."""
        if self._embedder is None and self.error is None:
            cfg = self.settings.embedder
            if cfg.provider in ("none", "off", ""):
                self.error = "vectors are switched off (embedder.provider = none)"
                return None
            from mdmem.providers.embedders import make_embedder
            from mdmem.providers.registry import resolve_auto_embedder

            provider, model = cfg.provider, cfg.model or None
            base_url, api_key = cfg.base_url or None, self.settings.embedder_api_key()
            if provider.strip().lower() == "auto":
                # Follow the LLM's endpoint (Otto); an explicit embedder base_url wins.
                auto = resolve_auto_embedder(self.settings)
                provider, model = auto.provider, auto.model
                base_url, api_key = base_url or auto.base_url, auto.api_key or api_key
            try:
                self._embedder = make_embedder(
                    provider, model, base_url=base_url, api_key=api_key, dim=cfg.dim or None
                )
            except EmbedderError as exc:
                self.error = str(exc)
                log.warning("vector search disabled: %s", exc)
        return self._embedder

    @property
    def loaded(self) -> bool:
        """Whether the embedder is loaded already (a warm process); never loads it."""
        return self._embedder is not None

    @property
    def name(self) -> str:
        """The loaded embedder's name, "none" when none is loaded."""
        return self._embedder.name if self._embedder is not None else "none"

    @property
    def switched_off(self) -> bool:
        return self.settings.embedder.provider in ("none", "off", "")

    @property
    def problem(self) -> str | None:
        """Why there are no vectors: switched off, not installed, or (for now)
        the embedder did not answer."""
        self.embedder  # noqa: B018 - resolve lazily
        if self.error is not None:
            return self.error
        return self._gate.reason

    def resting(self) -> bool:
        """True while a failed embedder is left alone (recall uses keywords)."""
        return self._gate.resting()

    def usable(self) -> Embedder | None:
        """The embedder when it may be called now (loaded, not resting), else None."""
        embedder = self.embedder
        if embedder is None or self.resting():
            return None
        return embedder

    def dim(self) -> int | None:
        """The embedder's dimension (a remote one may ask its server), None if unavailable."""
        embedder = self.usable()
        if embedder is None:
            return None
        try:
            return embedder.dim
        except EmbedderError as exc:
            self._gate.failed(exc)
            return None

    def retry(self) -> None:
        """Ask a resting embedder again on the next call, and a failed cache file again."""
        self._gate.reset()
        if self._cache is not None and self._cache.problem is not None:
            self.close_cache()

    # ---------------------------------------------------------- the cache --

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            from mdmem.index.vector import EmbeddingCache

            self._cache = EmbeddingCache(self.state_dir / "embeddings.sqlite")
        return self._cache

    @property
    def cache_problem(self) -> str | None:
        return self._cache.problem if self._cache is not None else None

    def close_cache(self) -> None:
        """Close the cache file (it is opened again, where the state dir now is, on use)."""
        if self._cache is not None:
            with contextlib.suppress(*DERIVED_ERRORS):
                self._cache.close()
            self._cache = None

    # ---------------------------------------------------------- embedding --

    def vectors(self, blocks: Sequence[Block]) -> dict[str, np.ndarray]:
        """Vectors of ``blocks`` (as the indexes hold them) by :func:`embed_key`:
        from the cache, the rest embedded in one call and cached.

        Raises EmbedderError (after resting the embedder) when the model
        fails, and when there is no usable embedder.
        """
        embedder = self.usable()
        if embedder is None:
            raise EmbedderError(self.problem or "no embedder")
        keys = [embed_key(b) for b in blocks]
        try:
            found = self._cached(embedder, blocks, keys)
        except EmbedderError as exc:
            self._gate.failed(exc)
            raise
        self._gate.answered()
        return found

    def cached_vector(self, block: Block) -> np.ndarray | None:
        """The block's embedding (from the cache, else embedded and cached), or
        None when vectors are off or the embedder is unavailable."""
        if self.usable() is None:
            return None
        try:
            return self.vectors([block])[embed_key(block)]
        except EmbedderError:
            return None

    def warm(self, blocks: Sequence[Block]) -> None:
        """Embed ``blocks`` into the cache only (batched; raises EmbedderError):
        later one-by-one lookups, and the indexing, find them."""
        if self.usable() is None:
            return
        for start in range(0, len(blocks), EMBED_BATCH):
            self.vectors(blocks[start : start + EMBED_BATCH])

    def _cached(
        self, embedder: Embedder, chunk: Sequence[Block], keys: list[str]
    ) -> dict[str, np.ndarray]:
        try:
            cached = self.cache.get_many(embedder.name, keys)
        except IndexError_ as exc:
            log.debug("embedding cache unreadable (%s); embedding again", exc)
            cached = {}
        todo = {k: embed_text(b) for b, k in zip(chunk, keys, strict=True) if k not in cached}
        if todo:
            query, self._ahead = self._ahead, None
            texts = list(todo.values())
            if query is None:
                fresh = embedder.embed(texts)
            else:
                try:
                    fresh = embedder.embed([*texts, query])
                except EmbedderError:
                    # The query may be what a remote model refused: the
                    # blocks go alone, and recall embeds the query itself.
                    fresh = embedder.embed(texts)
                else:
                    self._query_vector = (embedder.name, query, fresh[-1])
                    fresh = fresh[:-1]
            new_items = dict(zip(todo, fresh, strict=True))
            try:
                self.cache.put_many(embedder.name, new_items)
            except IndexError_ as exc:
                log.debug("embedding cache not written (%s)", exc)
            cached.update(new_items)
        return cached

    @contextmanager
    def query_ahead(self, text: str) -> Iterator[None]:
        """Inside, blocks that need embedding are embedded together with the
        query ``text``, whose vector :meth:`embed_query` then returns without
        another model call (a recall right after an edit pays one pass)."""
        self._ahead = text
        try:
            yield
        finally:
            self._ahead = None

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector: the one embedded ahead (see :meth:`query_ahead`)
        if it is this text's, else from the embedder. Raises EmbedderError."""
        embedder = self.embedder
        if embedder is None:
            raise EmbedderError(self.error or "no embedder")
        ahead, self._query_vector = self._query_vector, None
        if ahead is not None and ahead[:2] == (embedder.name, text):
            self.queries.put(embedder.name, text, ahead[2])
            return ahead[2]
        if self._gate.resting():
            # No call: it failed moments ago.
            raise EmbedderError(self._gate.reason or "embedder unavailable")
        kept = self.queries.get(embedder.name, text)
        if kept is not None:
            return kept
        try:
            vector = embedder.embed_query(text)
        except EmbedderError as exc:
            self._gate.failed(exc)
            raise
        self._gate.answered()
        self.queries.put(embedder.name, text, vector)
        return vector

    def close(self) -> None:
        self.close_cache()
