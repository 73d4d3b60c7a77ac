"""The Vault: the one front door of mdmem.

Data flow of a write (DESIGN.md): validate → guard secrets → under the vault
lock, commit any human edits as the human → splice the block into its file
(compare-and-swap against a concurrent editor, atomic replace) → one git commit
authored by the agent, with trailers → indexes updated → return.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, tzinfo
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from filelock import FileLock
from filelock import Timeout as FileLockTimeout

from mdmem.config import Settings, load_settings, state_dir_for
from mdmem.errors import (
    ConflictError,
    InvalidInputError,
    LockTimeoutError,
    MdmemError,
    MemoryNotFoundError,
    VaultExistsError,
    VaultFileError,
    VaultNotFoundError,
)
from mdmem.git.history import Changes
from mdmem.git.provenance import LineAuthor, Provenance
from mdmem.git.revisions import parsed_at
from mdmem.git.sync import SyncResult
from mdmem.index.indexer import AppendStream, Indexer, IndexStats
from mdmem.maintenance.doctor import DoctorReport, run_doctor
from mdmem.maintenance.watch import Watcher
from mdmem.models import KINDS, Block, Memory, Recall
from mdmem.recall.conversation import FileOrder
from mdmem.recall.search import RecallQuery, render_context, run_recall, vector_query_text
from mdmem.store import blocks as blk
from mdmem.store.catalog import Catalog, signature_of
from mdmem.store.gitstore import CommitInfo, GitStore, Identity, format_message
from mdmem.store.ids import IdIssuer, normalize_id
from mdmem.store.secret_guard import guard, refuse_in_metadata
from mdmem.store.textfile import (
    SkipFile,
    TextFile,
    atomic_write,
    decode,
    discard_temp,
    fsync_file,
    install_temp,
    safe_path,
    write_temp,
)

if TYPE_CHECKING:  # issue 4: consolidation & lifecycle types
    from mdmem.git.review import Review, ReviewDecision, UndoResult
    from mdmem.memory.consolidate import ConsolidationResult
    from mdmem.memory.lifecycle import RetentionReport
    from mdmem.memory.llm import LLMClient, LLMConfig
    from mdmem.memory.reflect import FlushResult, Reflection
    from mdmem.memory.sessions import Session
    from mdmem.models import Hit
    from mdmem.recall.usefulness import Usefulness, UsefulnessStore

__all__ = ["MAX_MEMORY_CHARS", "Vault", "VaultStatus", "Version", "find_vault_root"]

log = logging.getLogger("mdmem")

MAX_MEMORY_CHARS = 20_000
_CAS_ATTEMPTS = 100
# Below this many appended blocks the keyword index is written at the flush:
# forking Whoosh's sub-writers costs more than it saves.
_STREAM_AFTER = 2_000
# Blocks are fed in chunks (Whoosh hands its sub-writers 100 documents a job).
_STREAM_CHUNK = 100
_CONTENDED_AFTER = 5
_CAREFUL_WAIT = 0.02
_APPEND_MERGES = 3  # re-stagings per swap when someone keeps appending to the file
_MAX_ID_TRAILERS = 100
_SCAN_LIMIT = 500  # above this many files, ask git for dirty files instead of stat-scanning
_TAG_OK = re.compile(r"^[A-Za-z_][\w/-]{0,63}$")
_CATEGORY_OK = re.compile(r"^[\w][\w .&/-]{0,39}$")
_ROUTES = {"preference": "USER.md", "world": "WORLD.md"}


@lru_cache(maxsize=1024)
def _memory_file(scope: str, kind: str) -> str:
    """The file a ``remember`` of ``kind`` in ``scope`` goes to."""
    return str(blk.scope_dir(scope) / _ROUTES.get(kind, "MEMORY.md"))


_FILE_TITLES = {
    "MEMORY.md": "# Memory",
    "USER.md": "# User",
    "WORLD.md": "# World",
    "LEARNING.md": "# Learning",
    "JOURNAL.md": "# Journal",
}


def find_vault_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` holding ``mdmem.toml``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "mdmem.toml").is_file():
            return candidate
    raise VaultNotFoundError(
        f"no mdmem vault at or above {here} (run `mdmem init PATH` or pass --vault)"
    )


def _template_dir() -> Path:
    source = Path(__file__).resolve().parent.parent / "vault_template"
    if source.is_dir():
        return source
    packaged = Path(__file__).resolve().parent / "_vault_template"
    if packaged.is_dir():
        return packaged
    raise VaultNotFoundError("vault_template is missing from this mdmem installation")


@dataclass(frozen=True)
class Version:
    """One version of a memory in git history."""

    commit: str
    author: str
    email: str
    date: str
    subject: str
    path: str | None  # None: the memory did not exist in this commit (forgotten)
    text: str | None
    status: str | None
    is_agent: bool


@dataclass(frozen=True)
class VaultStatus:
    root: str
    agent: str
    state_dir: str
    memories: int
    by_kind: dict[str, int]
    by_scope: dict[str, int]
    by_status: dict[str, int]
    files: int
    dirty: list[str]
    skipped: dict[str, str]
    last_commit: CommitInfo | None
    index: dict[str, Any] = field(default_factory=dict)
    reviews: list[str] = field(default_factory=list)  # open mdmem/consolidate-* branches


@dataclass
class _Edit:
    """What an edit did to a file: lines appended at ``appended_at`` (or None)."""

    appended_at: int | None = None
    ids: list[str] = field(default_factory=list)
    item: bool = False  # the appended lines are one list item we rendered
    # One block rewritten line for line (a field change), as it now parses.
    rewritten: Block | None = None
    # (text, its content hash) when the caller hashed the item's text already.
    hashed: tuple[str, str] | None = None


Editor = Callable[[TextFile, "blk.ParsedFile | None"], _Edit]


@dataclass
class _Pending:
    original: bytes | None
    tf: TextFile
    parsed: blk.ParsedFile | None
    edits: list[Editor] = field(default_factory=list)
    appended: list[Block] = field(default_factory=list)  # blocks the edits appended
    # Blocks rewritten in place: id -> (as first read, as now).
    rewritten: dict[str, tuple[Block, Block]] = field(default_factory=dict)
    only_appends: bool = True  # appends and in-place rewrites; False: diff the file


@dataclass
class _Batch:
    pending: dict[str, _Pending] = field(default_factory=dict)
    subjects: list[str] = field(default_factory=list)
    trailers: list[tuple[str, str]] = field(default_factory=list)
    ops: int = 0
    # vault.batch() auto-resolves its new memories at its end, embedded together.
    defer_resolve: bool = False
    to_resolve: list[str] = field(default_factory=list)
    # A large import into one file is keyword-indexed while it is built.
    stream: AppendStream | None = None
    stream_path: str | None = None
    streamed: int = 0  # how many of that file's appended blocks were fed


class Vault:
    """An mdmem vault: markdown files under git, plus derived indexes."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        *,
        agent: str | None = None,
    ) -> None:
        self.root = root.resolve()
        self.settings = settings
        self.agent = agent or settings.agent
        self.state_dir = state_dir_for(self.root, settings)
        self.git = GitStore(self.root)
        self.catalog = Catalog(self.root, live=True)
        self._ids = IdIssuer(self.state_dir)
        # Files whose indexing waited in vain for another writer's lock.
        self._index_backlog: set[str] = set()
        self._file_lock = FileLock(str(self.state_dir / "vault.lock"))
        self._mutex = threading.RLock()
        self._batch: _Batch | None = None
        self._human: Identity | None = None
        self._tz: tzinfo | None = _zone(settings.timezone)
        self._closed = False
        self._known_clean = False
        self._written_sigs: dict[str, tuple[int, int, int]] = {}
        self._foreign_edit_at: dict[str, float] = {}
        self._orphans: list[tuple[int, int, Path, float]] = []
        self.indexer = Indexer(self.state_dir, settings, self.catalog)
        self._threads = FileOrder(self.catalog.blocks_in, self.catalog.people)
        self._indexed_head: str | None = None
        self._follow_head()
        self.indexer.boot()

    # ---------------------------------------------------------- lifecycle --

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        *,
        agent: str | None = None,
        exist_ok: bool = False,
        **overrides: Any,
    ) -> Vault:
        """Copy ``vault_template``, ``git init`` and make the first commit."""
        root = Path(path).expanduser()
        if (root / "mdmem.toml").exists():
            if exist_ok:
                return cls.open(root, agent=agent, **overrides)
            raise VaultExistsError(f"{root} already holds an mdmem vault")
        root.mkdir(parents=True, exist_ok=True)
        template = _template_dir()
        for item in template.iterdir():
            target = root / item.name
            if item.is_dir():
                shutil.copytree(item, target, dirs_exist_ok=True)
            elif not target.exists():
                shutil.copy2(item, target)
        git = GitStore(root)
        if not git.is_repo():
            GitStore.init(root)
        vault = cls.open(root, agent=agent, **overrides)
        vault.git.commit(
            format_message(
                "init: mdmem vault",
                trailers=[("Op", "init")],
            ),
            Identity.agent(vault.agent),
        )
        return vault

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        agent: str | None = None,
        **overrides: Any,
    ) -> Vault:
        """Open the vault at ``path`` (or found by walking up from the cwd)."""
        if path is None:
            root = find_vault_root()
        else:
            root = Path(path).expanduser()
            if not (root / "mdmem.toml").is_file():
                raise VaultNotFoundError(f"{root} is not an mdmem vault (no mdmem.toml)")
        settings = load_settings(root, **overrides)
        if not (root / ".git").exists():
            GitStore.init(root)
        return cls(root, settings, agent=agent or os.environ.get("MDMEM_AGENT") or None)

    def close(self) -> None:
        """Checkpoint the vector index and release index handles."""
        if not self._closed:
            self._closed = True
            while self._orphans:
                with self._locked():
                    self._orphans = [(fd, n, p, 0.0) for fd, n, p, _ in self._orphans]
                    self._rescue_orphans()
            if self._usefulness is not None:
                self._usefulness.close()
            self.indexer.close()
            self.catalog.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r}, agent={self.agent!r})"

    # ------------------------------------------------------------- writes --

    def remember(
        self,
        text: str,
        kind: str = "fact",
        tags: Iterable[str] = (),
        scope: str | None = None,
        *,
        created: datetime | date | str | None = None,
        fields: Iterable[tuple[str, str]] = (),
        secrets: str | None = None,
    ) -> Memory:
        """Store one memory; the same normalised text in the same scope is stored once."""
        kind = _check_kind(kind)
        scope = blk.validate_scope(scope)
        tag_list = _check_tags(tags)
        body = self._clean_input(text, secrets)
        if kind in ("learning",):
            pass  # learning memories without a topic still go to MEMORY.md
        rel = _memory_file(scope, kind)
        extra = _check_fields(fields)
        if kind != blk.default_kind_for(rel):
            extra.insert(0, ("kind", kind))
        if created is not None:
            extra.append(("created", _iso(created)))
        # Auto-resolve (issue 4) retires what the new memory replaces in the same commit.
        outer = self._batch
        with self.batch(subject=None):
            assert self._batch is not None
            fresh_batch = self._batch.ops == 0
            memory = self._store_list_item(
                rel,
                body,
                tag_list,
                extra,
                scope=scope,
                kind=kind,
                op="remember",
            )
            if outer is not None and outer.defer_resolve:
                if memory.was_new and self.indexer.embedder is not None:
                    if not outer.to_resolve:
                        # Load the vector index now: loading it at the end would
                        # reconcile the batch's own memories into it, and they
                        # would crowd out the candidates auto-resolve looks for.
                        self.indexer.vectors  # noqa: B018
                    outer.to_resolve.append(memory.id)
                return memory
            return self._auto_resolve(memory, fresh_batch=fresh_batch)

    def log(
        self,
        text: str,
        category: str = "Note",
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Append an entry ``## HH:MM · Category`` to today's daily log."""
        scope = blk.validate_scope(scope)
        category = " ".join(str(category).split())
        if not _CATEGORY_OK.match(category):
            raise InvalidInputError(f"invalid log category {category!r}")
        body = self._clean_input(text, secrets)
        moment = self._local(when)
        rel = str(blk.scope_dir(scope) / "daily" / f"{moment:%Y-%m-%d}.md")
        heading = f"{moment:%H:%M} · {category}"
        return self._store_entry(
            rel,
            heading,
            body,
            _check_tags(tags),
            scope=scope,
            kind="log",
            op="log",
            title=f"# Daily log {moment:%Y-%m-%d}",
        )

    def journal(
        self,
        text: str,
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Add a dated self-reflection to JOURNAL.md."""
        scope = blk.validate_scope(scope)
        body = self._clean_input(text, secrets)
        moment = self._local(when)
        rel = str(blk.scope_dir(scope) / "JOURNAL.md")
        return self._store_entry(
            rel,
            f"{moment:%Y-%m-%d %H:%M}",
            body,
            _check_tags(tags),
            scope=scope,
            kind="journal",
            op="journal",
            title="# Journal",
        )

    def learn(
        self,
        topic: str,
        text: str,
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        secrets: str | None = None,
    ) -> Memory:
        """Add an insight under ``## Topic: <topic>`` in LEARNING.md (section made if missing)."""
        scope = blk.validate_scope(scope)
        topic = " ".join(str(topic).split())
        if not topic or len(topic) > 120 or topic.startswith("#"):
            raise InvalidInputError(f"invalid topic {topic!r}")
        body = self._clean_input(text, secrets)
        rel = str(blk.scope_dir(scope) / "LEARNING.md")
        return self._store_list_item(
            rel,
            body,
            _check_tags(tags),
            [],
            scope=scope,
            kind="learning",
            op="learn",
            topic=topic,
        )

    def get(self, memory_id: str) -> Memory:
        block = self._block(memory_id)
        return Memory.from_block(block, was_new=False)

    def block(self, memory_id: str) -> Block:
        """The parsed block of a memory, with its inline fields."""
        return self._block(memory_id)

    def forget(
        self,
        memory_id: str,
        *,
        reason: str | None = None,
        purge: bool = False,
        confirm: bool = False,
    ) -> Memory:
        """Remove a memory's block from its file; git history keeps it.

        ``purge=True`` (with ``confirm=True``) also rewrites every commit so
        the text is gone from history: see :func:`mdmem.git.purge.purge`.
        Clones elsewhere still hold it.
        """
        memory_id = normalize_id(memory_id)
        if reason:
            refuse_in_metadata(reason, "the reason (it goes into the commit message)")
        if purge:
            from mdmem.git.purge import purge as purge_history

            block = self._block(memory_id)
            purge_history(self, memory_id, confirm=confirm)
            self._forget_derived_copies()
            return Memory.from_block(block, was_new=False)
        with self._writing():
            block = self._block(memory_id)

            def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
                current = _require(parsed, memory_id)
                start, end = current.line_start - 1, current.line_end
                # Take one separating blank line along so no double gap is left.
                gap_after = end < len(tf.lines) and not tf.lines[end].strip()
                if gap_after and (start == 0 or not tf.lines[start - 1].strip()):
                    end += 1
                tf.replace_lines(start, end, [])
                return _Edit()

            self._apply(
                block.path,
                edit,
                subject=f"forget {block.kind}: {_first_line(block.text)}",
                trailers=self._trailers(block.id, block.kind, block.scope, "forget")
                + ([("Reason", reason)] if reason else []),
            )
        return Memory.from_block(block, was_new=False)

    def supersede(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Store ``text`` as the successor of ``memory_id`` and retire the old memory."""
        memory_id = normalize_id(memory_id)
        with self._writing(), self.batch(subject=None):
            old = self._block(memory_id)
            new = self.remember(
                text,
                kind=kind or old.kind,
                tags=old.tags if tags is None else tags,
                scope=old.scope,
                secrets=secrets,
            )
            if new.id == old.id:
                return new
            self._set_fields(
                old.id,
                {"status": "superseded", "by": f"^{new.id}", "updated": _today()},
                op="supersede",
                subject=f"supersede {old.kind}: {_first_line(old.text)}",
            )
            assert self._batch is not None
            self._batch.subjects[:] = [f"supersede {old.kind}: {_first_line(text)}"]
            self._batch.trailers[:] = [
                *self._trailers(new.id, new.kind, new.scope, "supersede"),
                ("Supersedes", old.id),
            ]
        return Memory.from_block(self._block(new.id), was_new=new.was_new, superseded=(old.id,))

    def resolve(self, memory_id: str, *, status: str = "resolved") -> Memory:
        """Mark a memory resolved (or another status); it leaves default recall."""
        memory_id = normalize_id(memory_id)
        if status not in ("resolved", "superseded", "active"):
            raise InvalidInputError(f"invalid status {status!r}")
        with self._writing():
            block = self._block(memory_id)
            updates: dict[str, str | None] = {"status": status, "updated": _today()}
            if status == "active":
                updates = {"status": None, "by": None, "updated": _today()}
            self._set_fields(
                memory_id,
                updates,
                op="resolve" if status != "active" else "reactivate",
                subject=f"{'resolve' if status != 'active' else 'reactivate'} {block.kind}: "
                f"{_first_line(block.text)}",
            )
        return self.get(memory_id)

    @contextmanager
    def batch(self, subject: str | None = "batch import") -> Iterator[Vault]:
        """Group many writes into one commit (and one file write per file).

        Auto-resolve (retiring what a new memory replaces) runs at the end of
        the batch, over its new memories in order and embedded together, so
        a ``Memory`` that ``remember`` returns inside a batch has an empty
        ``superseded``; the commit lists what was retired.
        """
        if subject:
            refuse_in_metadata(subject, "the batch subject (it goes into the commit message)")
        with self._writing():
            if self._batch is not None:
                yield self  # nested: the outer batch commits
                return
            self._batch = _Batch(defer_resolve=True)
            try:
                yield self
            finally:
                batch = self._batch
                try:
                    self._resolve_deferred(batch.to_resolve)
                finally:
                    self._batch = None
                    try:
                        self._flush(batch, subject)
                    finally:
                        if batch.stream is not None:
                            batch.stream.cancel()  # a no-op once the flush used it

    # ------------------------------------------------------------ queries --

    def memories(self, *, include_inactive: bool = True) -> list[Memory]:
        self.refresh()
        return [
            Memory.from_block(b, was_new=False)
            for b in self.catalog.blocks(memories_only=True)
            if include_inactive or b.status == "active"
        ]

    def refresh(self) -> list[str]:
        """Notice files changed on disk (a stat scan); returns the changed paths.

        When HEAD moved since the last index (a pull, checkout or branch
        switch), the files ``git diff --name-status -M`` names are re-read even
        if their stat looks unchanged.
        """
        with self._mutex:
            if self._batch is not None:
                return []
            self._follow_head()
            delta = self.catalog.scan()
            todo = dict.fromkeys([*delta.changed, *delta.removed, *self._index_backlog])
            if todo:
                changed = [p for p in todo if p in self.catalog.files]
                removed = [p for p in todo if p not in self.catalog.files]
                try:
                    self._on_files_changed(changed, removed)
                    self._index_backlog.clear()
                except LockTimeoutError as e:
                    # Another process is writing the index (a large import):
                    # answer from the index as it is, and index these next time.
                    log.warning("%s; recall uses the index as it is for now", e)
                    self._index_backlog.update(todo)
            return [*delta.changed, *delta.removed]

    def history(self, memory_id: str) -> list[Version]:
        """Every version of one memory in git, oldest first, following moves."""
        memory_id = normalize_id(memory_id)
        marker = f"^{memory_id}"
        shas: set[str] = set()
        for info in self.git.log("-G", "\\" + marker):
            shas.add(info.sha)
        for info in self.git.log("-F", f"--grep=Memory-Id: {memory_id}"):
            shas.add(info.sha)
        if not shas:
            if self.catalog.has_id(memory_id):
                return []
            raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
        versions: list[Version] = []
        for info in reversed(self.git.log()):
            if info.sha not in shas:
                continue
            listing = self.git.run(
                "grep", "-l", "-F", marker, info.sha, "--", "*.md", ok_codes=(0, 1)
            )
            paths = [line.split(":", 1)[1] for line in listing.splitlines() if ":" in line]
            found: Block | None = None
            for path in paths:
                parsed = parsed_at(self, info.sha, path)
                found = parsed.by_id(memory_id) if parsed is not None else None
                if found is not None:
                    break
            version = Version(
                commit=info.sha,
                author=info.author,
                email=info.email,
                date=info.date,
                subject=info.subject,
                path=found.path if found else None,
                text=found.text if found else None,
                status=found.status if found else None,
                is_agent=info.is_agent,
            )
            if versions and (versions[-1].path, versions[-1].text, versions[-1].status) == (
                version.path,
                version.text,
                version.status,
            ):
                continue
            if not versions and found is None:
                continue
            versions.append(version)
        return versions

    def status(self) -> VaultStatus:
        self.refresh()
        by_kind: dict[str, int] = {}
        by_scope: dict[str, int] = {}
        by_status: dict[str, int] = {}
        total = 0
        for b in self.catalog.blocks(memories_only=True):
            total += 1
            by_kind[b.kind] = by_kind.get(b.kind, 0) + 1
            by_scope[b.scope or "(root)"] = by_scope.get(b.scope or "(root)", 0) + 1
            by_status[b.status] = by_status.get(b.status, 0) + 1
        return VaultStatus(
            root=str(self.root),
            agent=self.agent,
            state_dir=str(self.state_dir),
            memories=total,
            by_kind=dict(sorted(by_kind.items())),
            by_scope=dict(sorted(by_scope.items())),
            by_status=dict(sorted(by_status.items())),
            files=len(self.catalog.files),
            dirty=self.git.dirty_paths(),
            skipped=dict(self.catalog.skipped),
            last_commit=self.git.last_commit(),
            index=self._index_status(),
            reviews=self._open_reviews(),
        )

    def _open_reviews(self) -> list[str]:
        from mdmem.git.review import open_branches

        return open_branches(self)

    def _follow_head(self) -> None:
        head = self.git.head()
        if head is None or head == self._indexed_head:
            return
        indexed = self._indexed_head or self.indexer.manifest.get_meta("indexed_commit")
        if indexed and indexed != head:
            status, out, _err = self.git.execute(
                "diff", "--name-status", "-M", "-z", f"{indexed}..{head}", strip=False
            )
            if status == 0:
                fields = [f for f in out.split("\0") if f]
                for name in fields:
                    if name.endswith(".md"):
                        self.catalog.invalidate(name)
            self.git.forget_tracked()
        self._indexed_head = head
        self.indexer.manifest.set_meta("indexed_commit", head)

    # ---------------------------------------------------------- git-native --

    def diff(self, since: str | date | datetime) -> Changes:
        """What was remembered, superseded, resolved, forgotten and edited by humans since."""
        from mdmem.git.history import changes

        return changes(self, since)

    def blame(
        self, path: str, line_start: int, line_end: int, rev: str = "HEAD"
    ) -> list[LineAuthor]:
        """Who wrote each line (agent or human), from ``git blame``, cached per file version."""
        from mdmem.git.provenance import blame

        return blame(self, path, line_start, line_end, rev)

    def provenance(self, memory_id: str) -> Provenance:
        """Authors of one memory's current lines and whether a human wrote any."""
        from mdmem.git.provenance import provenance

        return provenance(self, memory_id)

    def sync(
        self, remote: str = "origin", *, push: bool = True, force_push: bool = False
    ) -> SyncResult:
        """Commit human edits, pull --rebase (block-aware merge), push, re-index what changed."""
        from mdmem.git.sync import sync

        return sync(self, remote, push=push, force_push=force_push)

    def _written_by_human(self, block: Block) -> bool:
        """Whether a person wrote any line of the block (git blame, cached per file version)."""
        if not block.is_memory:
            return True  # notes without ids are a human's own writing
        try:
            return self.provenance(block.id).written_by_human
        except MdmemError:
            return False

    def _forget_derived_copies(self) -> None:
        # After a purge the text must not survive in derived state either:
        # time-travel snapshots hold old trees, and SQLite keeps deleted
        # pages in its WAL until a truncating checkpoint.
        shutil.rmtree(self.state_dir / "asof", ignore_errors=True)
        from mdmem.git import timetravel

        timetravel.forget_snapshots(self)
        self.indexer.manifest.scrub()

    def doctor(self, *, fix: bool = False) -> DoctorReport:
        """Check files, manifest, both indexes and git; ``fix`` repairs derived state."""
        with self._locked():
            return run_doctor(self, fix=fix)

    def watch(self, *, debounce: float = 0.3, commit: bool = False) -> Watcher:
        """A started watcher that keeps the indexes live as files change (stop() it)."""
        return Watcher(self, debounce=debounce, commit=commit).start()

    def commit_human_edits(self) -> str | None:
        """Commit files a person changed, authored as the human; returns the sha."""
        with self._writing():
            return self._commit_human_edits()

    # ------------------------------------------------------------- recall --

    def recall(
        self,
        query: str,
        k: int | None = None,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        scope: Iterable[str] | str | None = None,
        since: datetime | date | str | None = None,
        until: datetime | date | str | None = None,
        include_inactive: bool = False,
        *,
        mode: str = "hybrid",
        as_of: str | date | datetime | None = None,
    ) -> Recall:
        """The memories most relevant to ``query``, best first, with citations.

        ``scope``: one scope, several, or None for every scope ("" is the
        vault root). ``mode``: hybrid (default), keyword or vector only.
        ``as_of``: a commit-ish or a date/time: search the vault as it was
        then (hits carry ``commit``). Edits made on disk since the last call
        are indexed first.
        """
        q = RecallQuery.build(
            query,
            self.settings.recall.k if k is None else k,
            kinds,
            tags,
            scope,
            since,
            until,
            include_inactive,
            mode,
        )
        started = time.perf_counter()
        if as_of is not None:
            from mdmem.git.timetravel import recall_as_of

            result = recall_as_of(self, q, as_of)
            return replace(result, took_ms=(time.perf_counter() - started) * 1000)
        if q.mode == "keyword":
            self.refresh()
        else:
            # Blocks the refresh embeds (an edit) share one model call with the query.
            with self.indexer.query_ahead(vector_query_text(q.query, self._threads)):
                self.refresh()
        self.indexer.catch_up()
        result = run_recall(
            q,
            self.indexer,
            self.catalog.block,
            self.settings.recall,
            trust_of=self._trust_of,
            human_of=self._written_by_human if self.settings.recall.human_weight > 0 else None,
            threads=self._threads,
            embed_query=self.indexer.embed_query,
        )
        self._note_hits(result.items)  # usefulness signals (issue 4)
        return Recall(
            query=result.query,
            items=result.items,
            degraded=result.degraded,
            reranked=result.reranked,
            took_ms=(time.perf_counter() - started) * 1000,
        )

    def prompt_context(self, task: str, contact: str | None = None, **budgets: Any) -> Any:
        """Sections for a prompt (recent, episodes, top-k, file tails, thread); see agent.prompt."""
        from mdmem.agent import prompt

        return prompt.prompt_context(self, task, contact, **budgets)

    def context(self, query: str, max_chars: int = 6000, **filters: Any) -> str:
        """A "## Recalled Memory" block for a prompt, citing each memory as path#^id."""
        return render_context(self.recall(query, **filters), max_chars)

    def reindex(
        self, full: bool = False, *, progress: Callable[[str, int, int], None] | None = None
    ) -> IndexStats:
        """Bring the indexes up to date (incremental), or rebuild both from scratch."""
        with self._mutex:
            if full:
                self.indexer.rebuild(progress)
            else:
                self.refresh()
                self.indexer.catch_up()
                self.indexer.checkpoint(force=True)
            return self.indexer.stats()

    # ------------------------------------------------------ index hooks --

    def _on_files_changed(self, changed: list[str], removed: list[str]) -> None:
        self.indexer.apply(changed, removed)

    def _index_status(self) -> dict[str, Any]:
        stats = self.indexer.stats()
        info: dict[str, Any] = {
            "blocks": stats.blocks,
            "keyword_docs": stats.keyword_docs,
            "vectors": stats.vectors,
            "embedder": stats.embedder,
            "missing_vectors": stats.missing_vectors,
            "fresh": stats.keyword_docs == stats.blocks
            and (stats.vectors == stats.blocks or stats.embedder == "none"),
        }
        problem = self.indexer.embedder_problem
        if problem:
            info["vector_problem"] = problem
        return info

    # ---------------------------------------------------------- internals --

    def _clean_input(self, text: str, secrets: str | None) -> str:
        if not isinstance(text, str):
            raise InvalidInputError("memory text must be a string")
        if "\x00" in text:
            raise InvalidInputError("memory text contains a NUL byte")
        text = text.strip()
        if not text:
            raise InvalidInputError("memory text is empty")
        if len(text) > MAX_MEMORY_CHARS:
            raise InvalidInputError(
                f"memory text is {len(text)} characters; the limit is {MAX_MEMORY_CHARS}"
            )
        mode = secrets or self.settings.secrets
        if mode not in ("refuse", "redact", "off"):
            raise InvalidInputError("secrets must be refuse, redact or off")
        return guard(text, mode)

    def _local(self, when: datetime | None) -> datetime:
        moment = when or datetime.now(UTC)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(self._tz) if self._tz else moment.astimezone()

    def _trailers(self, memory_id: str, kind: str, scope: str, op: str) -> list[tuple[str, str]]:
        return [
            ("Memory-Id", memory_id),
            ("Kind", kind),
            ("Scope", scope or blk.ROOT_SCOPE),
            ("Op", op),
        ]

    def _block(self, memory_id: str) -> Block:
        memory_id = normalize_id(memory_id)
        with self._mutex:
            path = self.catalog.path_of(memory_id)
            if path is not None and (self._batch is None or path not in self._batch.pending):
                self.catalog.refresh(path)
            block = self.catalog.block(memory_id)
            if block is None:
                self.refresh()
                block = self.catalog.block(memory_id)
        if block is None:
            raise MemoryNotFoundError(f"no memory {memory_id}")
        return block

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The vault lock, after committing what a human changed meanwhile."""
        with self._locked(sync=True):
            yield

    @contextmanager
    def _locked(self, *, sync: bool = False) -> Iterator[None]:
        """The vault lock: one thread of one process writes at a time."""
        with self._mutex:
            if self._batch is not None:
                yield
                return
            try:
                self._file_lock.acquire(timeout=self.settings.git.lock_timeout)
            except FileLockTimeout:
                raise LockTimeoutError(
                    f"another process holds the vault lock ({self.state_dir / 'vault.lock'})"
                ) from None
            try:
                if self._orphans:
                    self._rescue_orphans()
                if sync:
                    self._sync_before_write()
                yield
            finally:
                self._file_lock.release()

    def _sync_before_write(self) -> None:
        """Commit what a person changed since our last write, as that person.

        Small vaults are checked with a stat scan (microseconds per file) and
        git is asked only when something changed; large ones ask git directly.
        The first write after opening always asks git.
        """
        if len(self.catalog.files) <= _SCAN_LIMIT:
            delta = self.catalog.scan()
            if delta:
                self._on_files_changed(delta.changed, delta.removed)
            if delta or not self._known_clean:
                self._commit_human_edits()
        else:
            self._commit_human_edits()
        self._known_clean = True

    def _human_identity(self) -> Identity:
        if self._human is None:
            self._human = self.git.human_identity(
                self.settings.git.human_name, self.settings.git.human_email
            )
        return self._human

    def _commit_human_edits(self, paths: list[str] | None = None) -> str | None:
        if not self.settings.git.enabled:
            return None
        dirty = self.git.dirty_paths() if paths is None else paths
        if not dirty:
            return None
        shown = ", ".join(sorted(dirty)[:5]) + (
            f" and {len(dirty) - 5} more" if len(dirty) > 5 else ""
        )
        message = format_message(f"edit: {shown}", trailers=[("Op", "edit")])
        return self.git.commit(message, self._human_identity(), paths=dirty)

    def _store_list_item(
        self,
        rel: str,
        body: str,
        tags: list[str],
        extra: list[tuple[str, str]],
        *,
        scope: str,
        kind: str,
        op: str,
        topic: str | None = None,
    ) -> Memory:
        _refuse_secret_metadata(
            rel,
            blk.render_list_item(_MASK, "m-0", tags=tags, fields=extra),
            [f"## Topic: {topic}"] if topic is not None else [],
        )
        digest = blk.content_hash(body)
        with self._writing():
            self._refresh_scope_file(rel)
            existing = self.catalog.find_active(scope, digest)
            if existing is not None and (topic is None or existing.path == rel):
                return Memory.from_block(existing, was_new=False)
            memory_id = self._ids.issue()
            lines = blk.render_list_item(body, memory_id, tags=tags, fields=extra)

            def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
                if not tf.lines:
                    tf.append_lines([_FILE_TITLES.get(PurePosixPath(rel).name, "# Memory"), ""])
                if topic is not None:
                    return _insert_under_topic(tf, parsed, topic, lines)
                appended = _append_item(tf, lines)
                appended.hashed = (body, digest)
                return appended

            self._apply(
                rel,
                edit,
                subject=f"{op} {kind}: {_first_line(body)}",
                trailers=self._trailers(memory_id, kind, scope, op)
                + ([("Topic", topic)] if topic else []),
            )
            block = self._block(memory_id)
        return Memory.from_block(block, was_new=True)

    def _store_entry(
        self,
        rel: str,
        heading: str,
        body: str,
        tags: list[str],
        *,
        scope: str,
        kind: str,
        op: str,
        title: str,
    ) -> Memory:
        _refuse_secret_metadata(rel, blk.render_entry(heading, _MASK, "m-0", tags=tags), [title])
        with self._writing():
            memory_id = self._ids.issue()
            lines = blk.render_entry(heading, body, memory_id, tags=tags)
            self._apply(
                rel,
                _entry_appender([title], lines, memory_id),
                subject=f"{op}: {_first_line(body)}",
                trailers=self._trailers(memory_id, kind, scope, op),
            )
            block = self._block(memory_id)
        return Memory.from_block(block, was_new=True)

    def _set_fields(
        self,
        memory_id: str,
        updates: dict[str, str | None],
        *,
        op: str,
        subject: str,
        extra_trailers: list[tuple[str, str]] | None = None,
    ) -> None:
        block = self._block(memory_id)

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
            current = _require(parsed, memory_id)
            new_lines = blk.with_fields(current, tf, updates)
            start, end = current.line_start - 1, current.line_end
            assert parsed is not None
            rebuilt = blk.rewritten_block(parsed, current, tf.lines[start:end], new_lines)
            tf.replace_lines(start, end, new_lines)
            return _Edit(rewritten=rebuilt)

        self._apply(
            block.path,
            edit,
            subject=subject,
            trailers=self._trailers(memory_id, block.kind, block.scope, op)
            + (extra_trailers or []),
        )

    def _refresh_scope_file(self, rel: str) -> None:
        if self._batch is not None and rel in self._batch.pending:
            return
        self.catalog.refresh(rel)

    def _apply(
        self, rel: str, edit: Editor, *, subject: str, trailers: list[tuple[str, str]]
    ) -> None:
        """Apply ``edit`` to one file: now (one commit) or into the open batch."""
        if self._batch is not None:
            pending = self._batch.pending.get(rel)
            if pending is None:
                # Checked once per file and batch (resolving is a syscall per
                # folder); the flush checks the path again before it writes.
                pending = self._load_pending(rel, safe_path(self.root, rel))
                self._batch.pending[rel] = pending
            result = edit(pending.tf, pending.parsed)
            pending.edits.append(edit)
            pending.parsed = self._reparse(rel, pending, result)
            self._batch.subjects.append(subject)
            self._batch.trailers.extend(trailers)
            self._batch.ops += 1
            return
        batch = _Batch()
        self._batch = batch
        try:
            self._apply(rel, edit, subject=subject, trailers=trailers)
        finally:
            self._batch = None
        self._flush(batch, None)

    def _load_pending(self, rel: str, full: Path) -> _Pending:
        try:
            raw: bytes | None = full.read_bytes()
        except FileNotFoundError:
            raw = None
        if raw is None:
            return _Pending(original=None, tf=TextFile.empty(), parsed=None)
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
                cached.file = decode(raw)
            if cached is not None and cached.file is not None and cached.file.to_bytes() == raw:
                parsed = cached
            else:
                parsed = self.catalog.load(rel, raw, sig)
        except SkipFile as reason:
            raise VaultFileError(f"{rel} cannot be parsed ({reason}); fix or move it") from None
        # The catalog keeps the parse of what is on disk; pending work gets its own copy.
        parsed = _copy_parsed(parsed)
        assert parsed.file is not None
        tf = parsed.file = parsed.file.copy()
        return _Pending(original=raw, tf=tf, parsed=parsed)

    def _reparse(self, rel: str, pending: _Pending, result: _Edit) -> blk.ParsedFile:
        """Bring the pending parse and the catalog up to date with the pending text.

        An append is parsed on its own (the file's other blocks are unchanged),
        which keeps a write O(new lines) instead of O(file); anything else is a
        full reparse. The catalog always gets its own ParsedFile object.
        """
        parsed = pending.parsed
        if result.appended_at is not None and parsed is not None and result.ids:
            first = result.appended_at
            snippet = TextFile(
                lines=pending.tf.lines[first:], bom=False, newline=pending.tf.newline
            )
            if result.item:
                new_blocks = [
                    blk.item_block(parsed, pending.tf.lines[first:], first, hashed=result.hashed)
                ]
            else:
                file_tags = blk.frontmatter_tags(parsed.frontmatter)
                new_blocks = [
                    blk.retag(
                        b,
                        line_start=b.line_start + first,
                        line_end=b.line_end + first,
                        tags=tuple(dict.fromkeys([*b.tags, *file_tags])),
                    )
                    for b in blk.parse(rel, snippet).blocks
                    if b.id in result.ids
                ]
            if {b.id for b in new_blocks} == set(result.ids) and rel in self.catalog.files:
                parsed.file = pending.tf
                parsed.blocks.extend(new_blocks)
                self.catalog.add_blocks(rel, new_blocks, (0, 0, 0))
                pending.appended.extend(new_blocks)
                self._stream_appended(rel, pending)
                return parsed
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
            fresh = blk.parse(rel, pending.tf)
        except SkipFile as reason:
            raise VaultFileError(f"{rel} would not parse after the edit ({reason})") from None
        self.catalog.put(rel, _copy_parsed(fresh), (0, 0, 0))
        return fresh

    def _flush(self, batch: _Batch, subject: str | None) -> None:
        """Write every pending file (compare-and-swap) and make one commit."""
        if not batch.pending:
            return
        written: list[str] = []
        for rel, pending in batch.pending.items():
            full = safe_path(self.root, rel)
            careful = self._edited_by_others_lately(rel, full)
            for attempt in range(_CAS_ATTEMPTS):
                contended = attempt >= _CONTENDED_AFTER
                if self._swap(
                    full,
                    pending,
                    contended=contended,
                    careful=careful or attempt > 0,
                    merge_appends=attempt > 0,
                ):
                    break
                # Someone changed the file since we read it: keep their change
                # (committed as theirs the first time), then replay our edits
                # on top of it. Later rounds skip the commit so a fast typist
                # cannot starve the write.
                log.info("%s changed during the write; replaying on top of it", rel)
                if attempt == 0:
                    self._commit_human_edits([rel])
                else:
                    time.sleep(0.001 * min(attempt, 20))
                fresh = self._load_pending(rel, full)
                fresh.edits = pending.edits
                fresh.only_appends = pending.only_appends
                for edit in pending.edits:
                    result = edit(fresh.tf, fresh.parsed)
                    fresh.parsed = self._reparse(rel, fresh, result)
                pending = fresh
                batch.pending[rel] = fresh
            else:
                raise ConflictError(f"{rel} keeps changing under mdmem; try again")
            written.append(rel)
            try:
                st = full.stat()
                sig = signature_of(st)
                self._written_sigs[rel] = sig
                self.catalog.touch(rel, sig, pending.tf)
                if st.st_size != len(pending.tf.to_bytes()):
                    # Someone appended right after our rename: re-read it on the next scan.
                    self.catalog.invalidate(rel)
            except OSError:
                self.catalog.refresh(rel)
        if self.settings.git.enabled and batch.ops:
            if len(batch.subjects) == 1:
                title = batch.subjects[0]
            elif subject is None:
                title = f"{batch.subjects[0]} (+{len(batch.subjects) - 1} more)"
            else:
                title = f"{subject}: {batch.ops} writes"
            trailers = batch.trailers
            if len(batch.subjects) > 1:
                ops = {v for k, v in trailers if k == "Op"}
                trailers = [t for t in trailers if t[0] != "Op"] + [
                    ("Op", "batch" if len(ops) != 1 else next(iter(ops)))
                ]
                trailers = _dedupe(trailers)
                ids = [t for t in trailers if t[0] == "Memory-Id"]
                if len(ids) > _MAX_ID_TRAILERS:
                    # history() finds a memory by its id in the diff; the
                    # trailers are a convenience, so a huge import lists a few.
                    trailers = [t for t in trailers if t[0] != "Memory-Id"]
                    trailers = ids[:_MAX_ID_TRAILERS] + trailers + [("Memories", str(len(ids)))]
            message = format_message(title, trailers=trailers)
            # The commit is a git process we mostly wait on, and indexing is
            # our own CPU work: overlap them (a durable write's two halves).
            with ThreadPoolExecutor(max_workers=1) as pool:
                committed = pool.submit(
                    self.git.commit, message, Identity.agent(self.agent), paths=written
                )
                self._index_written(batch, written)
                committed.result()
        else:
            self._index_written(batch, written)

    def _stream_appended(self, rel: str, pending: _Pending) -> None:
        """Feed a large batch's appended blocks to the keyword stream as they come."""
        batch = self._batch
        if batch is None or len(pending.appended) < _STREAM_AFTER:
            return
        if batch.stream_path is None:
            batch.stream_path = rel
            batch.stream = self.indexer.open_stream()
        if batch.stream is None or rel != batch.stream_path:
            return
        if len(pending.appended) - batch.streamed < _STREAM_CHUNK:
            return  # the rest goes in at the flush
        batch.stream.feed(pending.appended[batch.streamed :])
        batch.streamed = len(pending.appended)

    def _index_written(self, batch: _Batch, written: list[str]) -> None:
        # The streamed file first: any other keyword write would cancel it.
        for rel in sorted(written, key=lambda r: r != batch.stream_path):
            pending = batch.pending[rel]
            stream = batch.stream if rel == batch.stream_path else None
            if pending.only_appends and rel in self.catalog.files:
                self.indexer.add_appended(
                    rel, pending.appended, stream, rewritten=list(pending.rewritten.values())
                )
            else:
                if stream is not None:
                    stream.cancel()
                self.indexer.apply([rel], [])

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
        return now - self._foreign_edit_at.get(rel, -1e9) < 10.0

    def _swap(
        self,
        full: Path,
        pending: _Pending,
        *,
        contended: bool = False,
        careful: bool = False,
        merge_appends: bool = False,
    ) -> bool:
        """Replace the file if it still holds what we read; False if it changed.

        With ``merge_appends``, lines someone appended meanwhile are kept and
        ours go after them, when both sides only appended. The first retry
        does not use it, so that a person's edit is committed as theirs.

        The new content is staged and fsynced first, so the compare and the
        rename are microseconds apart: the window in which a human's save
        could slip between them is as small as a user-space CAS can make it.
        """
        # Under contention (an editor saving faster than we can fsync) the
        # fsync moves after the rename, shrinking the read-to-rename window
        # to microseconds; the write is still atomic, and durable on return.
        ours = pending.tf.to_bytes()
        expected = pending.original
        synced = not contended
        tmp = write_temp(full, ours, fsync=synced)
        old_fd = None
        try:
            for _ in range(_APPEND_MERGES + 1):
                try:
                    old_fd = os.open(full, os.O_RDONLY)
                    current: bytes | None = _read_fd(old_fd)
                except FileNotFoundError:
                    current = None
                if current == expected:
                    break
                merged = (
                    _after_their_appends(expected, ours, current, pending.only_appends)
                    if merge_appends
                    else None
                )
                discard_temp(tmp)
                if merged is None:
                    return False
                # Both sides only appended: our lines go after theirs, with
                # no replay, so a fast typist cannot starve the write.
                if old_fd is not None:
                    os.close(old_fd)
                    old_fd = None
                expected, ours, synced = current, merged, False
                tmp = write_temp(full, ours, fsync=False)
            else:
                discard_temp(tmp)
                return False
            install_temp(tmp, full)
            if not synced:
                fsync_file(full)
            if careful:
                # An editor that opened the file just before the rename may
                # write a moment later; give it that moment before checking
                # the old inode, so its bytes are not left in an unlinked file.
                time.sleep(_CAREFUL_WAIT)
            if old_fd is not None and os.fstat(old_fd).st_size != len(current or b""):
                # An editor appended to the old inode after our check: its
                # bytes are in a file that is no longer linked. Put them back.
                theirs = _read_fd(old_fd)
                # Bytes appended to the new file meanwhile are kept too.
                try:
                    now_new = full.read_bytes()
                except FileNotFoundError:
                    now_new = ours
                if current is not None and theirs.startswith(current) and now_new.startswith(ours):
                    # They only appended: keep our edit and put their lines
                    # after it. Replaying instead could starve the write, as
                    # a fast typist appends inside every wait window.
                    atomic_write(full, now_new + theirs[len(current) :])
                    return True
                if now_new.startswith(ours):
                    theirs += now_new[len(ours) :]
                atomic_write(full, theirs)
                pending.original = theirs
                return False
            if old_fd is not None and careful:
                # Keep watching the replaced inode for a moment: an editor
                # holding it open may still append there (see _rescue_orphans).
                self._orphans.append((old_fd, len(current or b""), full, time.monotonic() + 5.0))
                old_fd = None
            return True
        finally:
            if old_fd is not None:
                os.close(old_fd)

    def _rescue_orphans(self) -> None:
        """Bytes written to a file we had already replaced are appended to the new one.

        A user-space compare-and-swap cannot stop a process that opened the
        file just before our rename from writing a moment after it; those
        bytes land in the unlinked old inode. Every later write (and close)
        looks there first and carries them over, so they are not lost.
        """
        keep = []
        for fd, expected, full, deadline in self._orphans:
            try:
                size = os.fstat(fd).st_size
                if size > expected:
                    extra = os.pread(fd, size - expected, expected)
                    current = full.read_bytes() if full.exists() else b""
                    if current and not current.endswith(b"\n"):
                        current += b"\n"
                    atomic_write(full, current + extra)
                    log.info("recovered %d bytes written to a replaced %s", len(extra), full.name)
                    expected = size
            except OSError:
                pass
            if time.monotonic() < deadline:
                keep.append((fd, expected, full, deadline))
            else:
                os.close(fd)
        self._orphans = keep

    # ---- consolidation & lifecycle (issue 4) ----
    # Thin doors to mdmem.memory.sessions / consolidate / lifecycle / reflect /
    # usefulness, plus the few write primitives those modules need.

    def session(
        self,
        session_id: str,
        source: str | None = None,
        contact: str | None = None,
        *,
        scope: str | None = None,
    ) -> Session:
        """Short-term memory of one conversation: ``.record()``, ``.record_tool_output()``."""
        from mdmem.memory.sessions import Session

        return Session(self, session_id, source=source, contact=contact, scope=scope)

    def read_tool_output(self, key: str, *, scope: str | None = None) -> str:
        """The full text of a large tool output recorded under ``key`` (``tout_…``)."""
        from mdmem.memory.sessions import read_tool_output

        return read_tool_output(self, key, scope=scope)

    def consolidate(
        self,
        llm: LLMClient | None = None,
        *,
        dry_run: bool = False,
        force: bool = False,
        entries: list[Block] | None = None,
        reason: str = "manual",
        review: bool | None = None,
    ) -> ConsolidationResult:
        """Fold pending session entries into episode notes and facts (one commit).

        ``llm``: default the configured model, else the extractive summariser.
        ``dry_run``: compute everything, write nothing, return the diff.
        ``force``: accept drafts the drop-ratio safety check would reject.
        ``review``: commit to a branch ``mdmem/consolidate-<date>`` for a person
        to merge or reject, leaving the working tree alone (default: the
        ``[consolidation] review`` setting); ``.branch`` names it.
        """
        from mdmem.memory.consolidate import consolidate

        client = llm if llm is not None else self.llm_client()
        return consolidate(
            self,
            client,
            dry_run=dry_run,
            force=force,
            entries=entries,
            reason=reason,
            review=self.settings.consolidation.review if review is None else review,
        )

    def reviews(self) -> list[Review]:
        """Consolidations waiting on review branches, oldest first, with counts."""
        from mdmem.git.review import reviews

        return reviews(self)

    def review(self, branch: str | None = None) -> Review:
        """One review (default: the only open one): counts and ``git diff base...branch``."""
        from mdmem.git.review import review

        return review(self, branch)

    def merge_review(self, branch: str | None = None) -> ReviewDecision:
        """Merge a review into the current branch (block-aware); ConflictError changes nothing."""
        from mdmem.git.review import merge

        return merge(self, branch, today=_today())

    def reject_review(self, branch: str | None = None) -> ReviewDecision:
        """Delete a review branch; its session entries are pending again."""
        from mdmem.git.review import reject

        return reject(self, branch)

    def undo(self, commit: str) -> UndoResult:
        """Revert one commit (a consolidation, a review merge...) as a new ``Op: revert`` commit."""
        from mdmem.git.review import undo

        return undo(self, commit)

    def flush(
        self,
        messages: Iterable[dict[str, Any]],
        llm: LLMClient | None = None,
        *,
        scope: str | None = None,
        session: str | None = None,
    ) -> FlushResult:
        """Store durable facts from messages about to be compacted away."""
        from mdmem.memory.reflect import flush

        client = llm if llm is not None else self.llm_client()
        return flush(self, messages, llm=client, scope=scope, session=session)

    def reflect(
        self, query: str, *, k: int = 8, llm: LLMClient | None = None, **filters: Any
    ) -> Reflection:
        """An answer synthesised across recalled memories, citing ``path#^id``."""
        from mdmem.memory.reflect import reflect

        client = llm if llm is not None else self.llm_client()
        return reflect(self, query, llm=client, k=k, **filters)

    def feedback(self, memory_id: str, helpful: bool) -> Usefulness:
        """Tell mdmem a recalled memory helped (or not): moves its trust score."""
        block = self._block(memory_id)
        return self.usefulness.feedback(block.id, bool(helpful))

    def usefulness_of(self, memory_id: str) -> Usefulness:
        """Hit count and trust of a memory (kept in the state dir, not in markdown)."""
        return self.usefulness.get(normalize_id(memory_id))

    def anonymize_retired(self, days: int | None = None, *, apply: bool = False) -> RetentionReport:
        """Retired memories older than ``days``: listed, or with ``apply`` redacted."""
        from mdmem.memory.lifecycle import anonymize_retired

        return anonymize_retired(self, days, apply=apply)

    def resolve_session(self, session_id: str, *, scope: str | None = None) -> list[Memory]:
        """Resolve every active memory of a session (its entries and facts), one commit."""
        from mdmem.memory.lifecycle import resolve_session

        return resolve_session(self, session_id, scope=scope)

    def llm_client(self) -> LLMClient | None:
        """The configured LLM (``[llm]`` + OPENAI_* environment), or None."""
        if self._llm_checked is None:
            from mdmem.memory.llm import LLMClient, LLMConfig

            cfg = self.settings.llm
            config = LLMConfig(
                base_url=cfg.base_url or None,
                model=cfg.model or None,
                api_key=self.settings.llm_api_key(),
                timeout=cfg.timeout,
                max_retries=cfg.max_retries,
            )
            self._llm_checked = (LLMClient(config) if config.configured else None,)
            if not config.configured:
                missing = self._llm_missing(config)
                if missing:
                    # Some LLM settings but not all: the user meant to use a
                    # model, and running offline without a word would hide it.
                    log.warning("no LLM configured (%s); running offline", missing)
        return self._llm_checked[0]

    def _llm_missing(self, config: LLMConfig) -> str | None:
        """What an incomplete ``[llm]`` configuration lacks; None if nothing was set."""
        cfg = self.settings
        key_is_embedders = (
            cfg.embedder.provider == "openai" and cfg.embedder.api_key_env == cfg.llm.api_key_env
        )
        if config.model:
            return (
                f"[llm] model is {config.model!r} but neither [llm] base_url "
                f"(OPENAI_BASE_URL) nor ${cfg.llm.api_key_env} is set"
            )
        # An OpenAI key the embedder uses says nothing about wanting an LLM.
        if config.base_url or (config.api_key and not key_is_embedders):
            given = "[llm] base_url" if config.base_url else f"${cfg.llm.api_key_env}"
            return f"{given} is set but [llm] model (MDMEM_LLM_MODEL) is missing"
        return None

    _llm_checked: tuple[LLMClient | None] | None = None
    _judge_llm: tuple[LLMClient | None] | None = None
    _usefulness: UsefulnessStore | None = None

    @property
    def usefulness(self) -> UsefulnessStore:
        if self._usefulness is None:
            from mdmem.recall.usefulness import UsefulnessStore

            with self._mutex:  # parallel recalls (prompt_context) must share one store
                if self._usefulness is None:
                    self._usefulness = UsefulnessStore(self.state_dir / "usefulness.sqlite")
        return self._usefulness

    def _trust_of(self, memory_id: str) -> float | None:
        return self.usefulness.trust(memory_id)

    def _note_hits(self, hits: Iterable[Hit]) -> None:
        self.usefulness.record_hits(h.id for h in hits)

    def _resolve_deferred(self, memory_ids: list[str]) -> None:
        """Auto-resolve a batch's new memories against what the vault held before it.

        The memories of one batch never retire each other (an import of
        similar notes keeps them all), as when each was resolved on its own.
        """
        live = [b for i in memory_ids if (b := self.catalog.block(i)) and b.status == "active"]
        if not live:
            return
        batch_ids = frozenset(memory_ids)
        try:
            # One batched pass; auto-resolve then finds each vector in the cache.
            self.indexer.warm_cache(live)
            for block in live:
                memory = Memory.from_block(block, was_new=True)
                self._auto_resolve(memory, fresh_batch=False, exclude=batch_ids)
        except MdmemError as e:
            # The memories themselves are written either way.
            log.warning("auto-resolve after the batch stopped: %s", e)

    def _auto_resolve(
        self, memory: Memory, *, fresh_batch: bool, exclude: Collection[str] = ()
    ) -> Memory:
        from mdmem.memory.lifecycle import auto_resolve

        llm = self._judge_llm[0] if self._judge_llm is not None else self.llm_client()
        return auto_resolve(self, memory, fresh_batch=fresh_batch, llm=llm, exclude=exclude)

    @contextmanager
    def _judge_with(self, llm: LLMClient | None) -> Iterator[None]:
        """Use ``llm`` (not the configured one) for the contradiction judge meanwhile."""
        saved = self._judge_llm
        self._judge_llm = (llm,) if llm is not None else saved
        try:
            yield
        finally:
            self._judge_llm = saved

    @contextmanager
    def _transaction(
        self, subject: str | None, *, dry_run: bool = False
    ) -> Iterator[list[tuple[str, bytes | None, bytes]]]:
        """An all-or-nothing batch: one commit if the body returns, no write if it raises.

        ``vault.batch()`` keeps what was done before an error; consolidation must
        not. With ``dry_run`` nothing is written either: the list yielded is
        filled with (path, old bytes or None, new bytes) for a diff.
        """
        changes: list[tuple[str, bytes | None, bytes]] = []
        with self._mutex:
            if self._batch is not None:
                raise InvalidInputError("this cannot run inside vault.batch()")
            lock = self._writing() if not dry_run else self._locked()
            with lock:
                self._batch = _Batch()
                ok = False
                try:
                    yield changes
                    ok = True
                finally:
                    batch, self._batch = self._batch, None
                    if ok and not dry_run:
                        self._flush(batch, subject)
                    else:
                        if ok:
                            changes.extend(
                                (rel, p.original, p.tf.to_bytes())
                                for rel, p in batch.pending.items()
                            )
                        for rel in batch.pending:
                            # Drop the pending parse: the catalog reads the disk again.
                            if rel in self.catalog.files:
                                self.catalog.refresh(rel)

    def _new_id(self) -> str:
        return self._ids.issue()

    def _append_entry(
        self,
        rel: str,
        heading: str,
        body: str,
        *,
        fields: list[tuple[str, str]],
        scope: str,
        kind: str,
        header: list[str],
        subject: str,
        trailers: list[tuple[str, str]],
        tags: Iterable[str] = (),
    ) -> str:
        """Append a ``## heading`` entry with inline fields; ``header`` starts a new file."""
        _refuse_secret_metadata(
            rel, blk.render_entry(heading, _MASK, "m-0", tags=tags, fields=fields), header
        )
        memory_id = self._ids.issue()
        lines = blk.render_entry(heading, body, memory_id, tags=tags, fields=fields)
        self._apply(
            rel,
            _entry_appender(header, lines, memory_id),
            subject=subject,
            trailers=self._trailers(memory_id, kind, scope, "record") + trailers,
        )
        return memory_id

    def _new_file(
        self, rel: str, lines: list[str], *, subject: str, trailers: list[tuple[str, str]]
    ) -> None:
        """Create a markdown file (indexed like any other); it must not exist yet."""

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
            if tf.lines:
                raise VaultFileError(f"{rel} already exists")
            tf.append_lines(lines)
            return _Edit()

        self._apply(rel, edit, subject=subject, trailers=trailers)

    def _stage_file(self, rel: str, data: bytes) -> None:
        """Add a raw, non-indexed file (a full tool output) to the open batch's commit.

        It bypasses the parser on purpose: the catalog never walks its folder,
        and a parse would put a multi-megabyte payload into the indexes.
        """
        batch = self._batch
        if batch is None:
            raise InvalidInputError("_stage_file needs an open batch")
        full = safe_path(self.root, rel)
        try:
            original: bytes | None = full.read_bytes()
        except FileNotFoundError:
            original = None
        text = data.decode("utf-8")

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
            tf.lines[:] = [text]
            return _Edit()

        tf = TextFile(lines=[text])
        batch.pending[rel] = _Pending(original=original, tf=tf, parsed=None, edits=[edit])
        batch.ops += 1  # no subject of its own: the entry that points at it names the commit

    def _rewrite_blocks(
        self,
        memory_ids: Iterable[str],
        make: Callable[[Block, TextFile], list[str]],
        *,
        subject: str,
        op: str,
        trailers: list[tuple[str, str]],
    ) -> None:
        """Replace many blocks' lines with ``make(block, file)``: one edit per file."""
        by_path: dict[str, list[str]] = {}
        for memory_id in memory_ids:
            block = self._block(memory_id)
            by_path.setdefault(block.path, []).append(block.id)
        for rel, ids in by_path.items():

            def edit(tf: TextFile, parsed: blk.ParsedFile | None, ids: list[str] = ids) -> _Edit:
                current = [_require(parsed, i) for i in ids]
                # Bottom-up, so a block whose line count changes leaves the
                # line numbers of the blocks above it valid.
                for block in sorted(current, key=lambda b: -b.line_start):
                    tf.replace_lines(block.line_start - 1, block.line_end, make(block, tf))
                return _Edit()

            self._apply(
                rel,
                edit,
                subject=subject,
                trailers=[("Op", op), *trailers, *(("Memory-Id", i) for i in ids[:20])],
            )


def _after_their_appends(
    original: bytes | None, ours: bytes, current: bytes | None, only_appends: bool
) -> bytes | None:
    """``current`` plus the lines we appended to ``original``; None unless both only appended."""
    if not only_appends or original is None or current is None:
        return None
    if not (original.endswith(b"\n") and current.endswith(b"\n")):
        return None
    if not (current.startswith(original) and ours.startswith(original)):
        return None
    return current + ours[len(original) :]


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


# ------------------------------------------------------------- helpers ----


def _zone(name: str) -> tzinfo | None:
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from mdmem.errors import ConfigError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown timezone {name!r}") from None


# Stands in for the text when the metadata is checked on its own: the text has
# its own guard (which may redact), and scanning text and metadata together
# would refuse ordinary text that happens to end in "password is" before a tag.
# ASCII, so that metadata without any secret-like piece skips the patterns.
_MASK = "x"


def _refuse_secret_metadata(rel: str, rendered: list[str], extra: list[str]) -> None:
    """Refuse a secret anywhere around the text, as it would be written.

    ``rendered`` is the block rendered around :data:`_MASK`, so tags, inline
    fields and headings (a log category, a learning topic) are checked in
    their final form; ``rel`` carries the scope and session id, ``extra`` a
    file header or section heading that the write may add.
    """
    refuse_in_metadata(
        "\n".join([rel, *rendered, *extra]),
        "the tags, fields, topic, category, scope or names of this memory",
    )


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}")
    return kind


def _check_tags(tags: Iterable[str]) -> list[str]:
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    out: list[str] = []
    for tag in tags:
        clean = str(tag).strip().lstrip("#")
        if not _TAG_OK.match(clean):
            raise InvalidInputError(f"invalid tag {tag!r}: letters, digits, _ - / only")
        if clean.lower() not in out:
            out.append(clean.lower())
    return out


def _check_fields(fields: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for key, value in fields:
        if not re.match(r"^[A-Za-z][\w-]{0,31}$", key) or re.search(r"[\[\]()\n]", str(value)):
            raise InvalidInputError(f"invalid field {key!r}")
        out.append((key.lower(), str(value)))
    return out


def _iso(value: datetime | date | str) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    parsed = blk.parse_datetime(value)
    if parsed is None:
        raise InvalidInputError(f"not a date: {value!r}")
    return str(value).strip()


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _copy_parsed(parsed: blk.ParsedFile) -> blk.ParsedFile:
    return blk.ParsedFile(
        path=parsed.path,
        file=parsed.file,
        frontmatter=parsed.frontmatter,
        frontmatter_lines=parsed.frontmatter_lines,
        blocks=list(parsed.blocks),
    )


def _require(parsed: blk.ParsedFile | None, memory_id: str) -> Block:
    block = parsed.by_id(memory_id) if parsed is not None else None
    if block is None:
        raise MemoryNotFoundError(f"no memory {memory_id} (was it removed meanwhile?)")
    return block


def _dedupe(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(items))


_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _close_open_fence(tf: TextFile) -> None:
    """If a human left a code fence open at the end, close it before appending.

    Otherwise everything appended would sit inside their code block.
    """
    fence: str | None = None
    for line in tf.lines[tf.fence_clean :]:
        match = _FENCE_LINE.match(line)
        if not match:
            continue
        marker = match.group(1)
        if fence is None:
            fence = marker[0] * len(marker)
        elif line.strip().startswith(fence):
            fence = None
    if fence is not None:
        tf.append_lines([fence])
    tf.fence_clean = len(tf.lines)


def _entry_appender(header: list[str], lines: list[str], memory_id: str) -> Editor:
    """An edit appending one entry section (``header`` starts a new file)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> _Edit:
        if not tf.lines:
            tf.append_lines([*header, ""])
        _close_open_fence(tf)
        first = tf.append_lines(lines, blank_before=True)
        tf.fence_clean = len(tf.lines)
        return _Edit(appended_at=first, ids=[memory_id])

    return edit


_LIST_ITEM_START = re.compile(r"^\s*([-*+]|\d+[.)])\s")
_ID_AT_END = re.compile(r"\^(m-[0-9a-z]+)\s*$")


def _append_item(tf: TextFile, lines: list[str]) -> _Edit:
    _close_open_fence(tf)
    last = next((line for line in reversed(tf.lines) if line.strip()), "")
    is_item = bool(_LIST_ITEM_START.match(last))
    # Keep consecutive memories in one tight list; start a list after a blank line.
    first = tf.append_lines(lines, blank_before=not is_item)
    tf.fence_clean = len(tf.lines)
    return _Edit(appended_at=first, ids=[_id_of(lines)], item=True)


def _id_of(lines: list[str]) -> str:
    match = _ID_AT_END.search(lines[-1])
    assert match is not None
    return match.group(1)


def _insert_under_topic(
    tf: TextFile, parsed: blk.ParsedFile | None, topic: str, lines: list[str]
) -> _Edit:
    wanted = f"topic: {topic}".casefold()
    heading_re = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
    start = None
    level = 2
    for idx, raw in enumerate(tf.lines):
        match = heading_re.match(raw.rstrip("\r\n"))
        if match and match.group(2).casefold() == wanted:
            start, level = idx, len(match.group(1))
            break
    if start is None:
        first = tf.append_lines([f"## Topic: {topic}", "", *lines], blank_before=True)
        return _Edit(appended_at=first, ids=[_id_of(lines)])
    end = len(tf.lines)
    for idx in range(start + 1, len(tf.lines)):
        match = heading_re.match(tf.lines[idx].rstrip("\r\n"))
        if match and len(match.group(1)) <= level:
            end = idx
            break
    last = end - 1
    while last > start and not tf.lines[last].strip():
        last -= 1
    if last == len(tf.lines) - 1:
        first = tf.append_lines(lines, blank_before=last == start)
        return _Edit(appended_at=first, ids=[_id_of(lines)])
    insert_at = last + 1
    new_lines = ([""] if last == start else []) + lines
    tf.insert_lines(insert_at, new_lines)
    return _Edit()
