"""Readers for chat exports: what ``mdmem library import`` understands, read as a stream.

* **ChatGPT** (``conversations.json`` in the data export, or the export's
  ``.zip``): a list of conversations, each ``{"title", "create_time",
  "mapping": {node id: {"message", "parent", "children"}}, "current_node"}``
  with Unix-second times. Only the branch that ends at ``current_node`` is
  the conversation (regenerated answers sit on other branches); messages
  hidden from the conversation (the empty system root) and empty ones are
  skipped. Code the assistant ran (``content_type: code``) and what it
  printed (``execution_output``) are kept inside code fences. A message
  without a time of its own (``create_time: null``) takes the time of the
  message before it, so it stays after its question.
* **Claude.ai** (``conversations.json`` in the data export): a list of
  ``{"uuid", "name", "created_at", "chat_messages": [{"uuid", "sender":
  "human"|"assistant", "text", "content": [{"type": "text", "text"}...],
  "created_at"}]}`` with ISO-8601 times.
* **JSONL**: one JSON object a line. A message has ``role`` (user, assistant,
  system, tool; ``human`` counts as user), ``content`` (a string, or a list of
  ``{"type": "text", "text"}`` parts; ``text`` is accepted too), and
  optionally ``timestamp`` (ISO-8601 or Unix seconds; ``created_at``/``time``
  too), ``conversation_id`` or ``session_id`` (default ``default``),
  ``speaker``, ``id`` (the message id that makes a re-import add nothing;
  without one, a digest of the conversation, role, time and text stands in)
  and ``source`` (default ``jsonl``). Unix times in milliseconds are read as
  such. A line with ``kind`` and ``text`` but no ``role`` is a memory as
  ``mdmem library export`` writes it (see :mod:`mdmem.memory.library.export`); chat
  entries in an export carry ``role`` and read back as messages (tool outputs
  as tool outputs, from ``output``, the full text, when the export has it).
  An export's header, trailer and file rows are recognised (and restored only
  by ``mdmem library import --restore``: :mod:`mdmem.memory.library.restore`).

Untrusted input, read with bounds (DESIGN, trust rules): JSON is parsed as a
stream (``ijson``), one conversation at a time, never read whole; an archive
member is checked against :data:`MAX_EXPORT_BYTES` and :data:`MAX_RATIO`
from its header before a byte is inflated (and counted while it is);
a conversation or line larger than :data:`MAX_ITEM_BYTES` or nested deeper
than :data:`MAX_DEPTH` is skipped and reported, as is one of the wrong shape;
the rest goes in. Only a single value larger than :data:`MAX_VALUE_BYTES`
(no JSON parser can skip a string it has not finished) stops the read.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import ijson

from mdmem.errors import InvalidInputError
from mdmem.models import one_line

__all__ = [
    "EXPORT_FILE_KEY",
    "EXPORT_HEADER_KEY",
    "EXPORT_TRAILER_KEY",
    "FORMATS",
    "MAX_DEPTH",
    "MAX_EXPORT_BYTES",
    "MAX_ITEM_BYTES",
    "MAX_RATIO",
    "Conversation",
    "ExportPart",
    "ExportedMemory",
    "Message",
    "Position",
    "Skipped",
    "detect",
    "detect_format",
    "read_chatgpt",
    "read_claude",
    "read_jsonl",
    "read_lines",
    "regular_file",
    "session_name",
]

FORMATS = ("chatgpt", "claude", "jsonl", "markdown")
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "system": "system"}
_ROLES.update({"tool": "tool", "function": "tool", "model": "assistant", "ai": "assistant"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SLUG = re.compile(r"[^a-z0-9]+")

# The bounds of one import. A heavy ChatGPT user's conversations.json runs to a
# few hundred megabytes; more than this is a mistake or an attack.
MAX_EXPORT_BYTES = 2 * 1024**3
# Compressed JSON inflates 5-20 times; a zip bomb a thousand times. Members
# smaller than _RATIO_FROM can't hurt whatever their ratio.
MAX_RATIO = 100
_RATIO_FROM = 16 * 1024**2
# One conversation (or one JSONL line): a long chat with pasted logs is a few MB.
MAX_ITEM_BYTES = 32 * 1024**2
# One scalar (a string): the parser holds it whole before handing it over,
# and rescans it at each buffer it reads (time grows with its square). A
# message longer than a memory's 20,000 characters is refused anyway.
MAX_VALUE_BYTES = 16 * 1024**2
_BUFFER = 1024**2
# A conversation is ~10 levels deep (mapping, node, message, content, parts).
MAX_DEPTH = 64
# An export's own rows (mdmem.memory.library.export): a header first, a trailer last.
EXPORT_HEADER_KEY = "mdmem_export"
EXPORT_TRAILER_KEY = "mdmem_export_end"
EXPORT_FILE_KEY = "file"


@dataclass(frozen=True)
class Message:
    role: str  # user, assistant, system or tool
    text: str
    when: datetime | None  # the original time, timezone-aware
    event_id: str | None  # the export's message id: a re-import finds it
    speaker: str | None = None
    line: int | None = None  # where in the input (JSONL line), for reports
    tool: str | None = None  # a tool output of an mdmem export: the tool's name


@dataclass
class Conversation:
    source: str  # chatgpt, claude, or a JSONL row's source
    id: str  # the export's conversation id
    title: str = ""
    messages: list[Message] = field(default_factory=list)
    session: str | None = None  # a session id to keep as is (rows of an mdmem export)
    scope: str | None = None  # the scope an export row names (checked by the importer)
    contact: str | None = None  # ...and its contact (not trusted from a file)
    started: datetime | None = None  # when the conversation began, by the export


@dataclass(frozen=True)
class ExportedMemory:
    """One non-chat memory row of ``mdmem library export``."""

    row: dict[str, Any]
    line: int


@dataclass(frozen=True)
class ExportPart:
    """A row only an export has: its header, a file, or its trailer."""

    key: str  # EXPORT_HEADER_KEY, EXPORT_FILE_KEY or EXPORT_TRAILER_KEY
    line: int


@dataclass
class Position:
    """How far a reader got: bytes read of ``total`` (for progress bars)."""

    done: int = 0
    total: int = 0


@dataclass(frozen=True)
class Skipped:
    """A conversation, line or message that could not be read, and why."""

    where: str
    reason: str


class _TooBigError(Exception):
    """The input broke a bound that stops the read (the reason is the message)."""


def session_name(source: str, conversation_id: str, title: str = "", started: Any = None) -> str:
    """A session id for an imported conversation: stable, a safe file stem, and
    readable when the export gives a title (``chatgpt-2024-05-03-lisbon-trip-6a1c2f3e``)."""
    prefix = _UNSAFE.sub("-", source).strip("-.")[:24] or "import"
    slug = _SLUG.sub("-", title.casefold()).strip("-")[:60].strip("-")
    if slug:
        day = f"{started:%Y-%m-%d}-" if isinstance(started, datetime) else ""
        digest = hashlib.sha1(conversation_id.encode("utf-8")).hexdigest()[:8]
        return f"{prefix}-{day}{slug}-{digest}"
    return legacy_session_name(source, conversation_id)


def legacy_session_name(source: str, conversation_id: str) -> str:
    """The session id an import without titles gave (``<source>-<conversation id>``)."""
    stem = _UNSAFE.sub("-", conversation_id).strip("-.")[:80]
    name = f"{_UNSAFE.sub('-', source).strip('-.')[:24] or 'import'}-{stem or 'default'}"
    if stem != conversation_id:
        # Two ids that sanitise alike must not share a session.
        name += "-" + hashlib.sha1(conversation_id.encode("utf-8")).hexdigest()[:8]
    return name


def _time(value: Any) -> datetime | None:
    """A timestamp as ChatGPT (Unix seconds) or Claude/JSONL (ISO-8601) write it."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if abs(seconds) > 1e11:  # milliseconds (JavaScript's Date.now()), not year 5000
            seconds /= 1000
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        try:
            return _time(float(text))
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return None


