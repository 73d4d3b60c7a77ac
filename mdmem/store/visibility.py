"""Who may see what: the one visibility rule every read path asks.

A **reader** is the scopes it may see (None: every scope) and the contact
its conversation is with (None: no contact in particular). A block is
visible to a reader when

* its effective scope — the folder it lives in, else what its file's
  frontmatter or (for a person's own line) its ``[scope:: …]`` field
  declares (:attr:`Block.scope`) — is one of the reader's scopes, and
* it belongs to no other contact: neither its ``[contact:: …]`` field nor
  its file's ``contact`` frontmatter names someone else, and
* the same holds for every source it was derived from: an episode, its
  facts, their daily-log announcement and a session summary are copies of
  the turns they were made from, and are seen only by readers who may see
  all of those turns.

The rule is asked by recall (a pipeline stage), ``get`` behind a scoped
front door, ``changes``, ``context`` and ``prompt_context``, the tools and the
MCP resources, the coding-agent hooks and export. Nothing else decides.

Sources are read from the links consolidation and the summariser write
(``[episode:: ^E]``, an episode file's ``sources:``, the consolidation log
line's link, a summary's ``[session:: s] [from:: ^a] [to:: ^b]``), never
guessed from wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mdmem.errors import ScopeDeniedError
from mdmem.files.blocks import scope_dir, scope_of_path, validate_scope
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.files.catalog import Catalog

__all__ = ["EVERYONE", "Reader", "Visibility"]

_LINK = re.compile(r"\[\[([^\]|#]*)#\^(m-[0-9a-z]+)")
_ROOT_WORDS = frozenset({"root", "(root)"})
_MAX_DEPTH = 4  # a copy of a copy of a copy: consolidation makes at most two levels


@dataclass(frozen=True)
class Reader:
    """Who is reading: ``scopes`` it may see (None: all) and the ``contact`` it talks with."""

    scopes: frozenset[str] | None = None
    contact: str | None = None

    @classmethod
    def of(cls, scopes: Iterable[str] | str | None = None, contact: str | None = None) -> Reader:
        """A reader from a host's settings: ``"root"`` or ``""`` is the vault root."""
        if scopes is None:
            allowed = None
        else:
            items = [scopes] if isinstance(scopes, str) else list(scopes)
            allowed = frozenset(
                "" if s.strip().lower() in _ROOT_WORDS else validate_scope(s or None) for s in items
            )
        return cls(allowed, (contact or "").strip() or None)

    @property
    def unrestricted(self) -> bool:
        return self.scopes is None and self.contact is None

    def narrowed(self, scopes: Iterable[str] | None) -> Reader:
        """This reader asking only for ``scopes`` (None: all it may see)."""
        if scopes is None:
            return self
        wanted = frozenset(scopes)
        return Reader(wanted if self.scopes is None else wanted & self.scopes, self.contact)


EVERYONE = Reader()


