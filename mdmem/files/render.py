"""Render memories as the lines a vault holds: list items, paragraphs, entry
sections, session turns; and a memory's lines rewritten (its text, the fields
on its line).

Every renderer reads its result back with the parser's own rules
(:func:`mdmem.files.blocks.read_back`, or a parse when the text holds block
markdown) before it returns: what would read back differently is escaped
(:mod:`mdmem.files.escape`), and what even that can't store is refused.
Pure functions: nothing here touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mdmem.errors import InvalidInputError
from mdmem.files import escape as esc
from mdmem.files.blocks import (
    heading_text,
    is_entry_file,
    label_kind,
    list_marker,
    memory_file_kind,
    parse,
    read_back,
    split_trailing_id,
    tags_on,
    without_trailing_id,
)
from mdmem.files.textfile import TextFile
from mdmem.models import Block

__all__ = [
    "line_parts",
    "render_entry",
    "render_list_item",
    "render_paragraph",
    "render_turn",
    "replace_text",
    "with_fields",
]


def _strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def _suffix(
    block_id: str, tags: Iterable[str], fields: Iterable[tuple[str, str]], text: str
) -> str:
    present = set(tags_on([text]))
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
    if read_back(probe, style, _PROBE_ID) != (expected, fields):
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
        if read_back(probe, "para", _PROBE_ID, turn=True) == ("\n".join(plain), []):
            return [*body[:-1], f"{body[-1]} {_suffix(block_id, tags, (), text)}"]
    return render_entry(f"{name} ({clock})", text, block_id, level=3, tags=tags)


def _place_suffix(body: list[str], suffix: str) -> list[str]:
    last = body[-1]
    if (
        esc.fence_opener(last)
        or last.startswith(("|", ">", "    ", "\t"))
        or list_marker(last) is not None
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
        return heading_text(f"## {heading}") == heading and read_back(
            placed, "entry", _PROBE_ID
        ) == (expected, fields)
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
    target = max(i for i, line in enumerate(lines) if split_trailing_id(line))
    found = split_trailing_id(lines[target])
    assert found is not None
    # Only live fields go: the same syntax escaped is part of the text.
    head, _ = esc.take_fields(found[0], frozenset(k.lower() for k in updates))
    head = head.rstrip()
    additions = [f"[{k}:: {v}]" for k, v in updates.items() if v is not None]
    pieces = [head, *additions, f"^{block.id}"] if head else [*additions, f"^{block.id}"]
    lines[target] = " ".join(p for p in pieces if p)
    return lines


def line_parts(block: Block, tf: TextFile) -> tuple[str | None, list[str], list[tuple[str, str]]]:
    """What a memory's own lines hold besides its text: the kind word opening
    it (as written), its ``#tags`` and the fields written on them (a person's
    ``[k:: v]``); what is kept beside the line is not here."""
    lines = [_strip_eol(line) for line in tf.lines[block.line_start - 1 : block.line_end]]
    if not lines:
        return None, [], []
    label = None
    first = lines[0]
    marker = list_marker(first)
    if marker is not None and memory_file_kind(block.path) is not None:
        found = esc.LABEL.match(first[len(marker) :])
        if (
            found is not None
            and not found.group(2)
            and block.field("kind") == label_kind(found.group(1))
        ):
            label = found.group(1)
    live: list[tuple[str, str]] = []
    for line in lines:
        if "::" in line:
            live.extend(esc.take_fields(without_trailing_id(line))[1])
    return label, tags_on(lines), live


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
    prefix = list_marker(first)
    if prefix:
        rendered = render_list_item(new_text, block.id, tags=line_tags, fields=fields, label=label)
        return [prefix + rendered[0][2:]] + [" " * len(prefix) + line[2:] for line in rendered[1:]]
    return render_paragraph(new_text, block.id, tags=line_tags, fields=fields)
