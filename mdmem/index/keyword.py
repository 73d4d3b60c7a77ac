"""The keyword half of recall: a Whoosh (BM25F) index of vault blocks.

The index is a derived cache that lives in a state directory outside the vault.
Anything wrong with it (corrupt files, another schema version) surfaces as
:class:`~mdmem.errors.IndexError_`, so the caller can delete and rebuild it from
the markdown; raw Whoosh, pickle or struct exceptions never escape.

User queries are natural language, never Whoosh syntax: the text is run through
each field's own analyzer and turned into an OR of weighted term queries, so
quotes, colons, ``AND``/``NOT``, ``*`` and the like are just characters.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sys
import threading
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mdmem.errors import IndexError_, InvalidInputError, LockTimeoutError
from mdmem.files.textfile import atomic_write
from mdmem.index.bm25 import FastScorer
from mdmem.models import Block

__all__ = ["BULK_WRITER_ARGS", "KeywordIndex", "build_schema"]

log = logging.getLogger(__name__)

_INDEX_NAME = "MAIN"
_VERSION_FILE = "mdmem-keyword.json"
# Whoosh cannot index an empty term, and scope "" (the vault root) must still be
# filterable; no real scope can contain angle brackets.
_ROOT_SCOPE = "<root>"

_CONTEXT_BOOST = 0.3
# Query-time field boosts. Tags are deliberate labels (Otto boosts memories
# whose tags appear in the query), headings describe a whole section, and path
# words ("daily", "USER") are weak evidence.
_FIELD_BOOSTS: tuple[tuple[str, float], ...] = (
    ("text", 1.0),
    ("heading", 0.5),
    ("tagtext", 1.5),
    ("path", 0.2),
    # Index-only context (mdmem.index.context): the event date, the speaker,
    # the turn before. Weaker evidence than the block's own words.
    ("context", _CONTEXT_BOOST),
)

QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "did",
        "does",
        "do",
        "was",
        "were",
        "has",
        "have",
        "had",
        "kind",
        "type",
        "many",
        "much",
        "long",
        "would",
        "could",
        "should",
    ]
)

#: Whoosh ``writer()`` arguments of bulk indexing (full rebuilds, large imports):
#: a multiprocess writer (``procs`` is capped at the CPU count) with a large
#: buffer. Public so ``bench/scale.py`` can time raw Whoosh with the same writer.
BULK_WRITER_ARGS: dict[str, Any] = {"limitmb": 256, "procs": 2, "multisegment": True}
_PROGRESS_EVERY = 500
_WORD_SPLIT = re.compile(r"[/\-_.]+")


def _whoosh() -> Any:
    try:
        import whoosh
    except ImportError as e:  # pragma: no cover - a core dependency
        raise IndexError_("the keyword index needs Whoosh: pip install whoosh-reloaded") from e
    # Also registers the analyzer's old module path, which indexes written by
    # earlier mdmem versions need to unpickle their schema (whoosh_compat).
    from mdmem.index.whoosh_compat import cache_missing_length_columns, zero_copy_buffer_files

    cache_missing_length_columns()
    zero_copy_buffer_files()
    return whoosh


_SUB_WRITERS_STARTING = 0  # >0 while our own code may fork Whoosh sub-writers
_PARENT_PID = 0


def _die_with_parent_in_child() -> None:
    if _SUB_WRITERS_STARTING <= 0:
        return
    # A Whoosh sub-writer waits on its job queue forever: if the process that
    # feeds it is killed, it would be left behind. The kernel kills it too.
    with contextlib.suppress(Exception):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != _PARENT_PID:  # the parent died before prctl took effect
            os._exit(1)


if sys.platform.startswith("linux") and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_die_with_parent_in_child)


@contextlib.contextmanager
def _sub_writers_die_with_us() -> Iterator[None]:
    """Around Whoosh calls that may fork sub-writers (multiprocess writer)."""
    global _SUB_WRITERS_STARTING, _PARENT_PID
    _PARENT_PID = os.getpid()
    _SUB_WRITERS_STARTING += 1
    try:
        yield
    finally:
        _SUB_WRITERS_STARTING -= 1


def _date_field(datetime_field: Any) -> Any:
    # Whoosh tiers a date into 8 terms (8-bit steps) for range queries, which
    # made dates a third of all postings and of the ingest cost. Two tiers
    # (the minute, and ~71-minute buckets) keep a year-long range to a few
    # thousand bucket terms. Dates are indexed to the minute (_minute): an
    # exact timestamp is a term of its own for every block, and unique terms
    # are what Whoosh writes slowest (a fifth of the indexing time). (An
    # attribute, not a subclass: the schema is pickled into the index.)
    field = datetime_field()
    field.shift_step = 32
    return field


def build_schema() -> Any:
    from whoosh.fields import DATETIME, ID, KEYWORD, TEXT, Schema

    from mdmem.index.whoosh_compat import FoldingStemAnalyzer

    analyzer = FoldingStemAnalyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        text=TEXT(analyzer=analyzer, phrase=False),
        heading=TEXT(analyzer=analyzer, phrase=False),
        # Exact, lowercased tags (with their ancestors) for filtering...
        tags=KEYWORD(lowercase=True, commas=True),
        # ...and the tag words, stemmed, so query words that name a tag score.
        tagtext=TEXT(analyzer=analyzer, phrase=False),
        path=TEXT(analyzer=analyzer, phrase=False),
        context=TEXT(analyzer=analyzer, phrase=False),
        kind=ID(),
        scope=ID(),
        status=ID(),
        created=_date_field(DATETIME),
        updated=_date_field(DATETIME),
    )


def _norm_text(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _naive_utc(dt: datetime) -> datetime:
    # Whoosh drops tzinfo without converting, so convert first; a naive datetime
    # is taken to be UTC already.
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt


def _minute(dt: datetime) -> datetime:
    """The UTC minute of ``dt``: the precision dates are indexed and filtered at."""
    if dt.tzinfo is UTC:  # what blocks carry: one replace instead of three steps
        return dt.replace(tzinfo=None, second=0, microsecond=0)
    return _naive_utc(dt).replace(second=0, microsecond=0)


def _norm_tag(tag: str) -> str:
    return tag.strip().lstrip("#").casefold()


def _tag_terms(tags: Iterable[str]) -> list[str]:
    """Each tag plus its ancestors, so filtering on ``project`` matches
    ``project/alpha`` as Obsidian's nested tags do."""
    out: list[str] = []
    for raw in tags:
        tag = _norm_tag(raw)
        if not tag:
            continue
        parts = [p for p in tag.split("/") if p]
        for i in range(1, len(parts) + 1):
            term = "/".join(parts[:i])
            if term not in out:
                out.append(term)
    return out


