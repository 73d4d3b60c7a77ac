"""``mdmem library import --restore EXPORT``: bring back an export the user made, losslessly.

**Trust.** A plain ``mdmem library import`` treats every file as untrusted: rows go
into the caller's scope and nothing that sets provenance, status or routing
is taken from them (:mod:`mdmem.memory.library.importer`). A restore takes the
export's files as they are (scopes, statuses, importance, ``captured``,
supersede and source links, consolidation markers, contacts), so it is
granted by the person running it and never by the file: only the caller's
``restore=True`` (``--restore`` on the command line, which no model tool or
hook exposes) makes an import a restore, whatever the file says. The file
must then be a whole export (:mod:`mdmem.memory.library.export`): a header first, a
trailer last whose row count and SHA-256 match every line before it. That
does not make a file trustworthy (anyone can compute a digest); it makes
sure the person restores what they meant to, complete and unedited, or
nothing: a cut-short or hand-edited export is refused before anything is
written, and so is a file that merely looks like chat rows.

**What is written.** Each file of the export goes back to its path, through
the writer (under the vault lock, in commits of :data:`FILES_PER_COMMIT`
files, authored by the restoring agent with ``Op: restore`` and the source
vault named in a trailer; git history is the new vault's, never forged):

* a path the vault doesn't have, or a file still as ``mdmem init`` made it
  (``MEMORY.md`` of a fresh vault): written byte for byte;
* the same bytes: nothing to do (restoring twice adds nothing);
* a ledger, daily log, journal or session the vault already has with other
  lines: the export's memories whose ids the vault lacks are appended (a
  learning under its topic), the file's other lines stay the vault's (lines
  outside memories that the vault's file lacks are listed);
* any other file with other content (an episode, a contact profile, a
  note): left as the vault has it, and listed;
* a note's fields file (what mdmem knows of each memory line, beside it:
  :mod:`mdmem.files.sidecar`), which the export gives right before its note:
  written byte for byte where the vault has none, else the export's records
  of memories the vault lacks are appended. The note is then read with them.

A memory whose id the vault already holds is not written twice: the same
memory counts as a duplicate, a different one (changed since the export) is
kept as the vault has it and listed. Paths stay inside the vault's
knowledge (no settings, no dot folders, no templates) and every file passes
the secrets guard like any import.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from mdmem.errors import ConflictError, InvalidInputError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files.sidecar import Fields, Record, note_of, parse_records, resolve, sidecar_of
from mdmem.files.textfile import SkipFile, TextFile, decode, safe_path
from mdmem.maintenance.settings_fingerprint import settings_left_behind
from mdmem.memory.capture.sessions import TOOL_OUTPUT_DIR
from mdmem.memory.library.export import payload_span
from mdmem.memory.library.import_formats import (
    EXPORT_FILE_KEY,
    EXPORT_HEADER_KEY,
    EXPORT_TRAILER_KEY,
    regular_file,
)
from mdmem.models import Block, one_line
from mdmem.store.editors import Edit, Editor
from mdmem.store.secret_guard import guard, refuse_in_metadata

if TYPE_CHECKING:
    from mdmem.memory.library.report import ImportReport
    from mdmem.store.memories import MemoryStore
    from mdmem.store.writer import Transaction

__all__ = ["FILES_PER_COMMIT", "MAX_LINE_BYTES", "restore"]

FILES_PER_COMMIT = 200
_BYTES_PER_COMMIT = 64 * 1024 * 1024
# One file row: a document (20 MiB) or a full tool output (16M characters),
# JSON-escaped.
MAX_LINE_BYTES = 128 * 1024 * 1024
_VERSIONS = (2,)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*$")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# Files whose memories merge into a file the vault already has: one memory a
# list item or a "## heading" entry, in any order.
_LEDGERS = frozenset({"MEMORY.md", "USER.md", "WORLD.md", "LEARNING.md", "JOURNAL.md"})
_ENTRY_DIRS = frozenset({"daily", "sessions"})

Tick = Callable[[str, int, int], None]


def restore(
    store: MemoryStore,
    path: Path,
    report: ImportReport,
    secrets: str | None,
    tick: Tick,
    template: Path | None,
) -> None:
    """Restore the export at ``path`` into ``store``; see the module docstring."""
    header, trailer = _verify(path)
    report.source_vault = str(header.get("vault") or "") or None
    total = int(trailer.get("files") or 0)
    exported = str(header.get("exported") or "")
    subject = one_line(f"restore export of {report.source_vault or 'a vault'} ({exported})", 110)
    origin = one_line(f"{report.source_vault or '?'} {str(header.get('head') or '')[:12]}", 100)
    mode = secrets or store.settings.secrets
    done = 0
    tick("restore", 0, total)
    rows = _file_rows(path)
    kept: dict[str, dict[str, Fields]] = {}  # the export's fields files, by note
    more = True
    while more:
        head = store.git.head()
        size = 0
        count = 0
        with store.batch(subject) as tx:
            for rel, text in rows:
                restorer = _Restorer(store, tx, report, rel, mode, template, origin, kept)
                restorer.run(text)
                done += 1
                count += 1
                size += len(text)
                tick("restore", done, total)
                if count >= FILES_PER_COMMIT or size >= _BYTES_PER_COMMIT:
                    break
            else:
                more = False
        if store.git.head() != head:
            report.commits += 1
    tick("restore", total, total)
    _settings_note(store, header, report)


def _settings_note(store: MemoryStore, header: dict[str, Any], report: ImportReport) -> None:
    """Say which of the export's ``mdmem.toml`` settings this vault doesn't share:
    an export carries no settings (they may send data somewhere), only their digests."""
    left = settings_left_behind(store.root, header.get("settings"))
    report.settings_left_behind = left or []
    if left is None:
        report.note(
            "mdmem.toml's settings are not part of an export: this vault keeps its own; "
            "copy from the old vault's mdmem.toml what you want"
        )
    elif left:
        report.note(
            f"left behind {len(left)} mdmem.toml setting(s) the old vault set otherwise: "
            f"{', '.join(left)}; an export carries no settings, copy them from the old "
            "vault's mdmem.toml if you want them"
        )


# ---------------------------------------------------------------- the file --


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(number, raw line) of the export, each at most :data:`MAX_LINE_BYTES`."""
    regular_file(path, None)
    with path.open("rb") as fh:
        number = 0
        while raw := fh.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise InvalidInputError(
                    f"{path}: line {number} is longer than {MAX_LINE_BYTES // 1024**2} MiB"
                )
            yield number, raw


