"""File editors: the edits a transaction applies to one file's lines.

An editor is a function ``(TextFile, ParsedFile | None) -> Edit``: it changes
the text in place and says what it did, so the writer can reparse only what
changed (an append is parsed on its own; a one-block rewrite is rebuilt from
its own lines). Editors are replayed as they are when a person changed the
file meanwhile, so they find their targets again by id, never by line number
captured earlier.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mdmem.errors import MemoryNotFoundError, VaultFileError
from mdmem.files import blocks as blk
from mdmem.files import escape as esc
from mdmem.files import render
from mdmem.files.ids import ID_PATTERN, is_copy_key, written_id
from mdmem.files.textfile import FileStat, TextFile
from mdmem.models import Block

__all__ = [
    "FILE_TITLES",
    "Edit",
    "Editor",
    "Pending",
    "append_item",
    "block_remover",
    "blocks_rewriter",
    "entry_appender",
    "field_setter",
    "file_creator",
    "id_replacer",
    "item_appender",
    "raw_replacer",
    "record_appender",
    "refielder",
    "require",
    "turn_appender",
]

FILE_TITLES = {
    "MEMORY.md": "# Memory",
    "USER.md": "# User",
    "WORLD.md": "# World",
    "LEARNING.md": "# Learning",
    "JOURNAL.md": "# Journal",
}


@dataclass
class Edit:
    """What an edit did to a file: lines appended at ``appended_at`` (or None)."""

    appended_at: int | None = None
    ids: list[str] = field(default_factory=list)
    item: bool = False  # the appended lines are one list item we rendered
    # One block rewritten line for line (a field change), as it now parses.
    rewritten: Block | None = None
    # (text, its content hash) when the caller hashed the item's text already.
    hashed: tuple[str, str] | None = None
    # The section the appended blocks sit in when the appended lines don't
    # say it themselves (a session turn under its day's heading).
    heading: str | None = None
    # Lines [start, end) (0-based, as before the edit) taken out whole: the
    # blocks after them only move up (a retired line leaving its note).
    removed: tuple[int, int] | None = None


Editor = Callable[[TextFile, "blk.ParsedFile | None"], Edit]


@dataclass
class Pending:
    """One file's state inside an open transaction."""

    original: bytes | None
    tf: TextFile
    parsed: blk.ParsedFile | None
    edits: list[Editor] = field(default_factory=list)
    appended: list[Block] = field(default_factory=list)  # blocks the edits appended
    # Blocks rewritten in place: id -> (as first read, as now).
    rewritten: dict[str, tuple[Block, Block]] = field(default_factory=dict)
    only_appends: bool = True  # appends and in-place rewrites; False: diff the file
    # The file's stat when ``original`` was read (None: unknown, or it changed
    # during the read): tells whether git already has those bytes.
    seen: FileStat | None = None
    # The blocks as first read: what a commit record compares a re-parsed file with.
    first: tuple[Block, ...] = ()


def require(parsed: blk.ParsedFile | None, memory_id: str) -> Block:
    """The block ``memory_id`` of a parse, or MemoryNotFoundError."""
    block = parsed.by_id(memory_id) if parsed is not None else None
    if block is None:
        raise MemoryNotFoundError(f"no memory {memory_id} (was it removed meanwhile?)")
    return block


_LIST_ITEM_START = re.compile(r"^\s*([-*+]|\d+[.)])\s")
_ID_AT_END = re.compile(r"\^(" + ID_PATTERN + r")\s*$")
# An ATX heading; a closing "#" run counts only after a space ("C#" keeps its "#").
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")


def _close_open_fence(tf: TextFile) -> None:
    """If a human left a code fence open at the end, close it before appending.

    Otherwise everything appended would sit inside their code block.
    """
    fence: str | None = None
    for raw in tf.lines[tf.fence_clean :]:
        line = raw.rstrip("\r\n")
        # CommonMark's rules, as the parser reads them: "```py" inside a fence
        # is code, not its end, and "```a`b" opens nothing. A wrong guess here
        # appends a stray fence that swallows everything after it.
        if fence is None:
            fence = esc.fence_opener(line)
        elif esc.closes_fence(line, fence):
            fence = None
    if fence is not None:
        tf.append_lines([fence])
    tf.fence_clean = len(tf.lines)


