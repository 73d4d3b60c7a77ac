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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Protocol

import yaml
from markdown_it import MarkdownIt

from mdmem.errors import InvalidInputError
from mdmem.files import escape as esc
from mdmem.files.ids import ID_PATTERN, id_time
from mdmem.files.sidecar import Fields
from mdmem.files.textfile import SkipFile, TextFile
from mdmem.models import KIND_LABELS, KINDS, STATUSES, Block, one_line

__all__ = [
    "EVERY_LINE",
    "FRONTMATTER_MAX_BYTES",
    "ROOT_SCOPE",
    "UNDATED",
    "Beside",
    "ParsedFile",
    "content_hash",
    "default_kind_for",
    "is_entry_file",
    "is_typed_key",
    "kind_label",
    "list_marker",
    "memory_file_kind",
    "name_date",
    "normalize_text",
    "own_date",
    "parse",
    "parse_datetime",
    "render_entry",
    "render_list_item",
    "render_paragraph",
    "render_turn",
    "scope_dir",
    "scope_of_path",
    "tags_on",
    "validate_scope",
    "without_lines",
]

FRONTMATTER_MAX_BYTES = 64 * 1024
_MAX_YAML_ALIASES = 64

_TRAILING_ID = re.compile(rf"(?:^|\s)\^({ID_PATTERN})\s*$")
_TRAILING_ID_SUB = re.compile(rf"(^|\s)\^{ID_PATTERN}\s*$")
_ID_REF = re.compile(rf"\^{ID_PATTERN}")
_TAG = re.compile(r"(?<![\w&/#\]\)`])#([A-Za-z_][\w/-]*)")
_LIST_MARKER = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+\[[ xX]\])?(\s+|$)")
_ATX_TEXT = re.compile(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
# Used with fullmatch: "$" would also match before a final newline ("user:alice\n").
_SCOPE = re.compile(r"([a-z][a-z0-9_-]{0,31}):([a-z0-9][a-z0-9._-]{0,63})")
# The vault root scope is "" in the API; where a reader needs a word for it
# (frontmatter, commit trailers, tool arguments) it is "root".
ROOT_SCOPE = "root"

_FILE_KINDS = {
    "MEMORY.md": "fact",
    "USER.md": "preference",
    "LEARNING.md": "learning",
    "WORLD.md": "world",
    "JOURNAL.md": "journal",
}
_ENTRY_KINDS = frozenset({"log", "journal", "chat_message", "document_chunk"})
#: Where retired list items of a memory file go, beside it: ``MEMORY.md`` ->
#: ``MEMORY.earlier.md`` (a name of its own, so ``[[MEMORY]]`` still means one note).
ARCHIVE_SUFFIX = ".earlier.md"
_LABEL_KINDS = {label.casefold(): kind for kind, label in KIND_LABELS.items()}
# A turn of a session file, as a transcript reads: "**Ana** (09:12): text ^m-…"
# (a paragraph), or, when its text needs more than a paragraph, a heading
# "### Ana (09:12)" over it. Days are "## 2026-12-02" headings between them.
_TURN_PREFIX = re.compile(r"\*\*([^*\n]{1,100})\*\* \((\d{2}:\d{2}(?::\d{2})?)\): ")
_TURN_HEADING = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?: · .+)?|.+ \(\d{2}:\d{2}(?::\d{2})?\))$"
)
# A line a person typed without an id, in a memory file, is a block of its own
# at once, keyed by its text until mdmem gives it an id: "USER.md#item-3f2a9c1b".
_TYPED_KEY = re.compile(r"#item-[0-9a-f]{12}(?: \(\d+\))?\Z")


class Beside(Protocol):
    """The fields mdmem keeps beside memory lines, by id (:mod:`mdmem.files.sidecar`);
    ``tags`` among them are the tags the caller gave (they stay when a person
    rewrites the line without them). A dict is one."""

    def get(self, memory_id: str, /) -> Fields | None: ...


# Inline parsing is a third of the cost and nothing here needs inline tokens.
_md = MarkdownIt("commonmark").enable("table").disable("inline")


