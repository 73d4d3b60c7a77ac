"""Opening derived files so that damage heals instead of stopping the vault.

Everything in the state directory is a cache of the markdown files, so a
derived file that cannot be used is never a reason to refuse work:

* a SQLite file that is not a database, or is malformed, is moved aside to
  ``<name>.corrupt`` (one copy kept, for a bug report; ``doctor --fix``
  deletes it) and started again empty: its owner then refills it from the
  files;
* a SQLite file that cannot be opened or written at all (a full disk, the
  state directory gone or read-only) is replaced by an in-memory database
  for this process, with the reason kept so ``status`` and ``doctor`` can
  say what is wrong; the owner retries the disk later.

``DERIVED_ERRORS`` are the failures a derived write may hit (SQLite errors,
``OSError`` such as ENOSPC or EIO, and mdmem's own :class:`IndexError_`):
writers of derived state catch exactly these, log them and retry later,
because the markdown and its commit already hold the memory.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from mdmem.errors import EmbedderError, IndexError_, LockTimeoutError
from mdmem.models import one_line

__all__ = [
    "CORRUPT_SUFFIX",
    "DERIVED_ERRORS",
    "RETRY_SECONDS",
    "Gate",
    "OpenedDb",
    "file_id",
    "one_line",
    "open_sqlite",
    "quarantine",
    "sqlite_problem",
]

log = logging.getLogger("mdmem")

CORRUPT_SUFFIX = ".corrupt"
#: How long a derived part that failed (a remote embedder that did not
#: answer, a state dir that could not be written) is left alone before the
#: next attempt: a failing call can cost seconds, and recall must stay fast.
RETRY_SECONDS = 30.0

DERIVED_ERRORS: tuple[type[BaseException], ...] = (
    IndexError_,
    LockTimeoutError,
    EmbedderError,
    OSError,
    sqlite3.Error,
)

_SIDE_FILES = ("-wal", "-shm", "-journal")


def quarantine(path: Path) -> Path | None:
    """Move a damaged file to ``<name>.corrupt`` (replacing an older one) and
    drop its SQLite side files; returns where it went (None if it could not move)."""
    target = path.with_name(path.name + CORRUPT_SUFFIX)
    moved: Path | None = None
    try:
        os.replace(path, target)
        moved = target
    except FileNotFoundError:
        pass
    except OSError:
        # Cannot rename (a read-only dir?): at least do not open it again.
        with contextlib.suppress(OSError):
            path.unlink()
    for suffix in _SIDE_FILES:
        with contextlib.suppress(OSError):
            path.with_name(path.name + suffix).unlink()
    return moved


class OpenedDb:
    """A SQLite connection plus what happened while opening it."""

    def __init__(
        self, db: sqlite3.Connection, *, problem: str | None, recovered: str | None
    ) -> None:
        self.db = db
        #: Why the file could not be used and the data lives in memory (or None).
        self.problem = problem
        #: Why the file was found damaged and started again (or None).
        self.recovered = recovered


def sqlite_problem(exc: BaseException) -> str:
    """A one-line reason for a SQLite or OS failure."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def open_sqlite(
    path: Path,
    setup: Callable[[sqlite3.Connection], None],
    *,
    what: str,
    timeout: float = 30.0,
    isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = None,
) -> OpenedDb:
    """Connect to ``path`` and run ``setup`` (pragmas, tables), healing damage.

    A damaged file is quarantined and created again; if the file cannot be
    used at all, the connection is an in-memory database (``problem`` says
    why). Never raises for the file's sake.
    """
    recovered: str | None = None
    for attempt in range(3):
        db: sqlite3.Connection | None = None
        try:
            if attempt:
                path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                str(path),
                timeout=timeout,
                check_same_thread=False,
                isolation_level=isolation_level,
            )
            setup(db)
            return OpenedDb(db, problem=None, recovered=recovered)
        except sqlite3.OperationalError as exc:
            # Not damage: the disk, the directory or the permissions. A
            # missing directory is made on the next attempt; else memory.
            _close(db)
            reason = sqlite_problem(exc)
            if attempt == 0 and not path.parent.is_dir():
                continue
            break
        except (sqlite3.DatabaseError, OSError) as exc:
            _close(db)
            reason = sqlite_problem(exc)
            if isinstance(exc, OSError):
                break
            moved = quarantine(path)
            recovered = f"{path.name} was damaged ({reason}) and was started again"
            if moved is not None:
                recovered += f" (the damaged copy is {moved.name})"
            log.warning("%s %s", what, recovered)
    log.warning("%s %s cannot be used (%s); keeping it in memory for now", what, path, reason)
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=isolation_level)
    setup(db)
    return OpenedDb(db, problem=f"{path.name} cannot be used: {reason}", recovered=recovered)


def file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a file, or None when it is gone: tells a file that
    was deleted or replaced under an open handle."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def error_line(exc: BaseException) -> str:
    """An exception as one short line (for logs, ``status`` and ``doctor``)."""
    return one_line(str(exc), 300) or type(exc).__name__


def quick_check(db: sqlite3.Connection) -> str | None:
    """SQLite's own consistency check: None when fine, else the first complaint."""
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        return sqlite_problem(exc)
    first = str(rows[0][0]) if rows else "ok"
    return None if first == "ok" else first


class Gate:
    """Leaves a failing part (a remote embedder) alone for a while.

    A call to an endpoint that is down costs seconds (connection retries,
    timeouts); after one failure the part *rests* for :data:`RETRY_SECONDS`,
    and callers skip it instead of paying again on every recall and write.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._down: tuple[float, str] | None = None  # (when it failed, why)

    @property
    def reason(self) -> str | None:
        """Why the part failed last (None when it answered since)."""
        return None if self._down is None else self._down[1]

    def resting(self) -> bool:
        down = self._down
        return down is not None and time.monotonic() - down[0] < RETRY_SECONDS

    def failed(self, exc: BaseException) -> None:
        first = self._down is None
        reason = f"{self.what} unavailable: {error_line(exc)}"
        self._down = (time.monotonic(), reason)
        if first:
            log.warning(
                "%s; recall uses keywords and new blocks get vectors once it answers", reason
            )

    def answered(self) -> None:
        if self._down is not None:
            log.warning("the %s answers again; filling in what is missing", self.what)
        self._down = None

    def reset(self) -> None:
        self._down = None


def _close(db: sqlite3.Connection | None) -> None:
    if db is not None:
        with contextlib.suppress(sqlite3.Error):
            db.close()
