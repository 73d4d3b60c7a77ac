"""``mdmem library import``: chat exports, JSONL messages and markdown notes into a vault.

Chats (ChatGPT, Claude.ai, JSONL; read as a stream by
:mod:`mdmem.memory.library.import_formats`) become session entries, one session per
conversation, recorded through :class:`~mdmem.memory.capture.sessions.Session` like
any live turn: the same secrets guard, escaping and field rules. A session
is named from the conversation's title and start (``chatgpt-2024-05-03-
lisbon-trip-6a1c2f3e``; a session an earlier import named by id is written
to again), its header keeps the title and ``started:`` the conversation's
own start. Each entry keeps

* ``[source:: chatgpt]`` (or ``claude``, or the JSONL row's source),
* ``[event:: <the export's message id>]``: a second import finds it and adds
  nothing (the session's event lookup),
* ``[created:: <the message's own time>]`` and a heading with that time.

Commits carry the import's time, not the messages': a commit dated 2023
would claim the vault knew the message in 2023, which time-travel recall
(``as_of``) and ``diff(since)`` would then repeat as fact. Many turns go in
one commit (:data:`BATCH` per commit).

**The file is not trusted** (DESIGN, trust rules): metadata comes from the
caller. Everything goes into the caller's ``scope``; a row that names another
scope is refused and listed. What would set provenance or routing is not
taken from the file and is counted in ``ImportReport.ignored``: a row's
contact (it would route turns into a person's scope and touch their
profile), status, importance and origin, every inline field (``captured``,
``by``, ``consolidated``...), the ``pinned`` tag, a memory's ``created`` (the
vault learns it now) and a message time in the future. Kinds that mdmem
writes itself (episodes, summaries, chat entries as memories, document
chunks) are refused as memory rows, and imported memories never retire
what the vault holds (no auto-resolve). Only ``mdmem library import --restore``
of an export the user made brings all of that back
(:mod:`mdmem.memory.library.restore`).

**A plain import of an mdmem export** (a file whose first row is an export
header) takes only what stays true without the export's links: its active
memories. A superseded, retired or resolved memory is left out (imported as
active it would come back as the top hit), and so are the export's files
(episodes, documents, notes, contact profiles); the report counts both and
names ``--restore``. A preference is the user's own, and goes to
``USER.md``, only when the row says nothing of another person (no contact,
no speaker) and, in an export, came from a ``USER.md``: a contact's
preference goes to ``MEMORY.md``, never into the user's profile.

A message, conversation or line that can't be read or is refused is counted
and named in the report (line or message id, and the one-line reason), and
the import goes on.

Markdown notes are copied byte for byte under ``imported/`` (keeping their
relative paths and frontmatter) as a person's own notes. A note the vault
would read as metadata is refused, not rewritten: one holding block ids
(``^m-…``, it would become memories with whatever fields it carries) or whose
frontmatter declares a scope its location doesn't give.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.memory.capture.sessions import Session
from mdmem.memory.library import import_formats as fmt
from mdmem.memory.library import restore as rst
from mdmem.memory.library.report import ImportReport
from mdmem.models import FACT_KINDS, Memory, one_line
from mdmem.recall.asdata import IMPORTED_DIR
from mdmem.store.editors import Edit
from mdmem.store.secret_guard import guard, scrub

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore
    from mdmem.store.writer import Transaction

__all__ = ["BATCH", "IMPORTED_DIR", "ImportReport", "Progress", "import_path"]

log = logging.getLogger("mdmem")

BATCH = 500  # entries per commit: few commits, and a crash loses at most one batch
MAX_NOTE_BYTES = 16 * 1024 * 1024  # a markdown note larger than this is not a note
_SKIP_DIRS = frozenset({".git", ".obsidian", ".trash", "node_modules"})
# Kinds a memory row of an untrusted file may have: what a caller can
# remember, log or journal. The rest mdmem derives itself.
_IMPORTABLE_KINDS = FACT_KINDS | {"bug_fix", "trade_off", "log", "journal"}
# Keys of a row that set provenance, status or routing: never from a file.
_UNTRUSTED_KEYS = ("status", "importance", "origin_type", "captured", "updated", "by")
# A clock a little fast is not a forgery; a message dated next week is.
_FUTURE_SLACK = timedelta(days=1)

Progress = Callable[[str, int, int], None]
# (session id, source, contact, scope) -> the session a conversation records into.
OpenSession = Callable[[str, str | None, str | None, str | None], Session]


def import_path(
    store: MemoryStore,
    path: str | os.PathLike[str],
    *,
    open_session: OpenSession,
    format: str | None = None,
    scope: str | None = None,
    secrets: str | None = None,
    progress: Progress | None = None,
    restore: bool = False,
    template: Path | None = None,
) -> ImportReport:
    """Import ``path`` (format detected when unambiguous); see the module docstring.

    ``open_session`` opens each conversation's session as the vault does.
    ``restore``: ``path`` is an export the caller vouches for as their own:
    its files come back with their provenance (:mod:`mdmem.memory.library.restore`);
    ``template`` is the folder ``mdmem init`` copies (a file still as the
    template made it is replaced by the export's).
    """
    source = Path(path).expanduser()
    tick = progress or (lambda phase, done, total: None)
    if restore:
        if format not in (None, "jsonl") or scope:
            raise InvalidInputError(
                "--restore reads an mdmem export as it is: no --format or --scope with it"
            )
        report = ImportReport("export", str(source), "", restored=True)
        rst.restore(store, source, report, secrets, tick, template)
        return report
    kind = format or fmt.detect(source)
    if kind not in fmt.FORMATS:
        raise InvalidInputError(f"unknown import format {kind!r}; one of: {', '.join(fmt.FORMATS)}")
    scope = blk.validate_scope(scope)
    report = ImportReport(kind, str(source), scope)
    if kind == "markdown":
        _import_notes(store, source, report, secrets, tick)
        return report
    if source.is_dir() and kind == "jsonl":
        raise InvalidInputError(f"{source} is a folder; --format jsonl reads one .jsonl file")
    where = fmt.Position()
    tick("import", 0, _size(source))
    if kind == "chatgpt":
        items: Iterator[Any] = fmt.read_chatgpt(source, where)
    elif kind == "claude":
        items = fmt.read_claude(source, where)
    else:
        items = fmt.read_jsonl(source, where)
    _Writer(store, report, scope, secrets, open_session).write(
        items, lambda: tick("import", where.done, where.total)
    )
    tick("import", where.total, where.total)
    return report


def _size(source: Path) -> int:
    try:
        return source.stat().st_size if source.is_file() else 0
    except OSError:
        return 0


Item = fmt.Conversation | fmt.ExportedMemory | fmt.ExportPart | fmt.Skipped


class _Writer:
    """Writes conversations and memories as they are read, :data:`BATCH` a commit."""

    def __init__(
        self,
        store: MemoryStore,
        report: ImportReport,
        scope: str,
        secrets: str | None,
        open_session: OpenSession,
    ) -> None:
        self.store = store
        self.open_session = open_session
        self.report = report
        self.scope = scope
        self.secrets = secrets
        # (source, conversation id, session, scope named) -> its session (None: refused).
        self.sessions: dict[tuple[str, str, str, str], Session | None] = {}
        self.now = datetime.now(UTC)
        self.export_files = 0
        self.is_export = False  # the file began with an export header
        self.inactive = 0  # an export's superseded, retired or resolved memories left out
        # (kind, scope, content hash) of what the vault holds: an exported
        # log or journal entry is not deduplicated by its verb, so by this.
        self.known: set[tuple[str, str, str]] | None = None

    def write(self, items: Iterable[Item], tick: Callable[[], None]) -> None:
        writer = self.store.writer
        # What a file says must not retire what the vault holds, nor its rows
        # each other, because they look alike: a status is not the file's to set.
        after_batch = writer.after_batch
        writer.after_batch = None
        try:
            self._in_batches(self._steps(items, tick))
        finally:
            writer.after_batch = after_batch
        if self.is_export:
            self.report.note(
                f"this is an mdmem export: only its active memories were imported; left out "
                f"{self.inactive} superseded, retired or resolved memories and "
                f"{self.export_files} files (documents, notes, contact profiles, episodes); "
                "`mdmem library import --restore FILE` brings the whole vault back, "
                "for an export you made yourself"
            )

    def _in_batches(self, steps: Iterator[Callable[[], None]]) -> None:
        title = f"import {self.report.format}: {Path(self.report.path).name}"[:120]
        more = True
        while more:
            head = self.store.git.head()
            done = 0
            with self.store.batch(title):
                for step in steps:
                    step()
                    done += 1
                    if done >= BATCH:
                        break
                else:
                    more = False
            if self.store.git.head() != head:
                self.report.commits += 1

    def _steps(
        self, items: Iterable[Item], tick: Callable[[], None]
    ) -> Iterator[Callable[[], None]]:
        """One step a message or memory, made as the input is read."""
        for n, item in enumerate(items):
            if n % 20 == 0:
                tick()
            if isinstance(item, fmt.Skipped):
                self.report.messages += 1  # read, and refused: counted like any message
                self.report.refuse(item.where, item.reason)
            elif isinstance(item, fmt.ExportPart):
                self.export_files += item.key == fmt.EXPORT_FILE_KEY
                self.is_export |= item.key == fmt.EXPORT_HEADER_KEY and n == 0
            elif isinstance(item, fmt.ExportedMemory):
                self.report.messages += 1
                if self.is_export and item.row.get("status") not in (None, "", "active"):
                    # Without the export's supersede links it would read as current.
                    self.inactive += 1
                    continue
                yield self._rememberer(item)
            else:
                self.report.messages += len(item.messages)
                session = self._session(item)
                if session is not None:
                    for message in item.messages:
                        yield self._recorder(session, item, message)

    def _session(self, conv: fmt.Conversation) -> Session | None:
        """The conversation's session in the caller's scope, or None (refused)."""
        key = (conv.source, conv.id, conv.session or "", conv.scope or "")
        if key in self.sessions:
            session = self.sessions[key]
            if session is None:
                for message in conv.messages:
                    self.report.refuse(_where(conv, message), "its conversation was refused")
            return session
        self.report.conversations += 1
        try:
            if conv.scope is not None and conv.scope != self.scope:
                raise InvalidInputError(_scope_refusal(conv.scope, self.scope))
            name = conv.session or self._session_name(conv)
            # The caller's scope, given outright: a contact linked to a person
            # must not route a file's turns into that person's scope.
            session = self.open_session(name, conv.source or None, None, self.scope)
            # The header says when the conversation began, not when it was imported.
            started = conv.started or next((m.when for m in conv.messages if m.when), None)
            title = _clean_title(conv.title) or None
            session.describe(title=title, started=self._past(started, count=False))
        except MdmemError as exc:
            self.sessions[key] = None
            for message in conv.messages:
                self.report.refuse(_where(conv, message), str(exc))
            return None
        self.sessions[key] = session
        if session.id not in self.report.sessions:
            self.report.sessions.append(session.id)
        return session

    def _session_name(self, conv: fmt.Conversation) -> str:
        legacy = fmt.legacy_session_name(conv.source, conv.id)
        if not conv.title:
            return legacy
        # A conversation an earlier import named by its id keeps that session.
        old = blk.scope_dir(self.scope) / "sessions" / f"{legacy}.md"
        if (self.store.root / old).is_file():
            return legacy
        return fmt.session_name(conv.source, conv.id, _clean_title(conv.title), conv.started)

    def _past(self, when: datetime | None, *, count: bool = True) -> datetime | None:
        """``when``, unless it is in the future (the file would date it ahead of now)."""
        if when is not None and when > self.now + _FUTURE_SLACK:
            if count:
                self.report.ignore("created (in the future)")
            return None
        return when

    def _recorder(
        self, session: Session, conv: fmt.Conversation, message: fmt.Message
    ) -> Callable[[], None]:
        def step() -> None:
            if conv.contact is not None:
                self.report.ignore("contact")
            when = self._past(message.when)
            try:
                if message.tool is not None:
                    memory = self._record_tool_output(session, message, when)
                else:
                    memory = session.record(
                        message.role,
                        message.text,
                        message.event_id,
                        speaker=message.speaker,
                        when=when,
                        secrets=self.secrets,
                    )
            except MdmemError as exc:
                self.report.refuse(_where(conv, message), str(exc))
                return
            if memory.was_new:
                self.report.added += 1
                self.report.saw(when)
            else:
                self.report.duplicates += 1

        return step

    def _record_tool_output(
        self, session: Session, message: fmt.Message, when: datetime | None
    ) -> Memory:
        """A tool output of an mdmem export, recorded again unless its session has it
        (same tool, same time: tool outputs carry no event id)."""
        assert message.tool is not None
        for entry in session.entries():
            block = self.store.catalog.block(entry.id)
            if block is not None and (
                block.kind == "tool_output"
                and block.field("tool") == message.tool
                and block.field("created") == _iso(when)
            ):
                return entry
        return session.record_tool_output(
            message.tool, message.text, when=when, secrets=self.secrets
        )

    def _rememberer(self, exported: fmt.ExportedMemory) -> Callable[[], None]:
        def step() -> None:
            try:
                new = self._remember(exported.row)
            except MdmemError as exc:
                self.report.refuse(f"line {exported.line}", str(exc))
                return
            except (TypeError, ValueError, AttributeError, KeyError) as exc:
                self.report.refuse(f"line {exported.line}", f"malformed memory row ({exc})")
                return
            if new:
                self.report.added += 1
            else:
                self.report.duplicates += 1

        return step

    def _remember(self, row: dict[str, Any]) -> bool:
        """Write one memory row with its kind, tags and text, in the caller's scope."""
        store = self.store
        kind = row["kind"]
        if kind not in _IMPORTABLE_KINDS:
            raise InvalidInputError(
                f"a {one_line(str(kind), 40)!r} memory is made by mdmem itself, not imported "
                "from a file (`mdmem library import --restore` brings back an export you made)"
            )
        named = row.get("scope")
        if named and named != self.scope:
            raise InvalidInputError(_scope_refusal(str(named), self.scope))
        text = store.clean_text(row["text"], self.secrets)
        tags = row.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidInputError("tags must be a list of strings")
        if any(t.lstrip("#").lower() == "pinned" for t in tags):
            # Pinned text is put before the model at every session start.
            self.report.ignore("tag pinned")
            tags = [t for t in tags if t.lstrip("#").lower() != "pinned"]
        self._ignored_keys(row)
        key = (kind, self.scope, blk.content_hash(text))
        if self.known is None:
            self.known = {
                (b.kind, b.scope, b.content_hash) for b in store.catalog.blocks(memories_only=True)
            }
        if key in self.known:
            return False
        heading = row["heading"] if isinstance(row.get("heading"), str) else ""
        if kind == "log":
            category = heading.partition("·")[2].strip() or "Note"
            memory = store.log(text, category, scope=self.scope, tags=tags)
        elif kind == "journal":
            memory = store.journal(text, scope=self.scope, tags=tags)
        elif kind == "learning" and heading.startswith("Topic:"):
            memory = store.learn(
                heading.partition(":")[2].strip(), text, scope=self.scope, tags=tags
            )
        else:
            memory = store.remember(text, kind, tags, self.scope, owner=self._users_own(row))
        self.known.add(key)
        return memory.was_new

    def _users_own(self, row: dict[str, Any]) -> bool:
        """Whether a preference row may go into the user's profile (USER.md)."""
        fields = row.get("fields")
        pairs = fields.items() if isinstance(fields, dict) else fields or ()
        named = {str(p[0]) for p in pairs if isinstance(p, list | tuple) and len(p) == 2 and p[1]}
        if row.get("contact") or row.get("speaker") or named & {"contact", "speaker"}:
            return False
        return not self.is_export or str(row.get("path") or "").endswith("USER.md")

    def _ignored_keys(self, row: dict[str, Any]) -> None:
        """Count what the row says that only the caller (or a restore) may set."""
        for name in _UNTRUSTED_KEYS:
            if row.get(name) not in (None, "", "active"):
                self.report.ignore(name)
        if row.get("created"):
            self.report.ignore("created")
        if row.get("contact"):
            self.report.ignore("contact")
        fields = row.get("fields")
        if fields:
            # Any inline field may be one mdmem reads (captured, by, episode...).
            self.report.ignore("fields")


def _clean_title(title: str) -> str:
    """A conversation title fit for a heading and a file name: one line, no
    secret, nothing the vault would read as a field or a block id."""
    text = scrub(title, "redact")
    text = text.replace("[", "(").replace("]", ")").replace("^", "")
    return one_line(text, 120).strip().strip("#").strip()


def _scope_refusal(named: str, scope: str) -> str:
    return (
        f"names scope {named!r}, but this import writes to "
        f"{scope or 'the vault root'} (--scope); an import can't choose its own scope"
    )


def _iso(when: datetime | None) -> str | None:
    return when.isoformat(timespec="seconds") if when is not None else None


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
        if not path.is_symlink() and not path.is_dir():
            found.append(path)  # a FIFO or device among them is refused when copied
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
    fmt.regular_file(path, MAX_NOTE_BYTES)
    with path.open("rb") as fh:
        raw = fh.read(MAX_NOTE_BYTES + 1)  # it may have grown since stat
    if len(raw) > MAX_NOTE_BYTES:
        raise InvalidInputError(f"larger than {MAX_NOTE_BYTES // 1024**2} MiB; not a note")
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