# ----------------------------------------------------------------- scopes ----


def validate_scope(scope: str | None) -> str:
    """``None``/``""`` is the vault root; otherwise ``kind:name`` in lower case."""
    if scope is None or scope == "":
        return ""
    if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
        raise InvalidInputError(
            f"invalid scope {scope!r}: use kind:name in lower case, e.g. project:marketing"
        )
    return scope


def scope_dir(scope: str) -> PurePosixPath:
    """Where a scope's files live: the root, or ``scopes/<kind>/<name>``."""
    if not scope:
        return PurePosixPath()
    kind, name = scope.split(":", 1)
    return PurePosixPath("scopes", kind, name)


# Called a few times per block on the write path with a handful of distinct paths.
@lru_cache(maxsize=4096)
def scope_of_path(path: str) -> tuple[str, str]:
    """(scope, path relative to the scope folder) for a vault-relative path."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 4 and parts[0] == "scopes":
        scope = f"{parts[1]}:{parts[2]}"
        if _SCOPE.fullmatch(scope):
            return scope, "/".join(parts[3:])
    return "", path


@lru_cache(maxsize=4096)
def default_kind_for(path: str) -> str:
    _, inner = scope_of_path(path)
    parts = PurePosixPath(inner).parts
    if len(parts) == 1 and _home_name(parts[0]) in _FILE_KINDS:
        return _FILE_KINDS[_home_name(parts[0])]  # MEMORY.earlier.md: MEMORY.md's retired lines
    if len(parts) == 1 and parts[0] in _FILE_KINDS:
        return _FILE_KINDS[parts[0]]
    if parts and parts[0] == "daily":
        return "log"
    if parts and parts[0] == "episodes":
        return "episode"
    if parts and parts[0] == "sessions":
        return "chat_message"
    if len(parts) == 2 and parts[0] == "documents":
        return "document_chunk"  # mdmem.memory.library.documents writes these files
    return "note"


def is_entry_file(path: str) -> bool:
    return default_kind_for(path) in _ENTRY_KINDS


@lru_cache(maxsize=4096)
def memory_file_kind(path: str) -> str | None:
    """The kind of a memory file (``MEMORY.md``, ``USER.md``, ``LEARNING.md``,
    ``WORLD.md``, of the root or a scope, and their archives), where a line a
    person types is a memory at once; None for any other file."""
    _, inner = scope_of_path(path)
    parts = PurePosixPath(inner).parts
    if len(parts) != 1:
        return None
    name = _home_name(parts[0])
    if name in _FILE_KINDS and name != "JOURNAL.md":
        return _FILE_KINDS[name]
    return None


def _home_name(name: str) -> str:
    """``MEMORY.md`` for ``MEMORY.earlier.md``; any other name as it is."""
    return name[: -len(ARCHIVE_SUFFIX)] + ".md" if name.endswith(ARCHIVE_SUFFIX) else name


def archive_path(path: str) -> str:
    """Where a retired line of ``path`` goes: ``MEMORY.earlier.md`` beside ``MEMORY.md``."""
    return path[: -len(".md")] + ARCHIVE_SUFFIX


def unarchived_path(path: str) -> str | None:
    """The note an archive file belongs to (None when ``path`` is not an archive)."""
    if not path.endswith(ARCHIVE_SUFFIX):
        return None
    return path[: -len(ARCHIVE_SUFFIX)] + ".md"


def kind_label(kind: str) -> str | None:
    """The word a line of ``kind`` starts with (``Decision``), or None."""
    return KIND_LABELS.get(kind)


def is_typed_key(block_id: str) -> bool:
    """Whether a block key is a typed line's (a list item a person wrote, without an id yet)."""
    return "#item-" in block_id and _TYPED_KEY.search(block_id) is not None


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


# The date of a note that has none of its own (see parse): the epoch, which
# the manifest already reads back for a missing date; recall's recency skips it.
UNDATED = datetime.fromtimestamp(0, tz=UTC)
_DAILY = re.compile(r"(?:^|/)(\d{4})-(\d{2})-(\d{2})\.md$")


