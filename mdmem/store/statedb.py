"""Small SQLite files in the state dir for agent bookkeeping (marks, buffers).

What an agent has seen, messages waiting for its next task, step notes of an
action: facts about how a host *used* the vault, not memories, so they live
in the state dir (never in the vault, never in git), like usefulness.
:func:`state_db` opens one per use: nothing stays open, so a state dir removed
under a running host is simply made again, and a damaged file is set aside
and started again (:func:`mdmem.files.health.open_sqlite`). SQLite's locking
(WAL, ``BEGIN IMMEDIATE``) keeps several processes writing one file safe.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from mdmem.files.health import open_sqlite

__all__ = ["state_db"]


@contextlib.contextmanager
def state_db(
    path: Path, schema: str, *, what: str, synced: bool = True
) -> Iterator[sqlite3.Connection]:
    """A connection to ``path`` with ``schema`` applied, inside one IMMEDIATE transaction.

    ``synced=False``: never fsync (``synchronous=OFF``) — for files whose last
    write is cheap to lose (a power cut then costs a recomputation), where the
    checkpoint's fsync as the last connection closes (~30 ms on a loaded
    machine) would be paid on every write.
    """

    def setup(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL survives a process crash; a power cut may lose the last
        # mark or queued message, which costs a repeated line, not a memory.
        db.execute("PRAGMA synchronous=NORMAL" if synced else "PRAGMA synchronous=OFF")
        db.executescript(schema)

    opened = open_sqlite(path, setup, what=what, timeout=10.0)
    db = opened.db
    try:
        # Autocommit mode (isolation_level None): the transaction is explicit,
        # and IMMEDIATE takes the write lock up front, so a read-then-write
        # (a FIFO pop, a mark that keeps its base) is atomic across processes.
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    finally:
        with contextlib.suppress(sqlite3.Error):
            db.close()
