"""A pending-message buffer (Otto): what arrives while the agent is busy waits for its next task.

Otto captures channel messages between tasks "in a Redis-backed buffer ... a
FIFO queue per project with a 30-day TTL. Messages are consumed when they are
included in a task's context." Here the queue is a SQLite file in the state
dir (``pending.sqlite``): it survives a process restart, and SQLite's locking
(``BEGIN IMMEDIATE``) makes :meth:`PendingBuffer.take` atomic across hosts
sharing the vault, so each message is handed to exactly one task. A message
is not a memory until the agent acts on it: it lives outside the vault and
git, like Otto's Redis list, and deleting the state dir drops what is still
waiting. Text is checked and guarded for secrets as a session turn is, since
it goes into a prompt.

``channel`` names the queue (a project, a Slack channel, a contact); the
default is one queue per vault. An ``event_id`` already queued on a channel
is not queued twice (a platform redelivering a message).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.models import one_line
from mdmem.store.statedb import state_db

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["DEFAULT_TTL_DAYS", "PendingBuffer", "PendingMessage", "render_pending"]

DEFAULT_TTL_DAYS = 30.0  # Otto: "a FIFO queue per project with a 30-day TTL"
MAX_PENDING_CHARS = 8000
_NAME = re.compile(r"[A-Za-z0-9][\w.@:/-]{0,127}")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL, text TEXT NOT NULL, sender TEXT, source TEXT,
    event TEXT, at TEXT NOT NULL, expires REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS pending_event ON pending (channel, event)
    WHERE event IS NOT NULL;
"""


@dataclass(frozen=True)
class PendingMessage:
    seq: int
    channel: str
    text: str
    sender: str | None
    source: str | None
    event_id: str | None
    at: str  # ISO time it arrived (or the host's ``when``)
    expires: str


def _name(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInputError(f"invalid {what} {value!r}: letters, digits, . _ - @ : /")
    return value


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


class PendingBuffer:
    """FIFO queues of waiting messages, per channel, with a TTL; see the module docstring."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.path = store.state_dir / "pending.sqlite"

    def push(
        self,
        text: str,
        *,
        channel: str = "default",
        sender: str | None = None,
        source: str | None = None,
        event_id: str | None = None,
        when: datetime | None = None,
        ttl_days: float | None = None,
        secrets: str | None = None,
    ) -> PendingMessage:
        """Queue a message; the same ``event_id`` on a channel is queued once."""
        channel = _name(channel, "channel") or "default"
        sender, source = _name(sender, "sender"), _name(source, "source")
        event = _name(event_id, "event id")
        body = self.store.clean_text(text, secrets)
        if len(body) > MAX_PENDING_CHARS:
            raise InvalidInputError(
                f"pending message is {len(body):,} characters; the limit is {MAX_PENDING_CHARS:,}"
            )
        ttl = DEFAULT_TTL_DAYS if ttl_days is None else float(ttl_days)
        if not 0 < ttl <= 3650:
            raise InvalidInputError("ttl_days must be above 0 and at most 3650")
        now = time.time()
        arrived = when.astimezone(UTC).isoformat(timespec="seconds") if when else _iso(now)
        expires = now + ttl * 86400
        with state_db(self.path, _SCHEMA, what="pending messages") as db:
            if event is not None:
                row = db.execute(
                    "SELECT seq, at, expires FROM pending WHERE channel=? AND event=?",
                    (channel, event),
                ).fetchone()
                if row is not None:
                    return PendingMessage(
                        row[0], channel, body, sender, source, event, row[1], _iso(row[2])
                    )
            cur = db.execute(
                "INSERT INTO pending (channel, text, sender, source, event, at, expires)"
                " VALUES (?,?,?,?,?,?,?)",
                (channel, body, sender, source, event, arrived, expires),
            )
            seq = int(cur.lastrowid or 0)
        return PendingMessage(seq, channel, body, sender, source, event, arrived, _iso(expires))

    def take(self, *, channel: str = "default", limit: int | None = None) -> list[PendingMessage]:
        """Hand the waiting messages (oldest first) to a task: each is returned once."""
        return self._read(channel, limit, consume=True)

    def peek(self, *, channel: str = "default", limit: int | None = None) -> list[PendingMessage]:
        """The waiting messages, oldest first, left in the queue."""
        return self._read(channel, limit, consume=False)

    def _read(self, channel: str, limit: int | None, *, consume: bool) -> list[PendingMessage]:
        channel = _name(channel, "channel") or "default"
        if limit is not None and (isinstance(limit, bool) or limit < 1):
            raise InvalidInputError("limit must be a positive integer")
        now = time.time()
        with state_db(self.path, _SCHEMA, what="pending messages") as db:
            # Expired messages go first: Otto's TTL, applied whenever a queue is read.
            db.execute("DELETE FROM pending WHERE expires <= ?", (now,))
            rows = db.execute(
                "SELECT seq, text, sender, source, event, at, expires FROM pending"
                " WHERE channel=? ORDER BY seq LIMIT ?",
                (channel, -1 if limit is None else limit),
            ).fetchall()
            if consume and rows:
                db.executemany("DELETE FROM pending WHERE seq=?", [(r[0],) for r in rows])
        return [
            PendingMessage(r[0], channel, r[1], r[2], r[3], r[4], r[5], _iso(r[6])) for r in rows
        ]


def render_pending(messages: list[PendingMessage], max_chars: int, line_chars: int = 420) -> str:
    """One line per message, oldest first, within ``max_chars``."""
    out: list[str] = []
    used = 0
    for m in messages:
        who = f"{m.sender} " if m.sender else ""
        where = f"({m.source}) " if m.source else ""
        line = one_line(f"- [{m.at[:16].replace('T', ' ')}] {who}{where}{m.text}", line_chars)
        if used + len(line) + 1 > max_chars:
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)
