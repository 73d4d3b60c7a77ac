"""Everything mdmem does to, or reads from inside of, Whoosh.

Verified against whoosh-reloaded 2.7.5, the only release this was checked
with (pyproject pins ``>=2.7.5,<2.8`` because the code below patches and
reads private members of it). No other mdmem module touches a private Whoosh
name: they call the functions here, so a Whoosh upgrade is checked in this
one file.

**Making Whoosh cheaper to write to**, without changing what it stores or
finds. Three measured costs of indexing with Whoosh (``bench/scale.py``) and
what is done about each:

* **The analyzer chain.** Whoosh runs every word through five generators
  (tokenizer, lowercase, accent folding, stop words, stemmer) and a stem cache
  with LFU bookkeeping. :class:`FoldingStemAnalyzer` is that same chain; when
  Whoosh indexes a value it produces the same words in one loop, and for
  anything else (queries, highlighting, ``no_morph``) it runs the chain. (A
  subclass, not a patch.)
* **Single-posting terms.** Whoosh's codec was meant to inline a posting list
  of one document into its term entry, but the code calls a method that does
  not exist, so the feature is off and every unique word (an id, a number) is
  written as a pickled, compressed block of its own. :func:`inlining_codec`
  fixes the call and turns it on for the writers mdmem opens; reading inlined
  terms is Whoosh's own, long-standing code.
* **Missing length columns** are looked up on disk once per posting
  (:func:`cache_missing_length_columns`).

**Making Whoosh cheaper to open.** A segment's files are memory-mapped, and
Whoosh hands each part of them to a ``BufferFile``, whose constructor copies
the part into a ``BytesIO``: every reader of every segment copies its terms
and postings into memory, and every write opens one (to find the document it
replaces). At a million blocks that is about half a second per ``remember``
and per reopened searcher (``bench/scale_keyword.py``).
:func:`zero_copy_buffer_files` gives ``BufferFile`` a file over the mapped
bytes instead, which reads what it is asked for and copies nothing else.

The patches, each applied once and guarded (another Whoosh layout leaves
Whoosh as it is):

* ``whoosh.codec.whoosh3.W3TermInfo.set_inline`` is added (it sets the
  term's ``_inlined``), by :func:`inlining_codec`: the method
  ``W3PostingsWriter.finish_postings`` calls, which this Whoosh lacks;
* ``whoosh.codec.whoosh3.W3PerDocReader._cached_reader`` is wrapped, by
  :func:`cache_missing_length_columns`, so "this segment has no such column"
  is cached like a column is;
* ``whoosh.filedb.structfile.BufferFile.__init__`` is replaced, by
  :func:`zero_copy_buffer_files`, with one whose ``file`` is a
  :class:`_ViewFile` over the same buffer (reading only).

**Reading Whoosh's internals**, for speed or around a Whoosh bug:

* :func:`posting_blocks` and :func:`length_column` hand the BM25F scorer
  (:mod:`mdmem.index.bm25`) a term's posting blocks and a segment's
  field-length bytes as whole arrays, instead of one posting per Python call
  (the W3 block matcher's ``_read_ids``, ``_read_weights``, ``_ids``,
  ``_weights``, ``_lastblock``, ``_next_block``; ``SegmentReader._perdoc``
  and its ``_cached_reader``);
* :func:`reopened_searcher` replaces ``Searcher.refresh()``, whose reader
  reuse brings back segments a merge removed (``FileIndex._read_toc``).

**An alias for old indexes.** :class:`FoldingStemAnalyzer` is pickled into
every keyword index's table of contents under the module that defined it.
Indexes written before the package was split into subpackages name it
``mdmem.whoosh_tuning.FoldingStemAnalyzer``; that module name is registered
as an alias of this one (in ``sys.modules``), so those indexes open without
a rebuild. Importing this module is enough, and ``mdmem.index.keyword``
imports it before it opens an index.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from whoosh.analysis import (
    CharsetFilter,
    CompositeAnalyzer,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
    Token,
)

__all__ = [
    "FoldingStemAnalyzer",
    "cache_missing_length_columns",
    "inlining_codec",
    "length_column",
    "posting_blocks",
    "reopened_searcher",
    "zero_copy_buffer_files",
]

log = logging.getLogger(__name__)

# Keyword indexes written before mdmem's subpackages pickled the analyzer as
# mdmem.whoosh_tuning.FoldingStemAnalyzer: unpickling looks that module up in
# sys.modules first, so it finds this one (no top-level module file needed).
sys.modules.setdefault("mdmem.whoosh_tuning", sys.modules[__name__])

_STEM_CACHE_LIMIT = 50_000  # StemFilter's own default cache size
# A posting list of one document is kept in its term entry (Whoosh's
# "inlinelimit": lists shorter than this are inlined).
_INLINE_BELOW = 2
# RegexTokenizer's default word pattern, without its capture group (for findall).
_WHOLE_WORDS = {r"[\w\*]+(\.?[\w\*]+)*": re.compile(r"[\w\*]+(?:\.?[\w\*]+)*")}


class FoldingStemAnalyzer(CompositeAnalyzer):
    """Whoosh's StemmingAnalyzer plus accent folding, so "café" finds "cafe".

    The chain is ``RegexTokenizer | LowercaseFilter | CharsetFilter(accent_map)
    | StopFilter | StemFilter``, kept as the analyzer's items (it is pickled
    into the index with them). Indexing a string takes :meth:`_index_words`,
    which yields exactly the chain's unstopped words (``tests`` compare the
    two on random text); every other call is the chain's.
    """

    def __init__(self) -> None:
        from whoosh.support.charset import accent_map

        super().__init__(
            RegexTokenizer(),
            LowercaseFilter(),
            CharsetFilter(accent_map),
            StopFilter(),
            StemFilter(),
        )

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_stems"}

    def __call__(self, value: Any, no_morph: bool = False, **kwargs: Any) -> Iterator[Token]:
        if (
            not no_morph
            and isinstance(value, str)
            and kwargs.get("mode") == "index"
            and kwargs.keys() <= {"mode", "boosts"}
        ):
            return self._index_words(value)
        chain: Iterator[Token] = super().__call__(value, no_morph=no_morph, **kwargs)
        return chain

    def _index_words(self, value: str) -> Iterator[Token]:
        tokenizer, _lower, charset, stop, stem = self.items
        stems: dict[str, str] | None = self.__dict__.get("_stems")
        if stems is None:
            stems = {}
            self._stems = stems
        charmap, stoplist, minsize, maxsize = charset.charmap, stop.stops, stop.min, stop.max
        ignore, stemfn = stem.ignore, stem.stemfn
        words: Iterable[str]
        whole_words = _WHOLE_WORDS.get(tokenizer.expression.pattern)
        if whole_words is not None and value.isascii():
            # ASCII case changes no word boundary, and the accent map sends
            # lower-case ASCII to itself: fold the whole text at once.
            words = whole_words.findall(value.lower())
        else:
            words = (
                m.group(0).lower().translate(charmap) for m in tokenizer.expression.finditer(value)
            )
        token = Token(removestops=True, mode="index", boosts=True)
        token.boost = 1.0
        token.stopped = False
        for word in words:
            size = len(word)
            if size < minsize or (maxsize is not None and size > maxsize) or word in stoplist:
                continue
            if word not in ignore:
                stemmed = stems.get(word)
                if stemmed is None:
                    if len(stems) >= _STEM_CACHE_LIMIT:
                        stems.clear()
                    stemmed = stems[word] = stemfn(word)
                word = stemmed
            token.text = word
            yield token


def inlining_codec() -> Any:
    """Whoosh's codec with single-document posting lists inlined; None if
    this Whoosh cannot (its writers then keep their default codec)."""
    try:
        from whoosh.codec.whoosh3 import W3Codec, W3TermInfo
    except ImportError:  # pragma: no cover - another Whoosh layout
        return None
    if not hasattr(W3TermInfo, "set_inline"):
        if not hasattr(W3TermInfo, "set_inlined"):  # pragma: no cover
            return None
        W3TermInfo.set_inline = _set_inline
    return W3Codec(inlinelimit=_INLINE_BELOW)


def _set_inline(terminfo: Any, ids: Any, weights: Any, values: Any) -> None:
    # What W3PostingsWriter.finish_postings calls to inline a posting list.
    # A format without values (ids, kinds, dates) buffers none; a block of
    # such postings reads back None per posting, and so does an inlined one
    # (merging segments copies these values, and None is what it accepts).
    kept = tuple(values) if len(values) == len(ids) else (None,) * len(ids)
    terminfo._inlined = (tuple(ids), tuple(weights), kept)


def cache_missing_length_columns() -> None:
    """Make Whoosh remember that a segment has no length column for a field.

    Writing a segment looks up each posting's field length; for fields
    without lengths (ids, kinds, scopes, dates) Whoosh's per-segment reader
    caches nothing and asks the file system again, one ``stat`` per posting:
    about a tenth of the indexing time. A finished segment's files never
    change, so "no such column" can be cached like a column is.
    """
    try:
        from whoosh.codec.whoosh3 import W3PerDocReader
    except ImportError:  # pragma: no cover - another Whoosh layout: keep its own
        return
    original = getattr(W3PerDocReader, "_cached_reader", None)
    if original is None or getattr(original, "_mdmem", False):
        return

    def cached_reader(self: Any, fieldname: str, column: Any) -> Any:
        readers = self._readers
        if fieldname not in readers:
            readers[fieldname] = original(self, fieldname, column)
        return readers[fieldname]

    cached_reader._mdmem = True  # type: ignore[attr-defined]
    W3PerDocReader._cached_reader = cached_reader


class _ViewFile:
    """A read-only file over a buffer (a slice of a memory map) that copies
    only what is read: what ``BufferFile`` keeps in ``self.file``."""

    def __init__(self, buf: Any) -> None:
        self._buf = memoryview(buf)
        self._pos = 0
        self._len = len(self._buf)

    def read(self, size: int | None = -1) -> bytes:
        start = self._pos
        end = self._len if size is None or size < 0 else min(self._len, start + size)
        self._pos = max(start, end)
        return bytes(self._buf[start:end])

    def readinto(self, target: Any) -> int:
        data = self.read(len(memoryview(target)))
        memoryview(target)[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        limit = self._len if size is None or size < 0 else min(self._len, self._pos + size)
        end = self._pos
        while end < limit:  # lines are short where Whoosh reads them (pickles)
            chunk = bytes(self._buf[end : min(limit, end + 256)])
            newline = chunk.find(b"\n")
            if newline >= 0:
                end += newline + 1
                break
            end += len(chunk)
        return self.read(end - self._pos)

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._pos, self._len)[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._buf.release()


def zero_copy_buffer_files() -> None:
    """Make Whoosh's ``BufferFile`` read its buffer in place (see above)."""
    try:
        from whoosh.filedb.structfile import BufferFile
    except ImportError:  # pragma: no cover - another Whoosh layout: keep its own
        return
    if getattr(BufferFile.__init__, "_mdmem", False):
        return
    fields = ("_buf", "_name", "file", "onclose", "is_real", "is_closed")
    probe = BufferFile(b"")
    if sorted(vars(probe)) != sorted(fields):  # pragma: no cover - another layout
        log.info("Whoosh's BufferFile is not the one checked; left as it is")
        return

    def init(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
        self._buf = buf
        self._name = name
        self.file = _ViewFile(buf)
        self.onclose = onclose
        self.is_real = False
        self.is_closed = False

    init._mdmem = True  # type: ignore[attr-defined]
    BufferFile.__init__ = init


# --- reading Whoosh's internals ------------------------------------------------


def posting_blocks(matcher: Any) -> Iterator[tuple[Sequence[int], Sequence[float]]]:
    """A term's postings as ``(docnums, weights)`` blocks, in docnum order.

    ``matcher`` is what a segment reader's ``postings(field, text)`` returns.
    A filter around it (a segment with deletions) is looked through: the
    raw postings are read, deletions are the caller's business. A posting
    list inlined into its term entry (:func:`inlining_codec`) comes as one
    block read a posting at a time; an on-disk list comes a whole decoded
    block at a time (Whoosh's W3 block matcher). Each yielded block is only
    valid until the next one is asked for.
    """
    while not hasattr(matcher, "_read_ids") and hasattr(matcher, "child"):
        matcher = matcher.child
    if not hasattr(matcher, "_read_ids"):
        # A list matcher over a document or two.
        ids: list[int] = []
        weights: list[float] = []
        while matcher.is_active():
            ids.append(matcher.id())
            weights.append(matcher.weight())
            matcher.next()
        yield ids, weights
        return
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        yield matcher._ids, matcher._weights
        if matcher._lastblock:
            break
        matcher._next_block()


def length_column(leaf: Any, field: str) -> Any:
    """A segment's length bytes for ``field``: ``column[docnum]`` is the
    document's field length as Whoosh stores it (one byte; decode with
    ``whoosh.util.numeric.byte_to_length``). ``leaf`` is a segment reader;
    None when the segment has no lengths for the field."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN

    return leaf._perdoc._cached_reader(f"_{field}_len", LENGTHS_COLUMN)


def reopened_searcher(ix: Any, old: Any) -> Any:
    """A searcher over the index's latest commit that keeps ``old``'s readers
    of segments that did not change.

    Not ``Searcher.refresh()``: this Whoosh's reader reuse adds the old
    reader's segments to the new commit's, so segments merged away by the
    commit come back, with their deleted documents (and every other one
    twice). A segment's reader is kept only if the segment is still there
    with the same deletions (a segment's deletions only ever grow). If the
    segments cannot be matched up, ``old`` is closed and a fresh searcher
    over every segment is returned.
    """
    from whoosh.reading import EmptyReader, MultiReader, SegmentReader

    try:
        toc = ix._read_toc()  # the latest commit's segments, read now
        open_now = {}
        for reader, _ in old.reader().leaf_readers():
            segment = reader.segment()
            if segment is not None:
                open_now[segment.segment_id()] = (segment.deleted_count(), reader)
        readers = []
        for segment in toc.segments:
            kept = open_now.pop(segment.segment_id(), None)
            if kept is not None and kept[0] == segment.deleted_count():
                readers.append(kept[1])
            else:
                if kept is not None:
                    open_now[segment.segment_id()] = kept  # closed below
                readers.append(
                    SegmentReader(ix.storage, toc.schema, segment, generation=toc.generation)
                )
    except Exception as e:
        log.info("reopening keyword segments failed (%r); opening all of them", e)
        with contextlib.suppress(Exception):
            old.close()
        return ix.searcher(weighting=old.weighting)
    for _, reader in open_now.values():
        with contextlib.suppress(Exception):
            reader.close()
    if not readers:
        reader = EmptyReader(toc.schema)
    elif len(readers) == 1:
        reader = readers[0]
    else:
        reader = MultiReader(readers, generation=toc.generation)
    from whoosh.searching import Searcher

    return Searcher(reader, weighting=old.weighting, fromindex=ix)
