"""Who may see what: the one visibility rule every read path asks.

A **reader** is the scopes it may see (None: every scope), the contact
its conversation is with (None: no contact in particular) and, for a
contact's reader, the scopes of the *other* people the vault knows. A block
is visible to a reader when

* its effective scope — the folder it lives in, else what its file's
  frontmatter or (for a person's own line) its ``[scope:: …]`` field
  declares (:attr:`Block.scope`) — is one of the reader's scopes and not
  another person's, and
* it belongs to no other contact: neither its ``[contact:: …]`` field nor
  its file's ``contact`` frontmatter names someone else, and
* the same holds for every source it was derived from: an episode, its
  facts, their daily-log announcement and a session summary are copies of
  the turns they were made from, and are seen only by readers who may see
  all of those turns.

The rule is asked by recall (a pipeline stage), ``get`` behind a scoped
front door, ``changes``, ``context`` and ``prompt_context``, the tools and the
MCP resources, the coding-agent hooks and export. Nothing else decides.

Sources are read by :mod:`mdmem.store.derived` (:func:`derived_from`) from
the links consolidation and the summariser write — a fact's ``[sources::]``,
an episode note's ``sources:`` and ``given:``, the daily-log line's
``[sources:: ^E]``, a summary's ``[session:: s] [from:: ^a] [to:: ^b]`` —
the same links purge and retention follow, never guessed from wording.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mdmem.errors import ScopeDeniedError
from mdmem.files.blocks import scope_of_path, validate_scope
from mdmem.models import Block
from mdmem.store.derived import Lookup, derived_from

if TYPE_CHECKING:
    from mdmem.files.catalog import Catalog

__all__ = ["EVERYONE", "Reader", "Visibility"]

_ROOT_WORDS = frozenset({"root", "(root)"})


@dataclass(frozen=True)
class Reader:
    """Who is reading: ``scopes`` it may see (None: all), the ``contact`` it talks with,
    and ``others``: the scopes of the other people a contact's reader may not see
    (filled in by ``vault.reading``, which knows the contacts)."""

    scopes: frozenset[str] | None = None
    contact: str | None = None
    others: frozenset[str] = frozenset()

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
        return self.scopes is None and self.contact is None and not self.others

    def admits_scope(self, scope: str) -> bool:
        """Whether a block in ``scope`` (and of no other contact) could be shown to this reader."""
        return (self.scopes is None or scope in self.scopes) and scope not in self.others

    def narrowed(self, scopes: Iterable[str] | None) -> Reader:
        """This reader asking only for ``scopes`` (None: all it may see)."""
        if scopes is None:
            return self
        wanted = frozenset(scopes)
        allowed = wanted if self.scopes is None else wanted & self.scopes
        return Reader(allowed, self.contact, self.others)


EVERYONE = Reader()


class Visibility:
    """The visibility rule over one vault's blocks (see the module docstring): the
    live catalog's, or a snapshot's at a past commit (a :class:`Lookup` of either)."""

    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup
        self._block_of = lookup.block
        self._frontmatter = lookup.frontmatter

    @classmethod
    def of_catalog(cls, catalog: Catalog) -> Visibility:
        return cls(Lookup.of_catalog(catalog))

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
        return self.may_see_place(reader, scope, meta.get("contact"))

    def may_see_place(self, reader: Reader, scope: str, contact: object = None) -> bool:
        """Whether ``reader`` may see what lives in ``scope`` and belongs to
        ``contact`` (None: to no contact): a file, a tool output, a profile."""
        if reader.unrestricted:
            return True
        if not reader.admits_scope(scope):
            return False
        return reader.contact is None or not contact or str(contact).strip() == reader.contact

    def hidden_lines(self, reader: Reader, blocks: Iterable[Block]) -> set[int]:
        """The (1-based) lines of the memories among ``blocks`` that ``reader`` may
        not see: what a file's text leaves out for it."""
        hidden: set[int] = set()
        if reader.unrestricted:
            return hidden
        for block in blocks:
            if block.is_memory and not self.may_see(reader, block):
                hidden.update(range(block.line_start, block.line_end + 1))
        return hidden

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
        if block.scope in reader.others:
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
        return derived_from(block, self._lookup)

    def _with_sources(self, block: Block) -> list[Block]:
        return [block, *derived_from(block, self._lookup)]
