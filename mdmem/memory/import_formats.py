"""Readers for chat exports: ChatGPT, Claude.ai and a JSONL of messages.

Each reader turns an export into :class:`Conversation` records of
:class:`Message` (role, text, time, speaker, the export's own message id)
and does nothing else: writing them into a vault is
:mod:`mdmem.memory.importer`'s job. The formats, as their exports write them:

* **ChatGPT** (``conversations.json`` in the data export): a list of
  conversations, each ``{"id"|"conversation_id", "title", "create_time",
  "current_node", "mapping": {node_id: {"id", "parent", "children",
  "message": {"id", "author": {"role", "name"}, "create_time", "content":
  {"content_type", "parts": [...]}, "metadata": {...}}}}}``. Times are Unix
  seconds. The mapping is a tree (an edited or regenerated turn branches it);
  the conversation as the user last saw it is the path from the root to
  ``current_node``, which is what is read.
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
  ``mdmem export --jsonl`` writes it (see :mod:`mdmem.memory.export`); chat
  entries in an export carry ``role`` and read back as messages (tool outputs
  as tool outputs, from ``output``, the full text, when the export has it).
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdmem.errors import InvalidInputError

__all__ = [
    "FORMATS",
    "Conversation",
    "ExportedMemory",
    "Message",
    "detect",
    "detect_format",
    "read_chatgpt",
    "read_claude",
    "read_jsonl",
    "session_name",
]

FORMATS = ("chatgpt", "claude", "jsonl", "markdown")
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "system": "system"}
_ROLES.update({"tool": "tool", "function": "tool", "model": "assistant", "ai": "assistant"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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
    scope: str | None = None  # ...and its scope and contact
    contact: str | None = None


@dataclass(frozen=True)
class ExportedMemory:
    """One non-chat memory row of ``mdmem export --jsonl``."""

    row: dict[str, Any]
    line: int


def session_name(source: str, conversation_id: str) -> str:
    """A session id for an imported conversation: stable, and a safe file stem."""
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


def _load_json(path: Path) -> Any:
    """``conversations.json``, from a file, a folder holding it, or the export's zip."""
    try:
        if path.is_dir():
            path = path / "conversations.json"
        if path.suffix.lower() == ".zip":
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith("conversations.json")]
                if not names:
                    raise InvalidInputError(f"{path}: no conversations.json in the archive")
                return json.loads(archive.read(min(names, key=len)).decode("utf-8"))
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(f"{path}: not a readable JSON export ({exc})") from None


def detect_format(path: Path) -> str:
    """The format of ``path`` when it is unambiguous, else InvalidInputError."""
    return detect(path)[0]


def detect(path: Path) -> tuple[str, Any]:
    """The format of ``path`` and, for a JSON export, its parsed data (read once:
    exports run to hundreds of megabytes)."""
    if not path.exists():
        raise InvalidInputError(f"{path} does not exist")
    if path.is_dir() and not (path / "conversations.json").is_file():
        return "markdown", None
    if path.is_file() and path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl", None
    if path.is_file() and path.suffix.lower() == ".md":
        return "markdown", None
    data = _load_json(path)
    listed = _unwrap(data)
    first = listed[0] if isinstance(listed, list) and listed else None
    if isinstance(first, dict) and "mapping" in first:
        return "chatgpt", data
    if isinstance(first, dict) and "chat_messages" in first:
        return "claude", data
    raise InvalidInputError(
        f"can't tell the format of {path}; pass --format ({', '.join(FORMATS)})"
    )


def _unwrap(data: Any) -> Any:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        return data["conversations"]  # some exports wrap the list with the account
    return data


def read_chatgpt(path: Path, data: Any = None) -> list[Conversation]:
    """The conversations of a ChatGPT export (``data``: already parsed)."""
    data = _unwrap(_load_json(path) if data is None else data)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: a ChatGPT export is a list of conversations")
    out = []
    for i, conv in enumerate(data):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            raise InvalidInputError(f"{path}: conversation {i} has no mapping")
        conv_id = str(conv.get("conversation_id") or conv.get("id") or f"conversation-{i}")
        result = Conversation("chatgpt", conv_id, str(conv.get("title") or ""))
        for node in _chatgpt_path(conv["mapping"], conv.get("current_node")):
            message = node.get("message")
            if not isinstance(message, dict):
                continue
            author = message.get("author") or {}
            role = _ROLES.get(str(author.get("role") or ""), "")
            meta = message.get("metadata") or {}
            if not role or (
                isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")
            ):
                continue
            content = message.get("content") or {}
            text = _text_parts(content.get("parts")) or str(content.get("text") or "")
            if not text.strip():
                continue  # the empty system root, image-only parts, tool calls
            result.messages.append(
                Message(
                    role,
                    text,
                    _time(message.get("create_time")) or _time(conv.get("create_time")),
                    str(message.get("id") or node.get("id") or "") or None,
                    speaker=str(author["name"]) if author.get("name") else None,
                )
            )
        out.append(result)
    return out


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


