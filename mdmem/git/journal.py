"""Which commits touched which memory: a journal of git history in the state dir.

``history(id)`` used to ask git for every commit whose diff adds or removes
the id (``git log -G``): a diff of every commit in the vault's history, on
each call (seconds at 100k commits). The journal reads that history once,
one ``git log -p -U0`` over the commits it has not seen, and keeps
``(memory id, commit)`` rows in ``<state>/history.sqlite``: afterwards a call
reads its rows, and catches up on the commits made since (usually a few).

It is derived state like the indexes: not in the vault, not in git. Missing
or damaged, it is made again from git (:func:`mdmem.files.health.open_sqlite`
sets a damaged file aside); a history rewritten under it (a purge, a
rebase: the commit it stopped at is no longer an ancestor of HEAD) makes it
start again from the first commit.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import GitError
from mdmem.files.health import open_sqlite
from mdmem.files.ids import ID_PATTERN
from mdmem.files.sidecar import SIDECAR_SUFFIX, note_of, parse_records
from mdmem.git.revisions import is_ancestor


def _unquote(name: str) -> str:
    """A ``+++ b/path`` name as a vault path ('' for /dev/null)."""
    name = name.rstrip("\t")
    if len(name) >= 2 and name[0] == '"' and name[-1] == '"':
        raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        name = raw.encode("latin-1", "ignore").decode("utf-8", "replace")
    if name == "/dev/null":
        return ""
    return name[2:] if name.startswith("b/") else name


if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["JOURNAL_FILE", "Journal"]

JOURNAL_FILE = "history.sqlite"
# 2: a record in a fields file beside a note touches its memory too.
_VERSION = "2"
_ID_AT_END = re.compile(rf"(?:^|\s)\^({ID_PATTERN})\s*$")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (seq INTEGER PRIMARY KEY, sha TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS touches (
    memory_id TEXT NOT NULL, seq INTEGER NOT NULL,
    path TEXT NOT NULL,  -- where the commit leaves the id's line; '' when it removed it
    PRIMARY KEY (memory_id, seq)
) WITHOUT ROWID;
"""
_BATCH = 2_000  # commits per transaction while reading history


class Journal:
    """The (memory id, commit) rows of a vault's history (see the module doc)."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / JOURNAL_FILE
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        def setup(db: sqlite3.Connection) -> None:
            db.execute("PRAGMA busy_timeout=10000")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)

        return open_sqlite(
            self.path, setup, what="history journal", timeout=10.0, isolation_level=None
        ).db

    def commits_touching(self, store: MemoryStore, memory_id: str) -> list[tuple[str, str | None]]:
        """(commit, path) of each commit whose diff adds or removes a line
        ending in ``^memory_id``, or adds a record of its fields, oldest
        first: the file the commit leaves that line in, None when it removed
        it (the journal catches up with HEAD first)."""
        with self._lock:
            db = self._open()
            try:
                self._catch_up(store, db)
                rows = db.execute(
                    "SELECT c.sha, t.path FROM touches t JOIN commits c ON c.seq = t.seq"
                    " WHERE t.memory_id = ? ORDER BY t.seq",
                    (memory_id,),
                ).fetchall()
            finally:
                db.close()
        return [(sha, path or None) for sha, path in rows]

    def _catch_up(self, store: MemoryStore, db: sqlite3.Connection) -> None:
        head = store.git.head()
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        tip = meta.get("tip")
        if head is None or tip == head:
            return
        if meta.get("version") != _VERSION or tip is None or not is_ancestor(store, tip, head):
            # First use, or history rewritten under us: read it all again.
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM touches")
            db.execute("DELETE FROM commits")
            db.execute("DELETE FROM meta")
            db.execute("INSERT INTO meta VALUES ('version', ?)", (_VERSION,))
            db.execute("COMMIT")
            tip = None
        (last,) = db.execute("SELECT COALESCE(MAX(seq), 0) FROM commits").fetchone()
        seq = int(last)
        db.execute("BEGIN IMMEDIATE")
        for done, (sha, ids) in enumerate(_walk(store, tip, head), start=1):
            seq += 1
            db.execute("INSERT INTO commits VALUES (?, ?)", (seq, sha))
            db.executemany(
                "INSERT OR IGNORE INTO touches VALUES (?, ?, ?)",
                [(i, seq, path) for i, path in ids.items()],
            )
            if done % _BATCH == 0:
                # The tip moves with each batch: an interrupted read resumes there.
                db.execute("INSERT OR REPLACE INTO meta VALUES ('tip', ?)", (sha,))
                db.execute("COMMIT")
                db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('tip', ?)", (head,))
        db.execute("COMMIT")


def _walk(store: MemoryStore, tip: str | None, head: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(commit, {id: path}) for the commits after ``tip``, oldest first: the ids
    its diff adds or removes, each with the file of its added line ('' if none)."""
    rng = f"{tip}..{head}" if tip else head
    proc = store.git.popen(
        "log",
        "--reverse",
        "--no-merges",
        "-p",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--format=%x1e%H",
        rng,
        "--",
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    sha: str | None = None
    ids: dict[str, str] = {}
    path = ""
    finished = False
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("\x1e"):
                if sha is not None:
                    yield sha, ids
                sha, ids = line[1:].strip(), {}
            elif line.startswith("+++ "):
                path = _unquote(line[4:])
            elif line.startswith("--- "):
                continue
            elif line[:1] == "+" and path.endswith(SIDECAR_SUFFIX):
                # A field of a memory changed beside its line (its status, a mark).
                note = note_of(path)
                record = parse_records([line[1:]])[0]
                if note is not None and record:
                    ids.setdefault(record[0].id, note)
            elif line[:1] in "+-":
                match = _ID_AT_END.search(line[1:])
                if match:
                    memory_id = match.group(1)
                    if line[0] == "+":
                        ids[memory_id] = path
                    else:
                        ids.setdefault(memory_id, "")
        finished = True
    finally:
        if proc.poll() is None and not finished:
            proc.kill()
        proc.stdout.close()
        status = proc.wait()
    if status != 0:
        # Nothing of the last commit is yielded: its rows would be incomplete.
        raise GitError(f"git log failed while reading history (exit status {status})")
    if sha is not None:
        yield sha, ids