def name_date(path: str) -> datetime | None:
    """A daily note's date from its name (``journal/2025-03-02.md``), else None."""
    match = _DAILY.search(path)
    if match is None:
        return None
    try:
        year, month, day = (int(g) for g in match.groups())
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None  # 2025-13-40.md names no day


def own_date(path: str, meta: dict[str, Any]) -> datetime | None:
    """The date a note gives itself: its frontmatter's ``created``/``date``,
    else a daily note's name; None when it gives none (then git history may:
    :mod:`mdmem.store.gitdates`)."""
    return parse_datetime(meta.get("created") or meta.get("date")) or name_date(path)


def parse_datetime(value: Any) -> datetime | None:
    """ISO date or datetime (or a YAML date) to an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip().replace(" ", "T", 1) if "T" not in str(value) else str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _tags_in(text: str) -> list[str]:
    return [t.lower() for t in _TAG.findall(text)] if "#" in text else []


def frontmatter_tags(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("tags", meta.get("tag"))
    if raw is None:
        return []
    items: Iterable[Any]
    if isinstance(raw, str):
        items = re.split(r"[,\s]+", raw)
    elif isinstance(raw, list | tuple):
        items = raw
    else:
        items = [raw]
    return [str(t).lstrip("#").lower() for t in items if str(t).strip().lstrip("#")]


def _load_frontmatter(text: str) -> dict[str, Any]:
    if len(text.encode("utf-8")) > FRONTMATTER_MAX_BYTES:
        raise SkipFile(f"frontmatter larger than {FRONTMATTER_MAX_BYTES // 1024} KiB")
    try:
        aliases = sum(
            1 for ev in yaml.parse(text, Loader=yaml.SafeLoader) if isinstance(ev, yaml.AliasEvent)
        )
    except yaml.YAMLError as exc:
        raise SkipFile(f"malformed frontmatter: {one_line(str(exc), 200)}") from None
    if aliases > _MAX_YAML_ALIASES:
        raise SkipFile(f"frontmatter uses {aliases} YAML aliases (alias bomb?)")
    import frontmatter  # python-frontmatter: its YAML handler is the reference loader

    try:
        meta = frontmatter.YAMLHandler().load(text)
    except yaml.YAMLError as exc:
        raise SkipFile(f"malformed frontmatter: {one_line(str(exc), 200)}") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise SkipFile("malformed frontmatter: not a mapping")
    return meta


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


def _split_frontmatter(tf: TextFile) -> tuple[dict[str, Any], int]:
    lines = tf.lines
    if not lines or _strip_eol(lines[0]).rstrip() != "---":
        return {}, 0
    for idx in range(1, len(lines)):
        stripped = _strip_eol(lines[idx]).rstrip()
        if stripped in ("---", "..."):
            meta = _load_frontmatter("".join(lines[1:idx]))
            return meta, idx + 1
    raise SkipFile("malformed frontmatter: no closing ---")


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
    meta, fm_lines = _split_frontmatter(tf)
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

    kind_default = default_kind_for(path)
    if kind_default in _ENTRY_KINDS:
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
    return bool(value) and bool(_SCOPE.fullmatch(str(value)))


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
    turns; ``turns``: only a turn's heading starts one, a day's only ends one)."""
    total = len(tf.lines)
    result: list[_Span] = []
    claimed: set[int] = set()
    for i, heading in enumerate(headings):
        if turns and not _TURN_HEADING.match(heading.text):
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


def _suffix(
    block_id: str, tags: Iterable[str], fields: Iterable[tuple[str, str]], text: str
) -> str:
    present = set(_tags_in(text))
    parts = [f"#{t}" for t in tags if t.lower() not in present]
    parts += [f"[{k}:: {v}]" for k, v in fields]
    parts.append(f"^{block_id}")
    return " ".join(parts)


