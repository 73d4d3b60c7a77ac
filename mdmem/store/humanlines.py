"""A person's own lines in a memory file become memories with ids.

A line a person types into ``USER.md``, ``MEMORY.md``, ``LEARNING.md`` or
``WORLD.md`` (of the vault root or of a scope) — a list item without a block
id — is recalled as a memory of its own at once (the parser makes it a block
keyed by its text, ``USER.md#item-…``: :func:`mdmem.files.blocks.parse`).
It gets its id, which makes it a memory a write can name, the profile can
list and a link can reach, in a commit of its own authored as the person
(``git blame`` keeps naming them for their line; the subject and the
``Captured: human`` trailer say mdmem added the ids), right after:

* a write: the writer commits what the person changed as theirs, and the
  typed lines of that very commit's diff get ids (:func:`give_typed_ids`), so
  the write path never runs ``git blame``. Not in a file saved in the last
  seconds: an editor may have it open, and an id put under a person's cursor
  would be lost at their next save (or ask them to reload);
* a session start, ``mdmem watch``, ``doctor``, sync
  (:meth:`~mdmem.store.writer.Writer.commit_human_edits`): any typed line
  still without one, committed by whoever, gets one if ``git blame`` credits
  it to a person (:func:`give_ids`), never a line mdmem wrote (a restored
  export, a template).

The line's bytes stay as they typed them — only ` ^m-…` goes at the end of
its last line, before the line ending — and what mdmem knows of it (its kind,
``captured: human``) is kept beside it (:mod:`mdmem.files.sidecar`). The ids
go in by compare-and-swap: a file saved again meanwhile is left for the next
call. A line that would not read back as one memory with the id is left as
it was.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mdmem.errors import MdmemError
from mdmem.files import blocks as blk
from mdmem.files.textfile import TextFile
from mdmem.models import Block
from mdmem.store.editors import Edit, Editor
from mdmem.store.gitstore import is_agent_email, paths_shown

if TYPE_CHECKING:
    from mdmem.files.catalog import Catalog
    from mdmem.store.editors import Pending
    from mdmem.store.gitstore import Identity


class _Transaction(Protocol):
    """What is used of :class:`mdmem.store.writer.Transaction`."""

    pending: dict[str, Pending]

    def apply(
        self, rel: str, edit: Editor, subject: str, trailers: list[tuple[str, str]]
    ) -> None: ...
    def record_many(
        self,
        rel: str,
        changes: Iterable[tuple[str, Iterable[tuple[str, str | None]]]],
        *,
        refresh: bool = True,
    ) -> None: ...
    def set_message(self, subject: str, trailers: Iterable[tuple[str, str]]) -> None: ...


class _Git(Protocol):
    """What is used of :class:`mdmem.store.gitstore.GitStore`."""

    def line_authors(self, path: str) -> list[tuple[str, str]]: ...
    def run(self, *args: str) -> str: ...


class _Writer(Protocol):
    """What is used of :class:`mdmem.store.writer.Writer` (it calls this module)."""

    catalog: Catalog
    root: Path

    @property
    def current(self) -> Any: ...

    def new_id(self) -> str: ...
    def flush(self, tx: Any, subject: str | None, author: Identity | None = None) -> None: ...


log = logging.getLogger("mdmem.store.humanlines")

__all__ = ["give_ids", "give_typed_ids", "typed_lines"]


def typed_lines(catalog: Catalog, rel: str) -> list[Block]:
    """The lines typed into a memory file that have no id yet (as parsed now)."""
    if blk.memory_file_kind(rel) is None:
        return []
    catalog.refresh(rel)  # what the person saved since the last scan
    return [b for b in catalog.blocks_in(rel) if blk.is_typed_key(b.id)]


def give_ids(
    writer: _Writer,
    tx: _Transaction,
    person: Identity,
    kept_out: Set[str],
    git: _Git | None,
) -> list[str]:
    """Give ids to the lines people typed into memory files (any not given one
    yet), in ``tx`` (a fresh transaction), authored as ``person``; the ids
    given. Called by the writer, holding the vault lock, after it committed
    their edits (a session start, watch, doctor, sync); a failure (they keep
    typing) is logged, not raised: the next call tries again. Nothing inside
    another write (``writer.current``). Files in ``kept_out`` hold a secret git
    has only redacted (mdmem.store.typed_secrets): a commit of the file would
    put the secret into history, so they wait until the person removes it.
    ``git`` (its blame) tells their lines from mdmem's own."""
    if writer.current is not None:
        return []
    picks: dict[str, list[Block]] = {}
    for rel in [r for r in writer.catalog.files if blk.memory_file_kind(r) and r not in kept_out]:
        typed = typed_lines(writer.catalog, rel)
        if not typed:
            continue
        authors = git.line_authors(rel) if git is not None else []
        ours = [b for b in typed if not authors or _typed_by_a_person(writer, b, authors)]
        if ours:
            picks[rel] = ours
    return _give(writer, tx, person, picks)


