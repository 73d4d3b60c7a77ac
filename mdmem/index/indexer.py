"""Keeps the derived indexes in step with the vault files, incrementally.

The vault's files are the truth; the manifest records what the indexes hold.
For each changed file the new blocks are diffed against the manifest rows:

* a block whose searchable metadata (text, heading, kind, tags, scope,
  status, dates, path) changed is re-indexed in Whoosh;
* a block is (re-)embedded only if its text changed, and then the embedding
  cache (model, hash of the embedded text) is asked first, so moving,
  renaming or re-tagging a block never calls the embedder;
* blocks that disappeared are deleted from both indexes.

The indexes hold each block as :meth:`Indexer.derived` gives it: a secret a
person typed into a note is redacted there (the ``shown`` function the store
hands in), while the file, and the manifest that caches its parse, keep the
person's text.

Whoosh commits to disk on every change. FAISS lives in memory and is saved
atomically at checkpoints (batch end, close, every few hundred changes); a
crash between checkpoints is repaired on the next open from the embedding
cache, which is written synchronously. A ``generation`` counter in the
manifest lets another process notice writes and catch its FAISS copy up.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdmem.errors import DimensionMismatchError, EmbedderError, IndexError_, LockTimeoutError
from mdmem.files import health
from mdmem.files.health import DERIVED_ERRORS, error_line, file_id, quarantine
from mdmem.files.manifest import FileRow, Manifest
from mdmem.index.blocktext import AppendStream, embed_key, indexable
from mdmem.index.context import CONTEXT_VERSION, IndexedBlock, TurnOrder, context_of
from mdmem.index.embedding import EMBED_BATCH, EmbeddingService
from mdmem.index.keyword import KeywordIndex
from mdmem.index.progress import Progress, counter, silent
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.config import Settings
    from mdmem.files.catalog import Catalog
    from mdmem.index.vector import VectorIndex

__all__ = ["INDEX_VERSION", "AppendStream", "IndexStats", "Indexer"]

log = logging.getLogger("mdmem")

# 2: documents and vectors hold text with secrets redacted; an index built
# before holds what a person typed. 3: a copied line (an id on two lines) is a
# block of its own, keyed by its place. Older indexes are rebuilt on open.
# 4: blocks carry index-only context (mdmem.index.context) in a field of its
# own and in what is embedded.
INDEX_VERSION = f"4.{CONTEXT_VERSION}"
_SAVE_EVERY = 256  # vector changes between checkpoints
_SAVE_SECONDS = 30.0
_BULK_FROM = 2_000  # changes from this many blocks go the bulk way
_BLOCK_FIELDS = [f.name for f in dataclass_fields(Block)]


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


class Indexer:
    """Both indexes and the manifest of one vault, kept in step with its catalog.

    Every part is a cache of the files, so none of them may stop the vault:
    a part that fails to open is rebuilt or left out (``problems()`` says
    which), a derived write that fails (a full disk, EIO, a lock held by
    another process) leaves its files in ``catalog.unindexed`` and is done
    again on the next call, and a remote embedder that does not answer is
    left alone for :data:`~mdmem.files.health.RETRY_SECONDS` while recall
    runs on keywords. Nothing here raises for a derived file's sake.
    """

    def __init__(
        self,
        state_dir: Path,
        settings: Settings,
        catalog: Catalog,
        *,
        embedding: EmbeddingService | None = None,
        shown: Callable[[str], str] | None = None,
    ) -> None:
        """``embedding``: the vault's embedding service (one is made from the
        settings if not given). ``shown``: text as the indexes may hold it
        (secrets redacted); it returns its argument itself when there is
        nothing to hide."""
        self.state_dir = state_dir
        self.settings = settings
        self.catalog = catalog
        self._shown = shown
        self.manifest = Manifest(state_dir / "manifest.sqlite")
        self._state_id = file_id(self.manifest.path)
        self._state_tried = time.monotonic()
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self.embedding = embedding or EmbeddingService(state_dir, settings)
        self._vectors: VectorIndex | None = None
        self._unsaved = 0
        self._last_save = time.monotonic()
        self._save_problem: str | None = None
        self._failing = False  # a derived write failed and has not succeeded since
        self._generation_seen = -1
        self._epoch_seen: str | None = None  # changes when any process rebuilds (catch_up)
        self.missing_vectors: set[str] = set()
        self._keyword_problem: str | None = None
        self._keyword: KeywordIndex | None = self._open_keyword()
        self._turns = TurnOrder(catalog.blocks_in)

    # ------------------------------------------------------------ opening --

    def _open_keyword(self) -> KeywordIndex | None:
        """The keyword index as the manifest knows it; rebuilt (with the
        manifest cleared, so every file is indexed again) when stale or
        damaged; None when it cannot be written at all."""
        directory = self.state_dir / "keyword"
        try:
            stale = self.manifest.get_meta("index_version") != INDEX_VERSION
        except IndexError_:
            stale = True
        if not stale:
            try:
                return KeywordIndex(directory)
            except IndexError_ as exc:
                log.warning("keyword index unusable (%s); rebuilding it", exc)
        with contextlib.suppress(IndexError_):
            self.manifest.clear()
        try:
            index = KeywordIndex.create(directory)
        except (IndexError_, OSError) as exc:
            self._keyword_problem = f"keyword index unusable: {error_line(exc)}"
            log.warning(
                "%s; recall uses the vectors or a scan until it is rebuilt", self._keyword_problem
            )
            return None
        with contextlib.suppress(IndexError_):
            self.manifest.set_meta("index_version", INDEX_VERSION)
        self._keyword_problem = None
        return index

    @property
    def keyword(self) -> KeywordIndex:
        """The keyword index; opened again (and refilled from the catalog) if it
        could not be before. Raises IndexError_ while it cannot be used."""
        index = self._keyword
        if index is None:
            with self._lock:
                if self._keyword is None:
                    self._keyword = self._reopen_keyword()
                index = self._keyword
        return index

    def _reopen_keyword(self) -> KeywordIndex:
        directory = self.state_dir / "keyword"
        try:
            try:
                index = KeywordIndex(directory)
            except IndexError_:
                index = KeywordIndex.create(directory)
        except (IndexError_, OSError) as exc:
            self._keyword_problem = f"keyword index unusable: {error_line(exc)}"
            raise IndexError_(self._keyword_problem) from None
        self._keyword_problem = None
        self._keyword = index
        with contextlib.suppress(*DERIVED_ERRORS):
            self._reconcile_keyword()
        return index

    @property
    def vectors(self) -> VectorIndex | None:
        """The vector index, or None while vectors are off or the embedder is
        unavailable (see :meth:`problems`)."""
        if self._vectors is None:
            dim = self.embedding.dim()  # a remote embedder may ask its server
            embedder = self.embedding.embedder
            if dim is None or embedder is None:
                return None
            from mdmem.index.vector import VectorIndex

            cfg = self.settings.embedder  # ``hnsw``: the old name of ``approximate``
            choice = cfg.hnsw if cfg.approximate == "auto" else cfg.approximate
            kind = {"on": True, "off": False}.get(choice)
            directory = self.state_dir / "vectors"
            try:
                vectors = VectorIndex(directory, dim=dim, model=embedder.name, approximate=kind)
            except (IndexError_, DimensionMismatchError) as exc:
                log.warning("vector index unusable (%s); rebuilding it", exc)
                shutil.rmtree(directory, ignore_errors=True)
                vectors = VectorIndex(directory, dim=dim, model=embedder.name, approximate=kind)
            if vectors.stale_model:
                log.warning(
                    "embedding model changed (%s -> %s): re-embedding every block",
                    vectors.stored_model,
                    embedder.name,
                )
                vectors.reset(dim, embedder.name)
            self._vectors = vectors
            with vectors.bulk():
                self._reconcile_vectors()
        return self._vectors

    def fill_missing_vectors(self, limit: int | None = 512) -> int:
        """Embed blocks whose vectors are missing (the embedder was down), at
        most ``limit`` per call so one recall stays short; returns how many."""
        if not self.missing_vectors or self.embedding.resting():
            return 0
        with self._lock:
            vectors = self.vectors
            if vectors is None:
                return 0
            wanted = [
                b
                for i in sorted(self.missing_vectors)
                if (b := self.catalog.block(i)) is not None and indexable(b)
            ]
            # Ids no longer in the vault need no vector.
            self.missing_vectors.intersection_update(b.id for b in wanted)
            todo = wanted if limit is None else wanted[:limit]
            if not todo:
                return 0
            before = len(self.missing_vectors)
            self._embed(todo)
            done = before - len(self.missing_vectors)
            if done:
                with contextlib.suppress(*DERIVED_ERRORS):
                    self._bump_generation()
                self.checkpoint()
            return done

    # ---------------------------------------------------------- the state --

    def ensure_state(self) -> bool:
        """Open the derived state again if its files vanished or were replaced
        under us (the state dir deleted while the vault is open), or move the
        manifest back to disk once it can be written again. True when the
        state was re-opened: it is then rebuilt from the files."""
        current = file_id(self.manifest.path)
        if not self.manifest.in_memory:
            if current == self._state_id:
                return False
            with self._lock:
                if current is None:
                    log.warning(
                        "derived state in %s disappeared; rebuilding it from the files",
                        self.state_dir,
                    )
                self._reopen_state(None)
            return True
        if time.monotonic() - self._state_tried < health.RETRY_SECONDS:
            return False
        self._state_tried = time.monotonic()
        probe = Manifest(self.state_dir / "manifest.sqlite")
        if probe.in_memory:
            with contextlib.suppress(*DERIVED_ERRORS):
                probe.close()
            return False
        with self._lock:
            log.warning(
                "the state dir %s is writable again; rebuilding from the files", self.state_dir
            )
            self._reopen_state(probe)
        return True

    def _reopen_state(self, manifest: Manifest | None) -> None:
        """A new manifest, a keyword index that matches it, and every file
        indexed again; vectors computed in this process are kept (and saved
        to the new place)."""
        self._state_tried = time.monotonic()
        with contextlib.suppress(OSError):
            self.state_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(*DERIVED_ERRORS):
            self.manifest.close()
        self.manifest = manifest or Manifest(self.state_dir / "manifest.sqlite")
        self._state_id = file_id(self.manifest.path)
        if self._keyword is not None:
            self._keyword.close()
        self._keyword = self._open_keyword()
        self.embedding.close_cache()
        if self._vectors is not None:
            self._unsaved += 1  # the vectors file may have gone with the state dir
        self._generation_seen = -1
        self.catalog.reset()
        self.boot()

    def boot(self, progress: Progress | None = None) -> None:
        """Load the catalog from the manifest, then index whatever changed (``progress``
        hears how far: with the state dir gone, that is the whole vault)."""
        self._progress = progress
        try:
            self._boot()
        finally:
            self._progress = None

    def _boot(self) -> None:
        try:
            self.catalog.load_manifest(self.manifest)
        except IndexError_ as exc:
            # A manifest damaged past what opening it showed: the files decide.
            log.warning("%s; reading the vault's files instead", exc)
            self.catalog.reset()
            self._reopen_manifest_only(damaged=True)
        with contextlib.suppress(*DERIVED_ERRORS):
            self._epoch_seen = self.manifest.get_meta("epoch") or ""
        delta = self.catalog.scan()
        if delta or self.catalog.unindexed or self.catalog.resigned:
            self.apply(delta.changed, delta.removed)
        try:
            expected = sum(1 for b in self.catalog.blocks() if indexable(b))
            if len(self.keyword) != expected:
                self._reconcile_keyword()
        except DERIVED_ERRORS as exc:
            log.warning("keyword index not checked at open (%s)", error_line(exc))

    def _reopen_manifest_only(self, *, damaged: bool) -> None:
        with contextlib.suppress(*DERIVED_ERRORS):
            self.manifest.close()
        if damaged:
            quarantine(self.manifest.path)
        self.manifest = Manifest(self.state_dir / "manifest.sqlite")
        self._state_id = file_id(self.manifest.path)
        with contextlib.suppress(IndexError_):
            self.manifest.set_meta("index_version", INDEX_VERSION)

    def close(self) -> None:
        with self._lock:
            self.checkpoint(force=True)
            if self._vectors is not None:
                self._vectors.close()
            if self._keyword is not None:
                self._keyword.close()
            self.embedding.close()
            with contextlib.suppress(*DERIVED_ERRORS):
                self.manifest.close()

    # ------------------------------------------------------------ updates --

    def derived(self, block: Block, previous: Block | None = None) -> Block:
        """``block`` as the keyword and vector indexes hold it.

        A memory becomes an :class:`IndexedBlock` with its index-only context
        (date, speaker, the turn before it: :func:`context_of`); ``previous``
        is that turn when the caller knows it better than the catalog (a
        batch being streamed), else the catalog's file is asked.

        The writer refuses or redacts secrets before a file sees them, but a
        person may type one into a note: the file is theirs and keeps it, the
        indexes (and so recall) get it redacted. The content hash changes
        with the text, so the embedding cache never serves the vector of
        the unredacted text.
        """
        if self._shown is not None:
            text = self._shown(block.text)
            heading = self._shown(block.heading) if block.heading else block.heading
            if text is not block.text or heading is not block.heading:
                digest = hashlib.sha256(f"redacted\0{heading}\0{text}".encode()).hexdigest()
                block = replace(block, text=text, heading=heading, content_hash=digest[:32])
        if not block.is_memory:
            return block
        if previous is None:
            previous = self._turns.previous(block)
        if previous is not None and self._shown is not None:
            previous = replace(previous, text=self._shown(previous.text))
        # The content hash (the embedding cache key) stays the text's: the
        # context is not embedded (see embed_text).
        fields = {name: getattr(block, name) for name in _BLOCK_FIELDS}
        return IndexedBlock(**fields, context=context_of(block, previous))

    def _derive(self, blocks: Iterable[Block]) -> list[Block]:
        return [self.derived(b) for b in blocks]

    def apply(self, changed: Iterable[str], removed: Iterable[str]) -> bool:
        """Re-index whole files: diff their new blocks against the manifest.

        Files left behind earlier (``catalog.unindexed``) are included. The
        manifest is updated only after both indexes took the change: if a
        write fails (a full disk, another process holding the keyword index's
        lock), the manifest still describes what the indexes hold, the files
        stay in ``catalog.unindexed`` and the next call diffs them again.
        Returns False when that happened (it is logged, never raised).
        """
        with self._lock:
            changed, removed = list(changed), list(removed)
            # A file whose copied line took its id over changed keys, not text.
            rekeyed = self.catalog.take_rekeyed()
            changed += [p for p in rekeyed if p not in {*changed, *removed}]
            todo = dict.fromkeys([*changed, *removed, *sorted(self.catalog.unindexed)])
            live = [p for p in todo if p in self.catalog.files]
            gone = [p for p in todo if p not in self.catalog.files]
            appended = {p: self.catalog.take_appended(p) for p in live}
            starts = {p: a for p, a in appended.items() if a is not None and p not in rekeyed}
            try:
                self._apply(live, gone, starts)
            except DERIVED_ERRORS as exc:
                self._fell_behind(todo, exc)
                return False
            self.catalog.unindexed.difference_update(todo)
            self._failing = False
            resigned = [p for p in self.catalog.take_resigned() if p not in todo]
            if resigned:
                with contextlib.suppress(*DERIVED_ERRORS):  # the next open checks the bytes again
                    self.manifest.put_files((p, self._file_row(p)) for p in resigned)
            return True

    def _apply(
        self, changed: list[str], removed: list[str], appended: dict[str, int] | None = None
    ) -> None:
        """``appended``: files whose only change since the state the indexes hold
        is blocks appended from that position (see Catalog.take_appended): only
        those are compared and recorded, so a write after another process's
        stays O(new blocks), not O(file)."""
        upserts: list[Block] = []
        deletes: list[str] = []
        to_embed: list[Block] = []
        records: list[tuple[str, Any, list[Block]]] = []
        partial: list[tuple[str, Any, list[tuple[int, Block]]]] = []
        for path in removed:
            old_ids = [b.id for b in self.manifest.blocks(path)]
            deletes.extend(old_ids)
            records.append((path, None, []))
        for path in changed:
            state = self.catalog.files.get(path)
            if state is None:
                continue
            start = (appended or {}).get(path)
            if start is None:
                old = {b.id: b for b in self.manifest.blocks(path)}
                new = [b for b in state.parsed.blocks if indexable(b)]
            else:
                old = {b.id: b for b in self.manifest.blocks_from(path, start)}
                new = [b for b in state.parsed.blocks[start:] if indexable(b)]
            new_ids = {b.id for b in new}
            deletes.extend(i for i in old if i not in new_ids)
            for block in new:
                # Compared as parsed (the manifest holds the parse), indexed as derived.
                before = old.get(block.id)
                if before is None or _meta(before) != _meta(block):
                    upserts.append(self.derived(block))
                text_changed = before is None or before.content_hash != block.content_hash
                if text_changed or block.id in self.missing_vectors:
                    to_embed.append(self.derived(block))
            if start is None:
                records.append((path, self._file_row(path), list(state.parsed.blocks)))
            else:
                tail = list(enumerate(state.parsed.blocks[start:], start))
                partial.append((path, self._file_row(path), tail))
        self._write(upserts, deletes, to_embed)
        for path, row, blocks in records:
            self.manifest.replace_file(path, row, blocks)
        for path, row, numbered in partial:
            self.manifest.put_blocks(path, row, numbered)

    def _fell_behind(self, paths: Iterable[str], exc: BaseException) -> None:
        """A derived write failed: the markdown (and its commit) hold the change,
        the indexes catch up on the next call that indexes."""
        paths = list(paths)
        self.catalog.unindexed.update(paths)
        first, self._failing = not self._failing, True  # one warning per spell of failures
        if isinstance(exc, LockTimeoutError):
            log.warning("%s; recall uses the index as it is for now", exc)
        elif first:
            log.warning(
                "indexing %s failed (%s): the files and git hold the change; "
                "the indexes catch up on the next call",
                ", ".join(paths[:3]) + (" ..." if len(paths) > 3 else ""),
                error_line(exc),
            )

    def open_stream(self) -> AppendStream | None:
        """Keyword-index a large batch's appended blocks while it is built (see
        :meth:`KeywordIndex.open_stream`); None when that is not possible."""
        try:
            stream = self.keyword.open_stream()
        except DERIVED_ERRORS:
            return None  # indexed at the flush, or retried after it
        return AppendStream(stream, self.derived) if stream is not None else None

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
        A file whose earlier change the indexes may lack (``catalog.unindexed``)
        is indexed whole instead: recording only this change would give the
        manifest the file's new signature with some of its blocks missing,
        and a later open would trust that row and never see them.
        """
        with self._lock:
            state = self.catalog.files.get(path)
            if state is None or path in self.catalog.unindexed:
                if stream is not None:
                    stream.cancel()
                if state is not None:
                    self.apply([path], [])
                return
            try:
                self._add_appended(path, state.parsed.blocks, blocks, stream, rewritten)
            except DERIVED_ERRORS as exc:
                if stream is not None:
                    stream.cancel()
                self._fell_behind([path], exc)
                return
            rekeyed = self.catalog.take_rekeyed()
            if rekeyed:
                self.apply(rekeyed, [])

    def _add_appended(
        self,
        path: str,
        all_blocks: list[Block],
        blocks: Sequence[Block],
        stream: AppendStream | None,
        rewritten: Sequence[tuple[Block, Block]],
    ) -> None:
        fresh = self._derive(b for b in blocks if indexable(b))
        start = len(all_blocks) - len(blocks)
        streamed = stream is not None and stream.finish(fresh)
        if fresh and not streamed:
            self.keyword.add_new(fresh)
        changed = self._derive(after for _, after in rewritten if indexable(after))
        if changed:
            self.keyword.upsert(changed)
        to_embed = fresh + self._derive(
            after
            for before, after in rewritten
            if indexable(after) and before.content_hash != after.content_hash
        )
        if to_embed:
            self._embed(to_embed)
        if fresh or changed:
            self._bump_generation()
        # After the indexes, as in apply(): a failed write leaves no claim.
        numbered = [(start + i, b) for i, b in enumerate(blocks)]
        if rewritten:
            position = {b.id: i for i, b in enumerate(all_blocks)}
            numbered += [(position[after.id], after) for _, after in rewritten]
        self.manifest.put_blocks(path, self._file_row(path), numbered)
        self.checkpoint()

    def _file_row(self, path: str) -> FileRow:
        state = self.catalog.files[path]
        mtime_ns, size, ino = state.signature
        digest = state.digest
        parsed = state.parsed
        if path in self.catalog.damaged:
            # Recorded as matching no stat or bytes: every process reads the file
            # again and so learns where its bad bytes are (recall's degraded, doctor).
            mtime_ns, size, ino, digest = 0, 0, 0, None
        fields = self.catalog.fields_signature(path)
        return (mtime_ns, size, ino, fields, parsed.frontmatter, parsed.frontmatter_lines, digest)

    def _write(self, upserts: list[Block], deletes: list[str], to_embed: list[Block]) -> None:
        tell = self._progress or silent
        if len(upserts) > _BULK_FROM:
            # A first open, or a pull of many files: the multiprocess writer
            # (documents of changed blocks replace theirs by id).
            if deletes:
                self.keyword.delete(deletes)
            self.keyword.add_many(
                upserts, bulk=True, progress=lambda n: tell("keyword", n, len(upserts))
            )
        elif upserts or deletes:
            tell("keyword", 0, len(upserts))
            self.keyword.change(upserts=upserts, deletes=deletes)
            tell("keyword", len(upserts), len(upserts))
        if deletes:
            vectors = self._vectors
            if vectors is not None:
                vectors.delete(deletes)
                self._unsaved += len(deletes)
            self.missing_vectors.difference_update(deletes)
        if to_embed:
            self._embed(to_embed, progress=counter(tell, "vectors", len(to_embed)))
        if upserts or deletes or to_embed:
            self._bump_generation()
        self.checkpoint()

    def _embed(
        self, blocks: Sequence[Block], progress: Callable[[int], None] | None = None
    ) -> None:
        vectors = self.vectors
        if vectors is None or self.embedding.usable() is None:
            self.missing_vectors.update(b.id for b in blocks)
            return
        # Many vectors at once: the index kind is chosen once, at the end.
        with vectors.bulk() if len(blocks) > _BULK_FROM else contextlib.nullcontext():
            self._embed_chunks(vectors, blocks, progress)

    def _embed_chunks(self, vectors: VectorIndex, blocks: Sequence[Block], progress: Any) -> None:
        for start in range(0, len(blocks), EMBED_BATCH):
            chunk = blocks[start : start + EMBED_BATCH]
            try:
                found = self.embedding.vectors(chunk)
            except EmbedderError:
                # Unreachable or refusing: the rest waits (keyword-only meanwhile)
                # instead of paying for a failing call per chunk.
                self.missing_vectors.update(b.id for b in blocks[start:])
                return
            matrix = np.stack([found[embed_key(b)] for b in chunk]).astype(np.float32)
            vectors.upsert([b.id for b in chunk], matrix)
            self.missing_vectors.difference_update(b.id for b in chunk)
            self._unsaved += len(chunk)
            if progress is not None:
                progress(len(chunk))

    def warm_cache(self, blocks: Sequence[Block]) -> None:
        """Embed ``blocks``, as the indexes will hold them, into the embedding
        cache only (batched; raises EmbedderError)."""
        self.embedding.warm(self._derive(blocks))

    def checkpoint(self, *, force: bool = False) -> None:
        """Save FAISS if enough changed (or ``force``); atomic, see VectorIndex.save.

        A failed save (a full disk) keeps the vectors in memory and is tried
        again at the next checkpoint; a crash meanwhile is repaired at the
        next open from the embedding cache.
        """
        vectors = self._vectors
        if vectors is None or not self._unsaved:
            return
        due = self._unsaved >= _SAVE_EVERY or time.monotonic() - self._last_save > _SAVE_SECONDS
        if force or due or len(vectors) < 2_000:
            try:
                vectors.save()
            except DERIVED_ERRORS as exc:
                if self._save_problem is None:
                    log.warning("%s; kept in memory, saved again later", exc)
                self._save_problem = f"vector index not saved: {error_line(exc)}"
                self._last_save = time.monotonic()
                return
            self._save_problem = None
            self._unsaved = 0
            self._last_save = time.monotonic()

    def _bump_generation(self) -> None:
        current = int(self.manifest.get_meta("generation") or 0) + 1
        self.manifest.set_meta("generation", str(current))
        self._generation_seen = current

    def catch_up(self) -> None:
        """Another process wrote since we looked: bring our FAISS copy in step."""
        try:
            current = int(self.manifest.get_meta("generation") or 0)
            epoch = self.manifest.get_meta("epoch") or ""
        except DERIVED_ERRORS:
            return  # the manifest cannot tell now; the next call asks again
        if self._epoch_seen is not None and epoch != self._epoch_seen:
            # Another process rebuilt the indexes: our Whoosh reader may hold the
            # old files (a new index can even reuse our generation number).
            with self._lock:
                self._epoch_seen = epoch
                if self._keyword is not None:
                    self._keyword.close()
                    self._keyword = None  # reopened, and reconciled, on next use
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
        missing = self._derive(b for i, b in wanted.items() if i not in have)
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
        missing = self._derive(b for i, b in wanted.items() if i not in have)
        if missing:
            self._embed(missing)
        if extra or missing:
            self._unsaved += len(extra) + len(missing)
            self.checkpoint()

    # ------------------------------------------------------------ rebuild --

    def rebuild(self, progress: Callable[[str, int, int], None] | None = None) -> int:
        """Drop both indexes and the manifest, then index every block again.

        A manifest that is damaged or had to live in memory is started again
        on disk first, and a resting embedder is asked again. Raises
        IndexError_ if the state dir still cannot be written.
        """
        with self._lock:
            with contextlib.suppress(OSError):
                self.state_dir.mkdir(parents=True, exist_ok=True)
            if self._keyword is not None:
                self._keyword.close()
                self._keyword = None
            damaged = self.manifest.check() is not None
            if damaged or self.manifest.in_memory or not self.manifest.path.exists():
                self._reopen_manifest_only(damaged=damaged)
            if self.manifest.problem is not None:
                raise IndexError_(f"cannot rebuild the indexes: {self.manifest.problem}")
            previous = int(self.manifest.get_meta("generation") or 0)
            self.manifest.clear()
            # The generation keeps growing and the epoch changes, so that a
            # long-lived process (warm server, MCP server) sees in catch_up()
            # that its index handles predate this rebuild.
            self.manifest.set_meta("generation", str(previous))
            self._epoch_seen = secrets.token_hex(8)
            self.manifest.set_meta("epoch", self._epoch_seen)
            try:
                self._keyword = KeywordIndex.create(self.state_dir / "keyword")
            except OSError as exc:
                raise IndexError_(f"cannot rebuild the keyword index: {exc}") from None
            self._keyword_problem = None
            self.manifest.set_meta("index_version", INDEX_VERSION)
            self.embedding.retry()
            if self._vectors is not None and self.embedding.loaded:
                self._vectors.reset(self._vectors.dim, self.embedding.name)
            self.catalog.reset()
            self.catalog.scan()
            blocks = self._derive(b for b in self.catalog.blocks() if indexable(b))
            total = len(blocks)

            def tick(count: int) -> None:
                if progress is not None:
                    progress("keyword", min(count, total), total)

            self._keyword.add_many(blocks, bulk=total > 2_000, progress=tick)
            for path in self.catalog.files:
                self.manifest.replace_file(
                    path, self._file_row(path), self.catalog.files[path].parsed.blocks
                )
            self.catalog.unindexed.clear()
            done = 0

            def tick_vec(n: int) -> None:
                nonlocal done
                done += n
                if progress is not None:
                    progress("vectors", done, total)

            self.missing_vectors.clear()
            vectors = self.vectors
            if vectors is not None:
                # One choice of index kind at the end (approximate = auto:
                # exact up to EXACT_MAX vectors), not a switch on the way.
                with vectors.bulk():
                    self._embed(blocks, progress=tick_vec)
            else:
                self.missing_vectors.update(b.id for b in blocks)
            self._bump_generation()
            self._unsaved += 1  # the rebuilt index is saved even if nothing was embedded
            self.checkpoint(force=True)
            return total

    def stats(self) -> IndexStats:
        """Counts of what the indexes hold; a part that cannot answer counts 0
        (:meth:`problems` says why)."""
        vectors = self.vectors
        try:
            keyword_docs = len(self.keyword)
        except IndexError_:
            keyword_docs = 0
        try:
            generation = int(self.manifest.get_meta("generation") or 0)
        except IndexError_:
            generation = self._generation_seen
        return IndexStats(
            blocks=sum(1 for b in self.catalog.blocks() if indexable(b)),
            keyword_docs=keyword_docs,
            vectors=len(vectors) if vectors is not None else 0,
            embedder=self.embedding.name,
            missing_vectors=len(self.missing_vectors),
            generation=generation,
        )

    def recall_gaps(self) -> list[tuple[str, str]]:
        """What recall cannot see right now, as ``(part, reason)`` pairs with
        part "keyword" or "vector" (empty when both indexes hold every block)."""
        out: list[tuple[str, str]] = []
        if self._keyword is None:
            out.append(("keyword", self._keyword_problem or "keyword index unusable"))
        unindexed = len(self.catalog.unindexed)
        if unindexed:
            why = f"{unindexed} file(s) not indexed yet (a derived write failed; retried)"
            out += [("keyword", why), ("vector", why)]
        problem = self.embedding.problem
        if problem is not None:
            out.append(("vector", problem))
        elif self.missing_vectors:
            out.append(("vector", f"{len(self.missing_vectors)} block(s) without a vector yet"))
        return out

    def problems(self) -> list[str]:
        """What is wrong with the derived state right now, one line each (empty
        when every part is there and in step with the files as far as this
        process knows): recall's gaps, plus a manifest kept in memory and a
        vector index that could not be saved."""
        out = list(dict.fromkeys(why for _, why in self.recall_gaps()))
        if self.embedding.switched_off:  # no vectors by choice is not a fault
            out = [why for why in out if why != self.embedding.error]
        if self.manifest.problem is not None:
            out.append(f"manifest kept in memory: {self.manifest.problem}")
        if self._save_problem is not None:
            out.append(self._save_problem)
        if self.embedding.cache_problem is not None:
            out.append(f"embedding cache kept in memory: {self.embedding.cache_problem}")
        return out