def _split_lines(text: str) -> list[str]:
    """Text as lines; CRLF and CR are line endings (a file can hold no bare CR in a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _paragraph_lines(text: str) -> list[str]:
    """Text as the lines of one paragraph: no trailing space, no blank lines."""
    lines = [line.rstrip() for line in _split_lines(text)]
    lines = [line for line in lines if line.strip()]
    if lines:
        lines[0] = lines[0].lstrip()
    return lines


def _trim_blank(lines: list[str]) -> list[str]:
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), -1)
    return lines[first : last + 1]


# Ids the read-back checks render with (any well-formed id parses the same).
_PROBE_ID = "m-00000000probe"
_NEXT_ID = "m-00000000probf"


def _paragraph(text: str, what: str) -> tuple[list[str], str, bool]:
    """(escaped lines, the text they read back as, whether they need the read-back
    check) for a one-paragraph memory."""
    plain = _paragraph_lines(text)
    if not plain:
        raise InvalidInputError(f"{what} is empty")
    expected = "\n".join(plain)
    escaped = esc.escape_lines(plain, full=True)[0]
    # Nothing escaped and no backslash, field or caret: the lines are the text.
    trivial = escaped == plain and not any(c in expected for c in ("\\", "::", "^"))
    return escaped, expected, not trivial


def _check_paragraph(
    lines: list[str], style: str, expected: str, fields: list[tuple[str, str]]
) -> None:
    """Refuse a block that would not read back as ``expected`` with exactly ``fields``.

    The escaping makes every text line a line of one paragraph, so reading the
    block's own lines back is the whole check (no markdown parse: this runs
    for remembered memories, bulk imports included).
    """
    probe = [*lines[:-1], f"{lines[-1]} {_suffix(_PROBE_ID, (), fields, '')}"]
    if _clean(probe, style, _PROBE_ID) != (expected, fields):
        raise InvalidInputError(_UNFAITHFUL)


_UNFAITHFUL = "this text or its fields can't be stored so that they read back unchanged"


def render_list_item(
    text: str,
    block_id: str,
    *,
    tags: Iterable[str] = (),
    fields: Iterable[tuple[str, str]] = (),
    label: str | None = None,
) -> list[str]:
    """``- Label: text #tag ^id``; continuation lines indented under the marker.

    The memory stays one paragraph, whose last line carries the id: blank
    lines inside the text are dropped, trailing spaces too, and what would
    read as structure or metadata (headings, list markers, fences, inline
    fields, block ids, a kind's word opening the text) is escaped
    (:mod:`mdmem.files.escape`), so the item reads back as the text.
    ``label``: the kind's word the line opens with (:func:`kind_label`).
    ``fields`` are written on the line (``[k:: v]``): the team tier's lines
    keep theirs there; a vault's memory keeps its fields beside the line.
    """
    escaped, expected, check = _paragraph(text, "memory text")
    fields = list(fields)
    rendered = [f"- {escaped[0]}"] + [f"  {line}" for line in escaped[1:]]
    if check or fields:
        _check_paragraph(rendered, "item", expected, fields)
    if label:
        rendered[0] = f"- {label}: {escaped[0]}"
    rendered[-1] = f"{rendered[-1]} {_suffix(block_id, tags, fields, text)}"
    return rendered


def render_paragraph(
    text: str, block_id: str, *, tags: Iterable[str] = (), fields: Iterable[tuple[str, str]] = ()
) -> list[str]:
    """``text #tag [k:: v] ^id`` as one paragraph (an episode's summary), escaped
    like :func:`render_list_item`; the caller keeps a blank line around it."""
    escaped, expected, check = _paragraph(text, "memory text")
    fields = list(fields)
    if check or fields:
        _check_paragraph(escaped, "para", expected, fields)
    return [*escaped[:-1], f"{escaped[-1]} {_suffix(block_id, tags, fields, text)}"]


def render_turn(
    name: str,
    clock: str,
    text: str,
    block_id: str,
    *,
    tags: Iterable[str] = (),
) -> list[str]:
    """A session turn as a transcript reads it: ``**Ana** (09:12): text ^id`` when
    its text is lines of one paragraph, else ``### Ana (09:12)`` over its text
    (lists, code, several paragraphs). Either reads back as exactly the text."""
    name = " ".join(name.split()) or "someone"
    lines = _split_lines(text)
    stripped = [line.rstrip() for line in lines]
    simple = (
        "*" not in name
        and all(line.strip() for line in stripped)
        and stripped == lines
        and lines[0] == lines[0].lstrip()
        and all(esc.is_plain_line(line) for line in lines)
    )
    if simple:
        escaped, plain = esc.escape_lines(lines, full=True)
        first = f"**{name}** ({clock}): {escaped[0]}"
        body = [first, *escaped[1:]]
        probe = [*body[:-1], f"{body[-1]} ^{_PROBE_ID}"]
        if _clean(probe, "para", _PROBE_ID, turn=True) == ("\n".join(plain), []):
            return [*body[:-1], f"{body[-1]} {_suffix(block_id, tags, (), text)}"]
    return render_entry(f"{name} ({clock})", text, block_id, level=3, tags=tags)


def _place_suffix(body: list[str], suffix: str) -> list[str]:
    last = body[-1]
    if (
        esc.fence_opener(last)
        or last.startswith(("|", ">", "    ", "\t"))
        or _LIST_MARKER.match(last)
    ):
        return [*body, "", suffix]
    return [*body[:-1], f"{last} {suffix}"]


def _entry_reads_back(
    heading: str, body: list[str], expected: str, fields: list[tuple[str, str]]
) -> bool:
    """Whether the entry, between a title and a next entry, parses as one memory
    holding ``expected`` and ``fields``, and leaves the next entry whole."""
    placed = _place_suffix(body, _suffix(_PROBE_ID, (), fields, ""))
    if all(esc.is_plain_line(line) for line in body):
        # Plain paragraphs only (the usual chat turn or log line): no line can
        # open a block, so reading the lines back is the whole check; a
        # markdown parse is kept for bodies with lists, quotes, tables, code.
        title = _ATX_TEXT.match(f"## {heading}")
        return (
            title is not None
            and title.group(1).strip() == heading
            and _clean(placed, "entry", _PROBE_ID) == (expected, fields)
        )
    lines = ["# Probe", "", f"## {heading}", *placed, "", "## Next", f"next ^{_NEXT_ID}"]
    parsed = parse("daily/2000-01-01.md", TextFile(lines=[line + "\n" for line in lines]))
    found = parsed.memories()
    return (
        len(found) == 2
        and found[0].id == _PROBE_ID
        and (found[0].line_start, found[0].line_end) == (3, len(lines) - 3)
        and found[0].heading == heading
        and found[0].text == expected
        and list(found[0].fields) == fields
        and (found[1].id, found[1].text) == (_NEXT_ID, "next")
    )


def render_entry(
    heading: str,
    text: str,
    block_id: str,
    *,
    level: int = 2,
    tags: Iterable[str] = (),
    fields: Iterable[tuple[str, str]] = (),
) -> list[str]:
    """``## heading`` + body + id: one memory section of an entry file.

    The body may be any markdown (lists, quotes, tables, closed code fences
    stay as they are), but it must read back as the text and must not end the
    section early or swallow the next one: headings, setext underlines, HTML
    blocks and a fence that is never closed are escaped, as are inline fields
    and block ids (:mod:`mdmem.files.escape`). Outside code fences, trailing
    spaces are dropped. The result is read back before it is written (with a
    markdown parse when it holds block markdown); markdown that still reads
    differently is escaped line by line, and what even that can't store
    faithfully is refused.
    """
    heading = heading.strip()
    if not heading or "\n" in heading or "\r" in heading:
        raise InvalidInputError(f"invalid entry heading {heading!r}")
    fields = list(fields)
    lines = _split_lines(text)
    for full in (False, True):
        escaped, plain = esc.escape_lines(lines, full=full)
        body = _trim_blank(escaped)
        if not body:
            raise InvalidInputError("entry text is empty")
        expected = "\n".join(_trim_blank(plain)).strip()
        if _entry_reads_back(heading, body, expected, fields):
            suffix = _suffix(block_id, tags, fields, text)
            return ["#" * level + " " + heading, *_place_suffix(body, suffix)]
    raise InvalidInputError(_UNFAITHFUL)


def with_fields(block: Block, tf: TextFile, updates: dict[str, str | None]) -> list[str]:
    """The block's lines with inline fields set (value) or removed (None).

    Only the line that carries the block id changes, and only its field/id
    tail, so the human's wording and spacing stay as they were.
    """
    start, end = block.line_start - 1, block.line_end
    lines = [_strip_eol(line) for line in tf.lines[start:end]]
    target = max(i for i, line in enumerate(lines) if _TRAILING_ID.search(line))
    line = lines[target]
    match = _TRAILING_ID.search(line)
    assert match is not None
    # Only live fields go: the same syntax escaped is part of the text.
    head, _ = esc.take_fields(line[: match.start()], frozenset(k.lower() for k in updates))
    head = head.rstrip()
    additions = [f"[{k}:: {v}]" for k, v in updates.items() if v is not None]
    pieces = [head, *additions, f"^{block.id}"] if head else [*additions, f"^{block.id}"]
    lines[target] = " ".join(p for p in pieces if p)
    return lines


def tags_on(lines: Iterable[str]) -> list[str]:
    """The ``#tags`` written on lines (lower case, in order)."""
    return list(dict.fromkeys(_tags_in(" ".join(lines))))


def list_marker(line: str) -> str | None:
    """The list marker a line opens with (``- ``, ``1. ``, ``- [ ] ``), or None."""
    match = _LIST_MARKER.match(line)
    return match.group(0) if match else None


def line_parts(block: Block, tf: TextFile) -> tuple[str | None, list[str], list[tuple[str, str]]]:
    """What a memory's own lines hold besides its text: the kind word opening
    it (as written), its ``#tags`` and the fields written on them (a person's
    ``[k:: v]``); what is kept beside the line is not here."""
    lines = [_strip_eol(line) for line in tf.lines[block.line_start - 1 : block.line_end]]
    if not lines:
        return None, [], []
    label = None
    first = lines[0]
    marker = _LIST_MARKER.match(first)
    if marker is not None and memory_file_kind(block.path) is not None:
        found = esc.LABEL.match(first[len(marker.group(0)) :])
        if (
            found is not None
            and not found.group(2)
            and block.field("kind") == _LABEL_KINDS.get(found.group(1).casefold())
        ):
            label = found.group(1)
    live: list[tuple[str, str]] = []
    for line in lines:
        if "::" in line:
            live.extend(esc.take_fields(_TRAILING_ID_SUB.sub("", line))[1])
    return label, _tags_in(" ".join(lines)), live


def replace_text(
    block: Block,
    tf: TextFile,
    new_text: str,
    *,
    updates: Mapping[str, str | None] | None = None,
    tags: Iterable[str] | None = None,
) -> list[str]:
    """Lines for the block with its text replaced; its kind word, tags (or
    ``tags``), the fields on its line (with ``updates`` to those among them)
    and its id kept; fields kept beside it stay there."""
    if block.line_start - 1 >= len(tf.lines):
        raise InvalidInputError("block out of range")
    label, line_tags, fields = line_parts(block, tf)
    if tags is not None:
        line_tags = list(tags)
    if updates:
        fields = [(k, updates.get(k, v) or "") for k, v in fields if updates.get(k, v) is not None]
    style_entry = (
        is_entry_file(block.path)
        and block.heading
        and _strip_eol(tf.lines[block.line_start - 1]).lstrip().startswith("#")
    )
    if style_entry:
        heading_line = _strip_eol(tf.lines[block.line_start - 1])
        level = len(heading_line) - len(heading_line.lstrip("#"))
        return render_entry(
            block.heading, new_text, block.id, level=level, tags=line_tags, fields=fields
        )
    first = _strip_eol(tf.lines[block.line_start - 1])
    marker = _LIST_MARKER.match(first)
    if marker:
        rendered = render_list_item(new_text, block.id, tags=line_tags, fields=fields, label=label)
        prefix = marker.group(0)
        return [prefix + rendered[0][2:]] + [" " * len(prefix) + line[2:] for line in rendered[1:]]
    return render_paragraph(new_text, block.id, tags=line_tags, fields=fields)


def retag(block: Block, **changes: Any) -> Block:
    return replace(block, **changes)
