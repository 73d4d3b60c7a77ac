"""Short-term memory: session turns recorded as markdown entries.

``vault.session(id, source=..., contact=...)`` writes each chat message and
tool output as one entry of ``sessions/<id>.md`` (``scopes/<k>/<n>/sessions/``
for a scope)::

    ## 2026-01-15 14:23:05 · user
    How do I deploy to production? [role:: user] [source:: telegram] [contact:: telegram:123] ^m-…

Entries are ordinary memories (kind ``chat_message`` / ``tool_output``), so
recall finds them (``kinds=["tool_output"]``) and consolidation later folds
them into episodes and facts, marking them ``[consolidated:: ^m-…]``.

A tool output longer than ``settings.tool_output_max_chars`` keeps only a
preview and a key (``tout_…``) in the session; the full text goes verbatim to
``tool-outputs/<key>.md`` at the vault root, in the same commit. That folder is
excluded from indexing (catalog ``EXCLUDED_DIRS``): the preview is what recall
matches, ``vault.read_tool_output(key)`` returns the whole payload, and a huge
log never floods the indexes or gets embedded twice.

Duplicates are dropped (OrcBot): the same source and event id at any age
(looked up in the catalog's event index), or the same source, contact and
content within :data:`DEDUPE_WINDOW` (read from this session's file and any
session file written within the window).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from mdmem.errors import InvalidInputError, MemoryNotFoundError, ScopeDeniedError
from mdmem.files import blocks as blk
from mdmem.files.textfile import safe_path
from mdmem.memory.capture import extractive
from mdmem.models import Block, Memory, first_line, one_line
from mdmem.store.inputs import check_chars, check_fields
from mdmem.store.secret_guard import guard
from mdmem.store.tiers import abstract_of

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore
    from mdmem.store.writer import Transaction

__all__ = [
    "DEDUPE_WINDOW",
    "ROLES",
    "TOOL_OUTPUT_DIR",
    "Session",
    "attribute",
    "output_place",
    "read_tool_output",
    "session_id_of",
    "speaker_of",
    "summary_text",
    "summary_turn",
    "turn_text",
    "validate_session_id",
]

log = logging.getLogger("mdmem")

ROLES = ("user", "assistant", "system", "tool")
DEDUPE_WINDOW = timedelta(minutes=5)
TOOL_OUTPUT_DIR = "tool-outputs"
MAX_TOOL_OUTPUT_CHARS = 16_000_000
_PREVIEW_CHARS = 1_000
_PREVIEW_LINES = 20
# Used with fullmatch: "$" would also match before a final newline.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TOOL = re.compile(r"[A-Za-z0-9_][\w.:/-]{0,63}")
_KEY = re.compile(r"tout_[0-9a-f]{20}")
_FIELD_BAD = re.compile(r"[\[\]()\n\r]")
# The line a cut tool output ends with (record_tool_output): bookkeeping, not words.
_CUT_FOOTER = re.compile(
    r"^… [\d,]+ more characters; full output: `tout_[0-9a-f]{20}` \(vault\.read_tool_output\)$",
    re.MULTILINE,
)


def validate_session_id(session_id: str) -> str:
    """A safe file stem: letters, digits, ``. _ -``; no path separators, no ``..``."""
    if (
        not isinstance(session_id, str)
        or not _SESSION_ID.fullmatch(session_id)
        or ".." in session_id
        or session_id.endswith((".md", "."))
    ):
        raise InvalidInputError(
            f"invalid session id {session_id!r}: 1-128 letters, digits, '.', '_' or '-'"
        )
    return session_id


def session_id_of(path: str) -> str | None:
    """The session id of a session file path, or None for other files."""
    _, inner = blk.scope_of_path(path)
    parts = PurePosixPath(inner).parts
    if len(parts) == 2 and parts[0] == "sessions" and parts[1].endswith(".md"):
        return parts[1][:-3]
    return None


def _field_value(value: str | None, what: str, *, limit: int = 200) -> str | None:
    """A value that can sit inside ``[key:: value]``; odd ones become a stable digest."""
    if value is None:
        return None
    try:
        check_chars(str(value), what)
        odd = False
    except InvalidInputError:
        if what != "event":
            raise
        odd = True
    text = " ".join(str(value).split())
    if not text:
        return None
    odd = odd or bool(_FIELD_BAD.search(text)) or len(text) > limit
    if odd:
        if what != "event":
            raise InvalidInputError(f"invalid {what} {value!r}: no brackets, parentheses, newlines")
        raw = str(value).encode("utf-8", "surrogatepass")  # a digest can take any string
        text = "sha1-" + hashlib.sha1(raw).hexdigest()
    return text


def _speaker(value: object) -> str | None:
    """A per-message speaker, checked like any caller field and never rewritten:
    what is accepted reads back byte-identical, anything else is refused."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"invalid speaker {value!r}: a non-empty string")
    if len(value) > 200:
        raise InvalidInputError(f"invalid speaker: {len(value)} characters; the limit is 200")
    try:
        check_fields([("speaker", value)])
    except InvalidInputError:
        raise InvalidInputError(
            f"invalid speaker {value!r}: no brackets, parentheses, line breaks, "
            "or spaces at either end"
        ) from None
    return value


