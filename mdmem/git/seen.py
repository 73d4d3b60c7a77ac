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
    "ChangeLine",
    "Seen",
    "change_lines",
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


@dataclass(frozen=True)
class ChangeLine:
    """One line of "changed since", as every door shows it (:func:`change_lines`)."""

    verb: str  # new | replaced | resolved | forgotten | edited
    id: str  # the memory the line is about ("" for a person's edit)
    text: str  # what it says: a memory's text, or "X" replaced "Y" (:attr:`body`)
    kind: str | None
    date: str
    author: str
    is_agent: bool
    replaced_id: str | None = None  # for "replaced": the memory it retired...
    replaced_text: str | None = None  # ...and what that one said

    @property
    def body(self) -> str:
        """The line's words: a replacement reads "X" replaced "Y", both in full."""
        if self.verb == "replaced" and self.replaced_text:
            return f'"{self.text}" replaced "{self.replaced_text}"'
        return self.text


def change_lines(result: Changes) -> list[ChangeLine]:
    """What changed, one line per event, for a prompt: what ``render_changes``,
    the session-start hook and the ``changes`` tool show.

    A supersede is one line, "X replaced Y", under the new memory's id: the new
    memory is not also "new", and a memory added and retired in the same range
    is told by the line that retires it. Raw conversation entries are left out
    (their session's summary stands for them)."""
    retired_here = {s.old_id for s in result.superseded} | {
        c.id for c in (*result.resolved, *result.forgotten)
    }
    replacements = {s.new_id for s in result.superseded if s.new_id}
    lines: list[ChangeLine] = []
    for c in result.remembered:
        if c.kind in _NOISE_KINDS or c.id in replacements or c.id in retired_here:
            continue
        if c.status not in (None, "active") or not c.text:
            continue
        lines.append(ChangeLine("new", c.id, c.text, c.kind, c.date, c.author, c.is_agent))
    for sup in result.superseded:
        lines.append(
            ChangeLine(
                "replaced",
                sup.new_id or sup.old_id,
                sup.new_text or "(gone)",
                None,
                sup.date,
                sup.author,
                sup.is_agent,
                replaced_id=sup.old_id,
                replaced_text=sup.old_text,
            )
        )
    for verb, retired in (("resolved", result.resolved), ("forgotten", result.forgotten)):
        for c in retired:
            if c.kind in _NOISE_KINDS:
                continue
            text = c.text or c.id
            lines.append(ChangeLine(verb, c.id, text, c.kind, c.date, c.author, c.is_agent))
    for h in result.human_edits:
        text = f"{', '.join(h.paths[:3])}: {one_line(h.subject, 80)}"
        lines.append(ChangeLine("edited", "", text, None, h.date, h.author, False))
    return lines


def render_changes(
    result: Changes, *, max_chars: int = 2000, line_chars: int = 160
) -> tuple[str, list[str], bool]:
    """Markdown lines for a prompt: (text, memory ids shown, truncated), one per
    :func:`change_lines` entry.

    ``result`` holds what its reader may see (``vault.git.changes(reader=…)``).
    """

    def who(line: ChangeLine) -> str:
        return line.author if line.is_agent else f"{line.author} (person)"

    def short(text: str | None) -> str:
        return one_line(first_line(text or ""), line_chars) or "(no text)"

    lines: list[tuple[str, str]] = []
    for line in change_lines(result):
        if line.verb == "edited":
            lines.append(("", f"- {line.author} edited {line.text}"))
            continue
        if line.verb == "replaced":
            said = f'"{short(line.text)}" replaced "{short(line.replaced_text)}"'
            head = f"- replaced ^{line.replaced_id} with ^{line.id}"
        else:
            said = short(line.text)
            head = f"- {line.verb} {line.kind or 'memory'} ^{line.id}"
        lines.append((line.id, f"{head}: {said} ({who(line)})"))
    out: list[str] = []
    ids: list[str] = []
    used = 0
    truncated = False
    for memory_id, text in lines:
        if used + len(text) + 1 > max_chars:
            truncated = True
            break
        out.append(text)
        used += len(text) + 1
        if memory_id:
            ids.append(memory_id)
    return "\n".join(out), ids, truncated
