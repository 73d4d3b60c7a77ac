"""Whoosh, made cheaper to write to, without changing what it stores or finds.

Three measured costs of indexing with Whoosh (``bench/scale.py``) and what is
done about each:

* **The analyzer chain.** Whoosh runs every word through five generators
  (tokenizer, lowercase, accent folding, stop words, stemmer) and a stem cache
  with LFU bookkeeping. :class:`FoldingStemAnalyzer` is that same chain; when
  Whoosh indexes a value it produces the same words in one loop, and for
  anything else (queries, highlighting, ``no_morph``) it runs the chain.
* **Single-posting terms.** Whoosh's codec was meant to inline a posting list
  of one document into its term entry, but the code calls a method that does
  not exist, so the feature is off and every unique word (an id, a number) is
  written as a pickled, compressed block of its own. :func:`inlining_codec`
  fixes the call and turns it on for the writers mdmem opens; reading inlined
  terms is Whoosh's own, long-standing code.
* **Missing length columns** are looked up on disk once per posting
  (:func:`cache_missing_length_columns`).

The patches are guarded: another Whoosh layout leaves Whoosh as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
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
]

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
