"""Parse vault files into blocks with exact line ranges, and render new blocks.

A *memory* is a list item or paragraph whose last line ends in an Obsidian
block id (``- text #tag [status:: active] ^m-01jd3k5x7qabc``). In entry files
(daily logs, JOURNAL.md, sessions) a heading section holding exactly one id is
one memory, heading included, so an entry can hold any markdown. Everything
else a human wrote becomes a *section* block keyed by ``path#heading``; the
YAML frontmatter is a block of its own.

Pure functions: nothing here touches the disk.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from markdown_it import MarkdownIt

from mdmem.errors import InvalidInputError
from mdmem.files import escape as esc
from mdmem.files.frontmatter import FRONTMATTER_MAX_BYTES, frontmatter_tags, split_frontmatter
from mdmem.files.ids import ID_PATTERN, id_time
from mdmem.files.layout import (
    ARCHIVE_SUFFIX,
    ROOT_SCOPE,
    UNDATED,
    archive_path,
    default_kind_for,
    is_entry_file,
    is_scope,
    is_typed_key,
    kind_label,
    memory_file_kind,
    name_date,
    own_date,
    parse_datetime,
    scope_dir,
    scope_of_path,
    unarchived_path,
    validate_scope,
)
from mdmem.files.sidecar import Fields
from mdmem.files.textfile import TextFile
from mdmem.models import KIND_LABELS, KINDS, STATUSES, Block

# Where things live (mdmem.files.layout) is re-exported: callers that parse a
# file ask it about the file's place in the same breath.
__all__ = [
    "ARCHIVE_SUFFIX",
    "EVERY_LINE",
    "FRONTMATTER_MAX_BYTES",
    "ROOT_SCOPE",
    "UNDATED",
    "Beside",
    "ParsedFile",
    "archive_path",
    "content_hash",
    "default_kind_for",
    "frontmatter_tags",
    "heading_text",
    "is_entry_file",
    "is_typed_key",
    "kind_label",
    "label_kind",
    "list_marker",
    "memory_file_kind",
    "name_date",
    "normalize_text",
    "own_date",
    "parse",
    "parse_datetime",
    "read_back",
    "scope_dir",
    "scope_of_path",
    "split_trailing_id",
    "tags_on",
    "unarchived_path",
    "validate_scope",
    "without_lines",
    "without_trailing_id",
]

_TRAILING_ID = re.compile(rf"(?:^|\s)\^({ID_PATTERN})\s*$")
_TRAILING_ID_SUB = re.compile(rf"(^|\s)\^{ID_PATTERN}\s*$")
_ID_REF = re.compile(rf"\^{ID_PATTERN}")
_TAG = re.compile(r"(?<![\w&/#\]\)`])#([A-Za-z_][\w/-]*)")
_LIST_MARKER = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+\[[ xX]\])?(\s+|$)")
_ATX_TEXT = re.compile(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_LABEL_KINDS = {label.casefold(): kind for kind, label in KIND_LABELS.items()}
# A turn of a session file, as a transcript reads: "**Ana** (09:12): text ^m-…"
# (a paragraph), or, when its text needs more than a paragraph, a heading
# "### Ana (09:12)" over it. Days are "## 2026-12-02" headings between them.
_TURN_PREFIX = re.compile(r"\*\*([^*\n]{1,100})\*\* \((\d{2}:\d{2}(?::\d{2})?)\): ")
_DAY_HEADING = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_TURN_HEADING = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?: · .+)?|.+ \(\d{2}:\d{2}(?::\d{2})?\))$"
)


class Beside(Protocol):
    """The fields mdmem keeps beside memory lines, by id (:mod:`mdmem.files.sidecar`);
    ``tags`` among them are the tags the caller gave (they stay when a person
    rewrites the line without them). A dict is one."""

    def get(self, memory_id: str, /) -> Fields | None: ...


# Inline parsing is a third of the cost and nothing here needs inline tokens.
_md = MarkdownIt("commonmark").enable("table").disable("inline")


# --------------------------------------------------------------- helpers ----


def normalize_text(text: str) -> str:
    """The text idempotency compares: NFKC, no tags/ids, folded case and space.

    Field syntax in a memory's text is part of the text (the parser takes the
    block's own fields off before this sees it), so it counts.
    """
    text = unicodedata.normalize("NFKC", text)
    text = _TAG.sub(" ", text)
    text = _ID_REF.sub(" ", text)
    text = " ".join(text.casefold().split())
    return text.strip(" .!;,")


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()[:32]


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _tags_in(text: str) -> list[str]:
    return [t.lower() for t in _TAG.findall(text)] if "#" in text else []


# ---------------------------------------------------------------- parsing ----


@dataclass
class ParsedFile:
    path: str
    file: TextFile | None  # None when loaded from the manifest: read on demand
    frontmatter: dict[str, Any]
    frontmatter_lines: int  # lines taken by the frontmatter, fences included
    blocks: list[Block] = field(default_factory=list)
    # Every memory line may open with a kind's word (a repository's team
    # files, parse(..., labels=True)), besides a vault's memory files.
    labels: bool = False

    def memories(self) -> list[Block]:
        return [b for b in self.blocks if b.is_memory]

    def by_id(self, block_id: str) -> Block | None:
        for block in self.blocks:
            if block.id == block_id:
                return block
        return None

    def copy(self) -> ParsedFile:
        """A copy whose block list can change without touching this one."""
        return ParsedFile(
            path=self.path,
            file=self.file,
            frontmatter=self.frontmatter,
            frontmatter_lines=self.frontmatter_lines,
            blocks=list(self.blocks),
            labels=self.labels,
        )


@dataclass
class _Heading:
    level: int
    line: int  # 0-based file line
    text: str


@dataclass
class _Span:
    start: int  # 0-based file line, inclusive
    end: int  # exclusive
    block_id: str
    style: str  # "item" | "para" | "entry"
    heading: str


def parse(
    path: str,
    tf: TextFile,
    *,
    fallback_time: datetime | None = None,
    beside: Beside | None = None,
    labels: bool = False,
) -> ParsedFile:
    """Split a decoded vault file into blocks; raises SkipFile for unusable files.

    ``beside``: the fields kept beside the file's memory lines, by id (its
    fields file and any other holding records of its ids); a field written on
    a line itself (a person's ``[key:: value]``, an older vault's) wins.

    In a memory file (:func:`memory_file_kind`), a kind's word opening a list
    item (``- Decision: …``) says the item's kind, on a line mdmem keeps
    fields for and on a line typed without an id; on any other line (an older
    vault's, before ``mdmem admin migrate``) the same words are text.
    ``labels``: a file of memory lines outside a vault (a repository's team
    tier), where a kind's word opening any memory line says its kind.
    """
    meta, fm_lines = split_frontmatter(tf)
    body = "".join(_strip_eol(line) + "\n" for line in tf.lines[fm_lines:])
    tokens = _md.parse(body)
    total = len(tf.lines)

    headings: list[_Heading] = []
    items: list[tuple[int, int, int | None]] = []  # (start, end, first paragraph last line)
    simple: list[tuple[int, int]] = []  # top-level one-paragraph items: (start, last line)
    paragraphs: list[tuple[int, int]] = []
    depth = 0
    # Per open item: [start, end, first paragraph's last line, slot, paragraphs, nested]
    pending_item: list[list[Any]] = []
    for idx, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            text = tokens[idx + 1].content if idx + 1 < len(tokens) else ""
            headings.append(_Heading(int(tok.tag[1:]), tok.map[0] + fm_lines, text.strip()))
        elif tok.type == "list_item_open" and tok.map:
            depth += 1
            if pending_item:
                pending_item[-1][5] = True  # the parent holds a nested list
            items.append((0, 0, None))  # placeholder, filled at close
            pending_item.append(
                [tok.map[0] + fm_lines, tok.map[1] + fm_lines, None, len(items) - 1, 0, False]
            )
        elif tok.type == "list_item_close":
            start, end, para_last, slot, paras, nested = pending_item.pop()
            items[slot] = (start, end, para_last)
            depth -= 1
            if depth == 0 and para_last is not None and paras == 1 and not nested:
                simple.append((start, para_last))
        elif tok.type == "paragraph_open" and tok.map:
            if depth and pending_item:
                if pending_item[-1][2] is None:
                    pending_item[-1][2] = tok.map[1] + fm_lines - 1
                if tok.level == 2 * depth:
                    pending_item[-1][4] += 1
                else:
                    pending_item[-1][5] = True  # a quote or the like inside: not simple
            elif depth == 0:
                paragraphs.append((tok.map[0] + fm_lines, tok.map[1] + fm_lines))
        elif pending_item and tok.map and tok.type in ("fence", "code_block", "html_block"):
            pending_item[-1][5] = True

    turns = default_kind_for(path) == "chat_message"
    # In a session file a turn's heading is the turn's own, not a section the
    # turns after it belong to: they sit under the day's heading.
    sections = [h for h in headings if not _TURN_HEADING.match(h.text)] if turns else headings

    def heading_at(line: int) -> str:
        text = ""
        for h in sections:
            if h.line <= line:
                text = h.text
            else:
                break
        return text

    def id_on(line: int) -> str | None:
        if line < 0 or line >= total:
            return None
        match = _TRAILING_ID.search(_strip_eol(tf.lines[line]))
        return match.group(1) if match else None

    spans: list[_Span] = []
    for start, end, para_last in items:
        found = id_on(para_last) if para_last is not None else None
        if found:
            spans.append(_Span(start, end, found, "item", heading_at(start)))
    for start, end in paragraphs:
        found = id_on(end - 1)
        if found:
            spans.append(_Span(start, end, found, "para", heading_at(start)))

    if is_entry_file(path):
        stops: list[int] = []
        if turns:
            # A turn written as a paragraph ends the turn above it, as a heading does.
            stops = [a for a, _ in paragraphs if _TURN_PREFIX.match(_strip_eol(tf.lines[a]))]
        spans = _entry_spans(tf, headings, spans, fm_lines, id_on, stops, turns=turns)

    spans.sort(key=lambda s: (s.start, -s.end))
    # A memory item must not swallow a nested memory item: stop at the child.
    for i, span in enumerate(spans):
        for other in spans[i + 1 :]:
            if other.start >= span.end:
                break
            if other.start > span.start:
                span.end = other.start
                break
        while span.end - 1 > span.start and not tf.lines[span.end - 1].strip():
            span.end -= 1

    scope, _, file_tags = _file_context(path, meta)
    # A note's own date: its frontmatter, else a daily note's name. A file's
    # mtime is not one (a copy, a checkout or a sync sets it to today), so a
    # note without either is UNDATED here: recall gives it no recency either
    # way, unless the catalog dates it from git history (Catalog.redate).
    file_date = own_date(path, meta)
    file_created = file_date or fallback_time
    now = fallback_time or datetime.now(UTC)
    note_created = file_date or UNDATED

    parsed = ParsedFile(
        path=path, file=tf, frontmatter=meta, frontmatter_lines=fm_lines, labels=labels
    )
    covered = [False] * total
    context = _context_of(parsed, beside)
    for span in spans:
        # A duplicated id (a copied line) stays a block of its own: the catalog
        # keys the copy by its place, so neither line drops out of recall.
        raw = [_strip_eol(line) for line in tf.lines[span.start : span.end]]
        for line_no in range(span.start, span.end):
            covered[line_no] = True
        parsed.blocks.append(_memory_block(path, span, raw, context, file_created or now))

    if memory_file_kind(path) is not None:
        parsed.blocks.extend(_typed_items(path, tf, simple, covered, heading_at, context))
    parsed.blocks.extend(
        _sections(path, tf, headings, covered, fm_lines, scope, file_tags, note_created)
    )
    if meta:
        fm_text = "".join(tf.lines[1 : fm_lines - 1])
        parsed.blocks.append(
            Block(
                id=f"{path}#frontmatter",
                path=path,
                line_start=1,
                line_end=fm_lines,
                heading="",
                text=fm_text.strip(),
                kind="note",
                tags=tuple(file_tags),
                scope=scope,
                status="active",
                created=note_created,
                updated=None,
                content_hash=content_hash(fm_text),
                is_memory=False,
            )
        )
    parsed.blocks.sort(key=lambda b: b.line_start)
    return parsed


@dataclass(frozen=True)
class _Context:
    """What a file gives the memory blocks in it."""

    scope: str
    kind: str
    tags: list[str]
    beside: Beside | None = None
    labels: bool = False  # a memory file: kind words may open its lines
    turns: bool = False  # a session file: a paragraph turn opens with "**Ana** (09:12): "
    every_line: bool = False  # ...each of them, kept fields or not (ParsedFile.labels)


def _typed_items(
    path: str,
    tf: TextFile,
    simple: list[tuple[int, int]],
    covered: list[bool],
    heading_at: Any,
    context: _Context,
) -> list[Block]:
    """The list items a person typed into a memory file without an id: a block
    each, at once (recalled like any memory, though not one a write can name
    until mdmem gives it an id), keyed by its text (``USER.md#item-…``)."""
    out: list[Block] = []
    used: dict[str, int] = {}
    for start, last in simple:
        if covered[start] or any(covered[start : last + 1]):
            continue
        span = _Span(start, last + 1, "", "item", heading_at(start))
        raw = [_strip_eol(line) for line in tf.lines[start : last + 1]]
        block = _memory_block(path, span, raw, context, UNDATED)
        if not block.text:
            continue
        digest = block.content_hash[:12]
        used[digest] = used.get(digest, 0) + 1
        key = f"{path}#item-{digest}" + (f" ({used[digest]})" if used[digest] > 1 else "")
        for line_no in range(start, last + 1):
            covered[line_no] = True
        out.append(replace(block, id=key, is_memory=False, created=UNDATED))
    return out


def _memory_block(
    path: str,
    span: _Span,
    raw: list[str],
    context: _Context,
    fallback: datetime,
    hashed: tuple[str, str] | None = None,
) -> Block:
    body_lines = raw[1:] if span.style == "entry" else raw
    beside = (
        context.beside.get(span.block_id) if context.beside is not None and span.block_id else None
    )
    # A line mdmem keeps fields for, or one typed without an id: its kind word
    # is a kind. An older vault's line (no fields kept) reads as it always did.
    labels = context.labels and (context.every_line or beside is not None or not span.block_id)
    turn = context.turns and span.style == "para"
    text, line_fields = _clean(body_lines, span.style, span.block_id, labels=labels, turn=turn)
    fields = _merge_fields(beside, line_fields)
    field_map = dict(fields)
    kind = field_map.get("kind") if field_map.get("kind") in KINDS else context.kind
    if field_map.get("kind") == context.kind:
        # Kept beside every line (it stays when the line moves), but a field
        # only where it is not the file's own, as it always read.
        fields = tuple(f for f in fields if f[0] != "kind")
    status = field_map.get("status", "active")
    if status not in STATUSES:
        status = "active"
    created = parse_datetime(field_map.get("created")) or id_time(span.block_id) or fallback
    kept_tags = beside_tags(beside) if beside else ()
    tags = tuple(dict.fromkeys([*_tags_in(" ".join(body_lines)), *kept_tags, *context.tags]))
    # A file's location decides its scope: a block under scopes/<kind>/<name>/
    # can't claim another one. Outside scopes/, a field a person typed may.
    own_scope = None if scope_of_path(path)[0] else dict(line_fields).get("scope")
    return Block(
        id=span.block_id,
        path=path,
        line_start=span.start + 1,
        line_end=span.end,
        heading=span.heading,
        text=text,
        kind=str(kind),
        tags=tags,
        scope=own_scope if own_scope and _valid_scope(own_scope) else context.scope,
        status=status,
        created=created,
        updated=parse_datetime(field_map.get("updated")),
        content_hash=hashed[1] if hashed is not None and hashed[0] == text else content_hash(text),
        fields=fields,
        is_memory=True,
    )


def beside_tags(fields: Fields) -> tuple[str, ...]:
    """The tags a memory's kept fields hold (``tags``: the caller's, space-separated)."""
    for key, value in fields:
        if key == "tags":
            return tuple(t.lower() for t in value.split() if t)
    return ()


def _merge_fields(
    beside: Fields | None, line_fields: list[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """The memory's fields: those kept beside it, then those written on its line,
    which win (a person typed them, or an older vault kept them there). The
    caller's tags are tags, not a field."""
    if not beside:
        return tuple(line_fields)
    merged = {k: v for k, v in beside if k != "tags"}
    for key, value in line_fields:
        merged[key] = value  # in the place it has beside, if any: one order for both
    return tuple(merged.items())


def _context_of(parsed: ParsedFile, beside: Beside | None) -> _Context:
    scope, kind, tags = _file_context(parsed.path, parsed.frontmatter)
    memory_file = memory_file_kind(parsed.path) is not None
    turns = default_kind_for(parsed.path) == "chat_message"
    return _Context(
        scope,
        kind,
        tags,
        beside,
        memory_file or parsed.labels,
        turns=turns,
        every_line=parsed.labels,
    )


def _file_context(path: str, meta: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(scope, default kind, file tags) a file gives the blocks in it."""
    scope, _ = scope_of_path(path)
    declared = meta.get("scope")
    if not scope and isinstance(declared, str) and declared != ROOT_SCOPE:
        try:
            scope = validate_scope(declared)
        except InvalidInputError:
            scope = ""
    kind = meta.get("kind") if meta.get("kind") in KINDS else default_kind_for(path)
    return scope, str(kind), frontmatter_tags(meta)


def item_block(
    parsed: ParsedFile,
    lines: list[str],
    first: int,
    *,
    hashed: tuple[str, str] | None = None,
    beside: Beside | None = None,
) -> Block:
    """The Block of a list item just appended at 0-based line ``first``.

    Equivalent to reparsing the file (the appended lines are exactly one item
    after the file's other blocks) with the same ``beside``, without the cost
    of a markdown parse. ``hashed``: a (text, content hash) pair already
    computed, used if the item's text is that text.
    """
    raw = [_strip_eol(line) for line in lines]
    while raw and not raw[-1].strip():
        raw.pop()
    match = _TRAILING_ID.search(raw[-1])
    if match is None:
        raise InvalidInputError("appended item carries no block id")
    heading, scan_from = "", 0
    for block in reversed(parsed.blocks):
        if block.line_start - 1 < first:
            heading, scan_from = block.heading, block.line_end
            break
    # A heading between the previous block and the new item takes over; only
    # those few lines are looked at, not the whole file.
    if parsed.file is not None:
        for line in parsed.file.lines[scan_from:first]:
            found = _ATX_TEXT.match(_strip_eol(line))
            if found:
                heading = found.group(1).strip()
    context = _context_of(parsed, beside)
    span = _Span(first, first + len(raw), match.group(1), "item", heading)
    return _memory_block(parsed.path, span, raw, context, datetime.now(UTC), hashed)


def appended_entries(
    parsed: ParsedFile,
    tf: TextFile,
    first: int,
    ids: Iterable[str],
    *,
    heading: str = "",
    beside: Beside | None = None,
) -> list[Block]:
    """The blocks ``ids`` of lines ``tf`` holds from 0-based ``first`` on, which
    were just appended to ``parsed``: they are parsed on their own, and take the
    file's tags (and ``heading`` when they sit under none of their own)."""
    snippet = TextFile(lines=tf.lines[first:], bom=False, newline=tf.newline)
    wanted = set(ids)
    file_tags = frontmatter_tags(parsed.frontmatter)
    return [
        replace(
            b,
            line_start=b.line_start + first,
            line_end=b.line_end + first,
            tags=tuple(dict.fromkeys([*b.tags, *file_tags])),
            heading=b.heading or heading,
        )
        for b in parse(parsed.path, snippet, beside=beside).blocks
        if b.id in wanted
    ]


_ITEM_START = re.compile(r"[-*+] \S")


def appended_items(
    parsed: ParsedFile, tf: TextFile, beside: Beside | None = None
) -> ParsedFile | None:
    """The parse of ``tf`` when it is ``parsed``'s file with one-line memory items
    appended (another process's or a person's ``- text ^id`` lines), built
    without a markdown parse; None for any other change (parse the file).

    Equivalent to :func:`parse` only where the old file ended in a one-line
    memory item: then every appended one-line item is a new item of that list
    (no open fence, paragraph or entry section can take it in).
    """
    old = parsed.file
    if old is None or old.bad or tf.bad or is_entry_file(parsed.path) or not parsed.blocks:
        return None
    n = len(old.lines)
    if n == 0 or len(tf.lines) <= n or (tf.bom, tf.newline) != (old.bom, old.newline):
        return None
    last = parsed.blocks[-1]
    if not (last.is_memory and last.line_start == last.line_end == n):
        return None
    if not old.lines[-1].endswith("\n") or tf.lines[:n] != old.lines:
        return None
    added = tf.lines[n:]
    for line in added:
        bare = _strip_eol(line)
        if not _ITEM_START.match(bare) or _TRAILING_ID.search(bare) is None:
            return None
    out = ParsedFile(
        path=parsed.path,
        file=tf,
        frontmatter=parsed.frontmatter,
        frontmatter_lines=parsed.frontmatter_lines,
        blocks=list(parsed.blocks),
        labels=parsed.labels,
    )
    for offset, line in enumerate(added):
        out.blocks.append(item_block(out, [line], n + offset, beside=beside))
    return out


def without_lines(parsed: ParsedFile, tf: TextFile, start: int, end: int) -> ParsedFile | None:
    """``parsed`` after lines [start, end) (0-based, as they were) were taken out of
    its file, now ``tf``: the blocks inside them go, those after them move up.
    Equal to a parse of ``tf`` when nothing else can change, so None (parse the
    file) unless the lines were whole blocks, and what was before and after them
    cannot now run together (a paragraph's lines joining across the gap)."""
    count = end - start
    kept: list[Block] = []
    for block in parsed.blocks:
        first, last = block.line_start - 1, block.line_end  # [first, last)
        if start <= first and last <= end:
            continue  # taken out
        if last <= start:
            kept.append(block)
        elif first >= end:
            kept.append(
                replace(block, line_start=block.line_start - count, line_end=block.line_end - count)
            )
        else:
            return None  # a block reached across the lines: its text may change
    if not _apart(tf, start - 1) and not _apart(tf, start):
        return None
    out = parsed.copy()
    out.file = tf
    out.blocks = kept
    return out


def _apart(tf: TextFile, index: int) -> bool:
    """Whether line ``index`` cannot continue a paragraph across a removed gap:
    none, blank, a heading or a list item."""
    if index < 0 or index >= len(tf.lines):
        return True
    line = _strip_eol(tf.lines[index])
    return not line.strip() or bool(_ATX_TEXT.match(line)) or bool(_LIST_MARKER.match(line))


def position_of(blocks: list[Block], block: Block) -> int | None:
    """Index of the block with ``block``'s id, found by its line (blocks are
    in file order, so a bisect instead of a scan of a 10k-block file)."""
    i = bisect.bisect_left(blocks, block.line_start, key=lambda b: b.line_start)
    while i < len(blocks) and blocks[i].line_start == block.line_start:
        if blocks[i].id == block.id:
            return i
        i += 1
    return next((j for j, b in enumerate(blocks) if b.id == block.id), None)


def rewritten_block(
    parsed: ParsedFile,
    old: Block,
    old_lines: list[str],
    new_lines: list[str],
    beside: Beside | None = None,
) -> Block | None:
    """``old`` after its lines were rewritten in place, line for line.

    For a field change (``with_fields``) this replaces a parse of the whole
    file (seconds for a 10k-memory file) with the block's own lines. It
    first rebuilds ``old`` from ``old_lines`` the same way: only if that
    reproduces ``old`` exactly is the rebuild trusted for the new lines.
    None means "parse the file" (other block styles, changed shape).
    """
    if not old.is_memory or len(old_lines) != len(new_lines):
        return None
    if len(old_lines) != old.line_end - old.line_start + 1:
        return None
    first = _strip_eol(old_lines[0])
    if _ATX_TEXT.match(first):
        style = "entry"
    elif _LIST_MARKER.match(first):
        style = "item"
    else:
        return None
    context = _context_of(parsed, beside)
    span = _Span(old.line_start - 1, old.line_end, old.id, style, old.heading)

    def rebuild(lines: list[str]) -> Block | None:
        raw = [_strip_eol(line) for line in lines]
        match = _TRAILING_ID.search(raw[-1]) if raw else None
        if match is None or match.group(1) != old.id:
            return None
        return _memory_block(parsed.path, span, raw, context, old.created)

    if rebuild(old_lines) != old:
        return None
    return rebuild(new_lines)


def refielded(parsed: ParsedFile, old: Block, lines: list[str], beside: Beside) -> Block | None:
    """``old`` read again from its unchanged ``lines`` with the fields now kept
    beside it (a status change, a mark); None when its lines no longer read as
    ``old`` (parse the file)."""
    if not old.is_memory or len(lines) != old.line_end - old.line_start + 1:
        return None
    first = _strip_eol(lines[0])
    if _ATX_TEXT.match(first) and is_entry_file(parsed.path):
        style = "entry"
    elif _LIST_MARKER.match(first):
        style = "item"
    else:
        style = "para"
    raw = [_strip_eol(line) for line in lines]
    match = _TRAILING_ID.search(raw[-1]) if raw else None
    if match is None or match.group(1) != old.id:
        return None
    span = _Span(old.line_start - 1, old.line_end, old.id, style, old.heading)
    new = _memory_block(parsed.path, span, raw, _context_of(parsed, beside), old.created)
    if (new.text, new.scope) != (old.text, old.scope):
        return None
    return new


class _EveryLine:
    """A Beside for edits that only move lines: every line with an id is read
    as one mdmem keeps fields for (its kind's word is a kind), none has any."""

    def get(self, memory_id: str, /) -> Fields | None:
        return ()


#: See :class:`_EveryLine` (purge and retention rewrite lines of any version).
EVERY_LINE: Beside = _EveryLine()


def _valid_scope(value: str | None) -> bool:
    return bool(value) and is_scope(str(value))


def _entry_spans(
    tf: TextFile,
    headings: list[_Heading],
    spans: list[_Span],
    fm_lines: int,
    id_on: Any,
    stops: list[int] | None = None,
    *,
    turns: bool = False,
) -> list[_Span]:
    """In entry files a heading section with one id, on its last line, is one memory
    (``stops``: lines that end a section as a heading would, a session's paragraph
    turns; ``turns``: a day's heading in a transcript only ends one)."""
    total = len(tf.lines)
    result: list[_Span] = []
    claimed: set[int] = set()
    for i, heading in enumerate(headings):
        if turns and _DAY_HEADING.match(heading.text):
            continue
        end = headings[i + 1].line if i + 1 < len(headings) else total
        if stops:
            after = bisect.bisect_right(stops, heading.line)
            if after < len(stops) and stops[after] < end:
                end = stops[after]
        last = end - 1
        while last > heading.line and not tf.lines[last].strip():
            last -= 1
        inside = [s for s in spans if heading.line <= s.start < end]
        found = id_on(last) if last > heading.line else None
        ids_inside = {s.block_id for s in inside}
        if found and (not ids_inside or ids_inside == {found}):
            result.append(_Span(heading.line, last + 1, found, "entry", heading.text))
            claimed.update(id(s) for s in inside)
    result.extend(s for s in spans if id(s) not in claimed)
    return result


def _clean(
    lines: list[str], style: str, block_id: str, *, labels: bool = False, turn: bool = False
) -> tuple[str, list[tuple[str, str]]]:
    """Block lines to (text, inline fields): no marker, id or live fields, escapes decoded.

    Lines inside a fenced code block are code: kept as they are (trailing
    spaces too), with no fields read from them, except that the block's own
    id is taken off the line that carries it. With ``labels``, a kind's word
    opening a list item (``Decision: …``) is the field ``kind`` and not text.
    """
    fields: list[tuple[str, str]] = []
    out: list[str] = []
    indent = 0
    fence: str | None = None
    for n, line in enumerate(lines):
        if turn and n == 0:
            said = _TURN_PREFIX.match(line)
            if said is not None:
                line = line[said.end() :]  # who and when: the turn's fields say it
        if style == "item" and n == 0:
            match = _LIST_MARKER.match(line)
            if match:
                indent = len(match.group(0))
                line = line[indent:]
            if labels and ":" in line:
                label = esc.LABEL.match(line)
                if label is not None and not label.group(2):
                    fields.append(("kind", _LABEL_KINDS[label.group(1).casefold()]))
                    line = line[label.end() :].lstrip(" \t")
        elif style == "item" and line[:indent].strip() == "":
            line = line[indent:]
        if fence is not None:
            if esc.closes_fence(line, fence):
                fence = None
                line = line.rstrip()
            elif "^" in line and _own_id(line, block_id):
                # An unclosed fence ran to the id line: its id and fields are still the block's.
                line, found = esc.take_fields(_TRAILING_ID_SUB.sub("", line))
                fields.extend(found)
                line = line.rstrip()
            else:
                line = esc.unescape_code_line(line)
            out.append(line)
            continue
        fence = esc.fence_opener(line)
        if fence is not None:
            if "^" in line and _own_id(line, block_id):
                line, found = esc.take_fields(_TRAILING_ID_SUB.sub("", line))
                fields.extend(found)
            out.append(line.rstrip())
            continue
        if "^" in line:
            line = _TRAILING_ID_SUB.sub("", line)
        if "::" in line:  # every inline field has one
            line, found = esc.take_fields(line)
            fields.extend(found)
        if labels and "→" in line and n == len(lines) - 1:
            link = esc.REPLACED_BY.search(line.rstrip())
            if link is not None and not link.group(1):
                # A retired line's link to what replaced it: a field, not text.
                fields.append(("by", f"^{link.group(2)}"))
                line = line[: link.start()]
        out.append(esc.unescape_line(line.rstrip()))
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out).strip(), fields


def _own_id(line: str, block_id: str) -> bool:
    match = _TRAILING_ID.search(line)
    return match is not None and match.group(1) == block_id


def _sections(
    path: str,
    tf: TextFile,
    headings: list[_Heading],
    covered: list[bool],
    fm_lines: int,
    scope: str,
    file_tags: list[str],
    created: datetime,
) -> list[Block]:
    """Uncovered text between headings, as ``path#heading`` blocks."""
    total = len(tf.lines)
    bounds: list[tuple[int, int, str]] = []
    first = headings[0].line if headings else total
    if first > fm_lines:
        bounds.append((fm_lines, first, ""))
    for i, heading in enumerate(headings):
        end = headings[i + 1].line if i + 1 < len(headings) else total
        bounds.append((heading.line, end, heading.text))
    blocks: list[Block] = []
    used: dict[str, int] = {}
    for start, end, title in bounds:
        content_lines = [
            n
            for n in range(start, end)
            if not covered[n]
            and tf.lines[n].strip()
            and not (title and n == start)
            and not _COMMENT.match(tf.lines[n])
        ]
        if not content_lines:
            continue
        text = "\n".join(_strip_eol(tf.lines[n]).rstrip() for n in content_lines).strip()
        key = title or "top"
        used[key] = used.get(key, 0) + 1
        if used[key] > 1:
            key = f"{key} ({used[key]})"
        tags = tuple(dict.fromkeys([*_tags_in(text), *file_tags]))
        blocks.append(
            Block(
                id=f"{path}#{key}",
                path=path,
                line_start=start + 1,
                line_end=content_lines[-1] + 1,
                heading=title,
                text=text,
                kind="note",
                tags=tags,
                scope=scope,
                status="active",
                created=created,
                updated=None,
                content_hash=content_hash(text),
                is_memory=False,
            )
        )
    return blocks


# -------------------------------------------------------------- rendering ----


def tags_on(lines: Iterable[str]) -> list[str]:
    """The ``#tags`` written on lines (lower case, in order)."""
    return list(dict.fromkeys(_tags_in(" ".join(lines))))


def list_marker(line: str) -> str | None:
    """The list marker a line opens with (``- ``, ``1. ``, ``- [ ] ``), or None."""
    match = _LIST_MARKER.match(line)
    return match.group(0) if match else None


def read_back(
    lines: list[str], style: str, block_id: str, *, turn: bool = False
) -> tuple[str, list[tuple[str, str]]]:
    """(text, fields on the lines) that a block of ``style`` (``item``, ``para``,
    ``entry``) written as ``lines`` and ending in ``^block_id`` reads back as: what
    a renderer checks before it writes (:mod:`mdmem.files.render`)."""
    return _clean(lines, style, block_id, turn=turn)


def heading_text(line: str) -> str | None:
    """The text of an ATX heading line, or None when the line is no heading."""
    match = _ATX_TEXT.match(line)
    return match.group(1).strip() if match else None


def split_trailing_id(line: str) -> tuple[str, str] | None:
    """(what precedes it, the id) for a line that ends in a block id, else None."""
    match = _TRAILING_ID.search(line)
    return (line[: match.start()], match.group(1)) if match else None


def without_trailing_id(line: str) -> str:
    return _TRAILING_ID_SUB.sub("", line)


def label_kind(word: str) -> str | None:
    """The kind a kind's word names (``Decision`` → ``decision``), or None."""
    return _LABEL_KINDS.get(word.casefold())
