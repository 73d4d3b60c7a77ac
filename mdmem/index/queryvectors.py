"""The vectors of recent recall queries, kept in memory (an LRU keyed by model and text).

An agent asks the same thing again and again: a prompt hook re-sends the
prompt, a second recall round re-asks the question, a person re-runs
``mdmem recall``. The query's vector is then the one computed before; this
cache hands it back without a forward pass (~10-20 ms of CPU for MiniLM).
Stored vectors are not involved: this only remembers what ``embed_query``
returned. Each caller gets its own read-only copy, so no caller can change
what the next one gets.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_QUERIES", "QueryVectors"]

#: Queries kept: 1,024 MiniLM vectors are 1.5 MB.
DEFAULT_QUERIES = 1024
#: Longer queries are not kept (a pasted document is rarely asked twice).
MAX_TEXT_CHARS = 4096


class QueryVectors:
    """A thread-safe LRU of query vectors by (model name, query text)."""

    def __init__(self, capacity: int = DEFAULT_QUERIES) -> None:
        self.capacity = max(0, int(capacity))
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, model: str, text: str) -> npt.NDArray[np.float32] | None:
        """The vector kept for ``text`` under ``model`` (a read-only copy), or None."""
        with self._lock:
            vector = self._items.get((model, text))
            if vector is None:
                self.misses += 1
                return None
            self._items.move_to_end((model, text))
            self.hits += 1
        return _frozen(vector)

    def put(self, model: str, text: str, vector: npt.NDArray[np.float32]) -> None:
        """Keep a copy of ``vector`` for ``text`` under ``model`` (the oldest goes if full)."""
        if self.capacity == 0 or len(text) > MAX_TEXT_CHARS:
            return
        kept = _frozen(vector)
        with self._lock:
            self._items[(model, text)] = kept
            self._items.move_to_end((model, text))
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def _frozen(vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    copy = np.array(vector, copy=True)
    copy.flags.writeable = False
    return copy
