"""Usefulness signals (operator_use's holographic store): hit counts and trust.

Every recall hit adds one to the memory's hit count and nudges its trust up by
:data:`HIT_NUDGE` (capped at 1.0; a memory starts at :data:`DEFAULT_TRUST`).
Explicit feedback moves trust by :data:`FEEDBACK_STEP`, down or up. Ranking
blends trust in when ``recall.trust_weight`` > 0 (see :mod:`mdmem.recall.ranking`).

These numbers describe how the agent *used* its memory, not what it knows, so
they live in the state directory (SQLite, WAL), never in the markdown: deleting
the state directory resets them and loses no memory.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import IndexError_
from mdmem.files import health
from mdmem.files.health import file_id, open_sqlite, quarantine
from mdmem.files.ids import normalize_id
from mdmem.models import Block

__all__ = [
    "DEFAULT_TRUST",
    "FEEDBACK_STEP",
    "HIT_NUDGE",
    "Usefulness",
    "UsefulnessDesk",
    "UsefulnessStore",
]

log = logging.getLogger("mdmem")

DEFAULT_TRUST = 0.5
HIT_NUDGE = 0.02
# One deliberate judgement outweighs five incidental recalls.
FEEDBACK_STEP = 0.1
# Hits are buffered: a SQLite commit per recall would add ~1 ms to a 4 ms
# recall. Losing the last few seconds of hit counts in a crash is harmless.
_FLUSH_HITS = 256
_FLUSH_SECONDS = 5.0


@dataclass(frozen=True)
class Usefulness:
    id: str
    hits: int
    trust: float
    helpful: int
    unhelpful: int


class UsefulnessStore:
    """Per-memory hits and trust in ``<state>/usefulness.sqlite``; thread- and process-safe.

    A derived file like the indexes: a damaged one is set aside and started
    again, one that cannot be written is kept in memory (``problem``), and
    one deleted under us (the state dir removed) is opened again on the next
    :meth:`ensure_open`. Recall never fails for its sake.
    """

    def __init__(self, path: Path, *, timeout: float = 10.0) -> None:
        self.path = path
        self._timeout = timeout
        self._lock = threading.Lock()
        self._cache: dict[str, float] = {}
        self._version = -1
        self._pending: Counter[str] = Counter()
        self._last_flush = time.monotonic()
        self._warned = False
        self._open()

    def _setup(self, db: sqlite3.Connection) -> None:
        db.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS usefulness ("
            " id TEXT PRIMARY KEY, hits INTEGER NOT NULL DEFAULT 0,"
            " trust REAL NOT NULL, helpful INTEGER NOT NULL DEFAULT 0,"
            " unhelpful INTEGER NOT NULL DEFAULT 0, updated REAL NOT NULL)"
        )
        db.commit()

    def _open(self) -> None:
        opened = open_sqlite(
            self.path,
            self._setup,
            what="usefulness",
            timeout=self._timeout,
            isolation_level="DEFERRED",
        )
        self._db = opened.db
        self.problem = opened.problem
        self.recovered = opened.recovered
        self._ident = file_id(self.path)
        self._opened_at = time.monotonic()
        self._version = -1
        self._finalizer = weakref.finalize(self, _write_hits, self._db, self._lock, self._pending)

    def ensure_open(self) -> None:
        """Open the file again if it was deleted or replaced (the state dir
        removed under an open vault), or if it was kept in memory for a while."""
        if self.problem is None and file_id(self.path) == self._ident:
            return
        if self.problem is not None and time.monotonic() - self._opened_at < health.RETRY_SECONDS:
            return
        self._reopen()

    def _reopen(self, damaged: bool = False) -> None:
        with self._lock:
            self._finalizer.detach()
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            if damaged:
                quarantine(self.path)
            self._open()

    def close(self) -> None:
        self.flush()
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._finalizer.detach()

    def flush(self) -> None:
        """Write buffered hits now."""
        _write_hits(self._db, self._lock, self._pending)
        self._last_flush = time.monotonic()

    # -- reads -------------------------------------------------------------

    def trust(self, memory_id: str) -> float:
        """The memory's trust (DEFAULT_TRUST when never seen); served from a cache."""
        with self._lock:
            failure = self._sync_cache()
            if failure is None:
                return self._cache.get(memory_id, DEFAULT_TRUST)
        # Trust is a ranking nudge: recall goes on with what is cached.
        self._failed(failure)
        with self._lock:
            return self._cache.get(memory_id, DEFAULT_TRUST)

    def get(self, memory_id: str) -> Usefulness:
        self.flush()
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT hits, trust, helpful, unhelpful FROM usefulness WHERE id = ?",
                    (memory_id,),
                ).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc)
            row = None
        if row is None:
            return Usefulness(memory_id, 0, self._cache.get(memory_id, DEFAULT_TRUST), 0, 0)
        return Usefulness(memory_id, int(row[0]), float(row[1]), int(row[2]), int(row[3]))

    def _failed(self, exc: sqlite3.Error) -> None:
        """A read or write failed: damage is set aside (the numbers start again),
        anything else (a busy or full disk) is logged once and tried again later."""
        if _damaged(exc):
            log.warning("usefulness %s is damaged (%s); starting it again", self.path, exc)
            self._reopen(damaged=True)
        elif not self._warned:
            self._warned = True
            log.warning("usefulness %s unavailable for now (%s)", self.path, exc)

    def _sync_cache(self) -> sqlite3.Error | None:
        # data_version changes when another connection (process) commits, so
        # the cache stays right without reading the table on every recall.
        try:
            version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            if version != self._version:
                self._cache = dict(self._db.execute("SELECT id, trust FROM usefulness").fetchall())
                for memory_id, n in self._pending.items():  # not written yet
                    base = self._cache.get(memory_id, DEFAULT_TRUST)
                    self._cache[memory_id] = min(1.0, base + n * HIT_NUDGE)
                self._version = version
        except sqlite3.Error as exc:
            return exc
        return None

    # -- writes ------------------------------------------------------------

    def record_hits(self, ids: Iterable[str]) -> None:
        """One recall returned these memories: +1 hit and +HIT_NUDGE trust each (buffered)."""
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        with self._lock:
            self._pending.update(unique)
            for i in unique:
                self._cache[i] = min(1.0, self._cache.get(i, DEFAULT_TRUST) + HIT_NUDGE)
            due = (
                len(self._pending) >= _FLUSH_HITS
                or time.monotonic() - self._last_flush > _FLUSH_SECONDS
            )
        if due:
            self.flush()

    def feedback(self, memory_id: str, helpful: bool) -> Usefulness:
        """Move trust by ±FEEDBACK_STEP, clamped to [0, 1]; returns the new values.

        Raises IndexError_ when the file cannot take the change (a full disk).
        """
        step = FEEDBACK_STEP if helpful else -FEEDBACK_STEP
        self.flush()
        for attempt in (0, 1):
            try:
                with self._lock:
                    self._write_feedback(memory_id, step, helpful)
                break
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                if attempt or not _damaged(exc):
                    raise IndexError_(
                        f"usefulness {self.path}: feedback not saved ({exc})"
                    ) from None
                self._failed(exc)  # damaged: started again, then one more try
        return self.get(memory_id)

    def _write_feedback(self, memory_id: str, step: float, helpful: bool) -> None:
        self._db.execute(
            "INSERT INTO usefulness (id, hits, trust, helpful, unhelpful, updated) "
            "VALUES (?, 0, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "trust = MAX(0.0, MIN(1.0, trust + ?)), helpful = helpful + ?, "
            "unhelpful = unhelpful + ?, updated = excluded.updated",
            (
                memory_id,
                max(0.0, min(1.0, DEFAULT_TRUST + step)),
                int(helpful),
                int(not helpful),
                time.time(),
                step,
                int(helpful),
                int(not helpful),
            ),
        )
        self._db.commit()
        self._version = -1  # reload the cache on the next read


