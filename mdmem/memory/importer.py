"""``mdmem import``: chat exports, JSONL messages and markdown notes into a vault.

Chats (ChatGPT, Claude.ai, JSONL; read by :mod:`mdmem.memory.import_formats`)
become session entries, one session per conversation (``<source>-<id>``,
or the ``session`` an mdmem export names), recorded through
:class:`~mdmem.memory.sessions.Session` like any live turn: the same secrets
guard, escaping and field rules. Each entry keeps

* ``[source:: chatgpt]`` (or ``claude``, or the JSONL row's source),
* ``[event:: <the export's message id>]``: a second import finds it and adds
  nothing (the session's event lookup),
* ``[created:: <the message's own time>]`` and a heading with that time.

Commits carry the import's time, not the messages': a commit dated 2023
would claim the vault knew the message in 2023, which time-travel recall
(``as_of``) and ``diff(since)`` would then repeat as fact. Many turns go in
one commit (:data:`BATCH` per commit).

A message the guard or the input checks refuse is counted and named in the
report (line or message id, and the one-line reason), and the import goes on.

Markdown notes are copied byte for byte under ``imported/`` (keeping their
relative paths and frontmatter) as a person's own notes. A note the vault
would read as metadata is refused, not rewritten: one holding block ids
(``^m-…``, it would become memories with whatever fields it carries) or whose
frontmatter declares a scope its location doesn't give.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.memory import import_formats as fmt
from mdmem.memory.sessions import Session
from mdmem.models import Memory, one_line
from mdmem.store.editors import Edit
from mdmem.store.secret_guard import guard

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore
    from mdmem.store.writer import Transaction

__all__ = ["BATCH", "IMPORTED_DIR", "ImportReport", "Progress", "import_path"]

log = logging.getLogger("mdmem")

BATCH = 500  # entries per commit: few commits, and a crash loses at most one batch
IMPORTED_DIR = "imported"
_MAX_REFUSALS = 200  # reasons listed in the report; the count is always exact
_SKIP_DIRS = frozenset({".git", ".obsidian", ".trash", "node_modules"})
# Fields of an exported memory that its kind, file and status already say, or
# that only the session path writes; the rest travel as the caller's fields.
_SYSTEM_FIELDS = frozenset(
    {"kind", "created", "updated", "status", "by", "scope", "consolidated", "role", "source"}
    | {"contact", "event", "speaker", "session", "tool", "tout", "chars"}
)

Progress = Callable[[str, int, int], None]
# (session id, source, contact, scope) -> the session a conversation records into.
OpenSession = Callable[[str, str | None, str | None, str | None], Session]


@dataclass
class ImportReport:
    format: str
    path: str
    scope: str
    conversations: int = 0
    messages: int = 0  # messages (or memories, or notes) read from the input
    added: int = 0
    duplicates: int = 0  # already in the vault (same source and message id, or same text)
    refused: int = 0
    refusals: list[dict[str, str]] = field(default_factory=list)  # where, reason
    sessions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # notes copied (markdown)
    commits: int = 0
    first: str | None = None  # the earliest original time imported
    last: str | None = None

    def refuse(self, where: str, reason: str) -> None:
        self.refused += 1
        if len(self.refusals) < _MAX_REFUSALS:
            self.refusals.append({"where": where, "reason": one_line(reason)})

    def saw(self, when: datetime | None) -> None:
        if when is None:
            return
        stamp = when.isoformat(timespec="seconds")
        self.first = min(self.first or stamp, stamp)
        self.last = max(self.last or stamp, stamp)


def import_path(
    store: MemoryStore,
    path: str | os.PathLike[str],
    *,
    open_session: OpenSession,
    format: str | None = None,
    scope: str | None = None,
    secrets: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import ``path`` (format detected when unambiguous); see the module docstring.

    ``open_session`` opens each conversation's session as the vault does
    (a linked contact's scope, the contact's profile note).
    """
    source = Path(path).expanduser()
    kind, data = (format, None) if format else fmt.detect(source)
    if kind not in fmt.FORMATS:
        raise InvalidInputError(f"unknown import format {kind!r}; one of: {', '.join(fmt.FORMATS)}")
    scope = blk.validate_scope(scope)
    report = ImportReport(kind, str(source), scope)
    tick = progress or (lambda phase, done, total: None)
    if kind == "markdown":
        _import_notes(store, source, report, secrets, tick)
        return report
    rows: list[Any]
    if kind == "chatgpt":
        rows = list(fmt.read_chatgpt(source, data))
    elif kind == "claude":
        rows = list(fmt.read_claude(source, data))
    else:
        if source.is_dir():
            raise InvalidInputError(f"{source} is a folder; --format jsonl reads one .jsonl file")
        rows = []
        for row in fmt.read_jsonl(source):
            if isinstance(row, tuple):
                report.messages += 1  # read, and refused: counted like any message
                report.refuse(f"line {row[0]}", row[1])
            else:
                rows.append(row)
    _Writer(store, report, scope, secrets, tick, open_session).write(rows)
    return report