def read_claude(path: Path, data: Any = None) -> list[Conversation]:
    """The conversations of a Claude.ai export (``data``: already parsed)."""
    data = _unwrap(_load_json(path) if data is None else data)
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: a Claude export is a list of conversations")
    out = []
    for i, conv in enumerate(data):
        if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
            raise InvalidInputError(f"{path}: conversation {i} has no chat_messages")
        conv_id = str(conv.get("uuid") or conv.get("id") or f"conversation-{i}")
        result = Conversation("claude", conv_id, str(conv.get("name") or ""))
        for message in conv["chat_messages"]:
            if not isinstance(message, dict):
                continue
            role = _ROLES.get(str(message.get("sender") or ""), "")
            text = _text_parts(message.get("content")) or str(message.get("text") or "")
            if not role or not text.strip():
                continue
            result.messages.append(
                Message(
                    role,
                    text,
                    _time(message.get("created_at")) or _time(conv.get("created_at")),
                    str(message.get("uuid") or "") or None,
                )
            )
        out.append(result)
    return out


def read_jsonl(path: Path) -> Iterator[Conversation | ExportedMemory | tuple[int, str]]:
    """Conversations (one per source and conversation id, in first-seen order),
    exported memories, and ``(line, reason)`` for lines that can't be read."""
    conversations: dict[tuple[str, str, str, str], Conversation] = {}
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    with handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                yield number, "not a JSON object"
                continue
            if not isinstance(row, dict):
                yield number, "not a JSON object"
                continue
            if "role" not in row and "sender" not in row:
                if isinstance(row.get("text"), str) and isinstance(row.get("kind"), str):
                    yield ExportedMemory(row, number)
                else:
                    yield number, "no role (a message) nor kind and text (a memory)"
                continue
            role = _ROLES.get(str(row.get("role") or row.get("sender") or "").lower(), "")
            content = row.get("content", row.get("text"))
            text = _text_parts(content)
            if not role:
                yield number, f"unknown role {row.get('role')!r}"
                continue
            if not text.strip():
                yield number, "empty content"
                continue
            exported = "kind" in row and bool(row.get("session"))
            if exported:
                # A session entry of an mdmem export: its session, scope, source
                # and contact as they were (none if it had none).
                source = str(row.get("source") or "")
                conv = str(row["session"])
                key = (source, conv, str(row.get("scope") or ""), str(row.get("contact") or ""))
            else:
                source = str(row.get("source") or "jsonl")
                conv = str(
                    row.get("conversation_id")
                    or row.get("session_id")
                    or row.get("session")
                    or "default"
                )
                key = (source, conv, "", "")
            if key not in conversations:
                conversations[key] = Conversation(
                    source,
                    conv,
                    session=conv if exported else None,
                    scope=key[2] or None,
                    contact=key[3] or None,
                )
            when = _time(
                row.get("timestamp", row.get("created_at", row.get("created", row.get("time"))))
            )
            event = row.get("event") or row.get("id")
            if event in (None, ""):
                # No message id: one from what identifies the message, so that a
                # second import of the same file still finds it.
                raw_id = json.dumps([source, conv, role, when and when.isoformat(), text])
                event = "sha1-" + hashlib.sha1(raw_id.encode("utf-8")).hexdigest()
            tool = row.get("tool") if exported and row.get("kind") == "tool_output" else None
            conversations[key].messages.append(
                Message(
                    role,
                    str(row.get("output") or text) if tool else text,
                    when,
                    str(event) if event not in (None, "") else None,
                    speaker=str(row["speaker"]) if row.get("speaker") else None,
                    line=number,
                    tool=str(tool) if tool else None,
                )
            )
    yield from conversations.values()
