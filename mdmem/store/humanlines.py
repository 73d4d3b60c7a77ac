"""A person's own lines in a profile file become memories with ids.

A line a person types into ``USER.md``, ``MEMORY.md`` or ``LEARNING.md`` (of
the vault root or of a scope) — a list item without a block id — is theirs.
Without an id it is only a section note: recall finds the section, but the
profile (the session-start hook, ``prompt_context``'s user section), which
lists memories, never shows it. After the writer commits the person's edit as
theirs, :func:`human_line_ider` appends ``[captured:: human] ^m-…`` to each
such item, through the writer, in a commit of its own, authored as the
person (``git blame`` keeps naming them for their line; the subject and the
``Captured: human`` trailer say mdmem added the ids). Their bytes stay as they
typed them — only the end of the item's last line changes: trailing spaces
give way to the field and the id, the line ending stays — and their own
commit before it holds exactly what they wrote. The writer does this
in :meth:`~mdmem.store.writer.Writer.commit_human_edits` (the session-start
hook, ``mdmem watch``, ``doctor``, sync) and at every write, right after it
commits the person's edits and before its own change: a line typed is a
memory by the next write, not only the next session. The ids go in by
compare-and-swap: a file saved again meanwhile is left for the next call.

Only simple items get an id: a top-level list item that is one paragraph (no
nested list or code under it), outside a code fence, whose last line carries
no id yet. Anything else stays a note, as before. An item that would not read
back as one memory spanning the whole item after the append is left alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence, Set
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from markdown_it import MarkdownIt

from mdmem.errors import MdmemError
from mdmem.files import blocks as blk
from mdmem.files.ids import ID_PATTERN
from mdmem.files.textfile import SkipFile, TextFile, decode, safe_path
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
    def set_message(self, subject: str, trailers: Iterable[tuple[str, str]]) -> None: ...


class _Blame(Protocol):
    """What is used of :class:`mdmem.store.gitstore.GitStore`."""

    def line_authors(self, path: str) -> list[tuple[str, str]]: ...


class _Writer(Protocol):
    """What is used of :class:`mdmem.store.writer.Writer` (it calls this module)."""

    catalog: Catalog
    root: Path

    @property
    def current(self) -> Any: ...

    def new_id(self) -> str: ...
    def flush(self, tx: Any, subject: str | None, author: Identity | None = None) -> None: ...


log = logging.getLogger("mdmem.store.humanlines")

__all__ = [
    "PROFILE_FILES",
    "files_wanting_ids",
    "give_ids",
    "human_line_ider",
    "is_profile_file",
    "lines_without_ids",
    "wants_ids",
]

#: The files whose hand-typed items become memories.
PROFILE_FILES = frozenset({"USER.md", "MEMORY.md", "LEARNING.md"})
_ID_AT_END = re.compile(rf"(?:^|\s)\^{ID_PATTERN}\s*$")
_HAS_CAPTURED = re.compile(r"\[captured::", re.I)
_md = MarkdownIt("commonmark").disable("inline")


def is_profile_file(rel: str) -> bool:
    """Whether ``rel`` is a profile file of the root or of a scope (not a nested copy)."""
    inner = blk.scope_of_path(rel)[1]
    return inner in PROFILE_FILES and PurePosixPath(inner).name == inner


def lines_without_ids(tf: TextFile, frontmatter_lines: int) -> list[tuple[int, int]]:
    """(first line, line the id goes on), 0-based in ``tf``, of each simple top-level
    item that has no id."""
    body = "".join(line.rstrip("\r\n") + "\n" for line in tf.lines[frontmatter_lines:])
    out: list[tuple[int, int]] = []
    depth = 0
    # Per open item: [start, end, last line of its first paragraph, paragraphs, nested]
    stack: list[list[int]] = []
    tokens = _md.parse(body)
    for tok in tokens:
        if tok.type == "list_item_open" and tok.map:
            depth += 1
            if stack:
                stack[-1][4] = 1  # the parent has a nested list: not a simple item
            stack.append([tok.map[0], tok.map[1], -1, 0, 0])
        elif tok.type == "list_item_close":
            start, _end, para_last, paragraphs, nested = stack.pop()
            depth -= 1
            if depth == 0 and para_last >= 0 and paragraphs == 1 and not nested:
                line = para_last + frontmatter_lines
                if not _ID_AT_END.search(tf.lines[line].rstrip("\r\n")):
                    out.append((start + frontmatter_lines, line))
        elif stack and tok.map and tok.type in ("fence", "code_block", "html_block", "table_open"):
            stack[-1][4] = 1
        elif tok.type == "paragraph_open" and tok.map and stack and tok.level == 2 * depth:
            stack[-1][3] += 1
            if stack[-1][2] < 0:
                stack[-1][2] = tok.map[1] - 1
    return out


def wants_ids(parsed: blk.ParsedFile) -> bool:
    """Whether a parsed profile file has an item to give an id."""
    if not is_profile_file(parsed.path) or parsed.file is None:
        return False
    return bool(lines_without_ids(parsed.file, parsed.frontmatter_lines))


def human_line_ider(
    rel: str,
    new_id: Callable[[], str],
    given: list[str],
    authors: Sequence[tuple[str, str]] = (),
) -> Editor:
    """An edit giving each simple id-less item of ``rel`` ``[captured:: human] ^id``.

    The ids given are appended to ``given`` (so the caller can name them in
    the commit); an item that would not read back with its text unchanged is
    left as it was. ``authors``, (author email, text) of each line as git has
    the file (:meth:`~mdmem.store.gitstore.GitStore.line_authors`), tells a
    person's item from one mdmem wrote without an id (a restored export, a
    template): only an item with a line git credits to a person is theirs.
    """

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        given.clear()
        fm = parsed.frontmatter_lines if parsed is not None else 0
        placed: list[tuple[int, int, str, str]] = []  # (first, id line, id, line as typed)
        for first, line_no in lines_without_ids(tf, fm):
            if authors and not _typed_by_a_person(tf, first, line_no, authors):
                continue
            raw = tf.lines[line_no]
            body = raw.rstrip("\r\n")
            memory_id = new_id()
            fields = "" if _HAS_CAPTURED.search(body) else " [captured:: human]"
            tf.lines[line_no] = f"{body.rstrip()}{fields} ^{memory_id}{raw[len(body) :]}"
            placed.append((first, line_no, memory_id, raw))
        if placed:
            # One parse for all: each item must read back as one memory spanning it.
            after = blk.parse(rel, tf)
            for first, line_no, memory_id, raw in placed:
                block = after.by_id(memory_id)
                whole = (
                    block is not None
                    and block.is_memory
                    and bool(block.text)
                    and block.line_start == first + 1
                    and block.line_end == line_no + 1
                )
                if whole:
                    given.append(memory_id)
                else:
                    tf.lines[line_no] = raw  # stays a note, as the person left it
        return Edit()

    return edit


def _typed_by_a_person(
    tf: TextFile, first: int, last: int, authors: Sequence[tuple[str, str]]
) -> bool:
    """Whether git credits a line of the item (lines ``first``..``last``) to a
    person. A line git has otherwise than the file now (typed since) is no
    one's yet: the next call decides, once it is committed as its author's."""
    for i in range(first, last + 1):
        if i >= len(authors) or authors[i][1].rstrip("\r") != tf.lines[i].rstrip("\r\n"):
            return False
        if not is_agent_email(authors[i][0]):
            return True
    return False


def files_wanting_ids(catalog: Catalog, root: Path, skip: Set[str] = frozenset()) -> list[str]:
    """The profile files (as on disk now, but ``skip``) with an item a person typed
    that has no id."""
    todo: list[str] = []
    for rel in [r for r in catalog.files if is_profile_file(r) and r not in skip]:
        catalog.refresh(rel)  # what the person saved since the last scan
        state = catalog.files.get(rel)
        # Text outside any memory (a note) is what may hold an id-less item.
        if state is None or all(
            b.is_memory or b.id.endswith("#frontmatter") for b in state.parsed.blocks
        ):
            continue
        try:
            tf = decode(safe_path(root, rel).read_bytes())
            if wants_ids(blk.parse(rel, tf)):
                todo.append(rel)
        except (OSError, SkipFile, MdmemError):
            continue  # gone or unreadable meanwhile: nothing to give ids to
    return todo


def give_ids(
    writer: _Writer,
    tx: _Transaction,
    person: Identity,
    kept_out: Set[str],
    git: _Blame | None,
) -> list[str]:
    """Give the items a person typed into profile files ids, in ``tx`` (a fresh
    transaction), authored as ``person``; the ids given. Called by the writer,
    holding the vault lock, after it committed their edits; a failure (they keep
    typing) is logged, not raised: the next call tries again. Nothing inside
    another write (``writer.current``): the next call does it. Files in
    ``kept_out`` hold a secret git has only redacted (mdmem.store.typed_secrets):
    a commit of the file would put the secret into history, so they wait until
    the person removes it. ``git`` tells their lines from mdmem's own
    (:func:`human_line_ider`)."""
    if writer.current is not None:
        return []
    todo = files_wanting_ids(writer.catalog, writer.root, kept_out)
    if not todo:
        return []
    given: dict[str, list[str]] = {rel: [] for rel in todo}
    ids: list[str] = []
    try:
        for rel in todo:
            authors = git.line_authors(rel) if git is not None else []
            tx.apply(rel, human_line_ider(rel, writer.new_id, given[rel], authors), "ids", [])
        ids = [i for rel in todo for i in given[rel]]
        if ids:
            title = f"ids for {len(ids)} line(s) typed by a person: {paths_shown(todo)}"
            trailers = [("Op", "remember"), ("Captured", "human")]
            tx.set_message(title, [*trailers, *(("Memory-Id", i) for i in ids[:20])])
            writer.flush(tx, None, person)
            return ids
    except MdmemError as exc:
        log.warning("could not give ids to the lines typed into %s: %s", todo, exc)
    for rel in tx.pending:  # nothing written: the catalog reads the disk again
        if rel in writer.catalog.files:
            writer.catalog.refresh(rel)
    return []
