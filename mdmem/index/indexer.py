"""Keeps the derived indexes in step with the vault files, incrementally.

The vault's files are the truth; the manifest records what the indexes hold.
For each changed file the new blocks are diffed against the manifest rows:

* a block whose searchable metadata (text, heading, kind, tags, scope,
  status, dates, path) changed is re-indexed in Whoosh;
* a block is (re-)embedded only if its text changed, and then the embedding
  cache (model, hash of the embedded text) is asked first, so moving,
  renaming or re-tagging a block never calls the embedder;
* blocks that disappeared are deleted from both indexes.

Whoosh commits to disk on every change. FAISS lives in memory and is saved
atomically at checkpoints (batch end, close, every few hundred changes); a
crash between checkpoints is repaired on the next open from the embedding
cache, which is written synchronously. A ``generation`` counter in the
manifest lets another process notice writes and catch its FAISS copy up.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdmem.errors import DimensionMismatchError, EmbedderError, IndexError_
from mdmem.index.keyword import BulkStream, KeywordIndex
from mdmem.index.manifest import Manifest
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.config import Settings
    from mdmem.index.embedders import Embedder
    from mdmem.index.vector import EmbeddingCache, VectorIndex
    from mdmem.store.catalog import Catalog

__all__ = ["INDEX_VERSION", "IndexStats", "Indexer", "embed_key", "embed_text", "indexable"]

log = logging.getLogger("mdmem")

# 2: a copied line (an id on two lines) is a block of its own, keyed by its
# place; indexes built before hold one of the two lines only.
INDEX_VERSION = "2"
_SAVE_EVERY = 256  # vector changes between checkpoints
_SAVE_SECONDS = 30.0
_EMBED_BATCH = 256
_TAG = re.compile(r"(?<![\w&/#])#([A-Za-z_][\w/-]*)")


def indexable(block: Block) -> bool:
    """Memories and heading sections are searched; frontmatter is not."""
    return block.is_memory or not block.id.endswith("#frontmatter")


def _memory_text(block: Block) -> bool:
    """A memory, or a copied line (keyed ``path#^m-…``, see the catalog): embedded
    as the memory it copies is, so both lines rank alike."""
    return block.is_memory or "#^" in block.id


def embed_text(block: Block) -> str:
    """What the embedder sees: the text without #tags, with the heading for sections.

    Tags stay out so re-tagging a block keeps its cached vector (tags are
    matched by the keyword index and the tag boost instead).
    """
    text = _TAG.sub(lambda m: m.group(1), block.text)
    if _memory_text(block) or not block.heading:
        return text
    return f"{block.heading}\n{text}"


def embed_key(block: Block) -> str:
    """The cache key: the block's content hash (normalised text, tags left out).

    So moving, renaming or re-tagging a block finds its vector in the cache.
    """
    if _memory_text(block) or not block.heading:
        return block.content_hash
    return hashlib.sha256(f"{block.heading}\0{block.content_hash}".encode()).hexdigest()[:32]


def _meta(block: Block) -> tuple[Any, ...]:
    return (
        block.path,
        block.heading,
        block.content_hash,
        block.text,
        block.kind,
        block.tags,
        block.scope,
        block.status,
        block.created,
        block.updated,
    )


@dataclass(frozen=True)
class IndexStats:
    blocks: int
    keyword_docs: int
    vectors: int
    embedder: str
    missing_vectors: int
    generation: int


class AppendStream:
    """The keyword stream of one batch, fed with the blocks it appends."""

    def __init__(self, stream: BulkStream) -> None:
        self._stream = stream

    def feed(self, blocks: Iterable[Block]) -> None:
        self._stream.feed(b for b in blocks if indexable(b))

    def finish(self, blocks: Sequence[Block]) -> bool:
        return self._stream.finish(blocks)

    def cancel(self) -> None:
        self._stream.cancel()


class Indexer:
    def __init__(self, state_dir: Path, settings: Settings, catalog: Catalog) -> None:
        self.state_dir = state_dir
        self.settings = settings
        self.catalog = catalog
        self.manifest = Manifest(state_dir / "manifest.sqlite")
        self._lock = threading.RLock()
        self._embedder: Embedder | None = None
        self._embedder_error: str | None = None
        self._vectors: VectorIndex | None = None
        self._cache: EmbeddingCache | None = None
        self._unsaved = 0
        self._last_save = time.monotonic()
        self._generation_seen = -1
        self.missing_vectors: set[str] = set()
        # A recall's query text, embedded in the same call as the blocks its
        # refresh embeds (one forward pass instead of two), and its vector.
        self._query_ahead: str | None = None
        self._query_vector: tuple[str, str, np.ndarray] | None = None
        self.keyword = self._open_keyword()

    # ------------------------------------------------------------ opening --

    def _open_keyword(self) -> KeywordIndex:
        directory = self.state_dir / "keyword"
        stale = self.manifest.get_meta("index_version") != INDEX_VERSION
        if not stale:
            try:
                return KeywordIndex(directory)
            except IndexError_ as exc:
                log.warning("keyword index unusable (%s); rebuilding it", exc)
        self.manifest.clear()
        index = KeywordIndex.create(directory)
        self.manifest.set_meta("index_version", INDEX_VERSION)
        return index

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, or None when vectors are off or unavailable."""
        if self._embedder is None and self._embedder_error is None:
            cfg = self.settings.embedder
            if cfg.provider in ("none", "off", ""):
                self._embedder_error = "vectors are switched off (embedder.provider = none)"
                return None
            from mdmem.index.embedders import make_embedder

            try:
                self._embedder = make_embedder(
                    cfg.provider,
                    cfg.model or None,
                    base_url=cfg.base_url or None,
                    api_key=self.settings.embedder_api_key(),
                    dim=cfg.dim or None,
                )
            except EmbedderError as exc:
                self._embedder_error = str(exc)
                log.warning("vector search disabled: %s", exc)
        return self._embedder

    @property
    def vectors(self) -> VectorIndex | None:
        if self._vectors is None:
            embedder = self.embedder
            if embedder is None:
                return None
            from mdmem.index.vector import VectorIndex

            hnsw = {"on": True, "off": False}.get(self.settings.embedder.hnsw)
            directory = self.state_dir / "vectors"
            try:
                vectors = VectorIndex(directory, dim=embedder.dim, model=embedder.name, hnsw=hnsw)
            except (IndexError_, DimensionMismatchError) as exc:
                log.warning("vector index unusable (%s); rebuilding it", exc)
                shutil.rmtree(directory, ignore_errors=True)
                vectors = VectorIndex(directory, dim=embedder.dim, model=embedder.name, hnsw=hnsw)
            if vectors.stale_model:
                log.warning(
                    "embedding model changed (%s -> %s): re-embedding every block",
                    vectors.stored_model,
                    embedder.name,
                )
                vectors.reset(embedder.dim, embedder.name)
            self._vectors = vectors
            self._reconcile_vectors()
        return self._vectors

    @property
    def cache(self) -> EmbeddingCache:
        if self._cache is None:
            from mdmem.index.vector import EmbeddingCache

            self._cache = EmbeddingCache(self.state_dir / "embeddings.sqlite")
        return self._cache

    @property
    def embedder_problem(self) -> str | None:
        self.embedder  # noqa: B018 - resolve lazily
        return self._embedder_error

    def boot(self) -> None:
        """Load the catalog from the manifest, then index whatever changed."""
        self.catalog.load_manifest(self.manifest)
        delta = self.catalog.scan()
        if delta:
            self.apply(delta.changed, delta.removed)
        expected = sum(1 for b in self.catalog.blocks() if indexable(b))
        if len(self.keyword) != expected:
            self._reconcile_keyword()

    def close(self) -> None:
        with self._lock:
            self.checkpoint(force=True)
            self.keyword.close()
            if self._cache is not None:
                self._cache.close()
            self.manifest.close()

    # ------------------------------------------------------------ updates --

    def apply(self, changed: Iterable[str], removed: Iterable[str]) -> None:
        """Re-index whole files: diff their new blocks against the manifest.

        The manifest is updated only after both indexes took the change: if
        a write fails (another process holds the keyword index's lock), the
        manifest still describes what the indexes hold, and the next try
        diffs against it again.
        """
        with self._lock:
            removed = list(removed)
            changed = list(changed)
            # A file whose copied line took its id over changed keys, not text.
            changed += [p for p in self.catalog.take_rekeyed() if p not in {*changed, *removed}]
            upserts: list[Block] = []
            deletes: list[str] = []
            to_embed: list[Block] = []
            records: list[tuple[str, Any, list[Block]]] = []
            for path in removed:
                old_ids = [b.id for b in self.manifest.blocks(path)]
                deletes.extend(old_ids)
                records.append((path, None, []))
            for path in changed:
                state = self.catalog.files.get(path)
                if state is None:
                    continue
                old = {b.id: b for b in self.manifest.blocks(path)}
                new = [b for b in state.parsed.blocks if indexable(b)]
                new_ids = {b.id for b in new}
                deletes.extend(i for i in old if i not in new_ids)
                for block in new:
                    before = old.get(block.id)
                    if before is None or _meta(before) != _meta(block):
                        upserts.append(block)
                    text_changed = before is None or before.content_hash != block.content_hash
                    if text_changed or block.id in self.missing_vectors:
                        to_embed.append(block)
                records.append((path, self._file_row(path), list(state.parsed.blocks)))
            self._write(upserts, deletes, to_embed)
            for path, row, blocks in records:
                self.manifest.replace_file(path, row, blocks)

    def open_stream(self) -> AppendStream | None:
        """Keyword-index a large batch's appended blocks while it is built (see
        :meth:`KeywordIndex.open_stream`); None when that is not possible."""
        stream = self.keyword.open_stream()
        return AppendStream(stream) if stream is not None else None

    def add_appended(
        self,
        path: str,
        blocks: Sequence[Block],
        stream: AppendStream | None = None,
        *,
        rewritten: Sequence[tuple[Block, Block]] = (),
    ) -> None:
        """Index blocks appended to ``path`` and blocks rewritten in place
        (``(before, after)`` pairs); its other blocks are unchanged.

        ``stream``: the appended blocks' keyword documents were already fed there.
        """
        with self._lock:
            state = self.catalog.files.get(path)
            if state is None:
                if stream is not None:
                    stream.cancel()
                return
            fresh = [b for b in blocks if indexable(b)]
            start = len(state.parsed.blocks) - len(blocks)
            streamed = stream is not None and stream.finish(fresh)
            if fresh and not streamed:
                self.keyword.add_new(fresh)
            changed = [after for _, after in rewritten if indexable(after)]
            if changed:
                self.keyword.upsert(changed)
            to_embed = fresh + [
                after
                for before, after in rewritten
                if indexable(after) and before.content_hash != after.content_hash
            ]
            if to_embed:
                self._embed(to_embed)
            if fresh or changed:
                self._bump_generation()
            # After the indexes, as in apply(): a failed write leaves no claim.
            numbered = [(start + i, b) for i, b in enumerate(blocks)]
            if rewritten:
                position = {b.id: i for i, b in enumerate(state.parsed.blocks)}
                numbered += [(position[after.id], after) for _, after in rewritten]
            self.manifest.put_blocks(path, self._file_row(path), numbered)
            self.checkpoint()
            rekeyed = self.catalog.take_rekeyed()
            if rekeyed:
                self.apply(rekeyed, [])

    def _file_row(self, path: str) -> tuple[int, int, int, str, dict[str, Any], int]:
        state = self.catalog.files[path]
        mtime_ns, size, ino = state.signature
        parsed = state.parsed
        return (mtime_ns, size, ino, "", parsed.frontmatter, parsed.frontmatter_lines)

    def _write(self, upserts: list[Block], deletes: list[str], to_embed: list[Block]) -> None:
        if upserts or deletes:
            self.keyword.change(upserts=upserts, deletes=deletes)
        if deletes:
            vectors = self._vectors
            if vectors is not None:
                vectors.delete(deletes)
                self._unsaved += len(deletes)
            self.missing_vectors.difference_update(deletes)
        if to_embed:
            self._embed(to_embed)
        if upserts or deletes or to_embed:
            self._bump_generation()
        self.checkpoint()

    def _embed(
        self, blocks: Sequence[Block], progress: Callable[[int], None] | None = None
    ) -> None:
        vectors = self.vectors
        embedder = self._embedder
        if vectors is None or embedder is None:
            self.missing_vectors.update(b.id for b in blocks)
            return
        for start in range(0, len(blocks), _EMBED_BATCH):
            chunk = blocks[start : start + _EMBED_BATCH]
            keys = [embed_key(b) for b in chunk]
            try:
                cached = self._cached_embeddings(embedder, chunk, keys)
            except EmbedderError as exc:
                log.warning("embedding failed (%s); those blocks are keyword-only", exc)
                self.missing_vectors.update(b.id for b in chunk)
                continue
            matrix = np.stack([cached[k] for k in keys]).astype(np.float32)
            vectors.upsert([b.id for b in chunk], matrix)
            self.missing_vectors.difference_update(b.id for b in chunk)
            self._unsaved += len(chunk)
            if progress is not None:
                progress(len(chunk))

    def _cached_embeddings(
        self, embedder: Embedder, chunk: Sequence[Block], keys: list[str]
    ) -> dict[str, np.ndarray]:
        """Vectors of ``chunk`` by cache key: from the cache, the rest embedded
        in one call and cached. Raises EmbedderError."""
        cached = self.cache.get_many(embedder.name, keys)
        todo = {k: embed_text(b) for b, k in zip(chunk, keys, strict=True) if k not in cached}
        if todo:
            query, self._query_ahead = self._query_ahead, None
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
            self.cache.put_many(embedder.name, new_items)
            cached.update(new_items)
        return cached

    @contextmanager
    def query_ahead(self, text: str) -> Iterator[None]:
        """Inside, blocks that need embedding are embedded together with the
        query ``text``, whose vector :meth:`embed_query` then returns without
        another model call (a recall right after an edit pays one pass)."""
        self._query_ahead = text
        try:
            yield
        finally:
            self._query_ahead = None

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector: the one embedded ahead (see :meth:`query_ahead`)
        if it is this text's, else from the embedder. Raises EmbedderError."""
        embedder = self.embedder
        if embedder is None:
            raise EmbedderError(self._embedder_error or "no embedder")
        ahead, self._query_vector = self._query_vector, None
        if ahead is not None and ahead[:2] == (embedder.name, text):
            return ahead[2]
        return embedder.embed_query(text)

    def warm_cache(self, blocks: Sequence[Block]) -> None:
        """Embed ``blocks`` into the embedding cache only (batched; raises
        EmbedderError): later one-by-one lookups, and the indexing, find them."""
        embedder = self.embedder
        if embedder is None:
            return
        for start in range(0, len(blocks), _EMBED_BATCH):
            chunk = blocks[start : start + _EMBED_BATCH]
            self._cached_embeddings(embedder, chunk, [embed_key(b) for b in chunk])

    def checkpoint(self, *, force: bool = False) -> None:
        """Save FAISS if enough changed (or ``force``); atomic, see VectorIndex.save."""
        vectors = self._vectors
        if vectors is None or not self._unsaved:
            return
        due = self._unsaved >= _SAVE_EVERY or time.monotonic() - self._last_save > _SAVE_SECONDS
        if force or due or len(vectors) < 2_000:
            vectors.save()
            self._unsaved = 0
            self._last_save = time.monotonic()

    def _bump_generation(self) -> None:
        current = int(self.manifest.get_meta("generation") or 0) + 1
        self.manifest.set_meta("generation", str(current))
        self._generation_seen = current

    def catch_up(self) -> None:
        """Another process wrote since we looked: bring our FAISS copy in step."""
        current = int(self.manifest.get_meta("generation") or 0)
        if current != self._generation_seen:
            with self._lock:
                self._generation_seen = current
                if self._vectors is not None:
                    self._reconcile_vectors()

    # ------------------------------------------------------- reconciling --

    def _reconcile_keyword(self) -> None:
        wanted = {b.id: b for b in self.catalog.blocks() if indexable(b)}
        have = self.keyword.ids()
        extra = have - wanted.keys()
        missing = [b for i, b in wanted.items() if i not in have]
        if extra or missing:
            self.keyword.change(upserts=missing, deletes=extra)
            log.info("keyword index repaired: %d added, %d removed", len(missing), len(extra))

    def _reconcile_vectors(self) -> None:
        vectors = self._vectors
        if vectors is None:
            return
        wanted = {b.id: b for b in self.catalog.blocks() if indexable(b)}
        have = vectors.ids()
        extra = have - wanted.keys()
        if extra:
            vectors.delete(extra)
        missing = [b for i, b in wanted.items() if i not in have]
        if missing:
            self._embed(missing)
        if extra or missing:
            self._unsaved += len(extra) + len(missing)
            self.checkpoint()

    # ------------------------------------------------------------ rebuild --

    def rebuild(self, progress: Callable[[str, int, int], None] | None = None) -> int:
        """Drop both indexes and the manifest, then index every block again."""
        with self._lock:
            self.keyword.close()
            self.manifest.clear()
            self.keyword = KeywordIndex.create(self.state_dir / "keyword")
            self.manifest.set_meta("index_version", INDEX_VERSION)
            if self._vectors is not None and self._embedder is not None:
                self._vectors.reset(self._embedder.dim, self._embedder.name)
            self.catalog.reset()
            self.catalog.scan()
            blocks = [b for b in self.catalog.blocks() if indexable(b)]
            total = len(blocks)

            def tick(count: int) -> None:
                if progress is not None:
                    progress("keyword", min(count, total), total)

            self.keyword.add_many(blocks, bulk=total > 2_000, progress=tick)
            for path in self.catalog.files:
                self.manifest.replace_file(
                    path, self._file_row(path), self.catalog.files[path].parsed.blocks
                )
            done = 0

            def tick_vec(n: int) -> None:
                nonlocal done
                done += n
                if progress is not None:
                    progress("vectors", done, total)

            self.missing_vectors.clear()
            vectors = self.vectors
            if vectors is not None:
                self._embed(blocks, progress=tick_vec)
                # A full rebuild is where the index kind is chosen again, so
                # hnsw = auto switches to the graph index once the vault is large.
                vectors.rebuild()
            self._bump_generation()
            self.checkpoint(force=True)
            return total

    def stats(self) -> IndexStats:
        vectors = self.vectors
        return IndexStats(
            blocks=sum(1 for b in self.catalog.blocks() if indexable(b)),
            keyword_docs=len(self.keyword),
            vectors=len(vectors) if vectors is not None else 0,
            embedder=self._embedder.name if self._embedder is not None else "none",
            missing_vectors=len(self.missing_vectors),
            generation=int(self.manifest.get_meta("generation") or 0),
        )