def entry_appender(header: list[str], lines: list[str], memory_id: str) -> Editor:
    """An edit appending one entry section (``header`` starts a new file)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if not tf.lines:
            tf.append_lines([*header, ""])
        _close_open_fence(tf)
        first = tf.append_lines(lines, blank_before=True)
        tf.fence_clean = len(tf.lines)
        return Edit(appended_at=first, ids=[memory_id])

    return edit


_DAY_HEADING = re.compile(r"^## (\d{4}-\d{2}-\d{2})[ \t]*$")


def turn_appender(header: list[str], day: str, lines: list[str], memory_id: str) -> Editor:
    """An edit appending one session turn (:func:`mdmem.files.render.render_turn`)
    under its day's heading (``## 2026-12-02``, added when the day changed)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if not tf.lines:
            tf.append_lines([*header, ""])
        _close_open_fence(tf)
        last_day = _last_day(tf, parsed)
        first = None
        if last_day != day:
            first = tf.append_lines([f"## {day}"], blank_before=True)
        start = tf.append_lines(lines, blank_before=True)
        tf.fence_clean = len(tf.lines)
        return Edit(appended_at=start if first is None else first, ids=[memory_id], heading=day)

    return edit


def _last_day(tf: TextFile, parsed: blk.ParsedFile | None) -> str | None:
    """The day of a transcript's last day heading. A turn written as a paragraph
    sits under its day's heading (its block's heading): when the file's last block
    is one and no heading follows it, that is the answer without a pass over a
    transcript of thousands of turns."""
    if parsed is not None and parsed.blocks:
        last = parsed.blocks[-1]
        after = tf.lines[last.line_end :]
        opens_as_turn = tf.lines[last.line_start - 1].startswith("**")
        if opens_as_turn and not any(line.startswith("#") for line in after):
            found = _DAY_HEADING.match(f"## {last.heading}")
            if found is not None:
                return found.group(1)
    for raw in reversed(tf.lines):
        if raw.startswith("## "):
            match = _DAY_HEADING.match(raw.rstrip("\r\n"))
            if match is not None:
                return match.group(1)
    return None


def append_item(tf: TextFile, lines: list[str]) -> Edit:
    """Append one rendered list item, keeping consecutive memories in one tight list."""
    _close_open_fence(tf)
    last = next((line for line in reversed(tf.lines) if line.strip()), "")
    is_item = bool(_LIST_ITEM_START.match(last))
    first = tf.append_lines(lines, blank_before=not is_item)
    tf.fence_clean = len(tf.lines)
    return Edit(appended_at=first, ids=[_id_of(lines)], item=True)


def item_appender(
    rel: str,
    lines: list[str],
    *,
    topic: str | None = None,
    hashed: tuple[str, str] | None = None,
) -> Editor:
    """An edit appending one list item (under ``## Topic: topic`` when given)."""
    title = FILE_TITLES.get(rel.rsplit("/", 1)[-1], "# Memory")

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if not tf.lines:
            tf.append_lines([title, ""])
        if topic is not None:
            return _insert_under_topic(tf, topic, lines)
        appended = append_item(tf, lines)
        appended.hashed = hashed
        return appended

    return edit


def field_setter(memory_id: str, updates: dict[str, str | None]) -> Editor:
    """An edit setting (or, with None, removing) inline fields of one block."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        new_lines = render.with_fields(current, tf, updates)
        start, end = current.line_start - 1, current.line_end
        assert parsed is not None
        rebuilt = blk.rewritten_block(parsed, current, tf.lines[start:end], new_lines)
        tf.replace_lines(start, end, new_lines)
        return Edit(rewritten=rebuilt)

    return edit


def record_appender(lines: list[str]) -> Editor:
    """An edit appending field records to a fields file (:mod:`mdmem.files.sidecar`):
    whole lines, nothing else touched, so two clones' appends merge by union."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        tf.append_lines(lines)
        return Edit(appended_at=len(tf.lines) - len(lines))

    return edit