def _verify(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, trailer) of a whole, unchanged export; InvalidInputError otherwise.

    Reads the file once, holding one line at a time.
    """
    what = "not an mdmem export"
    digest = hashlib.sha256()
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    rows = 0
    for number, raw in _lines(path):
        if trailer is not None:
            if raw.strip():
                raise InvalidInputError(f"{path}: lines after the export's trailer (line {number})")
            continue
        if number == 1:
            header = _json(raw)
            if not isinstance(header, dict) or EXPORT_HEADER_KEY not in header:
                raise InvalidInputError(
                    f"{path} is {what} (`mdmem library export` writes one; "
                    "a plain `mdmem library import` reads other files as untrusted rows)"
                )
            if header[EXPORT_HEADER_KEY] not in _VERSIONS:
                raise InvalidInputError(
                    f"{path}: export format {header[EXPORT_HEADER_KEY]!r} is not one this "
                    f"mdmem restores ({', '.join(map(str, _VERSIONS))})"
                )
        if raw.startswith(b'{"' + EXPORT_TRAILER_KEY.encode()):
            parsed = _json(raw)
            if isinstance(parsed, dict) and EXPORT_TRAILER_KEY in parsed:
                trailer = parsed
                continue
        digest.update(raw)
        rows += 1
    if header is None:
        raise InvalidInputError(f"{path} is empty: {what}")
    if trailer is None:
        raise InvalidInputError(
            f"{path}: the export has no trailer: it was cut short; nothing was restored"
        )
    if trailer.get("rows") != rows or trailer.get("sha256") != digest.hexdigest():
        raise InvalidInputError(
            f"{path}: the export's lines don't match its trailer (changed or cut short "
            "since it was written); nothing was restored"
        )
    return header, trailer


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _file_rows(path: Path) -> Iterator[tuple[str, str]]:
    """(path, text) of each file row; the file was verified whole before."""
    for number, raw in _lines(path):
        if not raw.startswith(b'{"' + EXPORT_FILE_KEY.encode() + b'"'):
            continue  # the header, memory rows (the files hold them), the trailer
        row = _json(raw)
        if (
            isinstance(row, dict)
            and isinstance(row.get("file"), str)
            and isinstance(row.get("text"), str)
        ):
            yield row["file"], row["text"]
        else:
            raise InvalidInputError(f"{path}: line {number} is not a file row")


# --------------------------------------------------------------- one file --


class _Restorer:
    """Restores one file of the export (see the module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        tx: Transaction,
        report: ImportReport,
        rel: str,
        mode: str,
        template: Path | None,
        origin: str,
        kept: dict[str, dict[str, Fields]],
    ) -> None:
        self.store, self.tx, self.report = store, tx, report
        self.rel, self.mode, self.template = rel, mode, template
        self.trailers = [("Op", "restore"), ("Restored-From", origin)]
        self.kept = kept

    def run(self, text: str) -> None:
        try:
            self._run(text)
        except (MdmemError, SkipFile, OSError, UnicodeError) as exc:
            self.report.refuse(self.rel, str(exc) or type(exc).__name__)

    def _run(self, text: str) -> None:
        note = note_of(self.rel)
        if note is not None:
            self._fields(_check_path(note), guard(text, self.mode))
            return
        rel = _check_path(self.rel)
        start = payload_span(rel, text)
        text = text[:start] + guard(text[start:], self.mode)  # SecretRefusedError: refused
        full = safe_path(self.store.root, rel)
        try:
            before: bytes | None = full.read_bytes()
        except FileNotFoundError:
            before = None
        new = decode(text.encode("utf-8"))
        beside = self.kept.get(rel, {})
        if before == new.to_bytes():
            if not rel.startswith(f"{TOOL_OUTPUT_DIR}/"):
                held = len(blk.parse(rel, new, beside=beside).memories())
                self.report.messages += held
                self.report.duplicates += held
            return
        if rel.startswith(f"{TOOL_OUTPUT_DIR}/"):
            # A full tool output: a payload, never parsed or indexed.
            if before is not None:
                raise InvalidInputError("the vault has another file at this path; kept the vault's")
            self.tx.stage_raw_file(rel, new.to_bytes())
            self._restored(rel)
            return
        parsed = blk.parse(rel, new, beside=beside)
        memories = parsed.memories()
        self.report.messages += len(memories)
        fresh, skip = self._classify(memories)
        if before is None or before == self._template_bytes(rel):
            drop = {line for b in skip for line in range(b.line_start - 1, b.line_end)}
            lines = [line for n, line in enumerate(new.lines) if n not in drop]
            self.tx.apply(rel, _writer_of(rel, lines, new, before), f"restore {rel}", self.trailers)
            self.report.added += len(fresh)
            self._restored(rel)
            return
        if not _mergeable(rel) or not memories:
            raise InvalidInputError(
                "the vault has another version of this file; kept the vault's "
                f"({len(fresh)} memories of the export's not restored)"
            )
        if fresh:
            pieces = [(b, new.lines[b.line_start - 1 : b.line_end]) for b in fresh]
            self.tx.apply(rel, _appender(pieces), f"restore {len(fresh)} into {rel}", self.trailers)
            self.report.added += len(fresh)
            self._restored(rel)
        # Lines outside memories (a person's notes) are the file's, not a
        # memory's: the vault's version stays, and what it lacks is named. The
        # frontmatter (a session's start) is the vault file's own.
        front = [b for b in parsed.blocks if b.id.endswith("#frontmatter")]
        inside = {n for b in [*memories, *front] for n in range(b.line_start - 1, b.line_end)}
        have = {line.strip() for line in before.decode("utf-8", "replace").splitlines()}
        missing = [
            n
            for n, line in enumerate(new.lines)
            if n not in inside and line.strip() and line.strip() not in have
        ]
        if missing:
            self.report.refuse(
                rel,
                f"{len(missing)} line(s) outside its memories (from line {missing[0] + 1}) "
                "differ from the vault's file; kept the vault's",
            )

    def _fields(self, note: str, text: str) -> None:
        """A note's fields file, before its note: its records, and those the vault lacks."""
        records, bad = parse_records(text.splitlines())
        if bad:
            raise InvalidInputError(f"lines {bad[:3]} are not field records; not restored")
        self.kept[note] = resolve(records)
        side = sidecar_of(note)
        try:
            before = safe_path(self.store.root, side).read_bytes().decode("utf-8")
        except FileNotFoundError:
            before = ""
        have = set(before.splitlines())
        held = {b.id for b in self.store.catalog.blocks_in(note) if b.is_memory}
        fresh = [
            line
            for line, record in zip(text.splitlines(), _each(text), strict=True)
            if line not in have and (record is None or record.id not in held)
        ]
        if fresh:
            self.tx.record_lines(note, fresh)  # counted with its note, not as a file

    def _classify(self, memories: list[Block]) -> tuple[list[Block], list[Block]]:
        """(memories the vault lacks, memories it holds already: not written again)."""
        fresh: list[Block] = []
        skip: list[Block] = []
        for block in memories:
            held = self.store.catalog.block(block.id)
            if held is None:
                fresh.append(block)
                continue
            skip.append(block)
            if _same(held, block):
                self.report.duplicates += 1
            else:
                self.report.refuse(
                    f"{self.rel} ^{block.id}",
                    f"the vault holds this memory with other content ({held.path}); "
                    "kept the vault's",
                )
        return fresh, skip

    def _template_bytes(self, rel: str) -> bytes | None:
        if self.template is None:
            return None
        try:
            return (self.template / rel).read_bytes()
        except OSError:
            return None

    def _restored(self, rel: str) -> None:
        if rel not in self.report.files:
            self.report.files.append(rel)


