"""``mdmem library export``: the vault's knowledge, one JSON object a line.

The export (format version :data:`VERSION`) is, in order:

1. a **header** ``{"mdmem_export": 2, "vault": <folder name>, "head": <commit>,
   "exported": <time>, "settings": {<mdmem.toml key>: <digest of its value>}}``
   (digests only: a restore names the settings it leaves behind, see
   :mod:`mdmem.maintenance.settings_fingerprint`);
2. one **memory row** per memory (active or not), in path and line order:
   ``id, kind, scope, status, tags, fields ([key, value] pairs, in file
   order), created, updated, path, line, heading, text``, and for session
   entries ``session``, ``role``, ``source``, ``speaker``, ``contact``,
   ``event`` where the entry has them, and for a tool output ``output``, its
   whole text. This is the part other tools read, and what a plain
   ``mdmem library import`` takes (as untrusted rows: :mod:`mdmem.memory.library.importer`);
3. one **file row** ``{"file": <path>, "text": <its text>}`` per file of the
   vault's knowledge: every markdown file the vault indexes (ledgers, daily
   logs, sessions, episodes, contacts, documents, a person's notes) and the
   full tool outputs under ``tool-outputs/``. Files hold what rows can't:
   episodes as episodes, supersede and source links, consolidation markers,
   session order and titles, contact profiles, a person's own notes. The
   vault's settings (``mdmem.toml``, ``.obsidian/``, ``templates/``) are not
   knowledge and stay out; so do non-markdown attachments (counted in the
   trailer);
4. a **trailer** ``{"mdmem_export_end": 2, "rows": <rows before it>,
   "sha256": <digest of those lines>, "memories": n, "files": n, "left_out": n}``:
   a restore refuses an export that was cut short or changed.

``mdmem library import --restore`` (:mod:`mdmem.memory.library.restore`) writes the files
back; export → restore → export gives the same rows and files.

Secrets a person typed by hand into a file are redacted as in every other
derived copy (the export leaves the vault).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any

from mdmem.errors import MdmemError
from mdmem.files.sidecar import sidecar_of
from mdmem.index.progress import Progress, silent
from mdmem.maintenance.settings_fingerprint import settings_fingerprint
from mdmem.memory.capture.sessions import TOOL_OUTPUT_DIR, read_tool_output, session_id_of
from mdmem.memory.library.import_formats import EXPORT_HEADER_KEY, EXPORT_TRAILER_KEY
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["VERSION", "export_files", "export_jsonl", "export_rows", "payload_span", "row_of"]

VERSION = 2
_SESSION_KEYS = ("role", "source", "speaker", "contact", "event", "tool")
# Settings, not knowledge; the rest of the vault's tracked files are counted.
_SETTINGS = ("mdmem.toml", ".gitignore", ".gitattributes")
_SETTINGS_DIRS = (".git", ".obsidian", "templates", ".trash")


def _same(text: str) -> str:
    return text


def row_of(block: Block, shown: Callable[[str], str] = _same) -> dict[str, Any]:
    """One memory as an export row (the API's field names); its text and field
    values as ``shown`` (the reading view's redaction) makes them."""
    row: dict[str, Any] = {
        "id": block.id,
        "kind": block.kind,
        "scope": block.scope,
        "status": block.status,
        "tags": list(block.tags),
        "fields": [[k, shown(v)] for k, v in block.fields],
        "created": block.created.isoformat(timespec="seconds"),
        "updated": block.updated.isoformat(timespec="seconds") if block.updated else None,
        "path": block.path,
        "line": block.line_start,
        "heading": block.heading,
        "text": shown(block.text),
    }
    session = session_id_of(block.path)
    if session is not None:
        row["session"] = session
    for key in _SESSION_KEYS:
        value = block.field(key)
        if value is not None:
            row[key] = shown(value)
    return row


def export_rows(
    store: MemoryStore,
    progress: Progress | None = None,
    *,
    visible: Callable[[Block], bool] | None = None,
    shown: Callable[[str], str] = _same,
) -> Iterator[dict[str, Any]]:
    """Every memory (active or not) that is ``visible``, as a row (``shown``), in
    path and line order."""
    store.refresh()
    store.writer.verify_manifest()
    pool = store.catalog.blocks(memories_only=True)
    blocks = sorted(
        (b for b in pool if visible is None or visible(b)),
        key=lambda b: (b.path, b.line_start),
    )
    tell = progress or silent
    for n, block in enumerate(blocks):
        if n % 100 == 0:
            tell("export", n, len(blocks))
        row = row_of(block, shown)
        if block.kind == "tool_output":
            # The whole output, not the fenced preview: an import records it again.
            output = _tool_output(store, block)
            if output is not None:
                row["output"] = shown(output)
        yield row
    tell("export", len(blocks), len(blocks))


def export_files(store: MemoryStore) -> tuple[list[str], int]:
    """(the knowledge files of the vault, in path order; how many other files stay out)."""
    paths = set(store.catalog.files)
    # What mdmem knows of each memory line, kept beside its note: restored with it
    # (a fields file sorts before the notes of its folder, so it comes first).
    paths.update(
        side
        for note in list(paths)
        if (store.root / (side := sidecar_of(note))).is_file()
    )
    outputs = store.root / TOOL_OUTPUT_DIR
    if outputs.is_dir():
        paths.update(f"{TOOL_OUTPUT_DIR}/{p.name}" for p in outputs.glob("*.md") if p.is_file())
    left_out = 0
    for top, dirs, names in os.walk(store.root):
        rel_top = os.path.relpath(top, store.root)
        if rel_top == ".":
            dirs[:] = [d for d in dirs if d not in _SETTINGS_DIRS]
            names = [n for n in names if n not in _SETTINGS]
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        for name in names:
            rel = name if rel_top == "." else f"{rel_top}/{name}".replace(os.sep, "/")
            if rel not in paths and not name.startswith("."):
                left_out += 1
    return sorted(paths), left_out


def payload_span(rel: str, text: str) -> int:
    """Where the text a person or a tool wrote starts in the file ``rel``: after
    the frontmatter of a full tool output (mdmem's own keys, such as ``key:
    tout_…``, which a secrets scan would take for a key), else 0."""
    if not rel.startswith(f"{TOOL_OUTPUT_DIR}/") or not text.startswith("---\n"):
        return 0
    end = text.find("\n---\n", 3)
    return end + 5 if end != -1 else 0


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


class _Out:
    """Writes lines and keeps the digest and count the trailer states."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.rows = 0

    def write(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, ensure_ascii=False) + "\n"
        self.digest.update(line.encode("utf-8"))
        self.out.write(line)
        self.rows += 1


def export_jsonl(
    store: MemoryStore,
    out: IO[str],
    progress: Progress | None = None,
    *,
    visible: Callable[[Block], bool] | None = None,
    shown: Callable[[str], str] = _same,
) -> int:
    """Write the export (see the module docstring) to ``out``; returns how many memories.

    Called by the reading view (:meth:`mdmem.memory.desks.reading.Reading.export`),
    which gives its rule and its redaction: ``visible`` (None: every memory, and
    the vault's files too) and ``shown``. An export of only some memories
    carries no file rows (a file may hold lines its reader may not see), so it
    imports as memories, not as a restore."""
    sink = _Out(out)
    sink.write(
        {
            EXPORT_HEADER_KEY: VERSION,
            "vault": store.root.name,
            "head": store.git.head(),
            "exported": datetime.now(UTC).isoformat(timespec="seconds"),
            # Digests, not values: a restore names the settings it leaves behind.
            "settings": settings_fingerprint(store.root),
        }
    )
    memories = 0
    for row in export_rows(store, progress, visible=visible, shown=shown):
        sink.write(row)
        memories += 1
    files, left_out = export_files(store) if visible is None else ([], 0)
    written = 0
    tell = progress or silent
    for n, rel in enumerate(files):
        if n % 100 == 0:
            tell("export files", n, len(files))
        try:
            text = (store.root / rel).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            left_out += 1  # gone since the scan, or not text: nothing to restore
            continue
        start = payload_span(rel, text)
        sink.write({"file": rel, "text": text[:start] + shown(text[start:])})
        written += 1
    tell("export files", len(files), len(files))
    out.write(
        json.dumps(
            {
                EXPORT_TRAILER_KEY: VERSION,
                "rows": sink.rows,
                "sha256": sink.digest.hexdigest(),
                "memories": memories,
                "files": written,
                "left_out": left_out,
            }
        )
        + "\n"
    )
    return memories
