"""What changed since the agent's last session: "last seen" marks per agent and session.

:func:`mark_seen` records, per agent (and per agent and session when one is
given), the commit HEAD was at. A session start marks it, so the next
session's ``changes(since="last-session")`` lists everything committed after
the previous session began: what other agents and people did meanwhile, and
the previous session's own results (its summary, gotchas, fixes), which a new
session does not remember. Within one session the answer stays the same list
(plus newer commits): the session's mark keeps the base it started from.

The marks are derived state (``<state>/seen.sqlite``): not in the vault, not
in git, untouched by reindex. If they are lost (or name a commit a purge
rewrote away) the base is rebuilt from git: the agent's last
``session_summary`` commit, i.e. the end of its last summarised session;
with none, the whole history. Either way at most :data:`MAX_COMMITS`
commits are looked at (the label says so when the cut applies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.git.history import Changes, changes, changes_within
from mdmem.models import first_line, one_line
from mdmem.store.gitstore import Identity
from mdmem.store.statedb import state_db

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "LAST_SESSION",
    "MAX_COMMITS",
    "Seen",
    "changes_since",
    "last_seen",
    "mark_seen",
    "render_changes",
]

LAST_SESSION = "last-session"
MAX_COMMITS = 200
_SCHEMA = """
CREATE TABLE IF NOT EXISTS marks (
    agent TEXT NOT NULL, session TEXT NOT NULL,
    sha TEXT, at TEXT NOT NULL,
    base TEXT, base_at TEXT,
    PRIMARY KEY (agent, session)
);
"""
# Raw conversation entries: the summary of their session stands for them.
_NOISE_KINDS = ("chat_message", "tool_output")
_START = datetime(1970, 1, 1, tzinfo=UTC)
_SAFE = re.compile(r"[A-Za-z0-9][\w.@:-]{0,127}")


@dataclass(frozen=True)
class Seen:
    """A mark: the commit an agent (or one of its sessions) last saw, and when."""

    agent: str
    session: str | None
    commit: str | None
    at: str
    # For a session: the agent's mark before this session started (None: the start).
    base: str | None = None


def _check(name: str | None, what: str) -> str:
    if name is None:
        return ""
    if not isinstance(name, str) or not _SAFE.fullmatch(name):
        raise InvalidInputError(f"invalid {what} {name!r}")
    return name


def _path(store: MemoryStore) -> Path:
    return store.state_dir / "seen.sqlite"


def last_seen(store: MemoryStore, agent: str, session: str | None = None) -> Seen | None:
    """The recorded mark of ``agent`` (or of its ``session``), or None."""
    agent, sess = _check(agent, "agent"), _check(session, "session")
    with state_db(_path(store), _SCHEMA, what="seen marks") as db:
        row = db.execute(
            "SELECT sha, at, base FROM marks WHERE agent=? AND session=?", (agent, sess)
        ).fetchone()
    if row is None:
        return None
    return Seen(agent, session, row[0] or None, row[1], row[2] or None)


def _rebuilt_base(store: MemoryStore, agent: str) -> str | None:
    """The base when no mark is left: the agent's last session_summary commit."""
    if store.git.head() is None:
        return None
    email = Identity.agent(agent).email
    out = store.git.run(
        "log",
        "-1",
        "--format=%H",
        "--fixed-strings",
        f"--author=<{email}>",
        "--grep=Kind: session_summary",
        "HEAD",
        "--",
    )
    return out.strip() or None


def mark_seen(store: MemoryStore, agent: str, *, session: str | None = None) -> Seen:
    """Record HEAD as what ``agent`` (and its ``session``) has seen; returns the mark."""
    agent, sess = _check(agent, "agent"), _check(session, "session")
    head = store.git.head()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    with state_db(_path(store), _SCHEMA, what="seen marks") as db:
        prior = db.execute(
            "SELECT sha FROM marks WHERE agent=? AND session=''", (agent,)
        ).fetchone()
        base = prior[0] if prior else _rebuilt_base(store, agent)
        if sess:
            # The first mark of a session fixes its base; later ones keep it.
            db.execute(
                "INSERT INTO marks (agent, session, sha, at, base, base_at) VALUES (?,?,?,?,?,?)"
                " ON CONFLICT(agent, session) DO UPDATE SET sha=excluded.sha, at=excluded.at",
                (agent, sess, head, now, base or "", now),
            )
        db.execute(
            "INSERT INTO marks (agent, session, sha, at) VALUES (?, '', ?, ?)"
            " ON CONFLICT(agent, session) DO UPDATE SET sha=excluded.sha, at=excluded.at",
            (agent, head, now),
        )
    return Seen(agent, session, head, now, (base or None) if sess else None)