def _each(text: str) -> list[Record | None]:
    """The record on each line of a fields file's text (None for a blank line)."""
    out: list[Record | None] = []
    for line in text.splitlines():
        records, _bad = parse_records([line])
        out.append(records[0] if records else None)
    return out


def _same(a: Block, b: Block) -> bool:
    return (a.kind, a.text, a.fields, a.tags, a.status) == (
        b.kind,
        b.text,
        b.fields,
        b.tags,
        b.status,
    )


def _check_path(rel: str) -> str:
    """``rel`` if it names a knowledge file inside the vault; InvalidInputError otherwise."""
    pure = PurePosixPath(rel)
    if (
        not rel
        or "\\" in rel
        or "\x00" in rel
        or pure.is_absolute()
        or any(part in ("", ".", "..") or part.startswith(".") for part in rel.split("/"))
        or pure.suffix != ".md"
        or pure.parts[0] in ("templates", "node_modules")
        or len(rel) > 1000
    ):
        raise InvalidInputError("not a path of a vault's knowledge file; not restored")
    refuse_in_metadata(rel, "the file's path")
    return rel


def _mergeable(rel: str) -> bool:
    _, inner = blk.scope_of_path(rel)
    parts = PurePosixPath(inner).parts
    return (len(parts) == 1 and parts[0] in _LEDGERS) or (
        len(parts) == 2 and parts[0] in _ENTRY_DIRS
    )


