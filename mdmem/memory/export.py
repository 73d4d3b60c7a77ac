"""``mdmem export --jsonl``: every memory with its metadata, one JSON object a line.

A row: ``id, kind, scope, status, tags, fields ([key, value] pairs, in file
order), created, updated, path, line, heading, text``, and for session
entries ``session``, ``role``, ``source``, ``speaker``, ``contact``,
``event`` where the entry has them, and for a tool output ``output``, its
whole text. ``mdmem import --format jsonl`` reads the
file back (:mod:`mdmem.memory.importer`): session entries as the messages of
their session, other memories through the verb of their kind, so an export
imported into a fresh vault recalls the same.

Rows come in path and line order; secrets a person typed by hand into a file
are redacted as in every other derived copy (the export leaves the vault).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from mdmem.errors import MdmemError
from mdmem.index.progress import Progress, silent
from mdmem.memory.sessions import read_tool_output, session_id_of
from mdmem.models import Block
from mdmem.store.secret_guard import scrub
from mdmem.store.visibility import EVERYONE, Reader

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["export_jsonl", "export_rows", "row_of"]

_SESSION_KEYS = ("role", "source", "speaker", "contact", "event", "tool")


def row_of(block: Block, secrets: str = "refuse") -> dict[str, Any]:
    """One memory as an export row (the API's field names)."""
    row: dict[str, Any] = {
        "id": block.id,
        "kind": block.kind,
        "scope": block.scope,
        "status": block.status,
        "tags": list(block.tags),
        "fields": [[k, v] for k, v in block.fields],
        "created": block.created.isoformat(timespec="seconds"),
        "updated": block.updated.isoformat(timespec="seconds") if block.updated else None,
        "path": block.path,
        "line": block.line_start,
        "heading": block.heading,
        "text": scrub(block.text, secrets),
    }
    session = session_id_of(block.path)
    if session is not None:
        row["session"] = session
    for key in _SESSION_KEYS:
        value = block.field(key)
        if value is not None:
            row[key] = value
    return row


def export_rows(
    store: MemoryStore, progress: Progress | None = None, *, reader: Reader = EVERYONE
) -> Iterator[dict[str, Any]]:
    """Every memory (active or not) ``reader`` may see, as a row, in path and line order."""
    store.refresh()
    store.writer.verify_manifest()
    blocks = sorted(
        store.visibility.filter(reader, store.catalog.blocks(memories_only=True)),
        key=lambda b: (b.path, b.line_start),
    )
    tell = progress or silent
    for n, block in enumerate(blocks):
        if n % 100 == 0:
            tell("export", n, len(blocks))
        row = row_of(block, store.settings.secrets)
        if block.kind == "tool_output":
            # The whole output, not the fenced preview: an import records it again.
            output = _tool_output(store, block)
            if output is not None:
                row["output"] = scrub(output, store.settings.secrets)
        yield row
    tell("export", len(blocks), len(blocks))


def _tool_output(store: MemoryStore, block: Block) -> str | None:
    key = block.field("tout")
    if key:
        try:
            return read_tool_output(store, key)
        except MdmemError:
            return None  # the payload file is gone: the preview is all there is
    lines = block.text.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1] == lines[0]:
        return "\n".join(lines[1:-1])
    return None


def export_jsonl(
    store: MemoryStore,
    out: IO[str],
    progress: Progress | None = None,
    *,
    reader: Reader = EVERYONE,
) -> int:
    """Write every memory ``reader`` may see to ``out``; returns how many."""
    count = 0
    for row in export_rows(store, progress, reader=reader):
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        count += 1
    return count
