"""The one write path: every change to a vault file and every commit goes through here.

A write runs under the vault lock (a thread mutex plus a file lock shared by
processes). Before it, what a person changed meanwhile is committed as that
person. The write itself is a :class:`Transaction`: its edits are applied to
an in-memory copy of each file they touch, and the transaction's end writes
each file with a compare-and-swap against a concurrent editor
(:mod:`mdmem.store.swap`), makes one git commit authored by the agent, with
trailers, and updates both indexes, so the change is searchable on return.

Use :meth:`Writer.batch` (one commit for many writes, keeping what was done
before an error) or :meth:`Writer.transaction` (all or nothing, or a dry
run). Inside one, the transaction's methods add list items and entries,
rewrite blocks, set inline fields, remove blocks and create files, and
:meth:`Transaction.set_message` names the commit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from mdmem.config import Settings
from mdmem.errors import (
    ConflictError,
    DuplicateIdError,
    GitError,
    InvalidInputError,
    LockTimeoutError,
    MemoryNotFoundError,
    VaultFileError,
)
from mdmem.files import blocks as blk
from mdmem.files.catalog import Catalog, signature_of
from mdmem.files.health import DERIVED_ERRORS
from mdmem.files.ids import IdIssuer, normalize_id
from mdmem.files.sidecar import Record, encode, is_sidecar, parse_records, sidecar_of, stamp
from mdmem.files.textfile import SkipFile, TextFile, content_digest, decode, file_stat, safe_path
from mdmem.index.indexer import AppendStream, Indexer
from mdmem.models import Block
from mdmem.store import typed_secrets as typed
from mdmem.store.commitrecords import recorded
from mdmem.store.editors import (
    Edit,
    Editor,
    Pending,
    block_remover,
    blocks_rewriter,
    entry_appender,
    file_creator,
    id_replacer,
    item_appender,
    raw_replacer,
    record_appender,
    refielder,
    turn_appender,
)
from mdmem.store.fieldchanges import field_edits
from mdmem.store.gitstore import GitStore, Identity, format_message
from mdmem.store.humanedits import HumanEdits
from mdmem.store.humanlines import give_ids, give_typed_ids
from mdmem.store.intent import Intent, recover
from mdmem.store.swap import Orphans, Swapped, swap, undo_all
from mdmem.store.vaultlock import VaultLock
from mdmem.store.verify import ManifestCheck, parse_matches
from mdmem.store.write_guard import refuse_new_secrets

__all__ = ["Change", "Transaction", "Writer", "memory_trailers"]

log = logging.getLogger("mdmem")

Trailers = list[tuple[str, str]]
# (path, bytes before or None for a new file, bytes after): what a dry run would write.
Change = tuple[str, bytes | None, bytes]

_CAS_ATTEMPTS = 100
_CONTENDED_AFTER = 5
# Below this many appended blocks the keyword index is written at the flush:
# forking Whoosh's sub-writers costs more than it saves.
STREAM_AFTER = 2_000
# Blocks are fed in chunks (Whoosh hands its sub-writers 100 documents a job).
_STREAM_CHUNK = 100
_MAX_ID_TRAILERS = 100
_SCAN_LIMIT = 500  # above this many files, ask git for dirty files instead of stat-scanning
_EDITOR_ACTIVE_FOR = 10.0  # seconds a foreign edit keeps the writer careful
_FIELDS_MAX_BYTES = 256 * 1024 * 1024  # a fields file is read whole, but it is not a note


def memory_trailers(memory_id: str, kind: str, scope: str, op: str) -> Trailers:
    """The trailers that make a commit findable by memory, kind, scope and operation."""
    where = scope or blk.ROOT_SCOPE
    return [("Memory-Id", memory_id), ("Kind", kind), ("Scope", where), ("Op", op)]


class Transaction:
    """The edits of one commit: apply them with the methods below, inside
    :meth:`Writer.batch` or :meth:`Writer.transaction`.

    Each method takes the commit subject and trailers of that one write; a
    commit of several writes is titled from them, or by :meth:`set_message`.
    """

    def __init__(self, writer: Writer, *, defer_resolve: bool = False) -> None:
        self._writer = writer
        self.pending: dict[str, Pending] = {}
        self._subjects: list[str] = []
        self._trailers: Trailers = []
        self._ops = 0
        # A batch() auto-resolves its new memories at its end, embedded together.
        self.defers_resolve = defer_resolve
        self._to_resolve: list[str] = []
        # A large import into one file is keyword-indexed while it is built.
        self._stream: AppendStream | None = None
        self._stream_path: str | None = None
        self._streamed = 0  # how many of that file's appended blocks were fed
        self.changes: list[Change] = []  # filled at the end of a dry run

    # -- what the commit says ------------------------------------------------

    @property
    def ops(self) -> int:
        """How many writes the transaction holds so far."""
        return self._ops

    @property
    def trailers(self) -> Trailers:
        """The trailers collected so far (a copy)."""
        return list(self._trailers)

    def set_message(self, subject: str, trailers: Iterable[tuple[str, str]]) -> None:
        """Replace the commit's subject and trailers (one commit, one meaning)."""
        self._subjects = [subject]
        self._trailers = list(trailers)

    def resolve_later(self, memory_id: str) -> None:
        """Auto-resolve ``memory_id`` when the batch ends, with the batch's other memories."""
        self._to_resolve.append(memory_id)

    # -- edits ---------------------------------------------------------------

    def add_item(
        self,
        rel: str,
        lines: list[str],
        *,
        subject: str,
        trailers: Trailers,
        topic: str | None = None,
        hashed: tuple[str, str] | None = None,
        fields: tuple[str, list[tuple[str, str]]] | None = None,
    ) -> None:
        """Append a rendered list item to ``rel`` (under ``## Topic: topic`` if given);
        ``fields``: (its id, the fields kept beside it)."""
        if fields is not None:
            self.record_fields(rel, fields[0], fields[1])
        self.apply(rel, item_appender(rel, lines, topic=topic, hashed=hashed), subject, trailers)

    def add_entry(
        self,
        rel: str,
        lines: list[str],
        memory_id: str,
        *,
        header: list[str],
        subject: str,
        trailers: Trailers,
        fields: list[tuple[str, str]] | None = None,
        day: str | None = None,
    ) -> None:
        """Append a rendered entry section (``day``: a session turn, under that
        day's heading); ``header`` starts the file if it is new; ``fields`` are
        kept beside it."""
        if fields is not None:
            self.record_fields(rel, memory_id, fields)
        if day is not None:
            edit = turn_appender(header, day, lines, memory_id)
        else:
            edit = entry_appender(header, lines, memory_id)
        self.apply(rel, edit, subject, trailers)

    def record_fields(
        self, rel: str, memory_id: str, values: Iterable[tuple[str, str | None]]
    ) -> None:
        """Keep fields of ``memory_id``, a memory of the note ``rel``, in the fields
        file beside it (:mod:`mdmem.files.sidecar`); None unsets a field."""
        self.record_many(rel, [(memory_id, list(values))])

    def record_lines(self, rel: str, lines: list[str]) -> None:
        """Append record lines as they are (a restore) to ``rel``'s fields file."""
        records, _bad = parse_records(lines)
        side = sidecar_of(rel)
        self._apply_quiet(side, record_appender(lines))
        self._writer.catalog.fields.add(side, records)

    def record_many(
        self,
        rel: str,
        changes: Iterable[tuple[str, Iterable[tuple[str, str | None]]]],
        *,
        refresh: bool = True,
    ) -> None:
        """:meth:`record_fields` for several memories of one note, in one append.
        Their blocks take the new fields at once (``refresh=False``: the caller's
        next edit of their lines does it)."""
        records = [Record(i, stamp(), tuple(values)) for i, values in changes]
        records = [r for r in records if r.values]
        if not records:
            return
        side = sidecar_of(rel)
        catalog = self._writer.catalog
        self._apply_quiet(side, record_appender([encode(r) for r in records]))
        changed = catalog.fields.add(side, records)
        for memory_id in sorted(changed) if refresh else ():
            path, block = catalog.path_of(memory_id), catalog.block(memory_id)
            if path is not None and block is not None and block.is_memory:
                self._apply_quiet(path, refielder(memory_id, catalog.fields.view(path)))

    def set_fields(
        self,
        memory_id: str,
        updates: dict[str, str | None],
        *,
        op: str,
        subject: str,
        extra_trailers: Trailers | None = None,
    ) -> None:
        """Set (or with None unset) fields of one memory, kept beside its line; a
        memory retired (superseded, resolved, archived) leaves its note for the
        note's archive, one made active again comes back (:mod:`mdmem.store.fieldchanges`)."""
        block = self._writer.block(memory_id)
        trailers = memory_trailers(block.id, block.kind, block.scope, op) + (extra_trailers or [])
        self.set_fields_of([block.id], updates, subject=subject, trailers=trailers)

    def set_fields_of(
        self,
        memory_ids: Iterable[str],
        updates: dict[str, str | None],
        *,
        subject: str,
        trailers: Trailers,
    ) -> None:
        """:meth:`set_fields` for many memories at once (one record line each)."""
        writer = self._writer
        blocks = [writer.block(i) for i in memory_ids]
        fields = writer.catalog.fields
        for step in field_edits(blocks, updates, fields):
            if step.records:
                self.record_many(step.path, step.records, refresh=False)
            for edit in step.edits:
                self._apply_quiet(step.path, edit)
        self._subjects.append(subject)
        self._trailers.extend(trailers)
        self._ops += 1

    def remove_block(self, memory_id: str, *, subject: str, trailers: Trailers) -> Block:
        """Remove one block from its file; returns it as it was."""
        block = self._writer.block(memory_id)
        self.apply(block.path, block_remover(block.id), subject, trailers)
        return block

    def rewrite_blocks(
        self,
        memory_ids: Iterable[str],
        make: Callable[[Block, TextFile], list[str]],
        *,
        subject: str,
        op: str,
        trailers: Trailers,
    ) -> None:
        """Replace many blocks' lines with ``make(block, file)``: one edit per file."""
        by_path: dict[str, list[str]] = {}
        for memory_id in memory_ids:
            block = self._writer.block(memory_id)
            by_path.setdefault(block.path, []).append(block.id)
        for rel, ids in by_path.items():
            self.apply(
                rel,
                blocks_rewriter(ids, make),
                subject,
                [("Op", op), *trailers, *(("Memory-Id", i) for i in ids[:20])],
            )

    def give_fresh_id(
        self,
        rel: str,
        memory_id: str,
        occurrence: int,
        new_id: str,
        *,
        subject: str,
        trailers: Trailers,
    ) -> None:
        """Give the ``occurrence``-th line of ``rel`` carrying ``^memory_id``
        (1-based, file order) the id ``new_id``: the repair of a copied line."""
        self.apply(rel, id_replacer(memory_id, occurrence, new_id), subject, trailers)

    def create_file(self, rel: str, lines: list[str], *, subject: str, trailers: Trailers) -> None:
        """Create a markdown file (indexed like any other); it must not exist yet."""
        self.apply(rel, file_creator(rel, lines), subject, trailers)

    def stage_raw_file(self, rel: str, data: bytes) -> None:
        """Add a raw, non-indexed file (a full tool output) to this commit.

        It bypasses the parser on purpose: the catalog never walks its folder,
        and a parse would put a multi-megabyte payload into the indexes.
        """
        full = safe_path(self._writer.root, rel)
        try:
            original: bytes | None = full.read_bytes()
        except FileNotFoundError:
            original = None
        text = data.decode("utf-8")
        tf = TextFile(lines=[text])
        self.pending[rel] = Pending(
            original=original, tf=tf, parsed=None, edits=[raw_replacer(text)]
        )
        self._ops += 1  # no subject of its own: the entry that points at it names the commit

    def apply(self, rel: str, edit: Editor, subject: str, trailers: Trailers) -> None:
        """Apply any editor (see :mod:`mdmem.store.editors`) to one file."""
        self._apply_quiet(rel, edit)
        self._subjects.append(subject)
        self._trailers.extend(trailers)
        self._ops += 1

    def _apply_quiet(self, rel: str, edit: Editor) -> None:
        """Apply an editor as part of a write another call names (no subject of its own)."""
        writer = self._writer
        pending = self.pending.get(rel)
        if pending is None:
            # Checked once per file and transaction (resolving is a syscall
            # per folder); the flush checks the path again before it writes.
            pending = writer.load_pending(rel, safe_path(writer.root, rel))
            self.pending[rel] = pending
        result = edit(pending.tf, pending.parsed)
        pending.edits.append(edit)
        pending.parsed = writer.reparse(rel, pending, result, self)

    # -- the end -------------------------------------------------------------

    def stream_appended(self, rel: str, pending: Pending, indexer: Indexer) -> None:
        """Feed a large batch's appended blocks to the keyword stream as they come."""
        if len(pending.appended) < STREAM_AFTER:
            return
        if self._stream_path is None:
            self._stream_path = rel
            self._stream = indexer.open_stream()
        if self._stream is None or rel != self._stream_path:
            return
        if len(pending.appended) - self._streamed < _STREAM_CHUNK:
            return  # the rest goes in at the flush
        self._stream.feed(pending.appended[self._streamed :])
        self._streamed = len(pending.appended)

    def message(self, subject: str | None) -> tuple[str, Trailers]:
        """The commit's title and trailers."""
        subjects, trailers = self._subjects, self._trailers
        if len(subjects) == 1:
            title = subjects[0]
        elif subject is None:
            title = f"{subjects[0]} (+{len(subjects) - 1} more)"
        else:
            title = f"{subject}: {self._ops} writes"
        if len(subjects) > 1:
            ops = {v for k, v in trailers if k == "Op"}
            trailers = [t for t in trailers if t[0] != "Op"] + [
                ("Op", "batch" if len(ops) != 1 else next(iter(ops)))
            ]
            trailers = list(dict.fromkeys(trailers))
            ids = [t for t in trailers if t[0] == "Memory-Id"]
            if len(ids) > _MAX_ID_TRAILERS:
                # history() finds a memory by its id in the diff; the trailers
                # are a convenience, so a huge import lists a few.
                trailers = [t for t in trailers if t[0] != "Memory-Id"]
                trailers = ids[:_MAX_ID_TRAILERS] + trailers + [("Memories", str(len(ids)))]
        return title, trailers

    def index_written(self, written: list[str], indexer: Indexer, catalog: Catalog) -> None:
        # The streamed file first: any other keyword write would cancel it.
        for rel in sorted(written, key=lambda r: r != self._stream_path):
            if is_sidecar(rel):
                continue  # read with its note: the note's blocks hold the fields
            pending = self.pending[rel]
            stream = self._stream if rel == self._stream_path else None
            if pending.only_appends and rel in catalog.files:
                indexer.add_appended(
                    rel, pending.appended, stream, rewritten=list(pending.rewritten.values())
                )
            else:
                if stream is not None:
                    stream.cancel()
                indexer.apply([rel], [])

    def cancel_stream(self) -> None:
        if self._stream is not None:
            self._stream.cancel()  # a no-op once the flush used it

    def to_resolve(self) -> list[str]:
        return list(self._to_resolve)