class _Writer:
    """Writes conversations and exported memories in batches of :data:`BATCH`."""

    def __init__(
        self,
        store: MemoryStore,
        report: ImportReport,
        scope: str,
        secrets: str | None,
        tick: Progress,
        open_session: OpenSession,
    ) -> None:
        self.store = store
        self.open_session = open_session
        self.report = report
        self.scope = scope
        self.secrets = secrets
        self.tick = tick
        self.done = 0
        self.in_batch = 0
        # (kind, scope, content hash) of what the vault holds: an exported
        # log or journal entry is not deduplicated by its verb, so by this.
        self.known: set[tuple[str, str, str]] | None = None

    def write(self, rows: list[fmt.Conversation | fmt.ExportedMemory]) -> None:
        total = sum(len(r.messages) if isinstance(r, fmt.Conversation) else 1 for r in rows)
        self.report.messages += total  # (besides unreadable lines, counted when read)
        self.tick("import", 0, total)
        pending: list[Callable[[], None]] = []
        for row in rows:
            if isinstance(row, fmt.Conversation):
                self.report.conversations += 1
                session = self._session(row)
                if session is None:
                    self.done += len(row.messages)
                    continue
                if session.id not in self.report.sessions:
                    self.report.sessions.append(session.id)
                pending.extend(self._recorder(session, m) for m in row.messages)
            else:
                pending.append(self._rememberer(row))
        writer = self.store.writer
        # An export is a snapshot whose statuses are given: its memories must not
        # retire each other (nor what the vault held) because they look alike.
        after_batch = writer.after_batch
        if any(isinstance(r, fmt.ExportedMemory) for r in rows):
            writer.after_batch = None
        try:
            for start in range(0, len(pending), BATCH):
                head = self.store.git.head()
                with self.store.batch(f"import {self.report.format}: {self.report.path}"[:120]):
                    for step in pending[start : start + BATCH]:
                        step()
                        self.done += 1
                        self.tick("import", self.done, total)
                if self.store.git.head() != head:
                    self.report.commits += 1
        finally:
            writer.after_batch = after_batch
        self.tick("import", total, total)

    def _session(self, conv: fmt.Conversation) -> Session | None:
        name = conv.session or fmt.session_name(conv.source, conv.id)
        try:
            return self.open_session(
                name, conv.source or None, conv.contact, conv.scope or self.scope or None
            )
        except MdmemError as exc:
            for message in conv.messages:
                self.report.refuse(_where(conv, message), str(exc))
            return None

    def _recorder(self, session: Session, message: fmt.Message) -> Callable[[], None]:
        conv_where = f"{session.id}"

        def step() -> None:
            try:
                if message.tool is not None:
                    memory = self._record_tool_output(session, message)
                else:
                    memory = session.record(
                        message.role,
                        message.text,
                        message.event_id,
                        speaker=message.speaker,
                        when=message.when,
                        secrets=self.secrets,
                    )
            except MdmemError as exc:
                where = f"line {message.line}" if message.line else conv_where
                self.report.refuse(f"{where} message {message.event_id or '?'}", str(exc))
                return
            if memory.was_new:
                self.report.added += 1
                self.report.saw(message.when)
            else:
                self.report.duplicates += 1

        return step

    def _record_tool_output(self, session: Session, message: fmt.Message) -> Memory:
        """A tool output of an mdmem export, recorded again unless its session has it
        (same tool, same time: tool outputs carry no event id)."""
        assert message.tool is not None
        for entry in session.entries():
            block = self.store.catalog.block(entry.id)
            if block is not None and (
                block.kind == "tool_output"
                and block.field("tool") == message.tool
                and block.field("created") == _iso(message.when)
            ):
                return entry
        return session.record_tool_output(
            message.tool, message.text, when=message.when, secrets=self.secrets
        )

    def _rememberer(self, exported: fmt.ExportedMemory) -> Callable[[], None]:
        def step() -> None:
            try:
                new = self._remember(exported.row)
            except MdmemError as exc:
                self.report.refuse(f"line {exported.line}", str(exc))
                return
            except (TypeError, ValueError, AttributeError) as exc:
                self.report.refuse(f"line {exported.line}", f"malformed memory row ({exc})")
                return
            if new:
                self.report.added += 1
            else:
                self.report.duplicates += 1

        return step

    def _remember(self, row: dict[str, Any]) -> bool:
        """Write one exported memory with its kind, scope, tags, date, fields and status."""
        store = self.store
        kind = str(row["kind"])
        scope = blk.validate_scope(row.get("scope") or self.scope or None)
        text = store.clean_text(row["text"], self.secrets)
        tags = [str(t) for t in row.get("tags") or ()]
        created = blk.parse_datetime(row.get("created")) if row.get("created") else None
        fields = [
            (str(k), str(v))
            for k, v in _pairs(row.get("fields"))
            if str(k).lower() not in _SYSTEM_FIELDS
        ]
        key = (kind, scope, blk.content_hash(text))
        if self.known is None:
            self.known = {
                (b.kind, b.scope, b.content_hash) for b in store.catalog.blocks(memories_only=True)
            }
        if key in self.known:
            return False
        moment = created if isinstance(created, datetime) else None
        if kind == "log":
            category = str(row.get("heading") or "").partition("·")[2].strip() or "Note"
            memory = store.log(text, category, scope=scope, tags=tags, when=moment)
        elif kind == "journal":
            memory = store.journal(text, scope=scope, tags=tags, when=moment)
        elif kind == "learning" and str(row.get("heading") or "").startswith("Topic:"):
            topic = str(row["heading"]).partition(":")[2].strip()
            memory = store.learn(topic, text, scope=scope, tags=tags)
        else:
            memory = store.remember(text, kind, tags, scope, created=created, fields=fields)
        self.known.add(key)
        status = str(row.get("status") or "active")
        if memory.was_new and status != "active":
            store.resolve(memory.id, status=status)
        return memory.was_new


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when is not None else None


