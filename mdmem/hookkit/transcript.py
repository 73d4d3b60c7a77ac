"""Read a coding agent's transcript file: the conversation a hook flushes before compaction.

Claude Code writes one JSON object per line (JSONL) to the payload's
``transcript_path``: ``{"type": "user" | "assistant" | "summary" | ...,
"uuid", "parentUuid", "sessionId", "timestamp", "isMeta"?, "message":
{"role", "content"}}`` where ``content`` is a string or a list of blocks
(``{"type": "text", "text"}``, ``{"type": "tool_use", ...}``,
``{"type": "tool_result", ...}``, ``{"type": "thinking", ...}``). Only the
people's words are turns here: text blocks of user and assistant messages.
Tool calls reach the vault through the post-tool-use hook instead.

Codex and Cursor transcripts that follow the same line shape (a ``role`` and
``content`` per line, or under ``message``) read the same way; lines that
don't parse are skipped, never fatal.

The path comes from a hook payload, so it is read with care
(:func:`~mdmem.ipc.capped.read_capped`): only a regular file (a FIFO, a device or a symlink to
one is skipped without blocking), at most :data:`MAX_TRANSCRIPT_BYTES` (the
newest part), in bounded chunks, whatever its size says.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdmem.ipc.boundedjson import loads_bounded
from mdmem.ipc.capped import read_capped

__all__ = ["MAX_TRANSCRIPT_BYTES", "Turn", "read_transcript"]

MAX_TRANSCRIPT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Turn:
    event_id: str  # the line's uuid, else a digest of the line: stable across re-reads
    role: str  # user | assistant
    text: str
    when: datetime | None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text")
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_transcript(path: str | Path) -> list[Turn]:
    """The user and assistant text turns of a transcript, in order ([] when unreadable)."""
    data = read_capped(path, MAX_TRANSCRIPT_BYTES)
    if data is None:
        return []
    raw = data.decode("utf-8", "replace")
    if len(data) >= MAX_TRANSCRIPT_BYTES:
        raw = raw.split("\n", 1)[-1]  # the cut left half a line at the start
    turns: list[Turn] = []
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            entry = loads_bounded(line.encode("utf-8"))
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isMeta") or entry.get("isSidechain"):
            continue
        inner = entry.get("message")
        message: dict[str, Any] = inner if isinstance(inner, dict) else entry
        role = message.get("role") or entry.get("type")
        if role not in ("user", "assistant"):
            continue
        text = _text(message.get("content")).strip()
        if not text:
            continue  # tool results and tool calls carry no words of the conversation
        uuid = entry.get("uuid")
        event = (
            str(uuid)
            if isinstance(uuid, str) and uuid
            else "line-" + hashlib.sha1(line.encode("utf-8", "surrogatepass")).hexdigest()[:20]
        )
        turns.append(Turn(event, role, text, _when(entry.get("timestamp"))))
    return turns