class Visibility:
    """The visibility rule over one vault's blocks (see the module docstring): the
    live catalog's, or a snapshot's at a past commit."""

    def __init__(
        self,
        block_of: Callable[[str], Block | None],
        blocks_in: Callable[[str], Sequence[Block]],
        frontmatter_of: Callable[[str], Mapping[str, Any]],
    ) -> None:
        self._block_of = block_of
        self._blocks_in = blocks_in
        self._frontmatter = frontmatter_of

    @classmethod
    def of_catalog(cls, catalog: Catalog) -> Visibility:
        def frontmatter(path: str) -> Mapping[str, Any]:
            state = catalog.files.get(path)
            return state.parsed.frontmatter if state is not None else {}

        return cls(catalog.block, catalog.blocks_in, frontmatter)

    # ---------------------------------------------------------------- rule --

    def may_see(self, reader: Reader, block: Block) -> bool:
        if reader.unrestricted:
            return True
        return all(self._admits(reader, b) for b in self._with_sources(block))

    def filter(self, reader: Reader, blocks: Iterable[Block]) -> Iterator[Block]:
        return (b for b in blocks if self.may_see(reader, b))

    def may_see_id(self, reader: Reader, block_id: str | None, path: str | None) -> bool:
        """A memory named in history: judged as a block when it still exists, else
        (forgotten, purged) by the file it was in: the file's scope and contact."""
        if reader.unrestricted:
            return True
        block = self._block_of(block_id) if block_id else None
        if block is not None:
            return self.may_see(reader, block)
        return path is not None and self.may_see_file(reader, path)

    def may_see_file(self, reader: Reader, path: str) -> bool:
        """Whether ``reader`` may see a file's own scope and contact (not each block's)."""
        if reader.unrestricted:
            return True
        meta = self._frontmatter(path)
        scope = scope_of_path(path)[0]
        declared = meta.get("scope")
        if not scope and isinstance(declared, str) and declared.strip().lower() not in _ROOT_WORDS:
            scope = declared.strip()
        if reader.scopes is not None and scope not in reader.scopes:
            return False
        contact = meta.get("contact")
        return reader.contact is None or not contact or str(contact).strip() == reader.contact

    def require(self, reader: Reader, block: Block) -> Block:
        """``block``, or ScopeDeniedError naming nothing of it."""
        if not self.may_see(reader, block):
            raise ScopeDeniedError(
                f"memory {block.id} belongs to a scope or contact this reader may not access"
            )
        return block

    def _admits(self, reader: Reader, block: Block) -> bool:
        if reader.scopes is not None and block.scope not in reader.scopes:
            return False
        if reader.contact is not None:
            other = self.contact_of(block)
            if other is not None and other != reader.contact:
                return False
        return True

    def contact_of(self, block: Block) -> str | None:
        """The contact a block belongs to: its ``[contact:: …]``, else its file's."""
        value = block.field("contact")
        if value:
            return value.strip()
        declared = self._frontmatter(block.path).get("contact")
        return str(declared).strip() if declared else None

    # ------------------------------------------------------------- sources --

    def sources(self, block: Block) -> list[Block]:
        """Every block ``block`` was derived from, transitively (empty for an original)."""
        return [b for b in self._with_sources(block) if b is not block]

    def _with_sources(self, block: Block) -> list[Block]:
        out = [block]
        seen = {block.id}
        todo = [(block, 0)]
        while todo:
            current, depth = todo.pop()
            if depth >= _MAX_DEPTH:
                continue
            for source_id in self._source_ids(current):
                if source_id in seen:
                    continue
                seen.add(source_id)
                source = self._block_of(source_id)
                if source is not None:
                    out.append(source)
                    todo.append((source, depth + 1))
        return out

    def _source_ids(self, block: Block) -> list[str]:
        episode = _ref(block.field("episode"))
        if episode:  # a fact consolidation extracted
            return [episode]
        meta = self._frontmatter(block.path)
        if meta.get("kind") == "episode":  # any part of an episode note
            return _linked_ids(meta.get("sources"))
        if block.kind == "log" and block.heading.endswith("Consolidation"):
            return [m.group(2) for m in _LINK.finditer(block.text)]  # the announcement
        if block.kind == "session_summary":
            return self._span(block)
        return []

    def _span(self, summary: Block) -> list[str]:
        """The turns a session summary covers: its session's turns from ``from`` to ``to``."""
        session = summary.field("session")
        first, last = _ref(summary.field("from")), _ref(summary.field("to"))
        if not session or not first or not last:
            return []
        path = (scope_dir(summary.scope) / "sessions" / f"{session}.md").as_posix()
        return [b.id for b in self._blocks_in(path) if b.is_memory and first <= b.id <= last]


def _ref(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    return value[1:] if value.startswith("^") else value


def _linked_ids(value: object) -> list[str]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return [m.group(2) for item in items for m in _LINK.finditer(str(item))]