def _damaged(exc: sqlite3.Error) -> bool:
    """Damage (not a database, malformed), as opposed to a busy or full disk."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def _write_hits(db: sqlite3.Connection, lock: threading.Lock, pending: Counter[str]) -> None:
    with lock:
        if not pending:
            return
        rows = [
            (i, n, min(1.0, DEFAULT_TRUST + n * HIT_NUDGE), time.time(), n * HIT_NUDGE)
            for i, n in pending.items()
        ]
        try:
            db.executemany(
                "INSERT INTO usefulness (id, hits, trust, updated) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET hits = hits + excluded.hits, "
                "trust = MIN(1.0, trust + ?), updated = excluded.updated",
                rows,
            )
            db.commit()
        except sqlite3.Error as exc:  # a busy or closed database must not fail a recall
            log.debug("usefulness: %d hits not recorded (%s)", len(rows), exc)
        pending.clear()


class UsefulnessDesk:
    """``vault.usefulness``: tell mdmem a recalled memory helped (or not), and read
    back a memory's hits and trust. Trust is a recall signal kept in the state
    dir, never in the markdown."""

    def __init__(
        self, block_of: Callable[[str], Block], opened: Callable[[], UsefulnessStore]
    ) -> None:
        self._block_of = block_of
        self._opened = opened

    def feedback(self, memory_id: str, helpful: bool) -> Usefulness:
        """Move the memory's trust up (helpful) or down; it must exist."""
        block = self._block_of(memory_id)
        return self._opened().feedback(block.id, bool(helpful))

    def get(self, memory_id: str) -> Usefulness:
        """Hit count and trust of a memory (defaults when never recalled)."""
        return self._opened().get(normalize_id(memory_id))
