"""A field change of memories, as the edits it makes: records beside the lines,
and the lines themselves only where they must change.

Setting a field writes a record into the fields file beside the memory's note
(:mod:`mdmem.files.sidecar`). The line itself changes only:

* when it leaves the reading flow: a list item of a memory file
  (``MEMORY.md``, ``USER.md``, ``LEARNING.md``, ``WORLD.md``) that is
  superseded, resolved or archived moves to the note's archive
  (``MEMORY.earlier.md``), with a link to what replaced it; one made active
  again moves back to the end of its note. Its fields go with it, whole, into
  the archive's fields file. Entries (daily logs, sessions, the journal) and
  a person's own notes keep their place: they are a record of time, or the
  person's layout;
* when the line still carries a field being set (``[status:: …]`` typed by a
  person): that field leaves the line, since what it says now is kept beside it;
* when a line of an older vault gets its first record: its fields leave the
  line for the fields file and its kind becomes its word, as
  ``mdmem admin migrate`` would do (:mod:`mdmem.maintenance.migrate`).

Otherwise no byte of the note changes: the note's block takes the new fields
(:func:`mdmem.store.editors.refielder`) and the indexes learn them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mdmem.files import blocks as blk
from mdmem.files import escape as esc
from mdmem.files import render
from mdmem.files.fieldfiles import FieldFiles
from mdmem.files.textfile import TextFile
from mdmem.models import Block
from mdmem.store.editors import Edit, Editor, append_item, refielder, require

__all__ = [
    "RETIRED",
    "Step",
    "archive_title",
    "clean_lines",
    "field_edits",
    "kept_values",
    "moved_to",
]

#: Statuses that take a memory out of its note's reading flow.
RETIRED = frozenset({"superseded", "resolved", "archived"})

Values = list[tuple[str, str | None]]


@dataclass
class Step:
    """What to do to one file: records of its memories, then editors, in order."""

    path: str
    records: list[tuple[str, Values]] = field(default_factory=list)
    edits: list[Editor] = field(default_factory=list)


def moved_to(block: Block, status: str | None) -> str | None:
    """Where a memory's line goes when its status becomes ``status`` (None: it stays)."""
    if blk.memory_file_kind(block.path) is None or blk.is_entry_file(block.path):
        return None
    home = blk.unarchived_path(block.path)
    if status in RETIRED:
        return blk.archive_path(block.path) if home is None else None
    return home  # active again: back to its note (None when it never left)


def kept_values(block: Block, beside: Sequence[tuple[str, str]] | None) -> Values:
    """All a memory's fields as records keep them: its kind, what is kept
    beside its line (the tags it was given among them) and its fields."""
    values: dict[str, str | None] = {"kind": block.kind}
    for key, value in [*(beside or ()), *block.fields]:
        if key != "scope":  # a file's folder, or a person's field on the line, says it
            values[key] = value
    return list(values.items())


def field_edits(
    blocks: Iterable[Block], updates: dict[str, str | None], fields: FieldFiles
) -> list[Step]:
    """The steps that set ``updates`` on each of ``blocks``, in the order to apply
    them: every line lifted out of a note before it lands in another."""
    first: dict[str, Step] = {}
    then: dict[str, Step] = {}
    status = updates.get("status", "")
    for block in blocks:
        beside = fields.fields(block.id)
        recorded = beside is not None
        target = moved_to(block, status) if "status" in updates else None
        if target is not None:
            lifted: list[str] = []
            final = _final_values(block, beside, updates)
            first.setdefault(block.path, Step(block.path)).edits.append(_lifter(block.id, lifted))
            # The records land before the line, so the new block reads its kind's word.
            landing = then.setdefault(target, Step(target))
            landing.records.append((block.id, final))
            landing.edits.append(_placer(target, block, lifted, dict(final)))
        elif not recorded:
            # An older vault's line: its fields leave it, once, for good.
            final = _final_values(block, beside, updates)
            here = first.setdefault(block.path, Step(block.path))
            here.records.append((block.id, final))
            here.edits.append(_converter(block.id, dict(final), fields, block.path))
        else:
            here = first.setdefault(block.path, Step(block.path))
            here.records.append((block.id, list(updates.items())))
            here.edits.append(_field_strip(block.id, set(updates), fields, block.path))
    return [*first.values(), *then.values()]


def _final_values(
    block: Block, beside: Sequence[tuple[str, str]] | None, updates: dict[str, str | None]
) -> Values:
    """Every field of the memory after ``updates``; a field unset stays in as None,
    so no older record of it in another fields file outlives the change."""
    values = dict(kept_values(block, beside))
    values.update(updates)
    return list(values.items())


