"""What each of the writer's commits did to memories, kept so history questions skip the diff.

``changes`` since the last session used to re-diff every new commit, and a
one-line append to a ``MEMORY.md`` of 5,000 memories costs git a whole-file
diff (hundreds of ms over 50 commits). The writer already knows, as it
commits, which memories it appended, rewrote or removed: it records that here,
keyed by the commit's sha, and :func:`mdmem.git.history.changes_after` reads
the records of the commits it lists instead of their patches.

A record holds ids, paths, statuses and the ``by`` of a superseded memory,
never memory text; a purge (which rewrites the commits, and so their shas)
drops them all (:func:`drop_records`). It is derived state (the state dir,
not the vault): only commits this clone's writer made have one, and a commit
without one (a person's edit, a pulled or rebased commit, a record lost with
the state dir) is diffed as before. A sha names exactly one content, so a
record can never describe a commit it does not belong to.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec

from mdmem.files.health import DERIVED_ERRORS
from mdmem.store.statedb import state_db

if TYPE_CHECKING:
    from mdmem.models import Block
    from mdmem.store.editors import Pending

__all__ = [
    "CommitRecord",
    "Side",
    "drop_records",
    "keep_record",
    "of_transaction",
    "read_records",
    "recorded",
    "save_record",
]

log = logging.getLogger("mdmem")
P = ParamSpec("P")

_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (sha TEXT PRIMARY KEY, body TEXT NOT NULL);
"""
_CHUNK = 500  # shas per query (SQLite's variable limit is 999 on old builds)


@dataclass(frozen=True)
class Side:
    """A memory's id line on one side of a commit: its file, status and ``by``."""

    path: str
    status: str
    by: str | None = None


@dataclass(frozen=True)
class CommitRecord:
    """The memory ids whose id line a commit added (``plus``) and removed (``minus``).

    The same facts a ``git log -p`` of the commit yields: an id only in
    ``plus`` was added, only in ``minus`` removed, in both changed (its
    status may differ between the sides).
    """

    plus: Mapping[str, Side]
    minus: Mapping[str, Side]

    def paths(self) -> list[str]:
        return sorted({s.path for s in (*self.plus.values(), *self.minus.values())})

    def to_json(self) -> str:
        def side(items: Mapping[str, Side]) -> list[list[str | None]]:
            return [[i, s.path, s.status, s.by] for i, s in items.items()]

        return json.dumps(
            {"v": _VERSION, "plus": side(self.plus), "minus": side(self.minus)},
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, body: str) -> CommitRecord | None:
        try:
            data = json.loads(body)
            if data.get("v") != _VERSION:
                return None

            def side(rows: list[list[str | None]]) -> dict[str, Side]:
                return {str(r[0]): Side(str(r[1]), str(r[2]), r[3]) for r in rows}

            return cls(side(data["plus"]), side(data["minus"]))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None  # a damaged record: the commit is diffed instead


def _side(block: Block) -> Side:
    by = block.field("by")
    return Side(block.path, block.status or "active", by.lstrip("^") or None if by else None)


def of_transaction(pending: Mapping[str, Pending]) -> CommitRecord:
    """The record of a transaction's files as it commits them.

    A file that saw only appends and in-place rewrites costs O(blocks
    touched); one the writer re-parsed whole (a removal, a moved block) is
    compared block by block with its parse as first read, which its re-parse
    already paid for.
    """
    plus: dict[str, Side] = {}
    minus: dict[str, Side] = {}
    for pend in pending.values():
        if pend.only_appends:
            for block in pend.appended:
                if block.is_memory:
                    plus[block.id] = _side(block)
            for before, now in pend.rewritten.values():
                minus[before.id] = _side(before)
                plus[now.id] = _side(now)
            continue
        old = {b.id: b for b in pend.first if b.is_memory}
        new = {} if pend.parsed is None else {b.id: b for b in pend.parsed.blocks if b.is_memory}
        for memory_id, block in new.items():
            was = old.get(memory_id)
            if was is None or _side(was) != _side(block) or was.text != block.text:
                plus[memory_id] = _side(block)
                if was is not None:
                    minus[memory_id] = _side(was)
        for memory_id, block in old.items():
            if memory_id not in new:
                minus[memory_id] = _side(block)
    return CommitRecord(plus, minus)


def _path(state_dir: Path) -> Path:
    return state_dir / "commits.sqlite"


def _records_db(state_dir: Path) -> contextlib.AbstractContextManager[sqlite3.Connection]:
    """One transaction on the records file, never synced: a record lost to a
    power cut costs a diff, while the checkpoint's fsync on close cost ~30 ms
    a write on a loaded machine, on every commit (~1 ms without)."""
    return state_db(_path(state_dir), _SCHEMA, what="commit records", synced=False)


def save_record(state_dir: Path, sha: str, record: CommitRecord) -> None:
    """Keep ``record`` for the commit ``sha`` (replacing any)."""
    with _records_db(state_dir) as db:
        db.execute(
            "INSERT OR REPLACE INTO records (sha, body) VALUES (?, ?)", (sha, record.to_json())
        )


def keep_record(state_dir: Path, sha: str | None, record: CommitRecord) -> None:
    """Keep the record of the commit ``sha``; a failure only costs a diff later."""
    if sha is None:
        return
    try:
        save_record(state_dir, sha, record)
    except DERIVED_ERRORS as exc:  # the commit exists: the write succeeded
        log.debug("no record of %s kept: %s", sha, exc)


def recorded(
    commit: Callable[P, str | None], state_dir: Path, pending: Mapping[str, Pending]
) -> Callable[P, str | None]:
    """``commit`` (returning the new sha), then the record of what it committed kept.

    The record is taken now, from the transaction as it will be committed;
    kept after the commit, in the thread that waits on git while the caller
    indexes, it adds nothing to the write's time. A commit replaced after
    this (the writer's amend when a person saved meanwhile) has another sha
    and no record: it is diffed.
    """
    record = of_transaction(pending)

    def run(*args: P.args, **kwargs: P.kwargs) -> str | None:
        sha = commit(*args, **kwargs)
        keep_record(state_dir, sha, record)
        return sha

    return run


def drop_records(state_dir: Path) -> None:
    """Forget every record: a history rewrite (purge) gave its commits new shas,
    and the old records name what was purged."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / f"commits.sqlite{suffix}").unlink()


def read_records(state_dir: Path, shas: Iterable[str]) -> dict[str, CommitRecord]:
    """The records kept for those of ``shas`` that have one."""
    wanted = list(shas)
    found: dict[str, CommitRecord] = {}
    if not wanted or not _path(state_dir).exists():
        return found
    try:
        with _records_db(state_dir) as db:
            for at in range(0, len(wanted), _CHUNK):
                chunk = wanted[at : at + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT sha, body FROM records WHERE sha IN ({marks})", chunk
                ).fetchall()
                for sha, body in rows:
                    record = CommitRecord.from_json(body)
                    if record is not None:
                        found[sha] = record
    except DERIVED_ERRORS:
        return {}  # unreadable: every commit is diffed, as without records
    return found