def _pairs(value: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(value, dict):
        return value.items()
    if isinstance(value, list):
        return [tuple(p) for p in value if isinstance(p, list | tuple) and len(p) == 2]
    return []


def _where(conv: fmt.Conversation, message: fmt.Message) -> str:
    if message.line:
        return f"line {message.line}"
    return f"{conv.source} conversation {conv.id} message {message.event_id or '?'}"


# ------------------------------------------------------------ markdown notes --


def _note_paths(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    found = []
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder)
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(path)
    return found


def _import_notes(
    store: MemoryStore, folder: Path, report: ImportReport, secrets: str | None, tick: Progress
) -> None:
    paths = _note_paths(folder)
    report.messages = len(paths)
    tick("import", 0, len(paths))
    base = folder if folder.is_dir() else folder.parent
    target = blk.scope_dir(report.scope) / IMPORTED_DIR
    mode = secrets or store.settings.secrets
    for start in range(0, len(paths), BATCH):
        head = store.git.head()
        with store.batch(f"import notes: {folder.name}"[:120]) as tx:
            for i, path in enumerate(paths[start : start + BATCH], start + 1):
                rel = (target / path.relative_to(base).as_posix()).as_posix()
                try:
                    outcome = _copy_note(store, tx, path, rel, report.scope, mode)
                except (MdmemError, OSError, SkipFile) as exc:
                    report.refuse(rel, str(exc))
                else:
                    if outcome:
                        report.added += 1
                        report.files.append(rel)
                    else:
                        report.duplicates += 1
                tick("import", i, len(paths))
        if store.git.head() != head:
            report.commits += 1


def _copy_note(
    store: MemoryStore, tx: Transaction, path: Path, rel: str, scope: str, mode: str
) -> bool:
    """Stage one note; False when the same bytes are already there."""
    raw = path.read_bytes()
    source = decode(raw)  # SkipFile: not UTF-8 markdown
    text = guard(source.text, mode)  # SecretRefusedError in refuse mode
    if text != source.text:
        source = decode(text.encode("utf-8"))
        source.bom = decode(raw).bom
    dest = store.root / rel
    if dest.exists():
        if dest.read_bytes() == source.to_bytes():
            return False
        raise InvalidInputError(f"{rel} exists with other content; not overwritten")
    parsed = blk.parse(rel, source)
    if any(b.is_memory for b in parsed.blocks):
        raise InvalidInputError(
            "holds block ids (^m-…) that would make its lines memories; not imported"
        )
    if any(b.scope != scope for b in parsed.blocks):
        raise InvalidInputError("its frontmatter sets a scope its location doesn't give")

    def create(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if tf.lines:
            raise InvalidInputError(f"{rel} already exists")
        tf.lines[:] = source.lines
        tf.bom, tf.newline = source.bom, source.newline
        return Edit()

    tx.apply(rel, create, f"import note {rel}", [("Op", "import")])
    return True
