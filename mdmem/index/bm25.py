"""Whoosh's BM25F, scored with numpy over Whoosh's own postings.

Whoosh scores one posting at a time in Python (about 10-20 µs each), so a
query whose words appear in a few thousand blocks takes tens of milliseconds.
The index, the analyzers, the statistics and the formula stay Whoosh's; this
module only reads each segment's posting blocks as arrays and does the
arithmetic in numpy:

    score(d) = Σ_terms boost · idf · tf·(K1+1) / (tf + K1·(1 − B + B·len_d/avglen))
    idf      = log(N / (df + 1)) + 1                    (whoosh.scoring.Weighting.idf)

Segments are immutable, so their posting arrays and field-length columns are
cached by segment id; a write adds a small new segment and invalidates
nothing else. Anything unexpected from Whoosh's internals makes the caller
fall back to Whoosh's own search (see KeywordIndex.search), so results never
depend on this shortcut working.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["K1", "B", "FastScorer"]

# Memories are short (one line to a paragraph). Whoosh's defaults (B=0.75,
# K1=1.2) are tuned for documents; with them a memory a few words longer than
# average loses to a terse one that repeats a query word. Measured on LoCoMo
# dev (bench/locomo.py, keyword only): R@5 0.553 -> 0.577, MRR 0.474 -> 0.501.
# The Whoosh fallback searcher uses the same values (KeywordIndex).
B = 0.4
K1 = 0.9
_CACHE_TERMS = 20_000
# A segment that lacks a term (the posting cache's answer for it).
_ABSENT: tuple[np.ndarray, np.ndarray] = (
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.float32),
)


def _length_table() -> np.ndarray:
    from whoosh.util.numeric import byte_to_length

    return np.array([byte_to_length(i) for i in range(256)], dtype=np.float32)


class FastScorer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._postings: OrderedDict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._lengths: dict[tuple[str, str], np.ndarray] = {}
        self._deleted: dict[tuple[str, int], np.ndarray] = {}
        self._table: np.ndarray | None = None

    def search(
        self,
        searcher: Any,
        terms: list[tuple[str, str, float]],
        limit: int,
        doc_frequency: Callable[[str, str], int] | None = None,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """(docnum, score) of the best ``limit`` documents, best first;
        ``doc_frequency(field, text)`` answers for the whole index (the
        caller's cache), else Whoosh's reader does. ``allowed`` (a mask over
        the searcher's docnums, from :meth:`holding`) keeps only its documents."""
        if self._table is None:
            self._table = _length_table()
        total_docs = searcher.doc_count_all()
        if total_docs == 0 or not terms:
            return []
        reader = searcher.reader()
        leaves = list(searcher.leaf_searchers())
        size = sum(s.reader().doc_count_all() for s, _ in leaves)
        scores = np.zeros(max(size, 1), dtype=np.float32)
        seen_segments: set[str] = set()
        df_of = doc_frequency or reader.doc_frequency
        for field, text, boost in terms:
            df = df_of(field, text)
            if not df:
                continue
            idf = math.log(total_docs / (df + 1)) + 1
            avg = searcher.avg_field_length(field) or 1.0
            for sub, offset in leaves:
                leaf = sub.reader()
                seg = _segment_id(leaf)
                seen_segments.add(seg)
                found = self._posting(leaf, seg, field, text)
                if found is None:
                    continue
                ids, tf = found
                lengths = self._field_lengths(leaf, seg, field)[ids]
                part = tf * (K1 + 1) / (tf + K1 * ((1 - B) + B * lengths / avg))
                np.add.at(scores, ids + offset, (boost * idf) * part)
        if allowed is not None:
            scores[: allowed.size][~allowed] = 0.0
        for sub, offset in leaves:
            leaf = sub.reader()
            if leaf.has_deletions():
                dead = self._dead(leaf, _segment_id(leaf))
                if dead.size:
                    scores[dead + offset] = 0.0
        self._forget_segments(seen_segments)
        hits = np.flatnonzero(scores > 0)
        if hits.size == 0:
            return []
        top = hits[np.argpartition(-scores[hits], limit - 1)[:limit]] if hits.size > limit else hits
        order = top[np.lexsort((top, -scores[top]))]
        return [(int(d), float(scores[d])) for d in order]

    def allowed(
        self,
        searcher: Any,
        terms: Mapping[str, Collection[str] | None],
        dated: Iterable[int] | None = None,
    ) -> np.ndarray:
        """A mask over the searcher's docnums for :meth:`search`: the documents
        holding, in every field of ``terms`` not None, one of its texts, and
        (unless None) among the ``dated`` docnums."""
        mask = np.ones(sum(s.reader().doc_count_all() for s, _ in searcher.leaf_searchers()), bool)
        for field, texts in terms.items():
            if texts is not None:
                mask &= self.holding(searcher, field, [t for t in texts if t])
        if dated is not None:
            in_range = np.zeros(mask.size, dtype=bool)
            in_range[np.fromiter(dated, dtype=np.int64)] = True
            mask &= in_range
        return mask

    def holding(self, searcher: Any, field: str, texts: Collection[str]) -> np.ndarray:
        """A mask over the searcher's docnums: the documents holding any of
        ``texts`` in ``field`` (deleted ones included: :meth:`search` drops
        them). Read from the same per-segment posting cache as the scores, so
        a new index generation reads only its new segments."""
        leaves = list(searcher.leaf_searchers())
        mask = np.zeros(sum(s.reader().doc_count_all() for s, _ in leaves), dtype=bool)
        for sub, offset in leaves:
            leaf = sub.reader()
            seg = _segment_id(leaf)
            for text in texts:
                found = self._posting(leaf, seg, field, text)
                if found is not None:
                    mask[found[0] + offset] = True
        return mask

    def _posting(
        self, leaf: Any, seg: str, field: str, text: str
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The term's postings in this segment, None when it has none."""
        key = (seg, field, text)
        with self._lock:
            cached = self._postings.get(key)
            if cached is not None:
                self._postings.move_to_end(key)
                return None if cached is _ABSENT else cached
        if (field, text) not in leaf:
            # Remembered too: a small new segment lacks most of a query's terms.
            self._remember(key, _ABSENT)
            return None
        from mdmem.index.whoosh_compat import posting_blocks  # imports Whoosh: not at startup

        # Raw segment postings (deletions are applied separately, see _dead),
        # a block of arrays at a time.
        id_parts: list[np.ndarray] = []
        tf_parts: list[np.ndarray] = []
        for block_ids, block_weights in posting_blocks(leaf.postings(field, text)):
            id_parts.append(np.asarray(block_ids, dtype=np.int64))
            tf_parts.append(np.asarray(block_weights, dtype=np.float32))
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int64)
        tf = np.concatenate(tf_parts) if tf_parts else np.zeros(0, dtype=np.float32)
        self._remember(key, (ids, tf))
        return ids, tf

    def _remember(self, key: tuple[str, str, str], posting: tuple[np.ndarray, np.ndarray]) -> None:
        with self._lock:
            self._postings[key] = posting
            while len(self._postings) > _CACHE_TERMS:
                self._postings.popitem(last=False)

    def _field_lengths(self, leaf: Any, seg: str, field: str) -> np.ndarray:
        key = (seg, field)
        cached = self._lengths.get(key)
        if cached is not None:
            return cached
        from mdmem.index.whoosh_compat import length_column

        # One length byte per document.
        count = leaf.doc_count_all()
        column = length_column(leaf, field)
        raw = np.fromiter((column[d] for d in range(count)), dtype=np.uint8, count=count)
        assert self._table is not None
        lengths = self._table[raw]
        self._lengths[key] = lengths
        return lengths

    def _dead(self, leaf: Any, seg: str) -> np.ndarray:
        count = leaf.doc_count_all() - leaf.doc_count()
        key = (seg, count)
        cached = self._deleted.get(key)
        if cached is None:
            cached = np.fromiter(
                (d for d in range(leaf.doc_count_all()) if leaf.is_deleted(d)), dtype=np.int64
            )
            self._deleted = {k: v for k, v in self._deleted.items() if k[0] != seg}
            self._deleted[key] = cached
        return cached

    def _forget_segments(self, live: set[str]) -> None:
        # Merged-away segments never come back: drop their cached arrays.
        with self._lock:
            stale = {k for k in self._lengths if k[0] not in live}
            for k in stale:
                del self._lengths[k]
            if stale:
                dead_segments = {k[0] for k in stale}
                for key in [key for key in self._postings if key[0] in dead_segments]:
                    del self._postings[key]


def _segment_id(leaf: Any) -> str:
    segment = leaf.segment()
    return str(segment.segment_id()) if segment is not None else str(id(leaf))