def turn_text(block: Block) -> str:
    """What a turn said, for a summary or a title: its text without mdmem's
    bookkeeping (the footer of a tool output cut to a preview)."""
    return _CUT_FOOTER.sub("", block.text).rstrip()


# A summary reads a turn as words: fence lines and terminal controls go.
_FENCE_LINE = re.compile(r"^`{3,}.*$", re.MULTILINE)
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
_MAX_TURN_CHARS = 1500  # OrcBot memoryContentMaxLength: one turn's text at most
_MAX_SUMMARY_CHARS = 1200


def summary_turn(block: Block) -> tuple[str, str]:
    """(role, text) of one session entry for a summary: fences, controls and
    bookkeeping reduced to its words ("" when nothing is left)."""
    role = block.field("role") or ("tool" if block.kind == "tool_output" else "user")
    text = one_line(_CONTROL.sub(" ", _FENCE_LINE.sub("", turn_text(block))), _MAX_TURN_CHARS)
    if block.kind == "tool_output" and text:
        text = f"{block.field('tool') or 'tool'} output: {text}"
    return role, text


def summary_text(session_id: str, turns: list[Block], body: str = "") -> str:
    """A session summary's text: a head naming the session, its day and how many
    turns it covers, then ``body`` (default: the turns' most central sentences).

    The head makes summaries of different sessions distinct texts (remember
    stores identical text once) and tells a reader the span.
    """
    pairs = [p for p in (summary_turn(b) for b in turns) if p[1]]
    if not body:
        body = extractive.summarize(pairs, max_sentences=4, max_chars=_MAX_SUMMARY_CHARS)
    if not body:
        body = "; ".join(one_line(t, 160) for _, t in pairs[:4])
    day = turns[0].created.date().isoformat() if turns else ""
    count = f"{len(turns)} turn{'s' if len(turns) != 1 else ''}"
    head = f"Session {session_id} ({day}, {count})" if day else f"Session {session_id} ({count})"
    return f"{head}. {body}" if body else f"{head}."


def speaker_of(block: Block) -> str | None:
    """Who said a turn, when the conversation names people: its ``[speaker:: …]``,
    unless that is the session's own contact (a one-to-one chat). None: the
    session's user, the one the conversation is with."""
    speaker = block.field("speaker")
    if not speaker or speaker == block.field("contact"):
        return None
    return speaker


_OWNER_WORDS = frozenset({"", "user", "the user", "me", "i", "owner"})


def attribute(
    entries: list[Block], cited: tuple[int, ...], claimed: str | None
) -> tuple[list[Block], str | None, bool]:
    """Who said what a draft drew from ``entries[i]`` for ``i`` in ``cited``:
    (those entries, their speaker, whether it is the session user's).

    Read from the cited entries, never from the draft's ``claimed`` speaker
    alone: a model saying "user" of a line Ana said does not file it in
    USER.md. What nobody can attribute in a conversation with named speakers
    is nobody's (no speaker, not the user's).
    """
    sources = [entries[i] for i in cited if 0 <= i < len(entries)]
    said = [b for b in sources if _is_user_turn(b)] or sources
    voices = {speaker_of(b) for b in said}
    people = {speaker_of(b) for b in entries if _is_user_turn(b)}
    claim = (claimed or "").strip().casefold()

    def named(candidates: set[str | None]) -> set[str | None]:
        if claim in _OWNER_WORDS:
            return {v for v in candidates if v is None}
        return {v for v in candidates if v is not None and v.casefold() == claim}

    if len(voices) == 1:
        (voice,) = voices
    elif sources:
        matched = named(voices)
        voice = next(iter(matched)) if len(matched) == 1 else _NOBODY
    elif people <= {None}:
        voice = None  # a conversation without named speakers: the user's
    else:
        matched = named(people)
        voice = next(iter(matched)) if len(matched) == 1 else _NOBODY
    if voice == _NOBODY:
        return sources, None, False
    return sources, voice, voice is None