def give_typed_ids(
    writer: _Writer,
    tx: _Transaction,
    person: Identity,
    before: str | None,
    sha: str,
    taken: Sequence[str],
    git: _Git,
    *,
    quiet_for: float = 0.0,
) -> list[str]:
    """Give ids to the lines typed into memory files that the person's commit
    ``sha`` (made from ``before``) added: its diff says which are theirs, so no
    blame runs. Called by the writer before its own write; a file saved less
    than ``quiet_for`` seconds ago waits (someone may be typing)."""
    settled = time.time() - quiet_for
    files = [r for r in taken if blk.memory_file_kind(r) and _saved_before(writer, r, settled)]
    if writer.current is not None or not files:
        return []
    added = _added_lines(git, before, sha, files)
    picks: dict[str, list[Block]] = {}
    for rel in files:
        theirs = added.get(rel)
        if not theirs:
            continue
        typed = [b for b in typed_lines(writer.catalog, rel) if _all_added(writer, b, theirs)]
        if typed:
            picks[rel] = typed
    return _give(writer, tx, person, picks)


def _give(
    writer: _Writer, tx: _Transaction, person: Identity, picks: dict[str, list[Block]]
) -> list[str]:
    if not picks:
        return []
    ids: list[str] = []
    try:
        for rel, typed in picks.items():
            named = [(b, writer.new_id()) for b in typed]
            # The records first: the line with its id reads its kind's word then.
            tx.record_many(
                rel, [(i, [("kind", b.kind), ("captured", "human")]) for b, i in named]
            )
            given: list[str] = []
            tx.apply(rel, _id_placer(rel, [(b.id, i) for b, i in named], given), "ids", [])
            ids += given
        if ids:
            title = f"ids for {len(ids)} line(s) typed by a person: {paths_shown(list(picks))}"
            trailers = [("Op", "remember"), ("Captured", "human")]
            tx.set_message(title, [*trailers, *(("Memory-Id", i) for i in ids[:20])])
            writer.flush(tx, None, person)
            return ids
    except MdmemError as exc:
        log.warning("could not give ids to the lines typed into %s: %s", list(picks), exc)
    writer.catalog.reread(tx.pending)  # nothing written: the catalog reads the disk again
    return []


def _id_placer(rel: str, named: list[tuple[str, str]], given: list[str]) -> Editor:
    """An edit putting ``^id`` at the end of each typed line (found by its key);
    a line that would not read back as one memory spanning it is left alone."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        given.clear()
        blocks = {b.id: b for b in (parsed.blocks if parsed is not None else [])}
        placed: list[tuple[Block, str, str]] = []
        for key, memory_id in named:
            block = blocks.get(key)
            if block is None:
                continue  # edited again meanwhile: the next call sees it
            last = block.line_end - 1
            raw = tf.lines[last]
            body = raw.rstrip("\r\n")
            tf.lines[last] = f"{body.rstrip()} ^{memory_id}{raw[len(body) :]}"
            placed.append((block, memory_id, raw))
        if placed:
            # One parse for all: each item must read back as one memory spanning it.
            after = blk.parse(rel, tf)
            for block, memory_id, raw in placed:
                found = after.by_id(memory_id)
                whole = (
                    found is not None
                    and found.is_memory
                    and bool(found.text)
                    and (found.line_start, found.line_end) == (block.line_start, block.line_end)
                )
                if whole:
                    given.append(memory_id)
                else:
                    tf.lines[block.line_end - 1] = raw  # stays as the person left it
        return Edit()

    return edit


def _saved_before(writer: _Writer, rel: str, moment: float) -> bool:
    try:
        return (writer.root / rel).stat().st_mtime < moment
    except OSError:
        return False


def _lines_of(writer: _Writer, block: Block) -> list[str]:
    state = writer.catalog.files.get(block.path)
    tf = state.parsed.file if state is not None else None
    if tf is None:
        return []
    return [line.rstrip("\r\n") for line in tf.lines[block.line_start - 1 : block.line_end]]


def _typed_by_a_person(writer: _Writer, block: Block, authors: Sequence[tuple[str, str]]) -> bool:
    """Whether git credits a line of the item to a person. A line git has
    otherwise than the file now (typed since) is no one's yet: the next call
    decides, once it is committed as its author's."""
    lines = _lines_of(writer, block)
    for offset, line in enumerate(lines):
        i = block.line_start - 1 + offset
        if i >= len(authors) or authors[i][1].rstrip("\r") != line:
            return False
        if not is_agent_email(authors[i][0]):
            return True
    return False


def _all_added(writer: _Writer, block: Block, added: Counter[str]) -> bool:
    lines = _lines_of(writer, block)
    return bool(lines) and all(added[line] > 0 for line in lines)


def _added_lines(
    git: _Git, before: str | None, sha: str, paths: Sequence[str]
) -> dict[str, Counter[str]]:
    """The lines the commit ``sha`` added to each of ``paths`` (since ``before``)."""
    base = before or _EMPTY_TREE
    out = git.run("diff", "--no-color", "--no-ext-diff", "-U0", base, sha, "--", *paths)
    added: dict[str, Counter[str]] = {}
    current: Counter[str] | None = None
    for line in out.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            name = name[2:] if name.startswith("b/") else name
            current = added.setdefault(name, Counter())
        elif line.startswith("+") and current is not None:
            current[line[1:].rstrip("\r")] += 1
    return added


# git's empty tree: the base of a diff against no commit.
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
