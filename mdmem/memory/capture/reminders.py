"""The soft-threshold memory-flush reminder (OrcBot's memory flush, after OpenClaw).

OrcBot "proactively reminds the LLM to write important memories before
consolidation": when short-term memory holds ``memoryFlushSoftThreshold``
(25) entries and the last reminder is ``memoryFlushCooldownMinutes`` (30)
old, it sends the model a reminder. :func:`flush_reminder` gives a host that
text (or None) to put before the model's next step; the settings are
``consolidation.flush_soft_threshold`` and ``flush_cooldown_minutes``.

Short-term memory is the unconsolidated session entries (of one session
when ``session`` is given). When the last reminder went out is kept per
agent and session in the state dir (``reminders.sqlite``), so several hosts
of one agent remind once per cooldown between them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mdmem.files import blocks as blk
from mdmem.memory.capture.sessions import validate_session_id
from mdmem.memory.consolidation.consolidate import pending_entries
from mdmem.store.statedb import state_db

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["REMINDER", "flush_reminder"]

# OrcBot's prompt, with mdmem's tool name.
REMINDER = (
    "The conversation history is approaching consolidation ({count} entries not yet "
    "consolidated). Review recent context and use the remember tool to store any important "
    "information (user preferences, decisions, learned facts). Ignore temporary conversation "
    "context."
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS reminders (
    agent TEXT NOT NULL, session TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (agent, session)
);
"""


def flush_reminder(
    store: MemoryStore,
    agent: str,
    *,
    session: str | None = None,
    scope: str | None = None,
    now: float | None = None,
) -> str | None:
    """The reminder text when it is due (then the cooldown starts), else None."""
    cfg = store.settings.consolidation
    if cfg.flush_soft_threshold <= 0:
        return None
    store.refresh()
    pending = pending_entries(store)
    if session is not None:
        path = str(
            blk.scope_dir(blk.validate_scope(scope))
            / "sessions"
            / f"{validate_session_id(session)}.md"
        )
        pending = [b for b in pending if b.path == path]
    elif scope is not None:
        wanted = blk.validate_scope(scope)
        pending = [b for b in pending if b.scope == wanted]
    if len(pending) < cfg.flush_soft_threshold:
        return None
    moment = time.time() if now is None else now
    with state_db(store.state_dir / "reminders.sqlite", _SCHEMA, what="flush reminders") as db:
        row = db.execute(
            "SELECT at FROM reminders WHERE agent=? AND session=?", (agent, session or "")
        ).fetchone()
        if row is not None and moment - float(row[0]) < cfg.flush_cooldown_minutes * 60:
            return None
        db.execute(
            "INSERT INTO reminders (agent, session, at) VALUES (?,?,?)"
            " ON CONFLICT(agent, session) DO UPDATE SET at=excluded.at",
            (agent, session or "", moment),
        )
    return REMINDER.format(count=len(pending))