_NOBODY = "\0nobody"


def _is_user_turn(block: Block) -> bool:
    return block.kind != "tool_output" and (block.field("role") or "user") == "user"


def _fence(text: str) -> list[str]:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), fence]


class Session:
    """One conversation's short-term memory; see the module docstring."""

    def __init__(
        self,
        store: MemoryStore,
        session_id: str,
        *,
        source: str | None = None,
        contact: str | None = None,
        scope: str | None = None,
        after_write: Callable[[], object] | None = None,
        on_contact: Callable[[str, datetime | None], object] | None = None,
    ) -> None:
        self.store = store
        # Called inside a turn's transaction (the contact's profile: mdmem.memory.desks.contacts).
        self.on_contact = on_contact
        # Called after each recorded entry (the facade's automatic consolidation).
        self.after_write = after_write
        self.id = validate_session_id(session_id)
        self.source = _field_value(source, "source", limit=64)
        self.contact = _field_value(contact, "contact")
        self.scope = blk.validate_scope(scope)
        self.path = str(blk.scope_dir(self.scope) / "sessions" / f"{self.id}.md")
        self._header_lines: list[str] | None = None
        self._title: str | None = None
        self._started: datetime | None = None

    def __repr__(self) -> str:
        return f"Session({self.id!r}, source={self.source!r}, contact={self.contact!r})"

    def describe(self, *, title: str | None = None, started: datetime | None = None) -> None:
        """What the session file's header says when this session creates it: a
        title (an imported conversation's; one line, the caller's to clean) and
        when the conversation began (default: its first write). An existing
        file keeps its header."""
        self._title, self._started = title, started
        self._header_lines = None

    # -- writes --------------------------------------------------------------

    def record(
        self,
        role: str,
        content: str,
        event_id: str | None = None,
        *,
        speaker: str | None = None,
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Record a message; a duplicate returns the earlier entry with ``was_new=False``.

        ``speaker`` names who said it when a conversation has several people
        (a group chat), beside the session's ``contact``; it is kept as the
        entry's ``[speaker:: …]`` field and read back exactly as given.
        """
        if role not in ROLES:
            raise InvalidInputError(f"invalid role {role!r}; one of: {', '.join(ROLES)}")
        who = _speaker(speaker)
        body = self.store.clean_text(content, secrets)
        event = _field_value(event_id, "event")
        fields = self._fields(role, when)
        if who is not None:
            # Before "created", which _fields puts last: the field order reads
            # role, source, contact, speaker, created, event.
            at = next((i for i, (k, _) in enumerate(fields) if k == "created"), len(fields))
            fields.insert(at, ("speaker", who))
        fields += [("event", event)] if event else []
        in_batch = self.store.writer.current is not None
        with self._write() as tx:
            dup = self._duplicate(body, event, who)
            if dup is not None:
                log.debug("dropped duplicate event in session %s (same as %s)", self.id, dup.id)
                return Memory.from_block(dup, was_new=False)
            memory_id = self.store.append_entry(
                self.path,
                self._heading(role, when),
                body,
                turn=(who or role, self._moment(when)),
                fields=fields,
                scope=self.scope,
                kind="chat_message",
                header=self._header(),
                subject=f"record {role}: {first_line(body)}",
                trailers=[("Session", self.id)],
            )
            if self.contact and self.on_contact is not None:
                # The profile's first/last seen change in the turn's own commit,
                # which keeps the turn's title (a batch keeps its caller's title).
                self.on_contact(self.contact, when)
                if not in_batch:
                    tx.set_message(f"record {role}: {first_line(body)}", tx.trailers)
        memory = Memory.from_block(self.store.block(memory_id), was_new=True)
        self._after_write()
        return memory

    def record_tool_output(
        self,
        tool: str,
        content: str,
        *,
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Record a tool's output; past ``tool_output_max_chars`` only a preview stays here."""
        if not isinstance(tool, str) or not _TOOL.fullmatch(tool):
            raise InvalidInputError(f"invalid tool name {tool!r}")
        if not isinstance(content, str):
            raise InvalidInputError("tool output must be a string")
        if len(content) > MAX_TOOL_OUTPUT_CHARS:
            raise InvalidInputError(
                f"tool output is {len(content):,} characters; the limit is "
                f"{MAX_TOOL_OUTPUT_CHARS:,}"
            )
        if not content.strip():
            raise InvalidInputError("tool output is empty")
        # Kept verbatim inside a code fence (terminal colours and all), except
        # what no file can hold; line endings are stored as LF.
        check_chars(content, "tool output", code=True)
        mode = secrets or self.store.settings.secrets
        content = guard(content, mode)
        limit = max(200, self.store.settings.tool_output_max_chars)
        fields = [("kind", "tool_output"), *self._fields("tool", when), ("tool", tool)]
        key: str | None = None
        if len(content) > limit:
            key = _tool_output_key(self.scope, content)
            head = "\n".join(content.splitlines()[:_PREVIEW_LINES])
            preview = head[: min(_PREVIEW_CHARS, limit)].rstrip()
            rest = len(content) - len(preview)
            body_lines = [
                *_fence(preview),
                "",
                f"… {rest:,} more characters; full output: `{key}` (vault.read_tool_output)",
            ]
            fields += [("tout", key), ("chars", str(len(content)))]
            # L0 of the tiers (store/tiers.py): a line to show before the preview.
            abstract = abstract_of(content)
            if abstract:
                fields.append(("abstract", abstract))
        else:
            body_lines = _fence(content)
        body = "\n".join(body_lines)
        if len(body) > 2 * limit + 1000:  # pragma: no cover - guarded by the preview cut
            raise InvalidInputError("tool output preview too large")
        with self._write() as tx:
            if key is not None:
                rel = f"{TOOL_OUTPUT_DIR}/{key}.md"
                if not (self.store.root / rel).exists():
                    tx.stage_raw_file(rel, self._tool_file(key, tool, content, when))
            memory_id = self.store.append_entry(
                self.path,
                self._heading(f"tool {tool}", when),
                body,
                turn=(f"{tool} output", self._moment(when)),
                fields=fields,
                scope=self.scope,
                kind="tool_output",
                header=self._header(),
                subject=f"record tool output {tool}: {len(content):,} chars",
                trailers=[("Session", self.id)] + ([("Tool-Output", key)] if key else []),
            )
        memory = Memory.from_block(self.store.block(memory_id), was_new=True)
        self._after_write()
        return memory

    # -- reads ---------------------------------------------------------------

    def entries(self) -> list[Memory]:
        """Every entry of this session, in file order."""
        self._refresh()
        state = self.store.catalog.files.get(self.path)
        if state is None:
            return []
        return [Memory.from_block(b, was_new=False) for b in state.parsed.blocks if b.is_memory]

    # -- internals -----------------------------------------------------------

    def _fields(self, role: str, when: datetime | None) -> list[tuple[str, str]]:
        fields = [("role", role)]
        if self.source:
            fields.append(("source", self.source))
        if self.contact:
            fields.append(("contact", self.contact))
        if when is not None:
            moment = when if when.tzinfo else when.replace(tzinfo=UTC)
            fields.append(("created", moment.isoformat(timespec="seconds")))
        return fields

    def _moment(self, when: datetime | None) -> datetime:
        return when if when is not None else datetime.now(UTC)

    def _heading(self, label: str, when: datetime | None) -> str:
        moment = self.store.clock.local(when)
        return f"{moment:%Y-%m-%d %H:%M:%S} · {label}"

    def _header(self) -> list[str]:
        # Used only when the file is new, but asked on every turn: made once per
        # Session (YAML's emitter is a good part of a turn's cost in an import).
        if self._header_lines is None:
            self._header_lines = self._new_header()
        return self._header_lines

    def _new_header(self) -> list[str]:
        meta: dict[str, str] = {"session": self.id}
        if self.source:
            meta["source"] = self.source
        if self.contact:
            meta["contact"] = self.contact
        if self._title:
            meta["title"] = self._title
        started = self._started if self._started is not None else datetime.now(UTC)
        moment = started if started.tzinfo else started.replace(tzinfo=UTC)
        meta["started"] = moment.isoformat(timespec="seconds")
        dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).splitlines()
        return ["---", *dumped, "---", f"# {self._title or f'Session {self.id}'}"]

    def _tool_file(self, key: str, tool: str, content: str, when: datetime | None) -> bytes:
        meta: dict[str, object] = {
            "key": key,
            "tool": tool,
            "session": self.id,
            "chars": len(content),
            "sha256": hashlib.sha256(content.encode("utf-8")).hexdigest(),
            "created": (when or datetime.now(UTC)).isoformat(timespec="seconds"),
        }
        if self.scope:
            meta["output_scope"] = self.scope
        header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        return f"---\n{header}---\n{content}".encode()

    def _write(self) -> AbstractContextManager[Transaction]:
        """The turn's own commit, or, inside ``vault.batch()``, the batch's (one
        commit for a whole import; the duplicate check sees the batch's turns)."""
        writer = self.store.writer
        if writer.current is not None:
            return writer.batch(None)
        return writer.transaction(None)

    def _duplicate(self, body: str, event: str | None, speaker: str | None) -> Block | None:
        digest = blk.content_hash(body)
        now = datetime.now(UTC)
        self._refresh()
        if event is not None:
            # An event id is unique at its source, however old: a platform
            # redelivering a day-old message must not record it twice.
            same = self.store.catalog.with_event(self.source, event)
            if same:
                return same[0]
        for block in self._recent_blocks(now, digest):
            # The hash first: it rules out nearly every entry, and reading a
            # field parses it (a long import would pay that per turn per entry).
            if (
                block.content_hash == digest
                and block.kind == "chat_message"
                and block.field("source") == self.source
                and block.field("contact") == self.contact
                # Two people in a group chat both saying "Yes!" are two turns.
                and block.field("speaker") == speaker
                and abs(now - block.created) <= DEDUPE_WINDOW
            ):
                return block
        return None

    def _refresh(self) -> None:
        """Re-read this session's file if it changed on disk, unless a batch is writing
        it: then the catalog holds the pending text and the disk is behind it."""
        tx = self.store.writer.current
        if tx is None or self.path not in tx.pending:
            self.store.catalog.refresh(self.path)

    def _recent_blocks(self, now: datetime, digest: str) -> Iterator[Block]:
        """This session's entries with the content hash ``digest`` (from the catalog's
        hash index: a long import must not read every earlier turn per turn), plus
        the entries of other session files written within the window."""
        catalog = self.store.catalog
        scope = blk.scope_of_path(self.path)[0]
        yield from (b for b in catalog.active_with(scope, digest) if b.path == self.path)
        cutoff_ns = int((now - DEDUPE_WINDOW).timestamp() * 1e9)
        for path, state in list(catalog.files.items()):
            # The mtime test first: it is what rules out nearly every file of a big vault.
            if path == self.path or state.signature[0] < cutoff_ns:
                continue
            if session_id_of(path) is not None:
                yield from (b for b in state.parsed.blocks if b.is_memory)

    def _after_write(self) -> None:
        # Inside vault.batch() the hook (automatic consolidation, which makes its
        # own commit) waits for the batch's end: Vault.batch runs it then.
        if self.after_write is not None and self.store.writer.current is None:
            self.after_write()


