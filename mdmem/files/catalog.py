"""The in-memory picture of the vault: parsed files, refreshed by a cheap stat scan.

A file is re-read only when its (mtime_ns, size, inode) changed, so a scan of
an unchanged vault costs one ``stat`` per markdown file. A ``live`` catalog
(the vault's) also asks inotify which files changed (:mod:`mdmem.files.changefeed`)
and then stats only those, falling back to the full scan whenever the feed
cannot vouch for the tree. Files that cannot be read as markdown are skipped
with a logged warning and listed in ``skipped``.

Every block has a key of its own, which is what the manifest and both
indexes store. For a memory that is its id; but a person can copy a line, and
then the line seen first keeps the id (the *original*) while each later one
is keyed by its place (:func:`~mdmem.files.ids.copy_key`, a *copy*). A copy
is indexed and recalled like any block, but it is not a memory a write can
name (``is_memory`` is False, as for a person's own notes), so idempotency,
auto-resolve, consolidation and the lifecycle pass it by until ``doctor
--fix`` gives it an id of its own. When the original goes, the first copy
takes the id over, and its file is re-keyed (listed by
:meth:`Catalog.take_rekeyed` until the indexer has re-indexed it).

A note's memories take the fields kept beside it (:mod:`mdmem.files.sidecar`,
read through :class:`~mdmem.files.fieldfiles.FieldFiles`): a scan sees a
fields file change like a note, and reads again the notes whose memories'
fields changed. The manifest row of a note records the fields file's stat
its blocks were read with, so an unchanged vault opens without reading them.

A note that gives itself no date (no frontmatter date, not a daily note) is
dated by when git first recorded it, when the catalog has a :class:`Dating`
(the vault's: :mod:`mdmem.store.gitdates`): each scan first brings that map
up to HEAD, and a file whose sections no longer carry the date the map says
is read again (:meth:`Catalog.redate`), so the indexes learn it too.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mdmem.files.blocks import (
    UNDATED,
    ParsedFile,
    appended_items,
    is_typed_key,
    own_date,
    parse,
    position_of,
)
from mdmem.files.changefeed import ChangeFeed
from mdmem.files.fieldfiles import FieldFiles
from mdmem.files.ids import copy_key, is_copy_key, written_id
from mdmem.files.manifest import Manifest
from mdmem.files.people import name_tokens, people_of
from mdmem.files.sidecar import SIDECAR_DIR, is_sidecar, note_of, sidecar_of
from mdmem.files.textfile import BadByte, SkipFile, content_digest, decode_readable
from mdmem.models import Block

__all__ = [
    "EXCLUDED_DIRS",
    "Catalog",
    "Dating",
    "ScanDelta",
    "Signature",
    "is_copy",
    "signature_of",
]

log = logging.getLogger("mdmem")

# Not memory: git internals, editor state, Obsidian templates, the trash.
EXCLUDED_DIRS = frozenset(
    {".git", ".obsidian", ".trash", "templates", "node_modules", "tool-outputs"}
)

Signature = tuple[int, int, int]

# Even with a change feed, stat everything this often: a writer inotify does
# not see (a file changed through mmap) is then noticed within this time.
_FULL_SCAN_SECONDS = 60.0


def signature_of(st: os.stat_result) -> Signature:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass
class FileState:
    signature: Signature
    parsed: ParsedFile
    # The digest of the bytes ``parsed`` was read from (None: not known, as
    # after a write recorded without its bytes or a forced re-read).
    digest: str | None = None


@dataclass
class ScanDelta:
    changed: list[str] = field(default_factory=list)  # new or modified, parsed
    removed: list[str] = field(default_factory=list)  # gone, or now unreadable
    _listed: set[str] = field(default_factory=set, repr=False, compare=False)

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed)

    def add(self, paths: Iterable[str]) -> None:
        """List ``paths`` as changed, once each (a note read again for its fields
        and for a change of its own)."""
        for path in paths:
            if path not in self._listed:
                self._listed.add(path)
                self.changed.append(path)


def is_copy(block: Block) -> bool:
    """A copied line: a block keyed by its place because its id is taken."""
    return not block.is_memory and "#^" in block.id and is_copy_key(block.id)


def _written(block: Block) -> str | None:
    """The id written on a memory's or a copied line's last line (None for others)."""
    if block.is_memory:
        return block.id
    return written_id(block.id) if is_copy(block) else None


class Dating(Protocol):
    """Dates for notes that give themselves none (git history's first add)."""

    def update(self) -> set[str] | None:
        """Catch up (with HEAD); the paths whose date changed, None for "any"."""
        ...

    def date_of(self, path: str) -> datetime | None: ...


def _dated_by_note(block: Block) -> bool:
    """A block that takes its note's date (a section, the frontmatter), not one of its own
    (a memory, a copied line, a line typed without an id: git dated the note, not the line)."""
    return not block.is_memory and not is_copy(block) and not is_typed_key(block.id)


def _event_key(block: Block) -> tuple[str, str] | None:
    if not block.is_memory or block.kind != "chat_message":
        return None
    event = block.field("event")
    return (block.field("source") or "", event) if event else None


class Catalog:
    def __init__(self, root: Path, *, live: bool = False) -> None:
        self.root = root
        self._live = live
        self._feed: ChangeFeed | None = None
        self._feed_tried = False
        self._full_at: float | None = None  # when the last full scan started
        self._forced: set[str] = set()
        self._links = False  # a symlinked file: its target's edits reach no watch of ours
        self.files: dict[str, FileState] = {}
        self.skipped: dict[str, str] = {}
        # Files read but for lines that are not UTF-8 (decode_readable): where
        # each such line's first bad byte is. Recall says it is degraded.
        self.damaged: dict[str, tuple[BadByte, ...]] = {}
        self._skipped_sigs: dict[str, Signature] = {}
        self._by_id: dict[str, str] = {}
        self._blocks: dict[str, Block] = {}
        # Lists, not sets: nearly every hash has one id, and a one-item set costs
        # 3x the memory (15 MB at 100k memories).
        self._by_hash: dict[tuple[str, str], list[str]] = {}
        # (source, event id) of chat messages: a session drops a redelivered
        # event whatever its age without reading every session file.
        self._by_event: dict[tuple[str, str], set[str]] = {}
        self._people: Counter[str] = Counter()  # speaker/contact field values
        self._people_tokens: set[str] | None = None
        # Files read from disk (or dropped) whose change the indexes and the
        # manifest may not hold yet: a lookup re-read them, or writing the
        # derived state failed. The indexer empties it as it catches up, and
        # never records a partial update of such a file on top of a stale row.
        self.unindexed: set[str] = set()
        self._loading = False  # load_manifest() running: settle at its end
        # Copied lines: written id -> keys of its copies, in the order seen.
        self._copies: dict[str, list[str]] = {}
        # Ids whose original went away while copies remained: one takes over.
        self._orphans: set[str] = set()
        # Files whose keys changed without a change of their own (a copy took
        # an id over): the indexer must re-index them.
        self._rekeyed: set[str] = set()
        # Files found with a new stat but the bytes they were read from (or
        # whose fields file was): their manifest rows want the new stat.
        self._resigned: set[str] = set()
        # Files read as their indexed state plus appended items: path -> the
        # first appended block, so the indexer records only those. (Appended
        # memory items carry their own dates: git history dates none of them.)
        self._appended_from: dict[str, int] = {}
        # Where undated notes get a date (git history); None: they stay undated.
        self.dating: Dating | None = None
        # The fields files beside the notes (mdmem.files.sidecar).
        self.fields = FieldFiles(root)

    def reset(self) -> None:
        """Forget everything parsed; the next scan reads every file again."""
        self.files.clear()
        self.skipped.clear()
        self.damaged.clear()
        self._skipped_sigs.clear()
        self._by_id.clear()
        self._blocks.clear()
        self._by_hash.clear()
        self._by_event.clear()
        self._people.clear()
        self._people_tokens = None
        self._copies.clear()
        self._orphans.clear()
        self._rekeyed.clear()
        self._resigned.clear()
        self._appended_from.clear()
        self._full_at = None
        self.unindexed.clear()
        self.fields.reset()

    @property
    def watching(self) -> bool:
        """Whether an inotify change feed narrows :meth:`scan` (see
        :mod:`mdmem.files.changefeed`). False before a live catalog's first
        scan opens one, after :meth:`close`, and where inotify cannot vouch
        for the vault (then every scan stats every file)."""
        return self._feed is not None

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
            self._feed = None

    def load_manifest(self, manifest: Manifest) -> None:
        """Take files the indexes already hold from the manifest, unparsed.

        Their text is read only when a write needs it; a scan then re-parses
        just the files whose stat no longer matches.
        """
        rows = manifest.files()
        if not rows:
            return
        blocks = manifest.blocks_by_path()
        # Copies are settled once every file is in: a copy loaded before its
        # original must not take the id over in between.
        self._loading = True
        try:
            self._load_rows(rows, blocks)
        finally:
            self._loading = False
        self._settle()
        if self.dating is not None:
            self.dating.update()
            self.redate(None)  # the rows hold the dates as last indexed

    def _load_rows(self, rows: dict[str, tuple[Any, ...]], blocks: dict[str, list[Block]]) -> None:
        for path, (mtime_ns, size, ino, fields_sig, meta, fm_lines, digest) in rows.items():
            if fields_sig:
                # The fields file as the note's blocks were read with it: read
                # again only if the scan finds it changed.
                self.fields.known(sidecar_of(path), *_parse_stamp(fields_sig))
            parsed = ParsedFile(
                path=path,
                file=None,
                frontmatter=meta,
                frontmatter_lines=fm_lines,
                blocks=blocks.get(path, []),
            )
            keys = [b.id for b in parsed.blocks]
            self.put(path, parsed, (mtime_ns, size, ino), digest)
            if [b.id for b in parsed.blocks] != keys:
                # The rows disagree with each other (two files holding one id
                # unkeyed): the indexes hold the rows' keys, so re-index.
                self._rekeyed.add(path)

    # ----------------------------------------------------------- lookups --

    def block(self, block_id: str) -> Block | None:
        return self._blocks.get(block_id)

    def path_of(self, block_id: str) -> str | None:
        return self._by_id.get(block_id)

    def find_active(self, scope: str, digest: str) -> Block | None:
        """An active memory with this normalised-content hash in this scope (the oldest)."""
        same = self.active_with(scope, digest)
        return same[0] if same else None

    def active_with(self, scope: str, digest: str) -> list[Block]:
        """Every active memory with this normalised-content hash in this scope, oldest first."""
        found = (self.block(i) for i in sorted(self._by_hash.get((scope, digest), ())))
        return [b for b in found if b is not None and b.status == "active"]

    def with_event(self, source: str | None, event: str) -> list[Block]:
        """Chat messages recorded from ``source`` with this event id, oldest first."""
        found = (self.block(i) for i in sorted(self._by_event.get((source or "", event), ())))
        return [b for b in found if b is not None]

    def blocks(self, *, memories_only: bool = False) -> Iterator[Block]:
        # A snapshot of the files (one C-level copy): a write in another thread
        # may add a file while a reader walks them (the warm server reads beside writes).
        for state in list(self.files.values()):
            for block in state.parsed.blocks:
                if block.is_memory or not memories_only:
                    yield block

    def copies_of(self, memory_id: str) -> list[Block]:
        """The other lines that carry ``memory_id`` (copies of it), in the order seen."""
        keys = self._copies.get(memory_id, ())
        return [b for k in keys if (b := self._blocks.get(k)) is not None]

    def duplicates(self) -> dict[str, list[Block]]:
        """Each id on more than one line: its original first (if any), then its copies."""
        out: dict[str, list[Block]] = {}
        for memory_id in sorted(self._copies):
            original = self._blocks.get(memory_id)
            out[memory_id] = [*([original] if original else []), *self.copies_of(memory_id)]
        return out

    def take_appended(self, path: str) -> int | None:
        """Where the blocks appended to ``path`` since the state the indexes hold
        begin, if that was its only change since (then forgotten); else None."""
        return self._appended_from.pop(path, None)

    def take_rekeyed(self) -> list[str]:
        """Files whose keys changed because a copy took its id over (then forgotten)."""
        paths = sorted(p for p in self._rekeyed if p in self.files)
        self._rekeyed.clear()
        return paths

    @property
    def resigned(self) -> bool:
        """Whether files were found unchanged under a new stat since the last take."""
        return bool(self._resigned)

    def take_resigned(self) -> list[str]:
        """Files found unchanged under a new stat (then forgotten): their
        manifest rows need the stat the catalog now holds."""
        paths = sorted(p for p in self._resigned if p in self.files)
        self._resigned.clear()
        return paths

    def typed_in(self, paths: Iterable[str]) -> bool:
        """Whether any of ``paths`` holds a line a person typed that has no id yet
        (a read that found one leaves it for the next write to commit and key)."""
        return any(is_typed_key(b.id) for p in paths for b in self.blocks_in(p))

    def blocks_in(self, path: str) -> list[Block]:
        """The parsed blocks of one file (empty if it is not known)."""
        state = self.files.get(path)
        return state.parsed.blocks if state is not None else []

    def people(self) -> set[str]:
        """Name words of the people memories name (``speaker``/``contact``)."""
        if self._people_tokens is None:
            self._people_tokens = name_tokens(+self._people)
        return self._people_tokens

    def has_id(self, block_id: str) -> bool:
        return block_id in self._by_id

    # ----------------------------------------------------------- updates --

    def put(
        self, path: str, parsed: ParsedFile, sig: Signature, digest: str | None = None
    ) -> None:
        """Record ``parsed`` as the file at ``path``; a copied line's block is
        re-keyed in place (see the module doc). An undated note's blocks take
        the date git history gives it (parsed from text, not manifest rows:
        those hold what the indexes hold; :meth:`redate` compares them)."""
        if self.dating is not None and not self._loading:
            self.date_from_history(path, parsed)
        self._appended_from.pop(path, None)
        self._forget_file(path)
        self.files[path] = FileState(sig, parsed, digest)
        if parsed.file is not None and parsed.file.bad:
            self.damaged[path] = parsed.file.bad
        else:
            self.damaged.pop(path, None)
        self.skipped.pop(path, None)
        self._skipped_sigs.pop(path, None)
        self._claim(path, parsed.blocks, 0)
        self._settle()

    def add_blocks(self, path: str, blocks: list[Block], sig: Signature) -> None:
        """Record blocks appended to an already-parsed file (no reparse)."""
        state = self.files[path]
        state.signature = sig
        state.digest = None
        start = len(state.parsed.blocks)
        state.parsed.blocks.extend(blocks)
        self._claim(path, state.parsed.blocks, start)
        blocks[:] = state.parsed.blocks[start:]
        self._settle()

    def _history_date(self, path: str, meta: dict[str, Any]) -> datetime | None:
        """The date history gives a note's sections; None when the note has its own."""
        if self.dating is None or own_date(path, meta) is not None:
            return None
        return self.dating.date_of(path) or UNDATED

    def date_from_history(
        self, path: str, parsed: ParsedFile, *, until: datetime | None = None
    ) -> None:
        """Give ``parsed``'s undated sections the date git history gives the
        note (in place), unless that date is after ``until`` (a snapshot of
        an older commit, where the first add the map knows came later)."""
        date = self._history_date(path, parsed.frontmatter)
        if date is None or date == UNDATED or (until is not None and date > until):
            return
        blocks = parsed.blocks
        for i, block in enumerate(blocks):
            if _dated_by_note(block) and block.created == UNDATED:
                blocks[i] = replace(block, created=date)

    def redate(self, paths: Iterable[str] | None) -> list[str]:
        """Make the next scan read again each of ``paths`` (None: every file)
        whose sections carry another date than history now gives; those paths."""
        if self.dating is None:
            return []
        stale: list[str] = []
        for path in list(self.files) if paths is None else sorted(paths):
            state = self.files.get(path)
            if state is None:
                continue
            want = self._history_date(path, state.parsed.frontmatter)
            if want is None:
                continue
            if any(b.created != want for b in state.parsed.blocks if _dated_by_note(b)):
                self.invalidate(path)
                stale.append(path)
        return stale

    def _follow_history(self) -> None:
        if self.dating is not None:
            changed = self.dating.update()
            if changed is None or changed:
                self.redate(changed)

    def _claim(self, path: str, blocks: list[Block], start: int, end: int | None = None) -> None:
        """Index ``blocks[start:end]`` (in file order), keying copied lines by their place.

        A memory whose id is free takes it; one whose id another line holds
        is a copy. A block that arrives keyed as a copy (from the manifest)
        stays one, so the keys match what the indexes hold.
        """
        for i in range(start, len(blocks) if end is None else end):
            block = blocks[i]
            if block.is_memory and block.id in self._by_id:
                # Rare (a copied line), so its place in the file is counted
                # only here: appends stay O(1) in the size of the file.
                n = 1 + sum(1 for b in blocks[:i] if _written(b) == block.id)
                block = blocks[i] = replace(block, id=copy_key(path, block.id, n), is_memory=False)
            self._index(path, block)

    def _settle(self) -> None:
        """Let a copy take over each id whose original went away."""
        if self._loading:
            return
        while self._orphans:
            orphans, self._orphans = self._orphans, set()
            for memory_id in sorted(orphans):
                keys = self._copies.get(memory_id)
                if memory_id in self._by_id or not keys:
                    continue
                path = self._by_id.get(keys[0])
                if path is not None:
                    self._rekey(path)

    def _rekey(self, path: str) -> None:
        """Key the file's blocks again from their written ids (a copy in it may
        now be the only line with its id)."""
        state = self.files[path]
        self._forget_file(path)
        blocks = state.parsed.blocks
        blocks[:] = [
            replace(b, id=written_id(b.id), is_memory=True) if is_copy(b) else b for b in blocks
        ]
        self._claim(path, blocks, 0)
        self._rekeyed.add(path)

    def _index(self, path: str, block: Block) -> None:
        self._by_id[block.id] = path
        self._blocks[block.id] = block
        if is_copy(block):
            memory_id = written_id(block.id)
            self._copies.setdefault(memory_id, []).append(block.id)
            if memory_id not in self._by_id:
                self._orphans.add(memory_id)  # a copy loaded before (or without) its original
        if block.is_memory:
            same = self._by_hash.setdefault((block.scope, block.content_hash), [])
            if block.id not in same:
                same.append(block.id)
            self._count_people(block, 1)
            key = _event_key(block)
            if key is not None:
                self._by_event.setdefault(key, set()).add(block.id)

    def _count_people(self, block: Block, delta: int) -> None:
        names = people_of(block)
        if names:
            self._people.update({name: delta for name in names})
            self._people_tokens = None

    def touch(self, path: str, sig: Signature, tf: Any, digest: str | None = None) -> None:
        """The file on disk now matches the parse we hold: record its stat (and
        the digest of the bytes written, when the caller has them)."""
        state = self.files.get(path)
        if state is not None:
            state.signature = sig
            state.digest = digest
            state.parsed.file = tf

    def invalidate(self, path: str) -> None:
        """Make the next scan re-read ``path`` whatever its stat says."""
        self._appended_from.pop(path, None)
        state = self.files.get(path)
        if state is not None:
            state.signature = (0, 0, 0)
            state.digest = None
            self._forced.add(path)
        else:
            self._full_at = None
        self._skipped_sigs.pop(path, None)

    def drop(self, path: str) -> None:
        if path in self.files:
            self.unindexed.add(path)
        self._forget_file(path)
        self.files.pop(path, None)
        self.damaged.pop(path, None)
        self._rekeyed.discard(path)
        self._appended_from.pop(path, None)
        self._settle()

    def _forget_file(self, path: str) -> None:
        state = self.files.get(path)
        if state is None:
            return
        for block in state.parsed.blocks:
            self._unindex(path, block)

    def _unindex(self, path: str, block: Block) -> None:
        if self._by_id.get(block.id) == path:
            del self._by_id[block.id]
            self._blocks.pop(block.id, None)
            if is_copy(block):
                copies = self._copies[written_id(block.id)]
                copies.remove(block.id)
                if not copies:
                    del self._copies[written_id(block.id)]
            elif block.is_memory and self._copies.get(block.id):
                self._orphans.add(block.id)  # the original left: settled by the caller
        if block.is_memory:
            self._count_people(block, -1)
        ids = self._by_hash.get((block.scope, block.content_hash))
        if ids is not None and block.id in ids:
            ids.remove(block.id)
            if not ids:
                del self._by_hash[(block.scope, block.content_hash)]
        key = _event_key(block)
        if key is not None:
            events = self._by_event.get(key, set())
            events.discard(block.id)
            if not events:
                self._by_event.pop(key, None)

    def replace_block(self, path: str, block: Block, sig: Signature) -> None:
        """Record one block rewritten in place (same lines, no reparse)."""
        state = self.files[path]
        state.signature = sig
        state.digest = None
        self._appended_from.pop(path, None)  # an earlier block changed: not appends only
        blocks = state.parsed.blocks
        i = position_of(blocks, block)
        if i is None:
            raise KeyError(block.id)
        self._unindex(path, blocks[i])
        blocks[i] = block
        self._claim(path, blocks, i, i + 1)
        self._settle()

    # ----------------------------------------------------------- reading --

    def load(self, path: str, raw: bytes, sig: Signature) -> ParsedFile:
        """Parse ``raw`` as ``path`` and record it; raises SkipFile.

        Lines appended after a file's last memory item (other agents writing to
        the same ``MEMORY.md``) are read on their own: with eight writers on one
        file a full markdown parse per write made each write O(file)."""
        tf = decode_readable(raw)
        digest = content_digest(raw)
        state = self.files.get(path)
        beside = self.fields.view(path)
        grown = appended_items(state.parsed, tf, beside) if state is not None else None
        if state is not None and grown is not None:
            start = len(state.parsed.blocks)
            if path not in self.unindexed:
                self._appended_from[path] = start
            state.parsed.file = tf
            self.add_blocks(path, grown.blocks[start:], sig)
            state.digest = digest
            self.unindexed.add(path)
            return state.parsed
        self._appended_from.pop(path, None)
        fallback = datetime.fromtimestamp(sig[0] / 1e9, tz=UTC)
        parsed = parse(path, tf, fallback_time=fallback, beside=beside)
        self.put(path, parsed, sig, digest)
        self.unindexed.add(path)
        return parsed

    def reread(self, paths: Iterable[str]) -> list[str]:
        """Forget what a write that did not happen told us of ``paths`` (a dry run,
        a failed write): each is read from disk again, fields files first, and
        the notes read again are returned."""
        paths = list(paths)
        notes: list[str] = []
        for rel in [p for p in paths if is_sidecar(p)]:
            self.fields.touch(rel, (0, 0, 0))
            notes += self.refresh_fields(rel)
        for rel in [p for p in paths if not is_sidecar(p)]:
            if rel in self.files:
                self.invalidate(rel)
                self.refresh(rel)
                notes.append(rel)
        return list(dict.fromkeys(notes))

    def fields_signature(self, path: str) -> str:
        """The stat of ``path``'s fields file as its blocks were read ("" for none),
        for the manifest row."""
        side = sidecar_of(path)
        sig = self.fields.signature(side)
        if sig is None:
            return ""
        digest = self.fields.digest(side)
        return ":".join(str(part) for part in (*sig, *([digest] if digest else [])))

    def refresh_fields(self, side: str) -> list[str]:
        """Re-read a fields file if its stat changed; the notes read again because
        their memories' fields changed (each is then in ``unindexed``)."""
        full = self.root / side
        try:
            st = full.stat()
        except FileNotFoundError:
            changed = self.fields.drop(side)
        else:
            sig = signature_of(st)
            if self.fields.signature(side) == sig:
                return []
            try:
                raw = full.read_bytes()
            except OSError:
                return []
            note = note_of(side)
            if self.fields.digest(side) == content_digest(raw):
                # The same bytes under a new stat (a copied or restored vault).
                self.fields.resign(side, sig)
                if note is not None and note in self.files:
                    self._resigned.add(note)
                return []
            changed = self.fields.read(side, raw, sig)
            if note is not None and note in self.files:
                changed.update(b.id for b in self.files[note].parsed.blocks if b.is_memory)
        notes = sorted({p for i in changed if (p := self._by_id.get(i)) is not None})
        for note in notes:
            self.invalidate(note)
            self.refresh(note)
        return [n for n in notes if n in self.files]

    def _stamp(self, path: str) -> None:
        """Take the digest of a note or fields file whose stat says it holds
        what we read (a manifest from before digests): a later copy of the
        vault is then recognised without parsing it again."""
        try:
            digest = content_digest((self.root / path).read_bytes())
        except OSError:
            return
        note = note_of(path)
        if note is None:
            self.files[path].digest = digest
        else:
            signature = self.fields.signature(path)
            if signature is None:
                return
            self.fields.resign(path, signature, digest)
        if (note or path) in self.files:
            self._resigned.add(note or path)

    def refresh(self, path: str) -> bool:
        """Re-read one file if its stat changed; True when something changed."""
        if is_sidecar(path):
            return bool(self.refresh_fields(path))
        full = self.root / path
        try:
            st = full.stat()
        except FileNotFoundError:
            if path in self.files or path in self.skipped:
                self.drop(path)
                self.skipped.pop(path, None)
                return True
            return False
        sig = signature_of(st)
        state = self.files.get(path)
        if state is not None and state.signature == sig:
            return False
        if self._skipped_sigs.get(path) == sig:
            return False
        try:
            raw = full.read_bytes()
            if state is not None and state.digest == content_digest(raw):
                # The bytes we parsed under a new stat: a copied or restored
                # vault, a checkout of the same text. Only the stat is new.
                state.signature = sig
                self._resigned.add(path)
                return False
            self.load(path, raw, sig)
        except SkipFile as reason:
            self._skip(path, str(reason), sig)
        except OSError as exc:
            self._skip(path, f"unreadable: {exc.strerror}", sig)
        return True

    def _skip(self, path: str, reason: str, sig: Signature) -> None:
        if self.skipped.get(path) != reason:
            log.warning("skipping %s: %s", path, reason)
        self.drop(path)
        self.skipped[path] = reason
        self._skipped_sigs[path] = sig

    def walk(self, feed: ChangeFeed | None = None) -> Iterator[tuple[str, Signature]]:
        """Every markdown file of the vault with its signature, symlinks out of it excluded.

        Plain strings and os.scandir: on a 10k-file vault pathlib made the
        walk several times slower than the stats themselves. Recall runs this
        on every call, so the loop stays lean (one generator step a file, the
        signature built inline): at 10k files it is most of a fresh edit's cost.
        """
        root = str(self.root)
        root_real = os.path.realpath(root)
        stack = [("", root)]
        while stack:
            rel_dir, directory = stack.pop()
            prefix = f"{rel_dir}/" if rel_dir else ""
            if feed is not None:
                feed.watch(rel_dir, directory)
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    if name == SIDECAR_DIR:
                        yield from self._walk_fields(prefix + name, entry.path, feed)
                    continue
                if name.endswith(".md"):
                    try:
                        if entry.is_symlink():
                            self._links = True
                            target = os.path.realpath(entry.path)
                            if not target.startswith(root_real + os.sep):
                                self._skip(
                                    prefix + name, "symlink leads outside the vault", (0, 0, 0)
                                )
                                continue
                        elif entry.is_dir(follow_symlinks=False):
                            stack.append((prefix + name, entry.path))
                            continue
                        st = entry.stat()
                    except OSError:
                        continue
                    yield prefix + name, (st.st_mtime_ns, st.st_size, st.st_ino)
                elif entry.is_dir(follow_symlinks=False):
                    if (not rel_dir and name in EXCLUDED_DIRS) or name == "node_modules":
                        continue
                    stack.append((prefix + name, entry.path))

    def _walk_fields(
        self, rel_dir: str, directory: str, feed: ChangeFeed | None
    ) -> Iterator[tuple[str, Signature]]:
        """The fields files of one ``.fields`` folder, with their signatures."""
        if feed is not None:
            feed.watch(rel_dir, directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.endswith(".md.jsonl") and entry.name[0] != ".":
                try:
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    st = entry.stat()
                except OSError:
                    continue
                yield f"{rel_dir}/{entry.name}", (st.st_mtime_ns, st.st_size, st.st_ino)

    def scan(self, *, history: bool = True) -> ScanDelta:
        """Re-parse the files that changed: those the change feed names, else stat them all.

        Files re-keyed meanwhile (a copied line took its id over) are listed
        as changed too, so whoever indexes the delta re-indexes them.
        ``history=False`` leaves the dates from git history as they are (a
        scan under the write lock: git log would hold every writer up); the
        next scan that follows history re-reads what that changes.
        """
        if history:
            self._follow_history()
        delta = self._scan_changed()
        delta.add(self.take_rekeyed())
        return delta

    def _scan_changed(self) -> ScanDelta:
        feed = self._feed
        if (
            feed is not None
            and self._full_at is not None
            and not self._links
            and time.monotonic() - self._full_at < _FULL_SCAN_SECONDS
        ):
            touched = feed.drain()
            if touched is not None:
                return self._scan_paths(touched | self._forced)
        return self._scan_all()

    def _scan_paths(self, paths: set[str]) -> ScanDelta:
        ordered = sorted(paths)
        for rel in ordered:
            if os.path.islink(self.root / rel):
                # A new symlink: only the walk checks where links lead.
                return self._scan_all()
        delta = ScanDelta()
        self._forced.clear()
        # Fields files first: the notes they change are read once, with them.
        for rel in [r for r in ordered if is_sidecar(r)]:
            delta.add(self.refresh_fields(rel))
        for rel in [r for r in ordered if not is_sidecar(r)]:
            was_known = rel in self.files
            if self.refresh(rel):
                if rel in self.files:
                    delta.add([rel])
                elif was_known:
                    delta.removed.append(rel)
        return delta

    def _scan_all(self) -> ScanDelta:
        """Stat every markdown file; re-parse only the changed ones."""
        if self._live and not self._feed_tried:
            self._feed_tried = True
            self._feed = ChangeFeed.open(str(self.root))
        feed = self._feed
        if feed is not None:
            feed.drain()  # whatever it says, this walk sees too
        self._full_at = time.monotonic()
        self._forced.clear()
        self._links = False
        delta = ScanDelta()
        files = self.files
        skipped_sigs = self._skipped_sigs
        seen: list[str] = []
        sides: list[tuple[str, Signature]] = []
        notes: list[tuple[str, Signature]] = []
        for rel, sig in self.walk(feed):
            (sides if rel.endswith(".jsonl") else notes).append((rel, sig))
        fields = self.fields
        present_sides = set()
        for rel, sig in sides:
            present_sides.add(rel)
            if fields.signature(rel) != sig:
                delta.add(self.refresh_fields(rel))
            elif fields.digest(rel) is None:
                self._stamp(rel)
        for rel in [r for r in fields.tracked() if r not in present_sides]:
            delta.add(self.refresh_fields(rel))
        for rel, sig in notes:
            seen.append(rel)
            state = files.get(rel)
            if state is not None and state.signature == sig:
                if state.digest is None:
                    self._stamp(rel)
                continue
            if skipped_sigs.get(rel) == sig:
                continue
            was_known = state is not None
            if self.refresh(rel):
                if rel in files:
                    delta.add([rel])
                elif was_known:
                    delta.removed.append(rel)
        present = set(seen)
        for rel in sorted(files.keys() - present):
            self.drop(rel)
            delta.removed.append(rel)
        for rel in list(self.skipped.keys() - present):
            self.skipped.pop(rel, None)
            self._skipped_sigs.pop(rel, None)
        return delta



def _parse_stamp(text: str) -> tuple[Signature, str | None]:
    """A fields file's stat and digest as a manifest row records them
    (``mtime:size:ino[:digest]``)."""
    parts = str(text).split(":")
    try:
        a, b, c = (int(x) for x in parts[:3])
    except ValueError:
        return (0, 0, 0), None
    return (a, b, c), (parts[3] if len(parts) == 4 and parts[3] else None)
