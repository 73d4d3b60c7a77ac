"""One version of one file, as a purge (or retention) leaves it.

:func:`rewrite_file` applies a :class:`~mdmem.store.derived.Rewrite` to the
bytes of any version of any file: a markdown file is parsed as what its path
says and only the blocks and lines concerned change; an export written into
the vault (``mdmem library export``) loses the rows of removed memories and
has its file rows rewritten like the files; anything else keeps its bytes.
Successive versions of a file mostly differ by appends, so where a version
only loses whole blocks their place is reused from an earlier parse.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterator
from dataclasses import replace

from mdmem.files import blocks as blk
from mdmem.files.ids import ID_PATTERN
from mdmem.files.sidecar import encode, is_sidecar, parse_records
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.store.derived import Rewrite, updated_fields
from mdmem.store.derived import remove_lines as _remove_lines

__all__ = ["rewrite_file"]


def rewrite_file(
    path: str,
    data: bytes,
    rewrite: Rewrite,
    spans: dict[tuple[str, bytes], int | None] | None = None,
    raw_paths: Collection[str] = (),
) -> bytes | None:
    """One version of one file with ``rewrite`` applied; None when the file leaves.

    Blocks are found by parsing that version, by their id; every other byte
    stays. A version that does not parse (a broken frontmatter) loses the
    lines that end in one of the ids concerned. ``spans`` caches where a
    block starts, keyed by everything up to its id line (see
    :func:`_cached_spans`).
    """
    if is_sidecar(path):
        return _rewrite_records(data, rewrite)
    if path.endswith(".jsonl"):
        return _rewrite_rows(data, rewrite, raw_paths)
    if not path.endswith(".md"):
        return data
    try:
        tf = decode(data)
    except SkipFile:
        return data
    if spans is not None and _only_removals(tf.text, rewrite):
        found = _cached_spans(path, tf, rewrite.removed, spans)
        if found is not None:
            for start, end in sorted(found, reverse=True):
                _remove_lines(tf, start, end)
            return tf.to_bytes() if found else data
    try:
        parsed = blk.parse(path, tf, beside=blk.EVERY_LINE)
    except SkipFile:
        return _drop_id_lines(tf, rewrite.touched) or data
    if spans is not None:
        _learn_spans(path, tf, parsed, rewrite.removed, spans)
    changed = rewrite.apply(tf, parsed)
    if changed is None:
        return None
    return tf.to_bytes() if changed else data


def _rewrite_records(data: bytes, rewrite: Rewrite) -> bytes:
    """A fields file beside a note (mdmem.files.sidecar): the records of removed
    memories leave; a regenerated copy's records take its updated fields (a
    field it never had in this version stays out). Other lines keep their bytes."""
    if not any(i.encode() in data for i in {*rewrite.removed, *rewrite.fields}):
        return data
    out: list[bytes] = []
    for line in data.splitlines(keepends=True):
        records, _bad = parse_records([line.decode("utf-8", "surrogateescape")])
        if not records:
            out.append(line)
            continue
        record = records[0]
        if record.id in rewrite.removed:
            continue
        updates = rewrite.fields.get(record.id)
        if updates:
            values = tuple((k, updates.get(k, v) if k in updates else v) for k, v in record.values)
            if values != record.values:
                end = line[len(line.rstrip(b"\r\n")) :]
                line = encode(replace(record, values=values)).encode("utf-8") + end
        out.append(line)
    return b"".join(out)


def _rewrite_rows(data: bytes, rewrite: Rewrite, raw_paths: Collection[str] = ()) -> bytes:
    """An export in the vault (``mdmem library export``, :mod:`mdmem.memory.library.export`).

    A memory row names the memory it copies by ``id``: a removed one's row
    leaves, a regenerated one's gets its new text. A file row (``file``,
    ``text``) is that file as it was: rewritten like the file itself (or
    left out with it). The trailer's row count, digest and counts follow.
    """
    out: list[bytes] = []
    digest = hashlib.sha256()
    memories = files = 0
    for line in data.splitlines(keepends=True):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict):
            out.append(line)
            digest.update(line)
            continue
        end = line[len(line.rstrip(b"\r\n")) :]
        if _is_trailer(row):
            row.update(rows=len(out), sha256=digest.hexdigest(), memories=memories, files=files)
            out.append(json.dumps(row, ensure_ascii=False).encode() + end)
            continue
        new = _rewrite_row(row, rewrite, raw_paths)
        if new is None:
            continue
        if new is not row:
            line = json.dumps(new, ensure_ascii=False).encode() + end
        memories += "id" in new
        files += "file" in new
        out.append(line)
        digest.update(line)
    return b"".join(out)


def _is_trailer(row: dict[str, object]) -> bool:
    # {"mdmem_export_end": 2, "rows": …, "sha256": …}: mdmem.memory.library.export's trailer.
    return "sha256" in row and "rows" in row and any(k.startswith("mdmem_export") for k in row)


def _rewrite_row(
    row: dict[str, object], rewrite: Rewrite, raw_paths: Collection[str]
) -> dict[str, object] | None:
    memory_id = row.get("id")
    if isinstance(memory_id, str):
        if memory_id in rewrite.removed:
            return None
        if memory_id in rewrite.texts:
            where = str(row.get("path"))
            moved_to = rewrite.renames.get(where, where)
            regenerated = {**row, "text": rewrite.texts[memory_id], "path": moved_to}
            fields = row.get("fields")
            updates = rewrite.fields.get(memory_id)
            if updates and isinstance(fields, list) and all(_is_pair(f) for f in fields):
                pairs = tuple((str(k), str(v)) for k, v in fields)
                regenerated["fields"] = [list(kv) for kv in updated_fields(pairs, updates)]
            note = rewrite.notes.get(memory_id)
            if note is not None:  # an episode's heading is its title
                regenerated["heading"] = note.title
            return regenerated
        return row
    path, text = row.get("file"), row.get("text")
    if not isinstance(path, str) or not isinstance(text, str):
        return row
    if path in raw_paths:
        return None
    data = text.encode("utf-8", "surrogateescape")
    new = rewrite_file(path, data, rewrite)
    if new is None:
        return None
    moved = rewrite.renames.get(path, path)
    if new == data and moved == path:
        return row
    return {**row, "file": moved, "text": new.decode("utf-8", "surrogateescape")}


def _is_pair(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2


def _only_removals(text: str, rewrite: Rewrite) -> bool:
    """Whether the rewrite can only remove whole blocks here: no link to a memory
    concerned, no block to regenerate."""
    if any(f"#^{i}" in text for i in rewrite.touched):
        return False
    return not any(f"^{i}" in text for i in rewrite.touched - rewrite.removed)


def _learn_spans(
    path: str,
    tf: TextFile,
    parsed: blk.ParsedFile,
    ids: Collection[str],
    spans: dict[tuple[str, bytes], int | None],
) -> None:
    """Remember, per id line, how many lines above it its block starts (None: no block)."""
    ends = {b.line_end - 1: b for b in parsed.blocks if b.is_memory and b.id in ids}
    inside = {
        i
        for b in parsed.blocks
        if b.is_memory and b.id in ids
        for i in range(b.line_start - 1, b.line_end - 1)
    }
    for i, memory_id, key in _id_lines(path, tf, ids):
        block = ends.get(i)
        if block is not None and block.id == memory_id:
            spans[key] = block.line_end - block.line_start
        elif i not in inside:  # an id in a code fence, say: not a block
            spans[key] = None


def _cached_spans(
    path: str, tf: TextFile, ids: Collection[str], spans: dict[tuple[str, bytes], int | None]
) -> list[tuple[int, int]] | None:
    """The line ranges of the blocks ``ids``, known without parsing; None to parse.

    Successive versions of a file mostly append after the memory, and a
    block's start depends only on the lines up to its id line (the last line
    of a memory block): the same prefix means the same block, so a history
    of hundreds of versions is parsed a handful of times.
    """
    found: list[tuple[int, int]] = []
    for i, _memory_id, key in _id_lines(path, tf, ids):
        if key not in spans:
            return None
        above = spans[key]
        if above is not None:
            found.append((i - above, i + 1))
    return found


_ID_AT_END = re.compile(rf"\^({ID_PATTERN})\s*$")


def _id_lines(
    path: str, tf: TextFile, ids: Collection[str]
) -> Iterator[tuple[int, str, tuple[str, bytes]]]:
    """Each line ending in one of ``ids``: its index, the id, and the key of
    everything up to it (the file's path and a digest of the lines so far)."""
    prefix = hashlib.sha1()
    for i, line in enumerate(tf.lines):
        prefix.update(line.encode("utf-8", "surrogateescape"))
        match = _ID_AT_END.search(line)
        if match is not None and match.group(1) in ids:
            yield i, match.group(1), (path, prefix.copy().digest())


def _drop_id_lines(tf: TextFile, ids: Collection[str]) -> bytes | None:
    if not ids:
        return None
    ends = re.compile(r"\^(?:" + "|".join(re.escape(i) for i in ids) + r")\s*$")
    kept = [line for line in tf.lines if not ends.search(line)]
    if len(kept) == len(tf.lines):
        return None
    tf.lines = kept
    return tf.to_bytes()