def _writer_of(rel: str, lines: list[str], new: TextFile, base: bytes | None) -> Editor:
    """Write the file as the export has it, over nothing or the template's copy."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        now = tf.to_bytes() if tf.lines else None
        if now != base:
            raise ConflictError(f"{rel} changed while it was restored; run the restore again")
        tf.lines[:] = lines
        tf.bom, tf.newline = new.bom, new.newline
        return Edit()

    return edit


def _appender(pieces: list[tuple[Block, list[str]]]) -> Editor:
    """Append memories (their lines as the export has them) to a file the vault has:
    an entry at the end, a list item at the end of its section."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        for block, raw in pieces:
            lines = [line.rstrip("\r\n") for line in raw]
            if _HEADING.match(lines[0]):
                tf.append_lines(lines, blank_before=True)
                continue
            # A list item joins its list; a paragraph (a session's turn) stands apart.
            paragraph = blk.list_marker(lines[0]) is None
            end = _section_end(tf, block.heading)
            new_section = block.heading.startswith("Topic:") or (
                paragraph and _DAY.fullmatch(block.heading) is not None
            )
            if end is None and new_section:
                tf.append_lines([f"## {block.heading}", "", *lines], blank_before=True)
            elif end is None or end == len(tf.lines):
                tf.append_lines(lines, blank_before=paragraph)
            else:
                tf.insert_lines(end, ["", *lines] if paragraph else lines)
        return Edit()

    return edit


def _section_end(tf: TextFile, heading: str) -> int | None:
    """The 0-based line after the last non-blank line of the section ``heading``
    heads (None when the file has no such heading)."""
    start = level = None
    for n, raw in enumerate(tf.lines):
        match = _HEADING.match(raw.rstrip("\r\n"))
        if match is None:
            continue
        if start is None and match.group(2) == heading:
            start, level = n, len(match.group(1))
        elif start is not None and level is not None and len(match.group(1)) <= level:
            end = n
            break
    else:
        end = len(tf.lines)
    if start is None:
        return None
    last = end - 1
    while last > start and not tf.lines[last].strip():
        last -= 1
    return last + 1