def _text_parts(parts: Any) -> str:
    """The text of a list of parts: strings, or ``{"type": "text", "text"}`` objects."""
    if isinstance(parts, str):
        return parts
    out: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            out.append(part)
        elif (
            isinstance(part, dict)
            and isinstance(part.get("text"), str)
            and part.get("type", "text") == "text"  # not thinking, tool_use...
        ):
            out.append(part["text"])
    return "\n\n".join(p for p in out if p.strip())


def fenced(text: str, language: str = "") -> str:
    """``text`` inside a code fence longer than any backtick run in it."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = language if re.fullmatch(r"[A-Za-z0-9_+.-]{1,32}", language or "") else ""
    return f"{fence}{lang}\n{text.strip(chr(10))}\n{fence}"


# ------------------------------------------------------------- bounded input --


class _Counted:
    """A binary stream that counts what it hands out and stops at the bounds.

    ``mark()`` is called by the reader at each parse event: a stretch without
    one longer than :data:`MAX_VALUE_BYTES` is a single value the parser is
    still accumulating, which nothing downstream could bound.
    """

    def __init__(self, raw: IO[bytes], name: str, position: Position, total: int) -> None:
        self.raw, self.name, self.limit = raw, name, MAX_EXPORT_BYTES
        self.count = 0
        self.marked = 0
        self.position = position
        position.done, position.total = 0, total

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(65536 if size is None or size < 0 else size)
        self.count += len(data)
        self.position.done = self.count
        if self.count > self.limit:
            raise _TooBigError(f"{self.name} is larger than {_mib(self.limit)} uncompressed")
        if self.count - self.marked > MAX_VALUE_BYTES:
            raise _TooBigError(
                f"{self.name} holds a single value larger than {_mib(MAX_VALUE_BYTES)}"
            )
        return data

    def mark(self) -> None:
        self.marked = self.count


def _mib(n: int) -> str:
    if n < 1024**2:
        return f"{n // 1024:,} KiB"
    return f"{n // 1024**2:,} MiB" if n < 1024**3 else f"{n / 1024**3:g} GiB"


def regular_file(path: Path, limit: int | None = MAX_EXPORT_BYTES) -> None:
    """InvalidInputError unless ``path`` is a regular file (of at most ``limit``
    bytes): a FIFO would block the read, a device never end."""
    try:
        st = path.stat()
    except OSError as exc:
        raise InvalidInputError(f"can't read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(f"{path} is not a regular file")
    if limit is not None and st.st_size > limit:
        raise InvalidInputError(f"{path} is larger than {_mib(limit)}")


@contextmanager
def _open_json(path: Path, position: Position | None = None) -> Iterator[_Counted]:
    """``conversations.json`` from a file, a folder holding it, or the export's zip."""
    if path.is_dir():
        path = path / "conversations.json"
    regular_file(path)
    where = position if position is not None else Position()
    try:
        if path.suffix.lower() != ".zip":
            with path.open("rb") as fh:
                yield _Counted(fh, path.name, where, path.stat().st_size)
            return
        with zipfile.ZipFile(path) as archive:
            members = [i for i in archive.infolist() if i.filename.endswith("conversations.json")]
            if not members:
                raise InvalidInputError(f"{path}: no conversations.json in the archive")
            info = min(members, key=lambda i: len(i.filename))
            # From the member's header, before inflating a byte; zipfile stops
            # at the declared size, so a header that lies makes a bad CRC.
            if info.file_size > MAX_EXPORT_BYTES:
                raise InvalidInputError(
                    f"{path}: {info.filename} is {_mib(info.file_size)} uncompressed; "
                    f"the limit is {_mib(MAX_EXPORT_BYTES)}"
                )
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > _RATIO_FROM and ratio > MAX_RATIO:
                raise InvalidInputError(
                    f"{path}: {info.filename} inflates {ratio:,.0f} times "
                    f"(limit {MAX_RATIO}): not a chat export"
                )
            with archive.open(info) as member:
                yield _Counted(member, f"{path.name}:{info.filename}", where, info.file_size)
    except OSError as exc:
        raise InvalidInputError(f"{path}: not a readable export ({exc})") from None
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
        raise InvalidInputError(f"{path}: not a readable zip archive ({exc})") from None


