"""The fields file beside a note: what mdmem knows about each memory line, keyed by its id.

A memory line holds what a person writes — its text, its ``#tags``, a word
for its kind, its ``^id``. Everything else mdmem knows about the line (its
status and what replaced it, where it came from, who said it, importance,
session, hashes) lives in a file beside the note, under git:

    MEMORY.md                      the note a person reads
    .fields/MEMORY.md.jsonl        its fields, one record per line

Each record is one JSON object on one line: the memory's ``id``, the moment
it was written (``at``, UTC, microseconds) and the fields it sets; ``null``
unsets a field::

    {"id":"m-01m8t36fxr00vt","at":"2026-12-02T00:41:43.812345Z","kind":"world"}
    {"id":"m-01m8t36fxr00vt","at":"2026-12-02T00:41:44.100214Z","status":"superseded","by":"^m-01m8t36fz100js"}

Why this shape (see docs/file-format.md, "Where the fields live"):

* **Append-only.** A change is a new record, never a rewrite, so ``git
  diff`` of a status change is one added line and ``git blame`` names who
  made each change. The file is marked ``merge=union`` (git's built-in
  driver, which travels with every clone): two machines that change fields
  merge without a conflict, whatever they changed, because each side only
  appended whole records.
* **Last write wins, per field.** Reading resolves each (id, field) to the
  record with the latest ``at``; a tie (two clones in the same microsecond)
  goes to the greater value, so every clone reads the same merge. mdmem's
  own merges (``mdmem git sync``) report the same field changed differently
  on both sides as a conflict, as they do for a line.
* **Hidden from the reading flow.** Obsidian shows no dot-folder, so the
  vault reads as notes; the records stay plain text for ``grep`` and ``jq``.
* **Keyed by id, found from anywhere.** A line a person moves to another
  note keeps its fields: a record is looked up by id in the note's own file
  first and then in every other (:class:`Ledger`).

Pure functions and a small in-memory resolver: nothing here touches the disk.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

__all__ = [
    "SIDECAR_DIR",
    "SIDECAR_SUFFIX",
    "Fields",
    "Record",
    "encode",
    "is_sidecar",
    "note_of",
    "parse_records",
    "resolve",
    "sidecar_of",
    "stamp",
]

SIDECAR_DIR = ".fields"
SIDECAR_SUFFIX = ".jsonl"

#: A memory's resolved fields, in the order they were first set.
Fields = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Record:
    """One line of a fields file: ``values`` set (a str) or unset (None) at ``at``."""

    id: str
    at: str
    values: tuple[tuple[str, str | None], ...]


def _plain(rel: str) -> bool:
    # A vault-relative POSIX path as the catalog and git spell it: string
    # operations read it as PurePosixPath would, at a fraction of the cost
    # (these run for every path of every scan and change list).
    return not (rel.startswith(("./", "/")) or "//" in rel or "/./" in rel or rel.endswith("/"))


def sidecar_of(rel: str) -> str:
    """The fields file of the note ``rel`` (``a/b.md`` -> ``a/.fields/b.md.jsonl``)."""
    if _plain(rel):
        folder, slash, name = rel.rpartition("/")
        return f"{folder}{slash}{SIDECAR_DIR}/{name}{SIDECAR_SUFFIX}"
    path = PurePosixPath(rel)
    return str(path.parent / SIDECAR_DIR / (path.name + SIDECAR_SUFFIX))


def note_of(rel: str) -> str | None:
    """The note a fields file belongs to, or None when ``rel`` is not one."""
    if not rel.endswith(".md" + SIDECAR_SUFFIX):
        return None
    if _plain(rel):
        folder, _slash, name = rel.rpartition("/")
        above, slash, parent = folder.rpartition("/")
        if parent != SIDECAR_DIR:
            return None
        return f"{above}{slash}{name[: -len(SIDECAR_SUFFIX)]}"
    path = PurePosixPath(rel)
    if path.parent.name != SIDECAR_DIR:
        return None
    return str(path.parent.parent / path.name[: -len(SIDECAR_SUFFIX)])


def is_sidecar(rel: str) -> bool:
    return note_of(rel) is not None


_last = 0
_stamp_lock = threading.Lock()


def stamp(now: datetime | None = None) -> str:
    """A record time: UTC with microseconds, strictly increasing within this process,
    so two records one write makes in a row keep their order."""
    global _last
    with _stamp_lock:
        micros = int((now.timestamp() if now is not None else time.time()) * 1_000_000)
        micros = max(micros, _last + 1)
        _last = micros
    moment = datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(record: Record) -> str:
    """One record as its line (no line ending): ``id`` and ``at`` first, then the fields."""
    data: dict[str, str | None] = {"id": record.id, "at": record.at}
    for key, value in record.values:
        data[key] = value
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def parse_records(lines: Iterable[str]) -> tuple[list[Record], list[int]]:
    """The records of a fields file's lines, and the (1-based) numbers of lines that
    are not records (a damaged or hand-mangled line is skipped, never guessed at)."""
    records: list[Record] = []
    bad: list[int] = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        if not isinstance(data, dict):
            bad.append(number)
            continue
        memory_id, at = data.pop("id", None), data.pop("at", None)
        if not isinstance(memory_id, str) or not isinstance(at, str):
            bad.append(number)
            continue
        values = tuple(
            (str(key), value if value is None else str(value))
            for key, value in data.items()
            if isinstance(value, str | int | float) or value is None
        )
        records.append(Record(memory_id, at, values))
    return records, bad


class _Slot:
    __slots__ = ("at", "order", "value")

    def __init__(self, at: str, order: int, value: str | None) -> None:
        self.at, self.order, self.value = at, order, value

    def newer(self, at: str, value: str | None) -> bool:
        if at != self.at:
            return at > self.at
        return (value or "") >= (self.value or "")


def resolve(records: Iterable[Record]) -> dict[str, Fields]:
    """Each id's fields after every record (latest ``at`` wins per field, a tie to
    the greater value), in the order the fields were first set; unset fields left out."""
    slots: dict[str, dict[str, _Slot]] = {}
    order = 0
    for record in records:
        mine = slots.setdefault(record.id, {})
        for key, value in record.values:
            slot = mine.get(key)
            if slot is None:
                mine[key] = _Slot(record.at, order, value)
                order += 1
            elif slot.newer(record.at, value):
                slot.at, slot.value = record.at, value
    return {
        memory_id: tuple(
            (key, slot.value)
            for key, slot in sorted(mine.items(), key=lambda kv: kv[1].order)
            if slot.value is not None
        )
        for memory_id, mine in slots.items()
    }


def merged(records_by_file: Iterable[Iterable[Record]]) -> dict[str, Fields]:
    """:func:`resolve` over several files' records (a line moved between notes)."""
    return resolve(r for records in records_by_file for r in records)
