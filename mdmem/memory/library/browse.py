"""``mdmem library list`` and ``mdmem library show``: browse memories without an editor.

:func:`list_memories` filters every memory (active or not; archived ones
only when their status is asked for: archiving hides) by kind, scope,
status, tag, creation date and git author, newest first, up to a limit.
:func:`show` puts one memory's text and metadata (the export row), its
versions from git and its line authors in one record.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.git.provenance import Provenance, blame, provenance
from mdmem.git.versions import Version, versions
from mdmem.memory.library.export import row_of
from mdmem.models import Block, Memory
from mdmem.recall.search import BlockFilter

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["Shown", "list_memories", "show"]


@dataclass(frozen=True)
class Shown:
    memory: dict[str, Any]  # the export row: id, kind, scope, status, tags, fields, text...
    history: list[Version]
    provenance: Provenance | None
    problems: list[str]  # a part that could not be read (history of an uncommitted file...)


def _set(values: Iterable[str] | str | None) -> set[str] | None:
    if values is None:
        return None
    items = [values] if isinstance(values, str) else list(values)
    return {str(v).strip().lstrip("#").lower() for v in items} or None


def list_memories(
    store: MemoryStore,
    *,
    kinds: Iterable[str] | str | None = None,
    scopes: Iterable[str] | str | None = None,
    statuses: Iterable[str] | str | None = None,
    tags: Iterable[str] | str | None = None,
    since: datetime | date | str | None = None,
    until: datetime | date | str | None = None,
    author: str | None = None,
    limit: int | None = None,
    oldest_first: bool = False,
    paths: Iterable[str] | None = None,
    contact: str | None = None,
    notes: bool = False,
    visible: Callable[[Block], bool] | None = None,
) -> list[Memory]:
    """Memories matching every filter given, newest first. ``scopes``: "" is the
    vault root. ``author``: a git author name or email of any of the memory's
    lines (``(uncommitted)`` for unsaved edits). ``paths``: only these files.
    ``contact``: only what belongs to that contact (its entries, the file of its
    conversation). ``notes``: with ``paths``, a person's own sections without an
    id count too. ``visible``: the reading view's rule, applied before ``limit``.
    Text as the file has it: the reading view shows it (redacted)."""
    if limit is not None and limit < 0:
        raise InvalidInputError("limit must be >= 0")
    # Recall's own filter: a tag matches its children, -kind leaves a kind out,
    # an unknown kind is an error, a bare day is the whole day.
    where = BlockFilter.build(kinds, tags, scopes, since, until)
    status_set = _set(statuses)
    store.refresh()
    store.writer.verify_manifest()
    chosen: list[Block] = []
    if paths is not None:
        pool: Iterable[Block] = (
            b
            for path in dict.fromkeys(paths)
            for b in store.catalog.blocks_in(path)
            if b.is_memory or (notes and not b.id.endswith("#frontmatter"))
        )
    else:
        pool = store.catalog.blocks(memories_only=True)
    for block in pool:
        if status_set is not None and block.status not in status_set:
            continue
        if status_set is None and block.status == "archived":
            continue  # what archiving is for: out of sight until asked for
        if not where.admits(block):
            continue
        if contact is not None and store.visibility.contact_of(block) != contact:
            continue
        if visible is not None and not visible(block):
            continue
        chosen.append(block)
    if limit is not None and author is None:
        # One page of a large vault (mdmem ui): picking the first ``limit`` costs
        # about n comparisons, sorting everything n log n (half of the call at 10k).
        pick = heapq.nsmallest if oldest_first else heapq.nlargest
        chosen = pick(limit, chosen, key=_created_order)
    else:
        chosen.sort(key=_created_order, reverse=not oldest_first)
    out: list[Memory] = []
    for block in chosen:
        if limit is not None and len(out) >= limit:
            break
        if author is not None:
            names = _authors(store, block)
            if author.casefold() not in {n.casefold() for n in names}:
                continue
        out.append(Memory.from_block(block, was_new=False))
    return out


def _created_order(block: Block) -> tuple[datetime, str]:
    return (block.created, block.id)


def _authors(store: MemoryStore, block: Block) -> set[str]:
    """Names and emails of who wrote the block's lines (git blame, cached per file version)."""
    try:
        lines = blame(store, block.path, block.line_start, block.line_end)
    except MdmemError:
        return {"(uncommitted)"}
    names = {line.author for line in lines} | {line.email for line in lines if line.email}
    return names


def show(store: MemoryStore, memory_id: str) -> Shown:
    """One memory: its row, its versions in git (oldest first) and who wrote its lines."""
    block = store.writer.sole_block(memory_id)
    problems: list[str] = []
    history: list[Version] = []
    who: Provenance | None = None
    try:
        history = versions(store, block.id)
    except MdmemError as exc:
        problems.append(f"history: {exc}")
    try:
        who = provenance(store, block.id)
    except MdmemError as exc:
        problems.append(f"provenance: {exc}")
    return Shown(row_of(block), history, who, problems)