def refielder(memory_id: str, beside: blk.Beside) -> Editor:
    """An edit that changes no byte of a note: its memory ``memory_id`` takes
    the fields kept beside it now (a field change that leaves the line as it is)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        assert parsed is not None
        lines = tf.lines[current.line_start - 1 : current.line_end]
        return Edit(rewritten=blk.refielded(parsed, current, lines, beside))

    return edit


def block_remover(memory_id: str) -> Editor:
    """An edit removing one block (and one separating blank line)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        start, end = current.line_start - 1, current.line_end
        # Take one separating blank line along so no double gap is left.
        gap_after = end < len(tf.lines) and not tf.lines[end].strip()
        if gap_after and (start == 0 or not tf.lines[start - 1].strip()):
            end += 1
        tf.replace_lines(start, end, [])
        return Edit()

    return edit


def id_replacer(memory_id: str, occurrence: int, new_id: str) -> Editor:
    """An edit giving the ``occurrence``-th line (1-based, in file order) that
    carries ``^memory_id`` the id ``new_id``: a copied line's repair.

    Only the id changes; the rest of the line, its ending included, stays
    byte for byte. The line is found again by id and position, so the edit
    replays over a person's later edits.
    """

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        found = sorted(
            (
                b
                for b in (parsed.blocks if parsed is not None else [])
                if (b.is_memory or is_copy_key(b.id)) and written_id(b.id) == memory_id
            ),
            key=lambda b: b.line_start,
        )
        if not 1 <= occurrence <= len(found):
            raise MemoryNotFoundError(
                f"no line {occurrence} with ^{memory_id} (was it edited meanwhile?)"
            )
        block = found[occurrence - 1]
        for i in range(block.line_end - 1, block.line_start - 2, -1):
            line = tf.lines[i]
            body = line.rstrip("\r\n")
            match = _ID_AT_END.search(body)
            if match is not None and match.group(1) == memory_id:
                tf.lines[i] = (
                    body[: match.start(1)] + new_id + body[match.end(1) :] + line[len(body) :]
                )
                return Edit()
        raise VaultFileError(f"the line carrying ^{memory_id} could not be found")

    return edit


def blocks_rewriter(ids: list[str], make: Callable[[Block, TextFile], list[str]]) -> Editor:
    """An edit replacing each block's lines with ``make(block, file)``."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = [require(parsed, i) for i in ids]
        # Bottom-up, so a block whose line count changes leaves the line
        # numbers of the blocks above it valid.
        for block in sorted(current, key=lambda b: -b.line_start):
            tf.replace_lines(block.line_start - 1, block.line_end, make(block, tf))
        return Edit()

    return edit


def file_creator(rel: str, lines: list[str]) -> Editor:
    """An edit writing a new file; it must not exist yet."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if tf.lines:
            raise VaultFileError(f"{rel} already exists")
        tf.append_lines(lines)
        return Edit()

    return edit


def raw_replacer(text: str) -> Editor:
    """An edit replacing the whole file with ``text`` (files the parser never reads)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        tf.lines[:] = [text]
        return Edit()

    return edit


def _id_of(lines: list[str]) -> str:
    match = _ID_AT_END.search(lines[-1])
    assert match is not None
    return match.group(1)


def _insert_under_topic(tf: TextFile, topic: str, lines: list[str]) -> Edit:
    wanted = f"topic: {topic}".casefold()
    start = None
    level = 2
    for idx, raw in enumerate(tf.lines):
        match = _HEADING.match(raw.rstrip("\r\n"))
        if match and match.group(2).casefold() == wanted:
            start, level = idx, len(match.group(1))
            break
    if start is None:
        first = tf.append_lines([f"## Topic: {topic}", "", *lines], blank_before=True)
        return Edit(appended_at=first, ids=[_id_of(lines)])
    end = len(tf.lines)
    for idx in range(start + 1, len(tf.lines)):
        match = _HEADING.match(tf.lines[idx].rstrip("\r\n"))
        if match and len(match.group(1)) <= level:
            end = idx
            break
    last = end - 1
    while last > start and not tf.lines[last].strip():
        last -= 1
    if last == len(tf.lines) - 1:
        first = tf.append_lines(lines, blank_before=last == start)
        # One item after the file's other blocks: parsed with its section's
        # heading (a parse of the appended lines alone would lose it).
        return Edit(appended_at=first, ids=[_id_of(lines)], item=True)
    insert_at = last + 1
    new_lines = ([""] if last == start else []) + lines
    tf.insert_lines(insert_at, new_lines)
    return Edit()