def _lifter(memory_id: str, lifted: list[str]) -> Editor:
    """Remove the memory's lines from its note, keeping them in ``lifted``."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        start, end = current.line_start - 1, current.line_end
        lifted[:] = [line.rstrip("\r\n") for line in tf.lines[start:end]]
        gap_after = end < len(tf.lines) and not tf.lines[end].strip()
        if gap_after and (start == 0 or not tf.lines[start - 1].strip()):
            end += 1
        tf.replace_lines(start, end, [])
        return Edit(removed=(start, end))

    return edit


def _placer(target: str, block: Block, lifted: list[str], values: dict[str, str | None]) -> Editor:
    """Append the memory's line, clean, to ``target`` (a new archive starts with a title)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        lines = clean_lines(block, lifted, target, values)
        if not tf.lines:
            tf.append_lines([*archive_title(target), ""])
        return append_item(tf, lines)

    return edit


def clean_lines(
    block: Block, old: Sequence[str], target: str, values: dict[str, str | None]
) -> list[str]:
    """A list item's lines as the line format writes them: its kind's word
    (when not ``target``'s own kind), its text, its tags as they were on the
    line, the link to what replaced it, its id; no fields."""
    kind = values.get("kind") or block.kind
    label = blk.kind_label(kind) if kind != blk.default_kind_for(target) else None
    tags = blk.tags_on(old)
    # A scope a person typed on the line is theirs to say there (the record cannot).
    typed = [(k, v) for line in old for k, v in esc.take_fields(line)[1] if k == "scope"]
    lines = render.render_list_item(block.text, block.id, tags=tags, label=label, fields=typed[-1:])
    by = values.get("by")
    if by and values.get("status") == "superseded":
        home = blk.unarchived_path(target) or target
        link = f"→ [[{home}#^{by.lstrip('^')}|newer]]"
        head, _, ident = lines[-1].rpartition(" ^")
        lines[-1] = f"{head} {link} ^{ident}"
    return lines


def archive_title(target: str) -> list[str]:
    """The first lines of a new archive file."""
    home = blk.unarchived_path(target) or target
    name = home.rsplit("/", 1)[-1][:-3]
    # A comment, not a paragraph: it would be recalled as a note.
    return [f"# Earlier in {name}", "", f"<!-- Retired memories of {home}, newest last. -->"]


def _converter(
    memory_id: str, values: dict[str, str | None], fields: FieldFiles, path: str
) -> Editor:
    """Rewrite an older vault's line in the line format (its fields are recorded)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        start, end = current.line_start - 1, current.line_end
        old = [line.rstrip("\r\n") for line in tf.lines[start:end]]
        if _is_item(old) and blk.memory_file_kind(path) is not None:
            new = clean_lines(current, old, path, values)
            marker = blk.list_marker(old[0])
            if marker is not None and marker != "- ":
                new = [marker + new[0][2:]] + [" " * len(marker) + n[2:] for n in new[1:]]
        else:
            new = render.with_fields(current, tf, dict.fromkeys(_inline_keys(old)))
        tf.replace_lines(start, end, new)
        return Edit(rewritten=_same_shape(parsed, current, new, fields, path))

    return edit


def _field_strip(memory_id: str, keys: set[str], fields: FieldFiles, path: str) -> Editor:
    """Take fields being set off the memory's line (a person typed them there);
    no byte changes when the line holds none of them."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = require(parsed, memory_id)
        start, end = current.line_start - 1, current.line_end
        old = [line.rstrip("\r\n") for line in tf.lines[start:end]]
        on_line = {k for k in _inline_keys(old) if k in keys}
        if not on_line:
            return refielder(memory_id, fields.view(path))(tf, parsed)
        new = render.with_fields(current, tf, dict.fromkeys(on_line))
        tf.replace_lines(start, end, new)
        return Edit(rewritten=_same_shape(parsed, current, new, fields, path))

    return edit


def _same_shape(
    parsed: blk.ParsedFile | None,
    old: Block,
    new_lines: list[str],
    fields: FieldFiles,
    path: str,
) -> Block | None:
    """The rewritten block when its line count stayed (else None: parse the file)."""
    if parsed is None or len(new_lines) != old.line_end - old.line_start + 1:
        return None
    return blk.refielded(parsed, old, new_lines, fields.view(path))


def _is_item(lines: Sequence[str]) -> bool:
    return bool(lines) and blk.list_marker(lines[0]) is not None


def _inline_keys(lines: Sequence[str]) -> list[str]:
    keys: list[str] = []
    for line in lines:
        if "::" in line:
            keys += [k for k, _ in esc.take_fields(line)[1]]
    return keys