def _tool_output_key(scope: str, content: str) -> str:
    digest = hashlib.sha256(f"{scope}\0{content}".encode()).hexdigest()
    return f"tout_{digest[:20]}"


def _tool_output_file(store: MemoryStore, key: str) -> tuple[dict[str, Any], str]:
    """(header, text) of the full tool output stored under ``key``."""
    if not isinstance(key, str) or not _KEY.fullmatch(key.strip()):
        raise InvalidInputError(f"invalid tool output key {key!r} (expected tout_ + 20 hex)")
    key = key.strip()
    path = safe_path(store.root, f"{TOOL_OUTPUT_DIR}/{key}.md")
    try:
        raw = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise MemoryNotFoundError(f"no tool output {key}") from None
    if not raw.startswith("---\n"):
        raise MemoryNotFoundError(f"{TOOL_OUTPUT_DIR}/{key}.md is not a tool output file")
    end = raw.find("\n---\n", 3)
    if end < 0:
        raise MemoryNotFoundError(f"{TOOL_OUTPUT_DIR}/{key}.md has no header end")
    try:
        meta = yaml.safe_load(raw[4 : end + 1]) or {}
    except yaml.YAMLError:
        meta = {}
    return (meta if isinstance(meta, dict) else {}), raw[end + 5 :]


def read_tool_output(store: MemoryStore, key: str, *, scope: str | None = None) -> str:
    """The full text stored under ``key``; ``scope`` (a host restriction) must match."""
    meta, text = _tool_output_file(store, key)
    if scope is not None:
        wanted = blk.validate_scope(scope)
        if str(meta.get("output_scope") or "") != wanted:
            raise ScopeDeniedError(
                f"tool output {key.strip()} is outside scope {scope or '(root)'}"
            )
    return text


def output_place(store: MemoryStore, key: str) -> tuple[str, str | None] | None:
    """(scope, contact) a full tool output belongs to (None when its header says
    no scope one can read), for the reading view's visibility rule."""
    meta, _text = _tool_output_file(store, key)
    try:
        scope = blk.validate_scope(str(meta.get("output_scope") or "") or None)
    except InvalidInputError:
        return None
    contact = meta.get("contact")
    return scope, (str(contact).strip() if contact else None)
