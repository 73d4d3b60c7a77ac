"""``vault.admin``: keeping a vault healthy — checks, watching, upkeep passes.

``doctor`` and ``watch`` (:mod:`mdmem.maintenance`), the LLM cleanup pass and
retention of retired memories (:mod:`mdmem.memory.consolidation.cleanup`,
:mod:`mdmem.memory.consolidation.lifecycle`), noticing and committing a person's edits, and
the status report. The desk lives in :mod:`mdmem.memory` because cleanup and
retention are memory passes; the checks it runs sit below it.

``store`` is the vault's parts (writer, catalog, indexes, git wrapper) for
diagnostics and tests: not part of the stable API.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.errors import MdmemError
from mdmem.git import review as git_review
from mdmem.index.progress import Progress
from mdmem.maintenance.doctor import DoctorReport, run_doctor
from mdmem.maintenance.migrate import Migration
from mdmem.maintenance.migrate import migrate as run_migration
from mdmem.maintenance.watch import Watcher
from mdmem.memory.consolidation import cleanup as store_cleanup
from mdmem.memory.consolidation import lifecycle
from mdmem.memory.desks.contacts import CHECK as CONTACTS_CHECK
from mdmem.memory.desks.contacts import check_profiles
from mdmem.providers.llm import USE_CONFIGURED_LLM, LLMChoice
from mdmem.store.gitstore import CommitInfo
from mdmem.store.inputs import Clock

if TYPE_CHECKING:
    from mdmem.maintenance.adopt import Adoption
    from mdmem.memory.consolidation.cleanup import CleanupResult
    from mdmem.memory.consolidation.lifecycle import RetentionReport
    from mdmem.memory.desks.parts import MemoryParts
    from mdmem.store.memories import MemoryStore

__all__ = ["Admin", "VaultStatus"]


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
    # Sections of a person's notes (text without a block id) that recall finds too:
    # an adopted vault of notes has no memories yet, and is not empty.
    notes: int = 0


class Admin:
    """Upkeep of one vault (see the module docstring)."""

    def __init__(self, parts: MemoryParts) -> None:
        self._parts = parts
        self.store: MemoryStore = parts.store
        # What Vault.init did with the folder it was given (adopted files...).
        self.adoption: Adoption | None = None

    @property
    def state_dir(self) -> Path:
        """Where this vault's derived state (indexes, caches, logs) lives."""
        return self.store.state_dir

    @property
    def clock(self) -> Clock:
        """The vault's clock: its time zone decides a daily log's date."""
        return self.store.clock

    @property
    def embedder_loaded(self) -> bool:
        """Whether this process has the embedder loaded (a warm server); never loads it."""
        return self.store.embedding.loaded

    def refresh(self) -> list[str]:
        """Notice files changed on disk (a stat scan); returns the changed paths.

        When HEAD moved since the last index (a pull, checkout or branch
        switch), the files ``git diff --name-status -M`` names are re-read even
        if their stat looks unchanged.
        """
        return self.store.refresh()

    def commit_human_edits(self) -> str | None:
        """Commit files a person changed, authored as the human; returns the sha."""
        return self.store.commit_human_edits()

    def doctor(self, *, fix: bool = False, progress: Progress | None = None) -> DoctorReport:
        """Check files, manifest, both indexes and git; ``fix`` repairs derived state,
        renames an old vault's ``merge=union`` attributes and gives each copied line
        (an id on two lines) a fresh id."""
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

    def cleanup(
        self,
        scope: str | None = None,
        *,
        dry_run: bool = False,
        review: bool | None = None,
        if_due: bool = False,
        llm: LLMChoice = USE_CONFIGURED_LLM,
    ) -> CleanupResult:
        """LLM pass over a scope's MEMORY/USER files: merge duplicates, retire replaced
        and contradicted facts, one commit (a review branch with ``review``); see
        :mod:`mdmem.memory.consolidation.cleanup`. ``if_due``: only when
        ``[cleanup] interval_hours`` passed."""
        return store_cleanup.cleanup(
            self.store,
            self._parts.llm(llm),
            scope=scope,
            dry_run=dry_run,
            review=self.store.settings.cleanup.review if review is None else review,
            if_due=if_due,
        )

    def cleanup_due(self, scope: str | None = None) -> bool:
        """Whether the scope's cleanup is due (for a host's scheduler)."""
        return store_cleanup.cleanup_due(self.store, scope)

    def retention(self, days: int | None = None, *, apply: bool = False) -> RetentionReport:
        """Retired memories older than ``days``: listed, or with ``apply`` redacted."""
        return lifecycle.anonymize_retired(self.store, days, apply=apply)

    def migrate(self, *, apply: bool = False) -> Migration:
        """Move a vault of an older format to the line format (fields beside the
        lines, retired lines in archives, sessions as transcripts): a dry run
        with its diff, or with ``apply`` one commit (:mod:`mdmem.maintenance.migrate`)."""
        return run_migration(self.store, apply=apply)

    def warm_up(self) -> None:
        """Load what the first recall would (the keyword index, the embedder with
        one query) without recording hits: a long-lived server's start."""
        self.store.refresh()
        indexer = self.store.indexer
        indexer.catch_up()
        with contextlib.suppress(MdmemError):
            indexer.keyword.search("warm up", limit=1)
        with contextlib.suppress(MdmemError):
            self.store.embedding.embed_query("warm up")

    def status(self) -> VaultStatus:
        """Counts by kind, scope and status, the index's health, git state and reviews."""
        store = self.store
        store.refresh()
        # Files whose manifest rows hid memories are re-read first: the counts
        # and "fresh" are statements about the files, not about the manifest.
        store.writer.verify_manifest()
        by_kind: dict[str, int] = {}
        by_scope: dict[str, int] = {}
        by_status: dict[str, int] = {}
        total = notes = 0
        for b in store.catalog.blocks():
            if not b.is_memory:
                notes += bool(b.text.strip()) and not b.id.endswith("#frontmatter")
                continue
            total += 1
            by_kind[b.kind] = by_kind.get(b.kind, 0) + 1
            by_scope[b.scope or "(root)"] = by_scope.get(b.scope or "(root)", 0) + 1
            by_status[b.status] = by_status.get(b.status, 0) + 1
        return VaultStatus(
            root=str(store.root),
            agent=store.agent,
            state_dir=str(store.state_dir),
            memories=total,
            by_kind=dict(sorted(by_kind.items())),
            by_scope=dict(sorted(by_scope.items())),
            by_status=dict(sorted(by_status.items())),
            files=len(store.catalog.files),
            dirty=store.git.dirty_paths(),
            skipped=dict(store.catalog.skipped),
            last_commit=store.git.last_commit(),
            index=self._index_status(),
            reviews=git_review.open_branches(store),
            notes=notes,
        )

    def _index_status(self) -> dict[str, Any]:
        indexer = self.store.indexer
        stats = indexer.stats()
        problems = indexer.problems()
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
        problem = self.store.embedding.problem
        if problem:
            info["vector_problem"] = problem
        return info