def _json_items(stream: _Counted) -> Iterator[tuple[int, Any]]:
    """(index, item) of the JSON list in ``stream`` (or of its ``conversations``
    list), one at a time; an item too big or too deep comes as a :class:`Skipped`."""
    depth = 0
    list_depth: int | None = None  # the depth of the list's items' container
    wanted_key = False
    builder: ijson.ObjectBuilder | None = None
    skipped: str | None = None
    start = 0
    index = -1
    try:
        for event, value in ijson.basic_parse(stream, use_float=True, buf_size=_BUFFER):
            stream.mark()
            opens = event in ("start_map", "start_array")
            closes = event in ("end_map", "end_array")
            if list_depth is None:
                if opens:
                    depth += 1
                    if event == "start_array" and (depth == 1 or wanted_key):
                        list_depth = depth
                elif closes:
                    depth -= 1
                wanted_key = depth == 1 and event == "map_key" and value == "conversations"
                continue
            if depth == list_depth and not closes:
                index += 1  # a new item starts at this event
                builder, skipped, start = ijson.ObjectBuilder(), None, stream.count
            if opens:
                depth += 1
            if builder is not None:
                if depth - list_depth > MAX_DEPTH:
                    builder, skipped = None, f"nested deeper than {MAX_DEPTH} levels"
                elif stream.count - start > MAX_ITEM_BYTES:
                    builder, skipped = None, f"larger than {_mib(MAX_ITEM_BYTES)}"
                else:
                    builder.event(event, value)
            if closes:
                depth -= 1
                if depth < list_depth:
                    list_depth = None  # the list ended; nothing after it is read
                    break
            if depth == list_depth:
                if builder is not None:
                    yield index, builder.value
                elif skipped is not None:
                    yield index, Skipped(f"conversation {index}", skipped)
                builder, skipped = None, None
    except ijson.JSONError as exc:
        raise InvalidInputError(
            f"{stream.name}: not valid JSON ({one_line(str(exc), 80)})"
        ) from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{stream.name}: not UTF-8 JSON") from None