class Writer:
    """Locking, compare-and-swap file writes, commits and index updates for one vault."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        state_dir: Path,
        git: GitStore,
        catalog: Catalog,
        indexer: Indexer,
        agent: str,
    ) -> None:
        self.root = root
        self.settings = settings
        self.git = git
        self.catalog = catalog
        self.indexer = indexer
        self.agent = agent
        # One process at a time, in turn (see mdmem.store.vaultlock), and one
        # thread of this process at a time; recalls share the mutex too.
        self.vault_lock = VaultLock(root, state_dir)
        self.state_dir = state_dir
        self.mutex = threading.RLock()
        # Called at a batch's end with its new memory ids (auto-resolve).
        self.after_batch: Callable[[list[str]], None] | None = None
        self._ids = IdIssuer(state_dir)
        self._current: Transaction | None = None
        self._written_sigs: dict[str, tuple[int, int, int]] = {}
        # What git has, and a person's edits committed as theirs (humanedits).
        self.human = HumanEdits(root, settings, git)
        self._foreign_edit_at: dict[str, float] = {}
        self._orphans = Orphans()
        # Files whose indexing waited in vain for another writer's lock.
        self._index_backlog: set[str] = set()
        self._indexed_head: str | None = None
        self._manifest_check = ManifestCheck(catalog)

    # -- public --------------------------------------------------------------

    @property
    def current(self) -> Transaction | None:
        """The open transaction of this vault, if any."""
        return self._current

    def new_id(self) -> str:
        """A fresh memory id (unique in the vault, sortable by time)."""
        return self._ids.issue()

    def close(self) -> None:
        """Carry over what editors wrote to replaced files, then stop watching them."""
        while self._orphans:
            with self.lock():
                self._orphans.expire_all()
                self._orphans.rescue()

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The vault lock: one thread of one process writes at a time."""
        with self._locked(sync=False):
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The vault lock, after committing what a person changed meanwhile."""
        with self._locked(sync=True):
            yield

    @contextmanager
    def batch(self, subject: str | None = "batch import") -> Iterator[Transaction]:
        """Many writes, one commit (and one file write per file); nests into an open one.

        What was applied before an error is kept. Auto-resolve of the batch's
        new memories runs at its end (see :attr:`after_batch`).
        """
        with self.writing():
            if self._current is not None:
                yield self._current  # nested: the outer transaction commits
                return
            tx = self._current = Transaction(self, defer_resolve=True)
            try:
                yield tx
            finally:
                try:
                    if self.after_batch is not None and tx.to_resolve():
                        self.after_batch(tx.to_resolve())
                finally:
                    self._current = None
                    try:
                        self.flush(tx, subject)
                    finally:
                        tx.cancel_stream()

    @contextmanager
    def transaction(self, subject: str | None, *, dry_run: bool = False) -> Iterator[Transaction]:
        """All or nothing: one commit if the body returns, no write if it raises.

        With ``dry_run`` nothing is written either, and ``tx.changes`` lists
        (path, old bytes or None, new bytes) for a diff.
        """
        with self.mutex:
            if self._current is not None:
                raise InvalidInputError("this cannot run inside vault.batch()")
            with self._locked(sync=not dry_run):
                tx = self._current = Transaction(self)
                ok = False
                try:
                    yield tx
                    ok = True
                finally:
                    self._current = None
                    if ok and not dry_run:
                        self.flush(tx, subject)
                    else:
                        if ok:
                            tx.changes.extend(
                                (rel, p.original, p.tf.to_bytes()) for rel, p in tx.pending.items()
                            )
                        # Drop the pending parse: the catalog reads the disk again.
                        self.catalog.reread(tx.pending)

    def block(self, memory_id: str) -> Block:
        """The current block of a memory (re-read if its file changed), or MemoryNotFoundError."""
        memory_id = normalize_id(memory_id)
        with self.mutex:
            path = self.catalog.path_of(memory_id)
            tx = self._current
            if path is not None and (tx is None or path not in tx.pending):
                self.catalog.refresh(path)
            block = self.catalog.block(memory_id)
            if block is None:
                self.refresh()
                block = self.catalog.block(memory_id)
            if block is None and self.verify_manifest():
                # A manifest row hid it: "not found" must mean not in the files.
                block = self.catalog.block(memory_id)
        if block is None:
            raise MemoryNotFoundError(f"no memory {memory_id}")
        return block

    def verify_manifest(self) -> list[str]:
        """Re-read files whose blocks the manifest gave but which hold other
        memories (see :mod:`mdmem.store.verify`); returns them. Each file is
        read once per process, so a lookup that misses again costs nothing."""
        with self.mutex:
            stale = self._manifest_check.stale()
            if not stale:
                return []
            log.warning(
                "the manifest was behind the files for %s; re-reading them", ", ".join(stale[:5])
            )
            tx = self._current
            for rel in stale:
                if tx is None or rel not in tx.pending:
                    self.catalog.invalidate(rel)
                    self.catalog.refresh(rel)  # parsed now; indexed on the next refresh
            self.refresh()
            return stale

    def sole_block(self, memory_id: str) -> Block:
        """:meth:`block` for a call that names one memory: DuplicateIdError when
        the id is on more than one line (a copied line), rather than acting on
        one of them (forget would leave the other; get would show half)."""
        self.refresh()  # a line copied a moment ago counts (no-op inside a write)
        block = self.block(memory_id)
        copies = self.catalog.copies_of(block.id)
        if copies:
            places = tuple((b.path, b.line_start, b.scope) for b in (block, *copies))
            where = ", ".join(f"{path}:{line}" for path, line, _ in places)
            raise DuplicateIdError(
                f"{block.id} is on {len(places)} lines ({where}), a copied line: "
                "run `mdmem doctor --fix` to give the copy a fresh id",
                block.id,
                places,
            )
        return block

    def refresh_file(self, rel: str) -> None:
        """Re-read one file unless the open transaction holds it."""
        tx = self._current
        if tx is not None and rel in tx.pending:
            return
        self.catalog.refresh(rel)

    def refresh(self) -> list[str]:
        """Notice files changed on disk and index them; returns the changed paths.

        When HEAD moved since the last index (a pull, checkout or branch
        switch), the files ``git diff --name-status -M`` names are re-read even
        if their stat looks unchanged. Nothing while a write is open, in any
        thread (it indexes what it writes; the rest is read next time).
        """
        if self._current is not None:
            return []  # unlocked: a reader beside a long write must not wait for it
        with self.mutex:
            if self._current is not None:
                return []
            self.indexer.ensure_state()
            self.follow_head()
            delta = self.catalog.scan()
            self.human.known_clean &= not self.catalog.typed_in(delta.changed)
            todo = dict.fromkeys(
                [*delta.changed, *delta.removed, *self._index_backlog, *self.catalog.unindexed]
            )
            if todo:
                changed = [p for p in todo if p in self.catalog.files]
                removed = [p for p in todo if p not in self.catalog.files]
                try:
                    self.indexer.apply(changed, removed)
                    self._index_backlog.clear()
                except LockTimeoutError as e:
                    # Another process is writing the index (a large import):
                    # answer from the index as it is, and index these next time.
                    log.warning("%s; recall uses the index as it is for now", e)
                    self._index_backlog.update(todo)
            return [*delta.changed, *delta.removed]

    def follow_head(self) -> None:
        """Re-read the files a commit made elsewhere (pull, checkout) changed."""
        head = self.git.head()
        if head is None or head == self._indexed_head:
            return
        try:
            indexed = self._indexed_head or self.indexer.manifest.get_meta("indexed_commit")
        except DERIVED_ERRORS:
            indexed = None  # the manifest cannot say: the stat scan alone decides this time
        if indexed and indexed != head:
            for name in self.git.changed_between(indexed, head):
                if name.endswith(".md"):
                    self.catalog.invalidate(name)
            self.git.forget_tracked()
        self._indexed_head = head
        with contextlib.suppress(*DERIVED_ERRORS):  # a cache of a cache: set next time
            self.indexer.manifest.set_meta("indexed_commit", head)

    def commit_human_edits(self, paths: list[str] | None = None) -> str | None:
        """Commit a person's edits as theirs, then give ids to the items they typed
        into memory files, committed or not (humanlines; ``git blame`` tells their
        lines from mdmem's)."""
        with self.lock():
            sha, _ = self.human.commit(paths)
            human = self.human
            give_ids(self, Transaction(self), human.person(), human.kept_out, self.git)
            return sha

    def secrets_kept_out(self, paths: Iterable[str] | None = None) -> dict[str, typed.KeptOut]:
        """Uncommitted files (or ``paths``) with a typed secret git lacks: see typed_secrets."""
        return self.human.secrets_kept_out(paths)

    # -- the lock ------------------------------------------------------------

    @contextmanager
    def _locked(self, *, sync: bool) -> Iterator[None]:
        with self.mutex:
            if self._current is not None:
                yield
                return
            # The lock's queue lives in the state dir: if that was deleted under
            # us, make it (and the derived state) again first.
            self.indexer.ensure_state()
            with self.vault_lock.hold(self.settings.git.lock_timeout):
                if self.settings.git.enabled and self._recover_interrupted():
                    self.human.known_clean = False
                if self._orphans:
                    self._orphans.rescue()
                if sync:
                    self._sync_before_write()
                yield

    def _sync_before_write(self) -> None:
        """Commit what a person changed since our last write, as that person, and
        give the items they typed ids (humanlines): a typed line is a memory by the next write.

        Small vaults are checked with a stat scan (microseconds per file), asking git only
        on a change or at the first write after opening; large ones ask git every time.
        """
        if len(self.catalog.files) <= _SCAN_LIMIT:
            # No git dates' walk here: it would hold the lock at every write (a recall does it).
            delta = self.catalog.scan(history=False)
            if delta:
                self.indexer.apply(delta.changed, delta.removed)
            if not delta and self.human.known_clean:
                return
        before = self.git.head()
        sha, taken = self.human.commit()
        self.human.known_clean = True
        if sha is not None:
            # The lines they typed into memory files get ids now, from the
            # commit's own diff: a typed line is a memory with an id by the next write.
            person = self.human.person()
            tx = Transaction(self)
            give_typed_ids(
                self, tx, person, before, sha, taken, self.git, quiet_for=_EDITOR_ACTIVE_FOR
            )

    def _recover_interrupted(self) -> list[str]:
        """Finish a write a killed process left between its file writes and its commit."""

        def commit(message: str, agent: str, paths: list[str]) -> None:
            note = message.rstrip("\n") + "\nRecovered: interrupted write\n"
            self.git.commit(note, Identity.agent(agent), paths=paths)

        def dirty(paths: list[str]) -> list[str]:
            return sorted(set(self.git.dirty_paths()) & set(paths))

        return recover(self.state_dir, self.root, commit, dirty)

    # -- applying edits --------------------------------------------------------

    def load_pending(self, rel: str, full: Path) -> Pending:
        """A file's bytes and parse, as the start of a transaction's copy of it."""
        before = file_stat(full)
        try:
            raw: bytes | None = full.read_bytes()
        except FileNotFoundError:
            raw = None
        after = file_stat(full)
        # Only a stat that held through the read describes what was read.
        seen = after if after == before else None
        if raw is None:
            return Pending(original=None, tf=TextFile.empty(), parsed=None, seen=seen)
        if is_sidecar(rel):
            # Not a note: its records are the catalog's (catalog.fields), not blocks.
            try:
                tf = decode(raw, max_bytes=_FIELDS_MAX_BYTES)
            except SkipFile as reason:
                raise VaultFileError(f"{rel} cannot be read ({reason}); fix or move it") from None
            return Pending(original=raw, tf=tf, parsed=None, seen=seen)
        state = self.catalog.files.get(rel)
        try:
            sig = signature_of(full.stat())
        except FileNotFoundError:
            sig = (0, 0, 0)
        try:
            # The cached parse is used only if it is byte-for-byte what is on
            # disk: a stat taken just after our own write may already include
            # a human's append, so a matching signature alone is not proof.
            cached = state.parsed if state is not None and state.signature == sig else None
            if cached is not None and cached.file is None:  # blocks came from the manifest
                if not parse_matches(cached, raw):
                    # The manifest was behind the file: edits must see the file's blocks.
                    cached = None
                else:
                    cached.file = decode(raw)
            if cached is not None and cached.file is not None and cached.file.same_bytes(raw):
                parsed = cached
            else:
                parsed = self.catalog.load(rel, raw, sig)
        except SkipFile as reason:
            raise VaultFileError(f"{rel} cannot be parsed ({reason}); fix or move it") from None
        # The catalog keeps the parse of what is on disk; pending work gets its own copy.
        parsed = parsed.copy()
        assert parsed.file is not None
        parsed.file.check_writable(rel)  # never drop or re-encode a person's bytes
        tf = parsed.file = parsed.file.copy()
        return Pending(original=raw, tf=tf, parsed=parsed, seen=seen, first=tuple(parsed.blocks))

    def reparse(
        self, rel: str, pending: Pending, result: Edit, tx: Transaction
    ) -> blk.ParsedFile | None:
        """Bring the pending parse and the catalog up to date with the pending text.

        An append is parsed on its own (the file's other blocks are unchanged),
        which keeps a write O(new lines) instead of O(file); anything else is a
        full reparse. The catalog always gets its own ParsedFile object.
        """
        if is_sidecar(rel):
            return None  # the records went to catalog.fields as they were made
        parsed = pending.parsed
        beside = self.catalog.fields.view(rel)
        if result.appended_at is not None and parsed is not None and result.ids:
            first = result.appended_at
            if result.item:
                new_blocks = [
                    blk.item_block(
                        parsed, pending.tf.lines[first:], first, hashed=result.hashed, beside=beside
                    )
                ]
            else:
                new_blocks = blk.appended_entries(
                    parsed,
                    pending.tf,
                    first,
                    result.ids,
                    heading=result.heading or "",
                    beside=beside,
                )
            if {b.id for b in new_blocks} == set(result.ids) and rel in self.catalog.files:
                parsed.file = pending.tf
                parsed.blocks.extend(new_blocks)
                self.catalog.add_blocks(rel, new_blocks, (0, 0, 0))
                pending.appended.extend(new_blocks)
                tx.stream_appended(rel, pending, self.indexer)
                return parsed
        if parsed is None and pending.original is None and result.item and result.ids:
            # A new file of one item (an archive's first line): its title over it.
            parsed = blk.ParsedFile(path=rel, file=pending.tf, frontmatter={}, frontmatter_lines=0)
            first = result.appended_at or 0
            parsed.blocks = [blk.item_block(parsed, pending.tf.lines[first:], first, beside=beside)]
            self.catalog.put(rel, parsed.copy(), (0, 0, 0))
            pending.only_appends = False
            return parsed
        if result.removed is not None and parsed is not None and rel in self.catalog.files:
            moved = blk.without_lines(parsed, pending.tf, *result.removed)
            if moved is not None:
                self.catalog.put(rel, moved.copy(), (0, 0, 0))
                pending.only_appends = False
                return moved
        if result.rewritten is not None and parsed is not None and rel in self.catalog.files:
            new = result.rewritten
            i = blk.position_of(parsed.blocks, new)
            if i is not None:
                before = parsed.blocks[i]
                parsed.file = pending.tf
                parsed.blocks[i] = new
                self.catalog.replace_block(rel, new, (0, 0, 0))
                # Appended blocks are the file's last ones (rewrites keep positions).
                j = i - (len(parsed.blocks) - len(pending.appended))
                if j >= 0 and pending.appended[j].id == new.id:
                    pending.appended[j] = new  # written in this batch: index it as it ends
                else:
                    first_seen = pending.rewritten.get(new.id, (before, new))[0]
                    pending.rewritten[new.id] = (first_seen, new)
                return parsed
        pending.only_appends = False
        try:
            fresh = blk.parse(rel, pending.tf, beside=beside)
        except SkipFile as reason:
            raise VaultFileError(f"{rel} would not parse after the edit ({reason})") from None
        self.catalog.put(rel, fresh.copy(), (0, 0, 0))
        return fresh

    def flush(self, tx: Transaction, subject: str | None, author: Identity | None = None) -> None:
        """Write every pending file (compare-and-swap) and make one commit.

        Provenance: git gets a person's version of a file, as theirs, before
        the agent's change to it (:meth:`HumanEdits.commit_theirs`), and the agent's
        commit holds exactly the agent's bytes (:meth:`HumanEdits.check_commit`).
        """
        if not tx.pending:
            return
        git_on = self.settings.git.enabled
        title, trailers = tx.message(subject) if git_on and tx.ops else ("", [])
        message = format_message(title, trailers=trailers) if title else ""
        refuse_new_secrets(tx.pending, message, self.settings.secrets)  # every door's backstop
        written: list[str] = []
        installed: dict[str, Swapped] = {}
        intent: Intent | None = None
        if git_on and tx.ops:
            # Kept until the commit exists: a kill in between is rolled
            # forward by the next lock holder (mdmem.store.intent).
            intent = Intent(self.state_dir, message, self.agent)
            changed = {
                rel: pending
                for rel, pending in tx.pending.items()
                if pending.original is None or not pending.tf.same_bytes(pending.original)
            }
            many = len(changed) > 1
            for rel, pending in changed.items():
                intent.record(rel, pending.original, pending.tf.to_bytes(), keep_bytes=many)
            intent.save()
        try:
            self._install(tx, intent, written, installed)
        except BaseException:
            if intent is not None:
                intent.clear()  # an error the caller sees is not rolled forward
            raise
        if git_on and tx.ops:
            agent = author or Identity.agent(self.agent)  # author: humanlines' ids
            before = self.git.head()
            # The commit is a git process we mostly wait on, and indexing is
            # our own CPU work: overlap them (a durable write's two halves).
            with ThreadPoolExecutor(max_workers=1) as pool:
                # A file with a person's secret git lacks goes in without it.
                kept = self.human.kept_out.intersection(installed)
                ours = {rel: done.ours for rel, done in installed.items()}
                mode = self.settings.secrets
                # The commit is recorded (commitrecords) in the same thread, off the index's.
                commit = recorded(typed.commit_written, self.state_dir, tx.pending)
                committed = pool.submit(commit, self.git, message, agent, ours, kept, mode)
                tx.index_written(written, self.indexer, self.catalog)
                failure = committed.exception()
            if failure is not None:
                if intent is not None:
                    intent.clear()  # an error the caller sees is not rolled forward
                if not isinstance(failure, Exception) or self.git.head() != before:
                    raise failure  # the commit exists (what failed came after it)
                raise self._undo(tx, installed, failure) from failure
            self.human.check_commit(before, message, agent, installed)
            if intent is not None:
                intent.clear()
        else:
            tx.index_written(written, self.indexer, self.catalog)

    def _undo(self, tx: Transaction, installed: dict[str, Swapped], failure: Exception) -> GitError:
        """The agent's commit failed (a full disk, a broken repository): put
        each file back as it was, so that no line stays that git doesn't
        have; the error to raise, saying so."""
        error = undo_all(self.root, installed, failure)
        for rel in installed:
            self._written_sigs.pop(rel, None)
        notes = self.catalog.reread(tx.pending)
        with contextlib.suppress(*DERIVED_ERRORS, OSError, LockTimeoutError):
            self.indexer.apply([r for r in [*tx.pending, *notes] if r in self.catalog.files], [])
        return error

    def _install(
        self,
        tx: Transaction,
        intent: Intent | None,
        written: list[str],
        installed: dict[str, Swapped],
    ) -> None:
        """Replace each pending file (compare-and-swap), committing a person's version first."""
        git_on = self.settings.git.enabled
        for rel, pending in tx.pending.items():
            if pending.original is not None and pending.tf.same_bytes(pending.original):
                # Not one byte changed (a field kept beside a line changed): only
                # the indexes learn of it, with the note's blocks as they are now.
                written.append(rel)
                continue
            full = safe_path(self.root, rel)
            careful = self._edited_by_others_lately(rel, full)
            for attempt in range(_CAS_ATTEMPTS):
                done = swap(
                    full,
                    pending,
                    self._orphans,
                    contended=attempt >= _CONTENDED_AFTER,
                    careful=careful or attempt > 0,
                )
                if done is not None:
                    break
                # Someone changed the file (not only appended) since we read
                # it: replay our edits on top of their version.
                log.info("%s changed during the write; replaying on top of it", rel)
                if attempt:
                    time.sleep(0.001 * min(attempt, 20))
                fresh = self.load_pending(rel, full)
                fresh.edits = pending.edits
                fresh.only_appends = pending.only_appends
                for edit in pending.edits:
                    result = edit(fresh.tf, fresh.parsed)
                    fresh.parsed = self.reparse(rel, fresh, result, tx)
                pending = fresh
                tx.pending[rel] = fresh
                if intent is not None:
                    intent.record(
                        rel, fresh.original, fresh.tf.to_bytes(), keep_bytes=len(tx.pending) > 1
                    )
                    intent.save()
            else:
                raise ConflictError(f"{rel} keeps changing under mdmem; try again")
            known = done.base == pending.original and self.human.known_committed(rel, pending.seen)
            if git_on and not known and (done.base is not None or rel in self.git.tracked()):
                # What our edit replaced isn't known to be in git: a person
                # saved it after the lock committed human edits, or appended
                # while we swapped (or deleted it: base None). It goes in
                # first, exactly, as theirs.
                self.human.commit_theirs(rel, done.base)
            installed[rel] = done
            written.append(rel)
            try:
                st = full.stat()
                sig = signature_of(st)
                self._written_sigs[rel] = sig
                data = pending.tf.to_bytes()
                stamp = content_digest(data) if st.st_size == len(data) else None
                if is_sidecar(rel):
                    # Someone appended right after our rename: read it again on the next scan.
                    self.catalog.fields.touch(rel, sig if stamp else (0, 0, 0), stamp)
                    continue
                self.catalog.touch(rel, sig, pending.tf, stamp)
                if stamp is None:
                    self.catalog.invalidate(rel)
            except OSError:
                self.catalog.refresh(rel)

    def _edited_by_others_lately(self, rel: str, full: Path) -> bool:
        """True when someone else wrote the file in the last seconds (an editor is active)."""
        try:
            st = full.stat()
        except FileNotFoundError:
            return False
        now = time.monotonic()
        if self._written_sigs.get(rel) != signature_of(st) and (
            time.time_ns() - st.st_mtime_ns < 5_000_000_000
        ):
            self._foreign_edit_at[rel] = now
        # Stay careful for a while after any foreign edit: an editor that
        # saves repeatedly may have the file open right as we rename.
        return now - self._foreign_edit_at.get(rel, -1e9) < _EDITOR_ACTIVE_FOR
