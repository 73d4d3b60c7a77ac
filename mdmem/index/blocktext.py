"""What the indexes make of a block: whether it is searched, the text the
embedder sees and its cache key, and the keyword stream a batch feeds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence

from mdmem.index.keyword import BulkStream
from mdmem.models import Block

__all__ = ["AppendStream", "embed_key", "embed_text", "indexable"]

_TAG = re.compile(r"(?<![\w&/#])#([A-Za-z_][\w/-]*)")


def indexable(block: Block) -> bool:
    """Memories and heading sections are searched; frontmatter is not."""
    return block.is_memory or not block.id.endswith("#frontmatter")


def _memory_text(block: Block) -> bool:
    """A memory, a copied line (keyed ``path#^m-…``, see the catalog) or a line
    typed into a memory file without an id yet (``path#item-…``): embedded as a
    memory is, so the line ranks the same before and after it gets its id."""
    return block.is_memory or "#^" in block.id or "#item-" in block.id


def embed_text(block: Block) -> str:
    """What the embedder sees: the text without #tags, with the heading for sections.

    Tags stay out so re-tagging a block keeps its cached vector (tags are
    matched by the keyword index and the tag boost instead). The index-only
    context (mdmem.index.context) stays out too: embedded after the text it
    lowered vector-only R@5 on LoCoMo dev from 0.586 to 0.532 (MiniLM weighs
    the date and the previous turn as much as the turn), and a vector of the
    text alone is what consolidation and auto-resolve compare. Dates reach
    the ranking through the keyword field and the re-ranker's date feature.
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


class AppendStream:
    """The keyword stream of one batch, fed with the blocks it appends."""

    def __init__(self, stream: BulkStream, derived: Callable[[Block, Block | None], Block]) -> None:
        self._stream = stream
        self._derived = derived
        # The last memory fed per file: the turn before the next one, which
        # the catalog does not hold yet while the batch is being built.
        self._last: dict[str, Block] = {}

    def feed(self, blocks: Iterable[Block]) -> None:
        self._stream.feed(self._fed(b) for b in blocks if indexable(b))

    def _fed(self, block: Block) -> Block:
        out = self._derived(block, self._last.get(block.path))
        if block.is_memory:
            self._last[block.path] = block
        return out

    def finish(self, blocks: Sequence[Block]) -> bool:
        return self._stream.finish(blocks)

    def cancel(self) -> None:
        self._stream.cancel()