def _scope_term(scope: str) -> str:
    return scope if scope else _ROOT_SCOPE


def _doc(block: Block) -> dict[str, Any]:
    tags = _tag_terms(block.tags)
    # Every file is .md, so the suffix is no evidence; an empty heading is
    # left out rather than indexed (each field costs Whoosh per document).
    doc: dict[str, Any] = {
        "id": block.id,
        "text": _norm_text(block.text),
        "path": _WORD_SPLIT.sub(" ", block.path.removesuffix(".md")),
        "kind": block.kind,
        "scope": _scope_term(block.scope),
        "status": block.status,
        "created": _minute(block.created),
    }
    if block.heading:
        doc["heading"] = _norm_text(block.heading)
    context = getattr(block, "context", "")  # an IndexedBlock (mdmem.index.context)
    if context:
        doc["context"] = _norm_text(context)
    if tags:
        doc["tags"] = ",".join(tags)
        doc["tagtext"] = _WORD_SPLIT.sub(" ", " ".join(_norm_tag(t) for t in block.tags))
    if block.updated is not None:
        doc["updated"] = _minute(block.updated)
    return doc


class _SourceError(Exception):
    """The caller's iterable of blocks raised: re-raise that, not an index error."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(repr(error))
        self.error = error


def _guarded(blocks: Iterable[Block]) -> Iterator[Block]:
    it = iter(blocks)
    while True:
        try:
            block = next(it)
        except StopIteration:
            return
        except Exception as e:
            raise _SourceError(e) from e
        yield block


# Terms in more than this share of documents are dropped from a query (when
# the index is big enough for that to matter): their IDF is near zero, so
# they hardly change the ranking, yet Whoosh scores every posting in Python,
# and one such word ("said", "memory", the file name) can cost 100x the rest.
_MAX_DF_SHARE = 0.15
_DF_CACHE_TERMS = 100_000
_TERMS_OF_CACHE = 20_000
_PRUNE_FROM_DOCS = 500


class _Filters(NamedTuple):
    """Per field, the terms one of which a document must hold (None: no filter),
    and a date query: a mask for the fast scorer, :meth:`query` for Whoosh's."""

    terms: dict[str, list[str] | None]
    dates: Any

    def __bool__(self) -> bool:
        return self.dates is not None or any(t is not None for t in self.terms.values())

    def query(self) -> Any:
        from whoosh import query as q

        clauses: list[Any] = [
            q.Or([q.Term(field, t) for t in texts if t] or [q.NullQuery])
            for field, texts in self.terms.items()
            if texts is not None
        ]
        return q.And([*clauses, *([self.dates] if self.dates is not None else [])])