def detect_format(path: Path) -> str:
    """The format of ``path`` when it is unambiguous, else InvalidInputError."""
    return detect(path)


def detect(path: Path) -> str:
    """The format of ``path`` (a JSON export is told by its first conversation)."""
    if not path.exists():
        raise InvalidInputError(f"{path} does not exist")
    if path.is_dir() and not (path / "conversations.json").exists():
        return "markdown"
    if path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    if path.is_file() and path.suffix.lower() == ".md":
        return "markdown"
    first: Any = None
    try:
        with _open_json(path) as stream:
            first = next((item for _, item in _json_items(stream)), None)
    except _TooBigError as exc:
        raise InvalidInputError(str(exc)) from None
    if isinstance(first, dict) and "mapping" in first:
        return "chatgpt"
    if isinstance(first, dict) and "chat_messages" in first:
        return "claude"
    raise InvalidInputError(
        f"can't tell the format of {path}; pass --format ({', '.join(FORMATS)})"
    )


def _conversations(
    path: Path, source: str, convert: Any, position: Position | None
) -> Iterator[Conversation | Skipped]:
    read = 0
    try:
        with _open_json(path, position) as stream:
            for index, item in _json_items(stream):
                read += 1
                if isinstance(item, Skipped):
                    yield Skipped(f"{source} conversation {index}", item.reason)
                    continue
                try:
                    yield convert(index, item)
                except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
                    where = f"{source} conversation {index}"
                    title = (
                        _title(item.get("title") or item.get("name"))
                        if isinstance(item, dict)
                        else ""
                    )
                    if title:
                        where += f" ({one_line(title, 60)})"
                    yield Skipped(where, f"not a {source} conversation ({one_line(str(exc), 80)})")
    except (_TooBigError, InvalidInputError) as exc:
        if not read:
            raise InvalidInputError(str(exc)) from None
        # What came before stays imported; the report says where it stopped.
        yield Skipped(path.name, f"{exc}; the import stopped after {read} conversations")


