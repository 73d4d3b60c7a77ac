"""The Vault: the one front door of mdmem, a thin facade over its parts.

Data flow of a write (DESIGN.md): validate → guard secrets → under the vault
lock, commit any human edits as the human → splice the block into its file
(compare-and-swap against a concurrent editor, atomic replace) → one git commit
authored by the agent, with trailers → indexes updated → return. That path is
:class:`~mdmem.store.writer.Writer`; the verbs are
:class:`~mdmem.store.memories.MemoryStore`'s. This class composes them with
recall (:mod:`mdmem.recall`), the memory lifecycle (:mod:`mdmem.memory`), the
git-native features (:mod:`mdmem.git`) and upkeep (:mod:`mdmem.maintenance`),
and hands the writer its hooks (auto-resolve after a write).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mdmem.agent import prompt, steps
from mdmem.config import Settings, load_settings
from mdmem.errors import InvalidInputError, MdmemError, VaultExistsError, VaultNotFoundError
from mdmem.git import history as git_history
from mdmem.git import provenance as git_provenance
from mdmem.git import purge as git_purge
from mdmem.git import review as git_review
from mdmem.git import seen, timetravel
from mdmem.git.sync import SyncResult, sync
from mdmem.git.versions import Version, versions
from mdmem.index.indexer import Indexer, IndexStats
from mdmem.index.progress import Progress
from mdmem.maintenance.doctor import DoctorReport, run_doctor
from mdmem.maintenance.watch import Watcher
from mdmem.memory import (
    browse,
    export,
    importer,
    lifecycle,
    llm_rerank,
    reflect,
    reminders,
    sessions,
    summaries,
    toolcalls,
)
from mdmem.memory import cleanup as store_cleanup
from mdmem.memory import consolidate as consolidation
from mdmem.memory import documents as docs
from mdmem.memory.actions import ActionMemory
from mdmem.memory.contacts import CHECK as CONTACTS_CHECK
from mdmem.memory.contacts import Contacts, check_profiles
from mdmem.memory.llm import LLMClient, client_from_settings
from mdmem.memory.pending import PendingBuffer
from mdmem.models import Block, Memory, Recall
from mdmem.recall.controls import RecallControls
from mdmem.recall.model_rerank import Reranking
from mdmem.recall.recaller import Recaller
from mdmem.recall.search import RecallQuery, render_context
from mdmem.recall.usefulness import Usefulness, UsefulnessStore
from mdmem.store.catalog import Catalog
from mdmem.store.gitstore import CommitInfo, GitStore, Identity, format_message
from mdmem.store.ids import normalize_id
from mdmem.store.inputs import MAX_MEMORY_CHARS
from mdmem.store.memories import MemoryStore

if TYPE_CHECKING:
    from mdmem.agent.steps import Step, StepCompaction
    from mdmem.git.history import Changes
    from mdmem.git.provenance import LineAuthor, Provenance
    from mdmem.git.purge import PurgeResult
    from mdmem.git.review import Review, ReviewDecision, UndoResult
    from mdmem.git.seen import Seen
    from mdmem.memory.cleanup import CleanupResult
    from mdmem.memory.consolidate import ConsolidationResult
    from mdmem.memory.documents import IngestResult
    from mdmem.memory.lifecycle import RetentionReport
    from mdmem.memory.reflect import FlushResult, Reflection
    from mdmem.memory.sessions import Session
    from mdmem.memory.toolcalls import ToolCall

__all__ = ["MAX_MEMORY_CHARS", "Vault", "VaultStatus", "Version", "find_vault_root"]

_AGENT_OK = re.compile(r"[A-Za-z0-9][\w.@-]{0,63}")
_AGENT_LINE = re.compile(r'^agent = "[^"\n]*"', re.MULTILINE)
log = logging.getLogger("mdmem")


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


class Vault:
    """An mdmem vault: markdown files under git, plus derived indexes."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        *,
        agent: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.store = MemoryStore(
            root.resolve(), settings, agent=agent or settings.agent, progress=progress
        )
        self._closed = False
        self._llm: tuple[LLMClient | None] | None = None
        self._reranking = Reranking(self.settings)  # [recall] reranker, built on first use
        self.resolver = lifecycle.AutoResolver(self.store, self.llm_client)
        # The writer calls auto-resolve after each remember and at a batch's end.
        self.store.auto_resolve = self.resolver
        self.store.writer.after_batch = self.resolver.after_batch
        self.recaller = Recaller(self.store, human_of=self._written_by_human)
        self.contacts = Contacts(self.store)  # profiles and identity links: link, profile, list

    # -- the parts, by their wave-1 names ------------------------------------

    @property
    def root(self) -> Path:
        return self.store.root

    @property
    def settings(self) -> Settings:
        return self.store.settings

    @property
    def agent(self) -> str:
        return self.store.agent

    @property
    def state_dir(self) -> Path:
        return self.store.state_dir

    @property
    def git(self) -> GitStore:
        return self.store.git

    @property
    def catalog(self) -> Catalog:
        return self.store.catalog

    @property
    def indexer(self) -> Indexer:
        return self.store.indexer

    @property
    def usefulness(self) -> UsefulnessStore:
        return self.recaller.usefulness

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
        if agent is not None and not _AGENT_OK.fullmatch(agent):
            raise InvalidInputError(f"invalid agent name {agent!r}: letters, digits, . _ - @")
        root.mkdir(parents=True, exist_ok=True)
        template = _template_dir()
        for item in template.iterdir():
            target = root / item.name
            if item.is_dir():
                shutil.copytree(item, target, dirs_exist_ok=True)
            elif not target.exists():
                shutil.copy2(item, target)
        if agent is not None:
            # The vault's default author from now on, not only of the first commit.
            toml = root / "mdmem.toml"
            toml.write_text(
                _AGENT_LINE.sub(f'agent = "{agent}"', toml.read_text(encoding="utf-8"), count=1),
                encoding="utf-8",
            )
        if not GitStore(root).is_repo():
            GitStore.init(root)
        vault = cls.open(root, agent=agent, **overrides)
        vault.git.commit(
            format_message("init: mdmem vault", trailers=[("Op", "init")]),
            Identity.agent(vault.agent),
        )
        return vault

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        agent: str | None = None,
        progress: Progress | None = None,
        **overrides: Any,
    ) -> Vault:
        """Open the vault at ``path`` (or found by walking up from the cwd); ``progress``
        hears of the indexing it does (all of it when the state dir is gone)."""
        if path is None:
            root = find_vault_root()
        else:
            root = Path(path).expanduser()
            if not (root / "mdmem.toml").is_file():
                raise VaultNotFoundError(
                    f"{root} is not an mdmem vault (no mdmem.toml): run `mdmem init {root}`"
                )
        if not (root / ".git").exists():
            GitStore.init(root)
        git = GitStore(root)
        settings = load_settings(root, is_tracked=lambda rel: rel in git.tracked(), **overrides)
        agent = agent or os.environ.get("MDMEM_AGENT") or None
        return cls(root, settings, agent=agent, progress=progress)

    def close(self) -> None:
        """Checkpoint the vector index and release index handles."""
        if not self._closed:
            self._closed = True
            self.recaller.close()
            self.store.close()

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
        importance: int | None = None,
        origin: str | None = None,
    ) -> Memory:
        """Store one memory (importance 1-10, capped at 5 for a planning/investigation origin)."""
        return self.store.remember(
            text,
            kind,
            tags,
            scope,
            created=created,
            fields=fields,
            secrets=secrets,
            importance=importance,
            origin=origin,
        )

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
        return self.store.log(text, category, scope=scope, tags=tags, when=when, secrets=secrets)

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
        return self.store.journal(text, scope=scope, tags=tags, when=when, secrets=secrets)

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
        return self.store.learn(topic, text, scope=scope, tags=tags, secrets=secrets)

    def get(self, memory_id: str) -> Memory:
        return self.store.get(memory_id)

    def ingest(
        self, path: str | os.PathLike[str], *, scope: str | None = None, force: bool = False
    ) -> IngestResult:
        """Copy/convert a markdown, text, HTML or PDF file into documents/ as chunks."""
        return docs.ingest(self.store, Path(path), scope=scope, force=force)

    def ingest_many(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        scope: str | None = None,
        force: bool = False,
    ) -> list[IngestResult]:
        """Ingest files and folders (symlinks, hidden entries and vaults inside skipped)."""
        return docs.ingest_many(self.store, [Path(p) for p in paths], scope=scope, force=force)

    def block(self, memory_id: str) -> Block:
        """The parsed block of a memory, with its inline fields."""
        return self.store.block(memory_id)

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
        if not purge:
            return self.store.forget(memory_id, reason=reason)
        block = self.store.writer.sole_block(memory_id)
        self.purge(memory_id, confirm=confirm)
        return Memory.from_block(block, was_new=False)

    def purge(
        self, memory_id: str, *, confirm: bool, progress: Progress | None = None
    ) -> PurgeResult:
        """Forget a memory and its derived copies, and rewrite every commit without them.

        Only that block (matched by its id in each version of each file) and
        what consolidation copied from it change; see :mod:`mdmem.git.purge`.
        Derived state (indexes, manifest, time-travel snapshots) is scrubbed
        too; clones elsewhere still hold the text.
        """
        # A copied line would keep the text that the purge claims is gone.
        self.store.writer.sole_block(memory_id)
        result = git_purge.purge(
            self.store, normalize_id(memory_id), confirm=confirm, progress=progress
        )
        self._forget_derived_copies()
        return result

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
        return self.store.supersede(memory_id, text, kind=kind, tags=tags, secrets=secrets)

    def resolve(self, memory_id: str, *, status: str = "resolved") -> Memory:
        """Mark a memory resolved (or another status); it leaves default recall."""
        return self.store.resolve(memory_id, status=status)

    def archive(self, memory_id: str) -> Memory:
        """Hide an active memory from recall and lists without retiring it (reversible)."""
        return self.store.archive(memory_id)

    def unarchive(self, memory_id: str) -> Memory:
        """Make an archived memory active again."""
        return self.store.unarchive(memory_id)

    @contextmanager
    def batch(self, subject: str | None = "batch import") -> Iterator[Vault]:
        """Group many writes into one commit (and one file write per file).

        Auto-resolve (retiring what a new memory replaces) runs at the end of
        the batch, over its new memories in order and embedded together, so
        a ``Memory`` that ``remember`` returns inside a batch has an empty
        ``superseded``; the commit lists what was retired. Session turns
        recorded inside join the commit; automatic consolidation runs once, after.
        """
        with self.store.batch(subject):
            yield self
        if self.store.writer.current is None:  # the outermost batch has committed
            self._maybe_consolidate()

    def commit_human_edits(self) -> str | None:
        """Commit files a person changed, authored as the human; returns the sha."""
        return self.store.commit_human_edits()

    # ------------------------------------------------------------ queries --

    def memories(self, *, include_inactive: bool = True) -> list[Memory]:
        return self.store.memories(include_inactive=include_inactive)

    def refresh(self) -> list[str]:
        """Notice files changed on disk (a stat scan); returns the changed paths.

        When HEAD moved since the last index (a pull, checkout or branch
        switch), the files ``git diff --name-status -M`` names are re-read even
        if their stat looks unchanged.
        """
        return self.store.refresh()

    def history(self, memory_id: str) -> list[Version]:
        """Every version of one memory in git, oldest first, following moves."""
        return versions(self.store, memory_id)

    def status(self) -> VaultStatus:
        self.refresh()
        # Files whose manifest rows hid memories are re-read first: the counts
        # and "fresh" are statements about the files, not about the manifest.
        self.store.writer.verify_manifest()
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
            reviews=git_review.open_branches(self.store),
        )

    def _index_status(self) -> dict[str, Any]:
        stats = self.indexer.stats()
        problems = self.indexer.problems()
        info: dict[str, Any] = {
            "blocks": stats.blocks,
            "keyword_docs": stats.keyword_docs,
            "vectors": stats.vectors,
            "embedder": stats.embedder,
            "missing_vectors": stats.missing_vectors,
            "fresh": not problems
            and stats.keyword_docs == stats.blocks
            and (stats.vectors == stats.blocks or stats.embedder == "none"),
            "problems": problems,
        }
        problem = self.indexer.embedder_problem
        if problem:
            info["vector_problem"] = problem
        return info

    # ---------------------------------------------------------- git-native --

    def diff(self, since: str | date | datetime) -> Changes:
        """What was remembered, superseded, resolved, forgotten and edited by humans since."""
        return git_history.changes(self.store, since)

    def blame(
        self, path: str, line_start: int, line_end: int, rev: str = "HEAD"
    ) -> list[LineAuthor]:
        """Who wrote each line (agent or human), from ``git blame``, cached per file version."""
        return git_provenance.blame(self.store, path, line_start, line_end, rev)

    def provenance(self, memory_id: str) -> Provenance:
        """Authors of one memory's current lines and whether a human wrote any."""
        return git_provenance.provenance(self.store, memory_id)

    def sync(
        self,
        remote: str = "origin",
        *,
        push: bool = True,
        force_push: bool = False,
        progress: Progress | None = None,
    ) -> SyncResult:
        """Commit human edits, pull --rebase (block-aware merge), push, re-index what changed."""
        return sync(self.store, remote, push=push, force_push=force_push, progress=progress)

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
        # time-travel snapshots hold old trees (purge itself rebuilt the
        # keyword index and vacuumed the manifest).
        shutil.rmtree(self.state_dir / "asof", ignore_errors=True)
        timetravel.forget_snapshots(self.store)

    def doctor(self, *, fix: bool = False, progress: Progress | None = None) -> DoctorReport:
        """Check files, manifest, both indexes and git; ``fix`` repairs derived state
        and renames an old vault's ``merge=union`` attributes, and gives each copied
        line (an id on two lines) a fresh id."""
        with self.store.writer.lock():
            return run_doctor(
                self.store, fix=fix, progress=progress, extra=[(CONTACTS_CHECK, check_profiles)]
            )

    def watch(
        self,
        *,
        debounce: float = 0.3,
        commit: bool = False,
        on_refresh: Callable[[list[str]], None] | None = None,
        start: bool = True,
    ) -> Watcher:
        """A watcher keeping the indexes live as files change (started unless asked; stop() it)."""
        watcher = Watcher(self.store, debounce=debounce, commit=commit, on_refresh=on_refresh)
        return watcher.start() if start else watcher

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
        **controls: Any,
    ) -> Recall:
        """The memories most relevant to ``query``, best first, with citations.

        ``scope``: one scope, several, or None for every scope ("" is the
        vault root). ``mode``: hybrid (default), keyword or vector only.
        ``as_of``: a commit-ish or a date/time: search the vault as it was
        then (hits carry ``commit``). Edits made on disk since the last call
        are indexed first. ``controls`` (:mod:`mdmem.recall.controls`):
        ``exclude_ids``, ``source``, ``contact``, ``session``, ``author``,
        ``status``, ``scope_weights``, ``fallback``, and ``tier`` (0 abstracts,
        1 overviews, 2 full text).
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
            RecallControls.build(**controls) if controls else None,
        )
        if as_of is None:
            return self._llm_rerank(self.recaller.recall(q))
        started = time.perf_counter()
        result = timetravel.recall_as_of(self.store, q, as_of)
        return replace(result, took_ms=(time.perf_counter() - started) * 1000)

    def _llm_rerank(self, result: Recall) -> Recall:
        """The re-ranker model's order of the top hits, when ``[recall] reranker`` names
        one, then the LLM re-rank, when ``[recall] rerank`` is on and a model is set."""
        result = self._reranking.apply(result)
        s = self.settings.recall
        client = self.llm_client() if s.rerank and result.items else None
        if client is None:
            return result
        return llm_rerank.rerank(client, result, top=s.rerank_top, budget_ms=s.rerank_budget_ms)

    def prompt_context(self, task: str, contact: str | None = None, **budgets: Any) -> Any:
        """Sections for a prompt (recent, episodes, top-k, file tails, thread); see agent.prompt."""
        return prompt.prompt_context(self, task, contact, **budgets)

    def context(self, query: str, max_chars: int = 6000, **filters: Any) -> str:
        """A "## Recalled Memory" block for a prompt, citing each memory as path#^id."""
        return render_context(self.recall(query, **filters), max_chars)

    def reindex(
        self, full: bool = False, *, progress: Callable[[str, int, int], None] | None = None
    ) -> IndexStats:
        """Bring the indexes up to date (incremental), or rebuild both from scratch."""
        return self.store.reindex(full, progress=progress)

    # ------------------------------------------- consolidation & lifecycle --

    def session(
        self,
        session_id: str,
        source: str | None = None,
        contact: str | None = None,
        *,
        scope: str | None = None,
    ) -> Session:
        """Short-term memory of one conversation: ``.record()``, ``.record_tool_output()``.

        With no ``scope``, a contact linked to a person records into the person's scope.
        """
        return self._open_session(session_id, source, contact, scope, self._maybe_consolidate)

    def _open_session(
        self,
        session_id: str,
        source: str | None,
        contact: str | None,
        scope: str | None,
        after_write: Callable[[], None] | None = None,
    ) -> Session:
        return sessions.Session(
            self.store,
            session_id,
            source=source,
            contact=contact,
            scope=scope if scope is not None else self.contacts.scope_for(contact),
            after_write=after_write,
            on_contact=self.contacts.seen,
        )

    def _maybe_consolidate(self) -> None:
        consolidation.maybe_auto_consolidate(
            self.store, lambda entries: self.consolidate(entries=entries, reason="threshold")
        )

    def read_tool_output(self, key: str, *, scope: str | None = None) -> str:
        """The full text of a large tool output recorded under ``key`` (``tout_…``)."""
        return sessions.read_tool_output(self.store, key, scope=scope)

    def consolidate(
        self,
        llm: LLMClient | None = None,
        *,
        dry_run: bool = False,
        force: bool = False,
        entries: list[Block] | None = None,
        reason: str = "manual",
        review: bool | None = None,
        progress: Progress | None = None,
    ) -> ConsolidationResult:
        """Fold pending session entries into episode notes and facts (one commit).

        ``llm``: default the configured model, else the extractive summariser.
        ``dry_run``: compute everything, write nothing, return the diff.
        ``force``: accept drafts the drop-ratio safety check would reject.
        ``review``: commit to a branch ``mdmem/consolidate-<date>`` for a person
        to merge or reject, leaving the working tree alone (default: the
        ``[consolidation] review`` setting); ``.branch`` names it.
        """
        return consolidation.consolidate(
            self.store,
            self.resolver,
            llm if llm is not None else self.llm_client(),
            dry_run=dry_run,
            force=force,
            entries=entries,
            reason=reason,
            review=self.settings.consolidation.review if review is None else review,
            progress=progress,
        )

    def cleanup(
        self,
        scope: str | None = None,
        *,
        dry_run: bool = False,
        review: bool | None = None,
        if_due: bool = False,
        llm: LLMClient | None = None,
    ) -> CleanupResult:
        """LLM pass over a scope's MEMORY/USER files: merge duplicates, retire replaced
        and contradicted facts, one commit (a review branch with ``review``); see
        :mod:`mdmem.memory.cleanup`. ``if_due``: only when ``[cleanup] interval_hours`` passed."""
        return store_cleanup.cleanup(
            self.store,
            llm if llm is not None else self.llm_client(),
            scope=scope,
            dry_run=dry_run,
            review=self.settings.cleanup.review if review is None else review,
            if_due=if_due,
        )

    def cleanup_due(self, scope: str | None = None) -> bool:
        """Whether the scope's cleanup is due (for a host's scheduler)."""
        return store_cleanup.cleanup_due(self.store, scope)

    def reviews(self) -> list[Review]:
        """Consolidations waiting on review branches, oldest first, with counts."""
        return git_review.reviews(self.store)

    def review(self, branch: str | None = None) -> Review:
        """One review (default: the only open one): counts and ``git diff base...branch``."""
        return git_review.review(self.store, branch)

    def merge_review(self, branch: str | None = None) -> ReviewDecision:
        """Merge a review into the current branch (block-aware); ConflictError changes nothing."""
        return git_review.merge(self.store, branch)

    def reject_review(self, branch: str | None = None) -> ReviewDecision:
        """Delete a review branch; its session entries are pending again."""
        return git_review.reject(self.store, branch)

    def undo(self, commit: str) -> UndoResult:
        """Revert one commit (a consolidation, a review merge...) as a new ``Op: revert`` commit."""
        return git_review.undo(self.store, commit)

    def flush(
        self,
        messages: Iterable[dict[str, Any]],
        llm: LLMClient | None = None,
        *,
        scope: str | None = None,
        session: str | None = None,
    ) -> FlushResult:
        """Store durable facts from messages about to be compacted away."""
        client = llm if llm is not None else self.llm_client()
        return reflect.flush(
            self.store, self.resolver, messages, llm=client, scope=scope, session=session
        )

    def reflect(
        self, query: str, *, k: int = 8, llm: LLMClient | None = None, **filters: Any
    ) -> Reflection:
        """An answer synthesised across recalled memories, citing ``path#^id``."""
        client = llm if llm is not None else self.llm_client()
        return reflect.reflect(self.recall, query, llm=client, k=k, **filters)

    def feedback(self, memory_id: str, helpful: bool) -> Usefulness:
        """Tell mdmem a recalled memory helped (or not): moves its trust score."""
        block = self.store.block(memory_id)
        return self.usefulness.feedback(block.id, bool(helpful))

    def usefulness_of(self, memory_id: str) -> Usefulness:
        """Hit count and trust of a memory (kept in the state dir, not in markdown)."""
        return self.usefulness.get(normalize_id(memory_id))

    def anonymize_retired(self, days: int | None = None, *, apply: bool = False) -> RetentionReport:
        """Retired memories older than ``days``: listed, or with ``apply`` redacted."""
        return lifecycle.anonymize_retired(self.store, days, apply=apply)

    def resolve_session(self, session_id: str, *, scope: str | None = None) -> list[Memory]:
        """Summarise the session, then resolve its active memories (entries, facts): one commit."""
        return summaries.resolve_session(self.store, session_id, scope=scope, llm=self.llm_client())

    def summarize_session(
        self, session_id: str, *, scope: str | None = None, llm: LLMClient | None = None
    ) -> Memory | None:
        """A ``session_summary`` of the turns no summary covers yet (LLM, else extractive)."""
        client = llm if llm is not None else self.llm_client()
        return summaries.summarize_session(self.store, session_id, scope=scope, llm=client)

    def capture_tool_results(
        self, session_id: str, calls: Iterable[ToolCall], *, scope: str | None = None
    ) -> list[Memory]:
        """Failed tool calls as gotchas, later fixes as bug_fixes linked by ``[fixes:: ^id]``."""
        return toolcalls.capture_tool_results(self.store, session_id, calls, scope=scope)

    def changes(
        self,
        since: str | date | datetime = "last-session",
        *,
        agent: str | None = None,
        session: str | None = None,
    ) -> Changes:
        """What changed since this agent's last session (or a commit or date); see git.seen."""
        return seen.changes_since(self.store, since, agent=agent or self.agent, session=session)

    def mark_seen(self, *, session: str | None = None, agent: str | None = None) -> Seen:
        """Record the current commit as seen by this agent (and session)."""
        return seen.mark_seen(self.store, agent or self.agent, session=session)

    @property
    def pending(self) -> PendingBuffer:
        """Messages waiting for the agent's next task: ``push``, ``take``, ``peek`` (FIFO, TTL)."""
        return PendingBuffer(self.store)

    def flush_reminder(self, *, session: str | None = None, scope: str | None = None) -> str | None:
        """OrcBot's reminder to store what matters before consolidation, when due; else None."""
        return reminders.flush_reminder(self.store, self.agent, session=session, scope=scope)

    def consolidate_stale(self) -> ConsolidationResult | None:
        """Consolidate conversations idle for ``consolidation.stale_minutes`` (for a timer)."""
        return consolidation.consolidate_stale(
            self.store, lambda entries: self.consolidate(entries=entries, reason="stale")
        )

    def action(self, action_id: str, *, scope: str | None = None) -> ActionMemory:
        """Short-term notes of one action: ``.add()``, ``.memories()``, ``.complete()``."""
        return ActionMemory(self.store, action_id, scope=scope)

    def compact_steps(self, history: list[Step], llm: LLMClient | None = None) -> StepCompaction:
        """Keep the first 2 and last 5 of > 10 steps, summarise the middle (OrcBot)."""
        return steps.compact_steps(history, llm if llm is not None else self.llm_client())

    # ------------------------------------------------ import, export, browse --

    def import_(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        scope: str | None = None,
        secrets: str | None = None,
        progress: Progress | None = None,
    ) -> importer.ImportReport:
        """Import a ChatGPT/Claude export, a JSONL of messages or markdown notes (idempotent)."""
        return importer.import_path(
            self.store,
            path,
            format=format,
            scope=scope,
            secrets=secrets,
            progress=progress,
            open_session=self._open_session,  # contacts as a live session has them
        )

    def export_jsonl(self, out: IO[str], *, progress: Progress | None = None) -> int:
        """Write every memory with its metadata to ``out``, one JSON object a line."""
        return export.export_jsonl(self.store, out, progress)

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        """Memories by kind/scope/status/tag/date/author, newest first (see memory.browse)."""
        return browse.list_memories(self.store, **filters)

    def show(self, memory_id: str) -> browse.Shown:
        """One memory's text, metadata, git history and line authors together."""
        return browse.show(self.store, memory_id)

    def llm_client(self) -> LLMClient | None:
        """The configured LLM (``[llm]`` + OPENAI_* environment), or None."""
        if self._llm is None:
            self._llm = (client_from_settings(self.settings),)
        return self._llm[0]
