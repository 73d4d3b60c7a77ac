"""The manifest: what the indexes hold, in SQLite in the state directory.

Per file: the stat signature (mtime_ns, size, inode), a content hash and the
frontmatter; per block: everything recall needs to render a hit. It is the
"indexed state": a file whose signature matches its manifest row is loaded
from here at open instead of being parsed again, and the indexer diffs a
changed file's new blocks against these rows to touch only what changed.

Deleting it (or the whole state dir) loses nothing: the vault is re-parsed.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from mdmem.errors import IndexError_
from mdmem.files.health import open_sqlite, quick_check, sqlite_problem
from mdmem.models import Block

__all__ = ["SCHEMA_VERSION", "FileRow", "Manifest", "block_from_row", "block_to_row"]

# 3: blocks are keyed by (path, id): rows are per file, and one file's rows
# never replace another's, whatever ids the files hold; and they are parsed
# anew (escaped text, a file's folder deciding its scope), so rows an older
# parser wrote are dropped and the files read again.
# 4: a file's row says the stat of the fields file beside it (mdmem.files.sidecar)
# as its blocks were read with it ("" when it had none); blocks hold those fields.
SCHEMA_VERSION = 4

# mtime_ns, size, ino, the fields file's stat ("mtime:size:ino" or ""), frontmatter, fm_lines
# (mtime_ns, size, ino, fields file stamp, frontmatter, frontmatter lines, digest)
FileRow = tuple[int, int, int, str, dict[str, Any], int, str | None]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(
    method: Callable[Concatenate[Manifest, _P], _R],
) -> Callable[Concatenate[Manifest, _P], _R]:
    """SQLite failures (a full disk, a damaged page) leave as IndexError_: the
    callers treat the manifest as a cache that may fail and be rebuilt."""

    @functools.wraps(method)
    def wrapper(self: Manifest, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, ValueError, TypeError) as exc:  # JSON columns too
            raise IndexError_(f"manifest {self.path}: {sqlite_problem(exc)}") from None

    return wrapper


_BLOCK_COLUMNS = (
    "id, path, ord, line_start, line_end, heading, text, kind, tags, scope, status,"
    " created, updated, content_hash, fields, is_memory"
)


class Manifest:
    """The manifest in ``path``; never fails to open (see :mod:`mdmem.files.health`).

    A damaged file is set aside and started again (``recovered`` says so);
    a file that cannot be used at all is replaced by an in-memory database
    (``problem`` says why), so every command still works and the vault is
    parsed from its files. Any SQLite failure later raises
    :class:`~mdmem.errors.IndexError_`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        opened = open_sqlite(path, self._setup, what="manifest")
        self._db = opened.db
        self.problem = opened.problem
        self.recovered = opened.recovered

    def _setup(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # Deleted rows are zeroed, so a purged memory's text leaves the file.
        db.execute("PRAGMA secure_delete=ON")
        self._db = db
        self._create()

    @property
    def in_memory(self) -> bool:
        """True when the file could not be used and this process keeps it in memory."""
        return self.problem is not None

    def check(self) -> str | None:
        """SQLite's own consistency check: None when fine, else the first complaint."""
        with self._lock:
            return quick_check(self._db)

    def _create(self) -> None:
        db = self._db
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        # Raw SQL, not get_meta/set_meta: open_sqlite must see SQLite's own
        # errors to tell damage (set aside) from a disk problem (in memory).
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else str(row[0])
        if version is not None and version != str(SCHEMA_VERSION):
            db.execute("DROP TABLE IF EXISTS files")
            db.execute("DROP TABLE IF EXISTS blocks")
            db.execute("DELETE FROM meta")
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER,"
            " size INTEGER, ino INTEGER, fields_sig TEXT, meta TEXT, fm_lines INTEGER,"
            " digest TEXT)"
        )
        columns = {row[1] for row in db.execute("PRAGMA table_info(files)")}
        if "digest" not in columns:
            # A manifest from before digests keeps its rows: a file whose
            # stat changes is then parsed again, as it always was.
            db.execute("ALTER TABLE files ADD COLUMN digest TEXT")
        db.execute(
            "CREATE TABLE IF NOT EXISTS blocks (id TEXT, path TEXT, ord INTEGER,"
            " line_start INTEGER, line_end INTEGER, heading TEXT, text TEXT, kind TEXT,"
            " tags TEXT, scope TEXT, status TEXT, created REAL, updated REAL,"
            " content_hash TEXT, fields TEXT, is_memory INTEGER, PRIMARY KEY (path, id))"
        )
        db.execute("CREATE INDEX IF NOT EXISTS blocks_path ON blocks(path)")
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )

    @_guarded
    def close(self) -> None:
        with self._lock:
            self._db.close()

    @_guarded
    def clear(self) -> None:
        with self._lock, self._tx():
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM blocks")
            self._db.execute("DELETE FROM meta WHERE key != 'schema_version'")

    @_guarded
    def scrub(self) -> None:
        """Checkpoint and truncate the WAL: no deleted text lingers on disk."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")

    # ---------------------------------------------------------------- meta --

    @_guarded
    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @_guarded
    def set_meta(self, key: str, value: str | None) -> None:
        with self._lock:
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self._db.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?)"
                    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    # --------------------------------------------------------------- files --

    @_guarded
    def files(self) -> dict[str, FileRow]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, mtime_ns, size, ino, fields_sig, meta, fm_lines, digest FROM files"
            ).fetchall()
        return {r[0]: (r[1], r[2], r[3], r[4], json.loads(r[5] or "{}"), r[6], r[7]) for r in rows}

    @_guarded
    def blocks_by_path(self) -> dict[str, list[Block]]:
        out: dict[str, list[Block]] = {}
        with self._lock:
            cursor = self._db.execute(f"SELECT {_BLOCK_COLUMNS} FROM blocks ORDER BY path, ord")
            for row in cursor:
                out.setdefault(row[1], []).append(block_from_row(row))
        return out

    @_guarded
    def blocks(self, path: str) -> list[Block]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE path = ? ORDER BY ord", (path,)
            ).fetchall()
        return [block_from_row(r) for r in rows]

    @_guarded
    def blocks_from(self, path: str, start: int) -> list[Block]:
        """The blocks of ``path`` at ordinal ``start`` and after, in order."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE path = ? AND ord >= ? ORDER BY ord",
                (path, start),
            ).fetchall()
        return [block_from_row(r) for r in rows]

    @_guarded
    def replace_file(
        self,
        path: str,
        row: FileRow | None,
        blocks: Iterable[Block],
    ) -> None:
        """Record a file's signature and its full block list (None: file gone)."""
        with self._lock, self._tx():
            self._db.execute("DELETE FROM blocks WHERE path = ?", (path,))
            if row is None:
                self._db.execute("DELETE FROM files WHERE path = ?", (path,))
                return
            self._put_file(path, row)
            self._db.executemany(
                f"INSERT OR REPLACE INTO blocks ({_BLOCK_COLUMNS}) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [block_to_row(b, i) for i, b in enumerate(blocks)],
            )

    @_guarded
    def put_blocks(self, path: str, row: FileRow, numbered: list[tuple[int, Block]]) -> None:
        """Record some blocks of a file, each at its position; the others are unchanged."""
        with self._lock, self._tx():
            self._put_file(path, row)
            self._db.executemany(
                f"INSERT OR REPLACE INTO blocks ({_BLOCK_COLUMNS}) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [block_to_row(b, ordinal) for ordinal, b in numbered],
            )

    @_guarded
    def put_files(self, rows: Iterable[tuple[str, FileRow]]) -> None:
        """Record files' rows alone (their blocks unchanged): a new stat of the same bytes."""
        with self._lock, self._tx():
            for path, row in rows:
                self._put_file(path, row)

    def _put_file(self, path: str, row: FileRow) -> None:
        mtime_ns, size, ino, fields_sig, meta, fm_lines, digest = row
        meta_json = json.dumps(meta, default=str)
        self._db.execute(
            "INSERT INTO files(path, mtime_ns, size, ino, fields_sig, meta, fm_lines, digest)"
            " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET"
            " mtime_ns=excluded.mtime_ns, size=excluded.size, ino=excluded.ino,"
            " fields_sig=excluded.fields_sig, meta=excluded.meta, fm_lines=excluded.fm_lines,"
            " digest=excluded.digest",
            (path, mtime_ns, size, ino, fields_sig, meta_json, fm_lines, digest),
        )

    @_guarded
    def count_blocks(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM blocks").fetchone()[0])

    def _tx(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            try:
                self._db.execute("COMMIT")
                return
            except sqlite3.Error:
                # A failed COMMIT (SQLITE_FULL) may leave the transaction open,
                # and every later BEGIN would fail: end it, then report.
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
        # SQLite may have rolled back already (SQLITE_FULL, SQLITE_IOERR):
        # the original error is the one to report.
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def block_to_row(b: Block, ordinal: int) -> tuple[Any, ...]:
    """The block as a row of JSON-able values (``ordinal``: its place in its file).

    The manifest's blocks table stores these; :func:`block_from_row` reads one back.
    """
    return (
        b.id,
        b.path,
        ordinal,
        b.line_start,
        b.line_end,
        b.heading,
        b.text,
        b.kind,
        json.dumps(list(b.tags)),
        b.scope,
        b.status,
        _ts(b.created),
        _ts(b.updated),
        b.content_hash,
        json.dumps([list(f) for f in b.fields]),
        int(b.is_memory),
    )


def block_from_row(r: tuple[Any, ...]) -> Block:
    """The block a :func:`block_to_row` row describes."""
    created = _dt(r[11]) or datetime.fromtimestamp(0, tz=UTC)
    return Block(
        id=r[0],
        path=r[1],
        line_start=r[3],
        line_end=r[4],
        heading=r[5],
        text=r[6],
        kind=r[7],
        tags=tuple(json.loads(r[8])),
        scope=r[9],
        status=r[10],
        created=created,
        updated=_dt(r[12]),
        content_hash=r[13],
        fields=tuple((k, v) for k, v in json.loads(r[14])),
        is_memory=bool(r[15]),
    )