def _base(store: MemoryStore, agent: str, session: str | None) -> tuple[str | None, str]:
    """(base commit or None for the whole history, a label) of "last session"."""
    mark = last_seen(store, agent, session) if session else None
    if mark is not None:
        return mark.base, f"the session before {session}"
    mine = last_seen(store, agent)
    if mine is not None:
        return mine.commit, f"{agent}'s last session ({mine.at})"
    return _rebuilt_base(store, agent), f"{agent}'s last summarised session"


def changes_since(
    store: MemoryStore,
    since: str | date | datetime,
    *,
    agent: str,
    session: str | None = None,
) -> Changes:
    """What changed since ``since``: "last-session", a commit, or a date/datetime."""
    if not (isinstance(since, str) and since.strip() == LAST_SESSION):
        return changes(store, since)
    base, label = _base(store, agent, session)
    # A first session of a new agent in an old vault (or one back after
    # months) would parse the whole history for a section of a few lines:
    # look back MAX_COMMITS at most, and say so. The one git log that lists
    # them also tells whether the mark is still in history (a purge rewrites it).
    result = changes_within(store, base, label, MAX_COMMITS)
    if result is None:
        base = _rebuilt_base(store, agent)
        result = changes_within(store, base, label, MAX_COMMITS)
    if result is None:  # the rebuilt base is gone too: from the start, still bounded
        result = changes_within(store, None, label, MAX_COMMITS)
    assert result is not None  # git knows HEAD's history
    return result


def render_changes(
    result: Changes, *, max_chars: int = 2000, line_chars: int = 160
) -> tuple[str, list[str], bool]:
    """Markdown lines for a prompt: (text, memory ids shown, truncated).

    ``result`` holds what its reader may see (``vault.git.changes(reader=…)``);
    raw conversation entries are left out (their session's summary stands
    for them).
    """
    lines: list[tuple[str, str]] = []

    def who(author: str, is_agent: bool) -> str:
        return author if is_agent else f"{author} (person)"

    for c in result.remembered:
        if c.kind in _NOISE_KINDS:
            continue
        text = one_line(first_line(c.text or ""), line_chars) or "(no text)"
        state = f", now {c.status}" if c.status and c.status != "active" else ""
        lines.append(
            (
                c.id,
                f"- added {c.kind or 'memory'} ^{c.id}: {text} "
                f"({who(c.author, c.is_agent)}{state})",
            )
        )
    for s in result.superseded:
        new = one_line(first_line(s.new_text or ""), line_chars) or "(gone)"
        lines.append(
            (
                s.new_id or s.old_id,
                f"- changed ^{s.old_id} → ^{s.new_id or '?'}: {new} ({who(s.author, s.is_agent)})",
            )
        )
    for c in (*result.resolved, *result.forgotten):
        if c.kind in _NOISE_KINDS:
            continue
        verb = "forgot" if c in result.forgotten else "retired"
        text = one_line(first_line(c.text or ""), line_chars) or "(no text)"
        lines.append((c.id, f"- {verb} ^{c.id}: {text} ({who(c.author, c.is_agent)})"))
    for h in result.human_edits:
        lines.append(
            ("", f"- {h.author} edited {', '.join(h.paths[:3])}: {one_line(h.subject, 80)}")
        )
    out: list[str] = []
    ids: list[str] = []
    used = 0
    truncated = False
    for memory_id, line in lines:
        if used + len(line) + 1 > max_chars:
            truncated = True
            break
        out.append(line)
        used += len(line) + 1
        if memory_id:
            ids.append(memory_id)
    return "\n".join(out), ids, truncated
