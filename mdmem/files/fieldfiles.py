"""A vault's fields files as the catalog reads them: records by id, across notes.

Each note's fields file (:mod:`mdmem.files.sidecar`) is read when the note is
parsed, and again when the catalog's scan sees it change. A memory's fields
normally sit in its own note's file; a line a person moved to another note
still finds them in the file it came from: a lookup that misses in the
note's own file reads every fields file of the vault once (a vault of an
older format has none, so that costs a walk of a few folders), and from then
on :attr:`FieldFiles.where` knows every id's files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mdmem.files.sidecar import (
    SIDECAR_DIR,
    SIDECAR_SUFFIX,
    Fields,
    Record,
    note_of,
    parse_records,
    resolve,
    sidecar_of,
)
from mdmem.files.textfile import content_digest

__all__ = ["FieldFiles", "FieldsView"]

log = logging.getLogger("mdmem")

Signature = tuple[int, int, int]
_MAX_BYTES = 64 * 1024 * 1024  # a fields file larger than this is not read (doctor says so)


@dataclass
class _File:
    signature: Signature
    # Each id's records in file order: a write resolves the ids it touched from
    # theirs alone, not from every record of a file of thousands.
    records: dict[str, list[Record]] = field(default_factory=dict)
    resolved: dict[str, Fields] = field(default_factory=dict)
    bad: list[int] = field(default_factory=list)  # line numbers that are not records
    # The digest of the bytes the records were read from (None: not known to
    # match the file, as after our own append until the write says so).
    digest: str | None = None

    @classmethod
    def of(cls, signature: Signature, records: list[Record], bad: list[int]) -> _File:
        by_id: dict[str, list[Record]] = {}
        for record in records:
            by_id.setdefault(record.id, []).append(record)
        return cls(signature, by_id, resolve(records), bad)


class FieldsView:
    """The fields of one note's memories (a :class:`mdmem.files.blocks.Beside`)."""

    def __init__(self, files: FieldFiles, note: str) -> None:
        self._files = files
        self._own = sidecar_of(note)

    def get(self, memory_id: str, /) -> Fields | None:
        return self._files.fields(memory_id, self._own)