def _selective(
    searcher: Any, terms: list[tuple[str, str, float]], df: Callable[[str, str], int]
) -> list[tuple[str, str, float]]:
    total = searcher.doc_count_all()
    if total < _PRUNE_FROM_DOCS:
        return terms
    rated = [(df(f, t), (f, t, b)) for f, t, b in terms]
    kept = [term for df, term in rated if 0 < df <= total * _MAX_DF_SHARE]
    if not any(f == "text" for f, _, _ in kept):
        # Only common words: keep the rarest text term so the query still ranks.
        text_terms = sorted((df, term) for df, term in rated if term[0] == "text" and df > 0)
        kept += [term for _, term in text_terms[:1]]
    return kept or terms


def _is_whoosh_file(name: str) -> bool:
    return (
        name == _VERSION_FILE
        or name.startswith((_INDEX_NAME, "_" + _INDEX_NAME))
        or name.endswith((".toc", ".seg", ".lock", ".doclist"))
    )


class KeywordIndex:
    """A BM25F index of :class:`~mdmem.models.Block` objects in ``directory``.

    Opening a directory that holds no index creates one; opening one written
    with another :attr:`SCHEMA_VERSION`, or a damaged one, raises
    :class:`IndexError_` (rebuild with :meth:`create`). Writers take Whoosh's
    own write lock and give up with :class:`LockTimeoutError` after
    ``lock_timeout`` seconds. Searches are thread-safe.
    """

    # 3: the analyzer is FoldingStemAnalyzer (pickled into the index; indexes from
    # before the subpackages name it mdmem.whoosh_tuning, aliased in whoosh_compat).
    SCHEMA_VERSION: int = 3

    def __init__(
        self, directory: Path, *, lock_timeout: float = 5.0, fast_scoring: bool = True
    ) -> None:
        """``fast_scoring=False`` scores with Whoosh's own searcher (the
        reference the numpy scorer of :mod:`mdmem.index.bm25` is checked against)."""
        _whoosh()
        self.directory = Path(directory)
        self.lock_timeout = lock_timeout
        self._lock = threading.RLock()
        self._searcher: Any = None
        self._masks: dict[tuple[Any, ...], np.ndarray] = {}
        # Document frequencies of one index generation: a recall asks for the
        # same terms' several times (pruning, scoring, the gate, the second
        # round) and each answer is a hash lookup per segment in Whoosh.
        self._dfs: dict[tuple[str, str], int] = {}
        self._terms_of: dict[str, frozenset[str]] = {}
        # Our own copy for query analysis: Index.schema re-reads the TOC file.
        self._schema: Any = build_schema()
        self._fast: FastScorer | None = FastScorer() if fast_scoring else None
        self._stream: BulkStream | None = None
        self._ix: Any = self._open_or_create()

    # -- opening -----------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, *, lock_timeout: float = 5.0) -> KeywordIndex:
        """Wipe any index in ``directory`` and start an empty one.

        Only files that look like Whoosh's or ours are removed, so a wrong
        path given by mistake does not lose unrelated files.
        """
        directory = Path(directory)
        if directory.is_dir():
            for entry in directory.iterdir():
                if entry.is_dir() and entry.name.endswith(".tmp"):
                    shutil.rmtree(entry, ignore_errors=True)
                elif entry.is_file() and _is_whoosh_file(entry.name):
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()
        return cls(directory, lock_timeout=lock_timeout)

    def _open_or_create(self) -> Any:
        from whoosh import index

        d = self.directory
        version_path = d / _VERSION_FILE
        try:
            has_toc = d.is_dir() and any(
                p.name.startswith("_" + _INDEX_NAME) and p.name.endswith(".toc")
                for p in d.iterdir()
            )
        except OSError as e:
            raise IndexError_(f"keyword index at {d} is unreadable: {e}") from e
        if not has_toc and not version_path.exists():
            d.mkdir(parents=True, exist_ok=True)
            ix = index.create_in(str(d), build_schema(), indexname=_INDEX_NAME)
            self._write_version()
            return ix
        try:
            meta = json.loads(version_path.read_text(encoding="utf-8"))
            version = int(meta["schema_version"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IndexError_(
                f"keyword index at {d} has no readable {_VERSION_FILE}; rebuild it"
            ) from e
        if version != self.SCHEMA_VERSION:
            raise IndexError_(
                f"keyword index at {d} has schema version {version}, "
                f"this mdmem needs {self.SCHEMA_VERSION}; rebuild it"
            )
        if not has_toc:
            raise IndexError_(f"keyword index at {d} lost its table of contents; rebuild it")
        try:
            ix = index.open_dir(str(d), indexname=_INDEX_NAME)
            # Touch every segment now so damage shows up at open, not mid-recall.
            with ix.reader() as reader:
                reader.doc_count()
                for fieldname in ("id", "text"):
                    for _ in zip(range(1), reader.lexicon(fieldname), strict=False):
                        pass
            if set(ix.schema.names()) != set(build_schema().names()):
                raise IndexError_(f"keyword index at {d} has unexpected fields; rebuild it")
        except IndexError_:
            raise
        except Exception as e:  # whoosh/pickle/struct/OS errors alike
            raise IndexError_(f"keyword index at {d} is corrupt ({e!r}); rebuild it") from e
        return ix

    def _write_version(self) -> None:
        path = self.directory / _VERSION_FILE
        atomic_write(path, json.dumps({"schema_version": self.SCHEMA_VERSION}).encode())

    # -- writing -----------------------------------------------------------

    def _writer(self, **kwargs: Any) -> Any:
        from whoosh.index import LockError

        stream = self._stream
        if stream is not None and stream.active:
            # Any other write needs Whoosh's lock, which the stream holds: give
            # the streamed documents up (they are indexed at the end instead).
            log.info("keyword write during a streamed import; the import is indexed at its end")
            stream.cancel()
        from mdmem.index.whoosh_compat import inlining_codec

        codec = inlining_codec()
        if codec is not None:
            kwargs.setdefault("codec", codec)
        try:
            return self._ix.writer(timeout=self.lock_timeout, delay=0.05, **kwargs)
        except LockError as e:
            raise LockTimeoutError(
                f"keyword index at {self.directory} is locked by another writer "
                f"(waited {self.lock_timeout:g}s)"
            ) from e
        except Exception as e:
            raise IndexError_(f"cannot write keyword index at {self.directory}: {e!r}") from e

    @staticmethod
    def _abort(writer: Any) -> None:
        # Sub-writers of a multiprocess writer wait on a queue forever unless
        # stopped; MpWriter.cancel() does not reach them.
        for task in getattr(writer, "tasks", ()):
            with contextlib.suppress(Exception):
                task.terminate()
                task.join(5)
        with contextlib.suppress(Exception):
            writer.cancel()
        lock = getattr(writer, "writelock", None)
        if lock is not None and getattr(lock, "fd", None) is not None:
            with contextlib.suppress(Exception):
                lock.release()

    def _commit(self, writer: Any, fill: Callable[[Any], None]) -> None:
        try:
            fill(writer)
            writer.commit()
        except _SourceError as e:
            self._abort(writer)
            raise e.error from None
        except BaseException as e:
            self._abort(writer)
            if isinstance(e, (InvalidInputError, KeyboardInterrupt, SystemExit)):
                raise
            raise IndexError_(f"writing keyword index at {self.directory} failed: {e!r}") from e
        self._masks.clear()  # the searcher reopens what changed when next used
        self._dfs.clear()

    def add_many(
        self,
        blocks: Iterable[Block],
        *,
        bulk: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Index ``blocks`` in one commit; returns how many were written.

        Blocks whose id is already indexed replace the old document. With
        ``bulk=True`` (full rebuilds) a tuned multiprocess writer is used —
        about 2.5x faster on two cores; if it cannot start or loses a
        sub-writer's segment, the missing documents are written again with a
        plain writer. ``progress`` receives the running count of documents.
        """
        with self._lock:
            replace = len(self) > 0
            if bulk:
                return self._add_bulk(blocks, replace=replace, progress=progress)
            count = 0

            def fill(writer: Any) -> None:
                nonlocal count
                add = writer.update_document if replace else writer.add_document
                for block in _guarded(blocks):
                    add(**_doc(block))
                    count += 1
                    if progress is not None and count % _PROGRESS_EVERY == 0:
                        progress(count)

            self._commit(self._writer(), fill)
            if progress is not None:
                progress(count)
            return count

    def add_new(self, blocks: Sequence[Block]) -> int:
        """Index blocks whose ids are not in the index yet (fresh memories).

        Skips the delete-by-id that :meth:`upsert` pays per document, which
        is most of the cost of a large import.
        """
        with self._lock:
            if len(blocks) > 2_000:
                return self._add_bulk(blocks, replace=False, progress=None)

            def fill(writer: Any) -> None:
                for block in _guarded(blocks):
                    writer.add_document(**_doc(block))

            self._commit(self._writer(), fill)
            return len(blocks)

    def _add_bulk(
        self,
        blocks: Iterable[Block],
        *,
        replace: bool,
        progress: Callable[[int], None] | None,
    ) -> int:
        docs: list[dict[str, Any]] = []
        before = len(self)
        known = self.ids() if replace else set()

        source = _guarded(blocks)

        def feed(writer: Any) -> None:
            add = writer.update_document if replace else writer.add_document
            for block in source:
                doc = _doc(block)
                docs.append(doc)
                add(**doc)
                if progress is not None and len(docs) % _PROGRESS_EVERY == 0:
                    progress(len(docs))

        procs = min(int(BULK_WRITER_ARGS["procs"]), os.cpu_count() or 1)
        writer: Any = None
        try:
            if procs > 1:
                writer = self._writer(**dict(BULK_WRITER_ARGS, procs=procs))
            else:
                writer = self._writer(limitmb=int(BULK_WRITER_ARGS["limitmb"]))
            with _sub_writers_die_with_us():
                feed(writer)
                writer.commit()
        except (KeyboardInterrupt, SystemExit):
            self._abort(writer)
            raise
        except _SourceError as e:
            self._abort(writer)
            raise e.error from None
        except LockTimeoutError:
            raise
        except Exception as e:
            # Multiprocessing can fail in many environments (no /dev/shm,
            # fork limits, sandboxing); the single-process writer always works.
            log.warning("multiprocess keyword indexing failed (%r); retrying with one process", e)
            if writer is not None:
                self._abort(writer)
            self._invalidate()
            try:
                docs.extend(_doc(block) for block in source)  # what the failed writer left
            except _SourceError as e2:
                raise e2.error from None
            self._write_docs(docs, replace=replace)
            if progress is not None:
                progress(len(docs))
            return len(docs)
        self._invalidate()
        self._put_back_lost(docs, before, known)
        if progress is not None:
            progress(len(docs))
        return len(docs)

    def _put_back_lost(
        self, added: Sequence[dict[str, Any]] | Sequence[Block], before: int, known: set[str]
    ) -> None:
        """Re-add what a multiprocess commit lost (``added``: documents or blocks)."""

        def id_of(item: dict[str, Any] | Block) -> str:
            return item.id if isinstance(item, Block) else str(item["id"])

        if len(self) != before + len({id_of(a) for a in added} - known):
            # A sub-writer that died leaves its segment out of the commit
            # without an error; put back whatever is missing.
            present = self.ids()
            missing = [
                _doc(a) if isinstance(a, Block) else a for a in added if id_of(a) not in present
            ]
            log.warning("multiprocess keyword indexing lost %d documents; re-adding", len(missing))
            self._write_docs(missing, replace=True)

    def open_stream(self) -> BulkStream | None:
        """A multiprocess writer to feed fresh blocks while a batch is built.

        Whoosh's sub-writers then index on the other cores while the caller
        is still parsing and rendering, instead of after it. None where that
        cannot help (one core) or the writer cannot start; the caller then
        indexes at the end as usual.
        """
        procs = min(int(BULK_WRITER_ARGS["procs"]), os.cpu_count() or 1)
        if procs < 2:
            return None
        with self._lock:
            if self._stream is not None and self._stream.active:
                return None
            try:
                before = len(self)
                writer = self._writer(**dict(BULK_WRITER_ARGS, procs=procs))
            except Exception as e:
                log.info("keyword stream unavailable (%r); indexing at the end", e)
                return None
            self._stream = BulkStream(self, writer, before)
            return self._stream

    def _write_docs(self, docs: list[dict[str, Any]], *, replace: bool) -> None:
        def fill(writer: Any) -> None:
            add = writer.update_document if replace else writer.add_document
            for doc in docs:
                add(**doc)

        self._commit(self._writer(limitmb=int(BULK_WRITER_ARGS["limitmb"])), fill)

    def upsert(self, blocks: Iterable[Block]) -> None:
        """Add or replace ``blocks`` (matched on id) in one commit."""
        self.change(upserts=blocks, deletes=())

    def delete(self, ids: Iterable[str]) -> None:
        """Remove the documents with these block ids (unknown ids are ignored)."""
        self.change(upserts=(), deletes=ids)

    def change(self, *, upserts: Iterable[Block], deletes: Iterable[str]) -> None:
        """Remove ``deletes`` and add or replace ``upserts``, in one commit."""
        with self._lock:

            def fill(writer: Any) -> None:
                for block_id in deletes:
                    writer.delete_by_term("id", block_id)
                for block in _guarded(upserts):
                    writer.update_document(**_doc(block))

            self._commit(self._writer(), fill)

    # -- reading -----------------------------------------------------------

    def _invalidate(self) -> None:
        self._masks.clear()
        self._dfs.clear()
        if self._searcher is not None:
            with contextlib.suppress(Exception):
                self._searcher.close()
            self._searcher = None

    def _get_searcher(self) -> Any:
        # Reuse one searcher while the index is unchanged (a cheap TOC check,
        # which also sees commits by other processes), and after a commit
        # reopen only the segments that changed.
        old = self._searcher
        if old is None:
            from whoosh import scoring

            from mdmem.index.bm25 import K1, B

            self._searcher = self._ix.searcher(weighting=scoring.BM25F(B=B, K1=K1))
        elif self._ix.latest_generation() != old.reader().generation():
            from mdmem.index.whoosh_compat import reopened_searcher

            self._searcher = reopened_searcher(self._ix, old)
        if self._searcher is not old:
            self._masks.clear()
            self._dfs.clear()
        return self._searcher

    def _df(self, searcher: Any, field: str, text: str) -> int:
        """How many documents hold ``text`` in ``field``, cached for this generation."""
        key = (field, text)
        df = self._dfs.get(key)
        if df is None:
            if len(self._dfs) >= _DF_CACHE_TERMS:
                self._dfs.clear()
            df = self._dfs[key] = int(searcher.doc_frequency(field, text))
        return df

    def _allowed(self, searcher: Any, key: tuple[Any, ...], filters: _Filters) -> np.ndarray:
        """The mask of documents passing ``filters``, for the fast scorer;
        kept for this index generation (recall repeats its filters)."""
        mask = self._masks.get(key)
        if mask is None:
            assert self._fast is not None
            dated = None if filters.dates is None else searcher.docs_for_query(filters.dates)
            mask = self._fast.allowed(searcher, filters.terms, dated)
            if len(self._masks) >= 64:
                self._masks.clear()
            self._masks[key] = mask
        return mask

    def _read(self, fn: Callable[[Any], Any]) -> Any:
        with self._lock:
            for attempt in (0, 1):
                try:
                    return fn(self._get_searcher())
                except Exception as e:
                    self._invalidate()
                    # One retry: another process may have merged segments away
                    # under an old searcher.
                    if attempt == 1:
                        raise IndexError_(
                            f"keyword index at {self.directory} is unreadable ({e!r}); rebuild it"
                        ) from e
        raise AssertionError("unreachable")  # pragma: no cover

    def query_terms(self, query: str) -> list[tuple[str, str, float]]:
        """``(field, term, boost)`` triples that :meth:`search` looks for.

        Empty when the query has no content words (only stopwords or
        punctuation).
        """
        schema = self._schema
        text = _norm_text(query)
        # Question words ("what did ... how long") say what kind of answer is
        # wanted, not what it is about; matched against memories they favour
        # other questions. Dropped on the query side only (unless nothing else
        # is left), measured on LoCoMo dev: keyword R@5 0.48 -> 0.56.
        words = text.split()
        content = [w for w in words if w.casefold().strip("?,.!'\"") not in QUESTION_WORDS]
        if content and len(content) < len(words):
            text = " ".join(content)
        out: list[tuple[str, str, float]] = []
        for fieldname, boost in _FIELD_BOOSTS:
            field = schema[fieldname]
            seen: set[str] = set()
            for term in field.process_text(text, mode="query"):
                if term not in seen:
                    seen.add(term)
                    out.append((fieldname, term, boost))
        if not any(f == "text" for f, _, _ in out):
            return []
        return out

    def terms_of(self, text: str) -> frozenset[str]:
        """The terms the text field holds for ``text`` (folded, stemmed, no
        stopwords): what a query's terms are compared with.

        Remembered by text: recall compares every candidate's terms with the
        query's, and the same blocks come back query after query."""
        terms = self._terms_of.get(text)
        if terms is None:
            field = self._schema["text"]
            terms = frozenset(t for t in field.process_text(_norm_text(text), mode="index"))
            if len(self._terms_of) >= _TERMS_OF_CACHE:
                self._terms_of.clear()
            self._terms_of[text] = terms
        return terms

    def document_frequencies(self, terms: Collection[str]) -> tuple[int, dict[str, int]]:
        """How many documents the index holds, and how many of them hold each of
        ``terms`` in the text field (terms as :meth:`terms_of` gives them): what
        the relevance gate weighs a query's words by (mdmem.recall.gate)."""

        def run(searcher: Any) -> tuple[int, dict[str, int]]:
            return searcher.doc_count(), {t: self._df(searcher, "text", t) for t in terms}

        result: tuple[int, dict[str, int]] = self._read(run)
        return result

    def rarest_terms(self, text: str, n: int, *, skip: Collection[str] = ()) -> list[str]:
        """The ``n`` terms of ``text`` (as the text field analyses it) that the
        fewest documents hold, at least two (a term only one block has finds
        nothing else), leaving out ``skip``: the words a second retrieval round
        widens a query with."""
        field = self._schema["text"]
        terms = [t for t in dict.fromkeys(field.process_text(_norm_text(text), mode="query"))]
        terms = [t for t in terms if t not in skip and not t.isdigit() and len(t) > 2]
        if not terms or n <= 0:
            return []

        def run(searcher: Any) -> list[str]:
            df = {t: self._df(searcher, "text", t) for t in terms}
            usable = [t for t in terms if df[t] >= 2]
            return sorted(usable, key=lambda t: (df[t], t))[:n]

        result: list[str] = self._read(run)
        return result

    def search(
        self,
        query: str,
        limit: int = 50,
        *,
        kinds: Collection[str] | None = None,
        tags: Collection[str] | None = None,
        scopes: Collection[str] | None = None,
        statuses: Collection[str] | None = ("active",),
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[tuple[str, float]]:
        """``(block id, BM25F score)`` pairs, best first.

        Filters: ``None`` means "no filter"; an *empty* collection matches
        nothing (so an empty set of allowed scopes can never widen into
        "every scope"). A block passes when its kind is in ``kinds``, it has
        one of ``tags`` (or a descendant: ``project`` matches
        ``project/alpha``), its scope is in ``scopes`` (``""`` is the vault
        root), its status is in ``statuses`` and ``since <= created <= until``
        compared to the minute (a block created in the same minute as
        ``since`` passes even if a few seconds earlier; recall, which needs
        exact bounds, checks them again).
        """
        from whoosh import query as q

        if limit <= 0:
            return []
        for coll in (kinds, tags, scopes, statuses):
            if coll is not None and len(coll) == 0:
                return []
        terms = self.query_terms(query)
        if not terms:
            return []
        dates = None
        if since is not None or until is not None:
            dates = q.DateRange(
                "created",
                _minute(since) if since is not None else None,
                _minute(until) if until is not None else None,
            )
        filters = _Filters(
            terms={
                "kind": None if kinds is None else list(kinds),
                "tags": None if tags is None else [_norm_tag(t).strip("/") for t in tags],
                "scope": None if scopes is None else [_scope_term(s) for s in scopes],
                "status": None if statuses is None else list(statuses),
            },
            dates=dates,
        )
        key = (
            *(None if c is None else tuple(sorted(c)) for c in (kinds, tags, scopes, statuses)),
            since,
            until,
        )

        def run(searcher: Any) -> list[tuple[str, float]]:
            def df(field: str, text: str) -> int:
                return self._df(searcher, field, text)

            selected = _selective(searcher, terms, df)
            if self._fast is not None:
                try:
                    allowed = self._allowed(searcher, key, filters) if filters else None
                    return [
                        (searcher.stored_fields(doc)["id"], score)
                        for doc, score in self._fast.search(
                            searcher, selected, limit, df, allowed=allowed
                        )
                    ]
                except Exception as exc:  # Whoosh internals moved: use Whoosh itself
                    log.warning("fast BM25F scoring disabled: %r", exc)
                    self._fast = None
            main = q.Or([q.Term(f, t, boost=b) for f, t, b in selected])
            if not filters:
                results = searcher.search(main, limit=limit)
            else:
                # Require (match both, score by the first) leapfrogs through the
                # filter postings. Block-quality skipping trips an assertion in
                # Whoosh's intersection matcher, hence optimize=False.
                results = searcher.search(
                    q.Require(main, filters.query()), limit=limit, optimize=False
                )
            return [(hit["id"], float(hit.score)) for hit in results]

        result: list[tuple[str, float]] = self._read(run)
        return result

    def ids(self) -> set[str]:
        """Ids of every (non-deleted) document."""

        def run(searcher: Any) -> set[str]:
            return {fields["id"] for fields in searcher.reader().all_stored_fields()}

        result: set[str] = self._read(run)
        return result

    def __len__(self) -> int:
        result: int = self._read(lambda s: s.doc_count())
        return result

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def close(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.cancel()
            self._invalidate()
            with contextlib.suppress(Exception):
                self._ix.close()

    def __enter__(self) -> KeywordIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class BulkStream:
    """Fresh documents fed to a multiprocess writer before their batch ends.

    :meth:`finish` commits when the batch's final blocks match what was fed
    (blocks never fed are added then); if any differs in what is indexed, or
    a fed block is gone, nothing is committed and it returns False so the
    caller indexes the final blocks the ordinary way. Holds the index's
    write lock until finished or cancelled.
    """

    def __init__(self, index: KeywordIndex, writer: Any, before: int) -> None:
        self._index = index
        self._writer: Any = writer
        self._before = before
        # The fed blocks themselves: a final block that is the same object
        # needs no comparison (blocks are immutable).
        self._fed: dict[str, Block] = {}

    @property
    def active(self) -> bool:
        return self._writer is not None

    def feed(self, blocks: Iterable[Block]) -> None:
        if self._writer is None:
            return
        try:
            with _sub_writers_die_with_us():
                for block in blocks:
                    self._fed[block.id] = block
                    self._writer.add_document(**_doc(block))
        except Exception as e:
            log.warning("keyword stream failed (%r); indexing at the end", e)
            self.cancel()

    def finish(self, blocks: Sequence[Block]) -> bool:
        """Commit if ``blocks`` (the batch's fresh blocks) agree with what was fed."""
        index = self._index
        with index._lock:
            writer, self._writer = self._writer, None
            if writer is None:
                return False
            index._stream = None
            fed = self._fed
            final = {b.id: b for b in blocks}
            for block_id, block in fed.items():
                now = final.get(block_id)
                if now is not block and (now is None or _doc(now) != _doc(block)):
                    index._abort(writer)
                    return False
            try:
                with _sub_writers_die_with_us():
                    for block in blocks:
                        if block.id not in fed:
                            writer.add_document(**_doc(block))
                    writer.commit()
            except Exception as e:
                log.warning("keyword stream commit failed (%r); indexing again", e)
                index._abort(writer)
                index._invalidate()
                return False
            index._invalidate()
            index._put_back_lost(blocks, self._before, set())
            return True

    def cancel(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            KeywordIndex._abort(writer)
            if self._index._stream is self:
                self._index._stream = None