def read_chatgpt(path: Path, position: Position | None = None) -> Iterator[Conversation | Skipped]:
    """The conversations of a ChatGPT export, one at a time."""
    return _conversations(path, "chatgpt", _chatgpt, position)


def read_claude(path: Path, position: Position | None = None) -> Iterator[Conversation | Skipped]:
    """The conversations of a Claude.ai export, one at a time."""
    return _conversations(path, "claude", _claude, position)


def _chatgpt(i: int, conv: Any) -> Conversation:
    if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
        raise ValueError("it has no mapping")
    conv_id = str(conv.get("conversation_id") or conv.get("id") or f"conversation-{i}")
    started = _time(conv.get("create_time"))
    result = Conversation("chatgpt", conv_id, _title(conv.get("title")), started=started)
    last = started
    for node in _chatgpt_path(conv["mapping"], conv.get("current_node")):
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        author = message.get("author") or {}
        if not isinstance(author, dict):
            raise ValueError("a message's author is not an object")
        role = _ROLES.get(str(author.get("role") or ""), "")
        meta = message.get("metadata") or {}
        if not role or (
            isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")
        ):
            continue
        text = _chatgpt_text(message.get("content"))
        if not text.strip():
            continue  # the empty system root, image-only parts, tool calls
        # A message without its own time (create_time: null) follows the one
        # before it: the conversation's start would date it before its question.
        when = _time(message.get("create_time")) or last
        last = when or last
        name = author.get("name")
        result.messages.append(
            Message(
                role,
                text,
                when,
                str(message.get("id") or node.get("id") or "") or None,
                speaker=name if isinstance(name, str) and name and role != "tool" else None,
            )
        )
    return result


def _chatgpt_text(content: Any) -> str:
    """A ChatGPT message's text: code and what it printed inside fences."""
    if not isinstance(content, dict):
        return ""
    ctype = content.get("content_type")
    if ctype == "code":
        code = content.get("text")
        if not isinstance(code, str) or not code.strip():
            return ""
        language = content.get("language")
        return fenced(code, language if isinstance(language, str) and language != "unknown" else "")
    if ctype == "execution_output":
        out = content.get("text")
        return fenced(out) if isinstance(out, str) and out.strip() else ""
    text = _text_parts(content.get("parts"))
    if not text and isinstance(content.get("text"), str):
        text = content["text"]
    return text