class FieldFiles:
    """Every fields file of a vault that has been read, and which ids each holds."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, _File] = {}
        # id -> the fields files holding records of it (usually one).
        self.where: dict[str, list[str]] = {}
        self._all_read = False
        # Files known (from the manifest) by signature and digest but not read yet.
        self._known: dict[str, tuple[Signature, str | None]] = {}

    def reset(self) -> None:
        self.files.clear()
        self.where.clear()
        self._known.clear()
        self._all_read = False

    # -- lookups -----------------------------------------------------------

    def view(self, note: str) -> FieldsView:
        """The fields of ``note``'s memories (its own file read if it was not)."""
        self.ensure(sidecar_of(note))
        return FieldsView(self, note)

    def exists(self, note: str) -> bool:
        """Whether ``note`` has a fields file (read or on disk)."""
        side = sidecar_of(note)
        return side in self.files or os.path.exists(self.root / side)

    def fields(self, memory_id: str, own: str | None = None) -> Fields | None:
        """A memory's fields after every record of it in any fields file; None
        when no file holds a record of it."""
        holders = self.where.get(memory_id)
        if holders is None:
            if self._all_read:
                return None
            self.read_all()
            holders = self.where.get(memory_id)
            if holders is None:
                return None
        if len(holders) == 1:
            return self.files[holders[0]].resolved.get(memory_id)
        # A line moved between notes: both files' records, latest per field.
        ordered = sorted(holders, key=lambda h: h != own)
        records = [r for h in ordered for r in self.files[h].records.get(memory_id, ())]
        return resolve(records).get(memory_id)

    def damaged(self) -> dict[str, list[int]]:
        """Fields files holding lines that are not records, with their line numbers."""
        return {rel: f.bad for rel, f in self.files.items() if f.bad}

    # -- reading -----------------------------------------------------------

    def known(self, rel: str, signature: Signature, digest: str | None = None) -> None:
        """The manifest says ``rel`` was read at ``signature`` holding bytes of
        ``digest``: read it when needed."""
        if rel not in self.files:
            self._known[rel] = (signature, digest)

    def tracked(self) -> list[str]:
        """Every fields file read or known from the manifest."""
        return [*self.files, *self._known]

    def signature(self, rel: str) -> Signature | None:
        found = self.files.get(rel)
        if found is not None:
            return found.signature
        known = self._known.get(rel)
        return None if known is None else known[0]

    def digest(self, rel: str) -> str | None:
        """The digest of the bytes ``rel``'s fields were read from, if known."""
        found = self.files.get(rel)
        if found is not None:
            return found.digest
        known = self._known.get(rel)
        return None if known is None else known[1]

    def resign(self, rel: str, signature: Signature, digest: str | None = None) -> None:
        """``rel`` has a new stat but the bytes its fields were read from (their
        ``digest``, when it was not known yet)."""
        if rel in self.files:
            self.files[rel].signature = signature
            self.files[rel].digest = digest or self.files[rel].digest
        elif rel in self._known:
            self._known[rel] = (signature, digest or self._known[rel][1])

    def ensure(self, rel: str) -> None:
        """Read ``rel`` from disk unless it is read already."""
        if rel in self.files:
            return
        self._known.pop(rel, None)
        full = self.root / rel
        try:
            st = full.stat()
            raw = full.read_bytes() if st.st_size <= _MAX_BYTES else b""
        except OSError:
            return
        self.read(rel, raw, (st.st_mtime_ns, st.st_size, st.st_ino))

    def read(self, rel: str, raw: bytes, signature: Signature) -> set[str]:
        """Take ``rel`` as holding ``raw``; the ids whose fields changed."""
        text = raw.decode("utf-8", errors="replace")
        records, bad = parse_records(text.splitlines())
        if bad:
            log.warning("%s: lines %s are not field records; they are skipped", rel, bad[:5])
        before = self.files.get(rel)
        new = _File.of(signature, records, bad)
        new.digest = content_digest(raw)
        self._replace(rel, before, new)
        return _changed(before.resolved if before else {}, new.resolved)

    def add(self, rel: str, records: Iterable[Record]) -> set[str]:
        """Records our own write appended to ``rel``; the ids whose fields changed."""
        self.ensure(rel)
        current = self.files.get(rel)
        if current is None:
            current = _File((0, 0, 0))
            self.files[rel] = current
        touched: set[str] = set()
        for record in records:
            current.records.setdefault(record.id, []).append(record)
            touched.add(record.id)
        # Not on disk yet: any scan reads the file again unless the write that
        # made these records says it wrote them (touch).
        current.signature = (0, 0, 0)
        current.digest = None
        fresh = {i: f for i in touched for i, f in resolve(current.records[i]).items()}
        changed = {i for i in touched if current.resolved.get(i) != fresh.get(i)}
        current.resolved.update(fresh)
        for memory_id in touched:
            holders = self.where.setdefault(memory_id, [])
            if rel not in holders:
                holders.append(rel)
        return changed

    def touch(self, rel: str, signature: Signature, digest: str | None = None) -> None:
        """The file on disk now holds what we have read: remember its stat (and
        the digest of its bytes, when the caller wrote them)."""
        if rel in self.files:
            self.files[rel].signature = signature
            self.files[rel].digest = digest

    def drop(self, rel: str) -> set[str]:
        """``rel`` is gone; the ids whose fields changed."""
        self._known.pop(rel, None)
        before = self.files.get(rel)
        if before is None:
            return set()
        self._replace(rel, before, None)
        return set(before.resolved)

    def read_all(self) -> None:
        """Read every fields file of the vault (once: later reads keep the map whole)."""
        self._all_read = True
        for rel in self.walk():
            self.ensure(rel)

    def walk(self) -> Iterator[str]:
        """Every fields file under the vault, git internals and tool outputs aside."""
        root = str(self.root)
        for directory, dirs, files in os.walk(root):
            rel_dir = os.path.relpath(directory, root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
            dirs[:] = [
                d for d in dirs if d == SIDECAR_DIR or (d[0] != "." and d != "node_modules")
            ]
            if os.path.basename(directory) != SIDECAR_DIR:
                continue
            for name in files:
                if name.endswith(".md" + SIDECAR_SUFFIX):
                    rel = f"{rel_dir}/{name}"
                    if note_of(rel) is not None:
                        yield rel

    # -- internals -----------------------------------------------------------

    def _replace(self, rel: str, before: _File | None, new: _File | None) -> None:
        if before is not None:
            for memory_id in before.resolved:
                holders = self.where.get(memory_id)
                if holders is not None and rel in holders:
                    holders.remove(rel)
                    if not holders:
                        del self.where[memory_id]
        if new is None:
            self.files.pop(rel, None)
            return
        self.files[rel] = new
        for memory_id in new.resolved:
            self.where.setdefault(memory_id, []).append(rel)


def _changed(before: dict[str, Fields], after: dict[str, Fields]) -> set[str]:
    return {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