def _chatgpt_path(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """Nodes from the root to ``current_node`` (else to the last leaf), in order."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        current = leaves[-1] if leaves else None
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            break
        chain.append(node)
        current = node.get("parent")
    return chain[::-1]


def _claude(i: int, conv: Any) -> Conversation:
    if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
        raise ValueError("it has no chat_messages")
    conv_id = str(conv.get("uuid") or conv.get("id") or f"conversation-{i}")
    started = _time(conv.get("created_at"))
    result = Conversation("claude", conv_id, _title(conv.get("name")), started=started)
    last = started
    for message in conv["chat_messages"]:
        if not isinstance(message, dict):
            continue
        role = _ROLES.get(str(message.get("sender") or ""), "")
        text = _text_parts(message.get("content")) or _text_parts(message.get("text"))
        if not role or not text.strip():
            continue
        when = _time(message.get("created_at")) or last
        last = when or last
        result.messages.append(Message(role, text, when, str(message.get("uuid") or "") or None))
    return result


def _title(value: Any) -> str:
    return one_line(value, 200) if isinstance(value, str) else ""


# ------------------------------------------------------------------- JSONL --


def read_lines(path: Path, position: Position | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or a :class:`Skipped`) of each non-blank line, streamed.

    A line longer than :data:`MAX_ITEM_BYTES` is skipped without being held;
    one nested too deeply for the parser, or not JSON, is skipped too.
    """
    regular_file(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    where = position if position is not None else Position()
    where.done, where.total = 0, path.stat().st_size
    with handle:
        number = 0
        while True:
            raw = handle.readline(MAX_ITEM_BYTES + 1)
            if not raw:
                return
            where.done += len(raw)
            number += 1
            if len(raw) > MAX_ITEM_BYTES and not raw.endswith(b"\n"):
                while (more := handle.readline(1024 * 1024)) and not more.endswith(b"\n"):
                    where.done += len(more)
                where.done += len(more)
                yield number, Skipped(f"line {number}", f"longer than {_mib(MAX_ITEM_BYTES)}")
                continue
            if not raw.strip():
                continue
            try:
                yield number, json.loads(raw.decode("utf-8"))
            except RecursionError:
                yield number, Skipped(f"line {number}", "nested too deeply")
            except (UnicodeDecodeError, ValueError):
                yield number, Skipped(f"line {number}", "not a JSON object")


def read_jsonl(
    path: Path, position: Position | None = None
) -> Iterator[Conversation | ExportedMemory | ExportPart | Skipped]:
    """Each line as it comes: a one-message :class:`Conversation` (the importer
    groups them by session), an exported memory, an export's own row, or why
    the line was skipped."""
    for number, row in read_lines(path, position):
        if isinstance(row, Skipped):
            yield row
            continue
        try:
            yield _jsonl_row(number, row)
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
            yield Skipped(f"line {number}", f"malformed row ({one_line(str(exc), 80)})")


def _jsonl_row(number: int, row: Any) -> Conversation | ExportedMemory | ExportPart | Skipped:
    where = f"line {number}"
    if not isinstance(row, dict):
        return Skipped(where, "not a JSON object")
    for key in (EXPORT_HEADER_KEY, EXPORT_TRAILER_KEY, EXPORT_FILE_KEY):
        if key in row and "kind" not in row:
            return ExportPart(key, number)
    if "role" not in row and "sender" not in row:
        if isinstance(row.get("text"), str) and isinstance(row.get("kind"), str):
            return ExportedMemory(row, number)
        return Skipped(where, "no role (a message) nor kind and text (a memory)")
    role = _ROLES.get(str(row.get("role") or row.get("sender") or "").lower(), "")
    text = _text_parts(row.get("content", row.get("text")))
    if not role:
        return Skipped(where, f"unknown role {one_line(str(row.get('role')), 40)!r}")
    if not text.strip():
        return Skipped(where, "empty content")
    exported = "kind" in row and bool(row.get("session"))
    scope = row.get("scope")
    contact = row.get("contact")
    if exported:
        # A session entry of an mdmem export: its session, source, scope and contact.
        source = str(row.get("source") or "")
        conv = str(row["session"])
    else:
        source = str(row.get("source") or "jsonl")
        conv = str(
            row.get("conversation_id") or row.get("session_id") or row.get("session") or "default"
        )
    when = _time(row.get("timestamp", row.get("created_at", row.get("created", row.get("time")))))
    event = row.get("event") or row.get("id")
    if event in (None, "") or isinstance(event, dict | list):
        # No message id: one from what identifies the message, so that a
        # second import of the same file still finds it.
        raw_id = json.dumps([source, conv, role, when and when.isoformat(), text])
        event = "sha1-" + hashlib.sha1(raw_id.encode("utf-8")).hexdigest()
    tool = row.get("tool") if exported and row.get("kind") == "tool_output" else None
    speaker = row.get("speaker")
    if speaker is not None and not isinstance(speaker, str):
        return Skipped(where, "speaker is not a string")
    output = row.get("output")
    message = Message(
        role,
        output if tool and isinstance(output, str) and output else text,
        when,
        str(event),
        speaker=speaker or None,
        line=number,
        tool=str(tool) if tool else None,
    )
    return Conversation(
        source,
        conv,
        messages=[message],
        session=conv if exported else None,
        scope=str(scope) if isinstance(scope, str) and scope else None,
        contact=str(contact) if isinstance(contact, str) and contact else None,
    )
