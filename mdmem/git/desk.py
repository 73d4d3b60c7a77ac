"""``vault.git``: what git knows about a vault — changes, authors, sync, reviews, purge.

The audit trail as verbs: what changed since the agent last looked (or since
a commit or a date), who wrote a memory's lines, syncing with a remote,
consolidation reviews waiting on branches, undoing a commit, and purging a
memory from every commit. ``vault.history(id)`` (one memory's versions) stays
on the facade as a contract verb.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from mdmem.aliases import Alias, AliasTable
from mdmem.files.ids import normalize_id
from mdmem.git import provenance as git_provenance
from mdmem.git import purge as git_purge
from mdmem.git import review as git_review
from mdmem.git import seen, timetravel
from mdmem.git.sync import SyncResult, sync
from mdmem.index.progress import Progress
from mdmem.store.gitstore import CommitInfo

if TYPE_CHECKING:
    from mdmem.git.history import Changes
    from mdmem.git.provenance import LineAuthor, Provenance
    from mdmem.git.purge import PurgeResult
    from mdmem.git.review import Review, ReviewDecision, UndoResult
    from mdmem.git.seen import Seen
    from mdmem.store.memories import MemoryStore

__all__ = ["GIT_WRAPPER", "GitDesk"]


class GitDesk:
    """The git side of one vault (see the module docstring)."""

    def __init__(self, store: MemoryStore, view: Callable[[], Any]) -> None:
        self._store = store
        # The reading view, for everyone: changes are read (and redacted) there.
        self._view = view

    def head(self) -> str | None:
        """The current commit's sha (None in a repository without commits)."""
        return self._store.git.head()

    def last_commit(self) -> CommitInfo | None:
        return self._store.git.last_commit()

    # -------------------------------------------------------------- changes --

    def changes(
        self,
        since: str | date | datetime = "last-session",
        *,
        agent: str | None = None,
        session: str | None = None,
    ) -> Changes:
        """What was remembered, superseded, resolved, forgotten and edited by people
        since ``since``: "last-session" (this agent's, or ``session``'s, last
        :meth:`mark_seen`), a commit, or a date/time; texts shown (redacted).
        Through the reading view: ``vault.reading(reader).changes`` for one reader's."""
        found: Changes = self._view().changes(since, agent=agent, session=session)
        return found

    def mark_seen(self, *, session: str | None = None, agent: str | None = None) -> Seen:
        """Record the current commit as seen by this agent (and session)."""
        return seen.mark_seen(self._store, agent or self._store.agent, session=session)

    def blame(
        self, path: str, line_start: int, line_end: int, rev: str = "HEAD"
    ) -> list[LineAuthor]:
        """Who wrote each line (agent or human), from ``git blame``, cached per file version."""
        return git_provenance.blame(self._store, path, line_start, line_end, rev)

    def provenance(self, memory_id: str) -> Provenance:
        """Authors of one memory's current lines and whether a human wrote any."""
        return git_provenance.provenance(self._store, memory_id)

    # ---------------------------------------------------------------- remote --

    def sync(
        self,
        remote: str = "origin",
        *,
        push: bool = True,
        force_push: bool = False,
        progress: Progress | None = None,
    ) -> SyncResult:
        """Commit human edits, pull --rebase (block-aware merge), push, re-index what changed."""
        return sync(self._store, remote, push=push, force_push=force_push, progress=progress)

    # --------------------------------------------------------------- reviews --

    def reviews(self) -> list[Review]:
        """Consolidations waiting on review branches, oldest first, with counts."""
        return git_review.reviews(self._store)

    def review(self, branch: str | None = None) -> Review:
        """One review (default: the only open one): counts and ``git diff base...branch``."""
        return git_review.review(self._store, branch)

    def merge_review(self, branch: str | None = None) -> ReviewDecision:
        """Merge a review into the current branch (block-aware); ConflictError changes nothing."""
        return git_review.merge(self._store, branch)

    def reject_review(self, branch: str | None = None) -> ReviewDecision:
        """Delete a review branch; its session entries are pending again."""
        return git_review.reject(self._store, branch)

    def undo(self, commit: str) -> UndoResult:
        """Revert one commit (a consolidation, a review merge...) as a new ``Op: revert`` commit."""
        return git_review.undo(self._store, commit)

    # ----------------------------------------------------------------- purge --

    def purge(
        self,
        memory_id: str,
        *,
        confirm: bool,
        also: Iterable[str] = (),
        progress: Progress | None = None,
    ) -> PurgeResult:
        """Forget a memory and its derived copies, and rewrite every commit without them.

        Only that block (matched by its id in each version of each file) and
        what was derived from it change; see :mod:`mdmem.git.purge`. Its text,
        its distinctive fragments (secrets, codes) and the strings in ``also``
        are then redacted wherever else they are written (notes, file names,
        messages, refs); a kept memory holding a fragment stops the purge
        first. Derived state (indexes, manifest, time-travel snapshots) is
        scrubbed too; clones elsewhere still hold the text.
        """
        # A copied line would keep the text that the purge claims is gone.
        self._store.writer.sole_block(memory_id)
        result = git_purge.purge(
            self._store,
            normalize_id(memory_id),
            confirm=confirm,
            also=tuple(also),
            progress=progress,
        )
        # Time-travel snapshots hold old trees (purge itself rebuilt the keyword
        # index and vacuumed the manifest).
        shutil.rmtree(self._store.state_dir / "asof", ignore_errors=True)
        timetravel.forget_snapshots(self._store)
        return result

    if not TYPE_CHECKING:  # mypy flags an old name in our own code instead of Any

        def __getattr__(self, name: str) -> Any:
            # `vault.git` was the git wrapper itself before 0.1.0: the names it had
            # (GIT_WRAPPER, and only those) still answer until their removal version.
            if name.startswith("_") or name not in GIT_WRAPPER:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            GIT_WRAPPER[name].warn()
            return getattr(self._store.git, name)


# The git wrapper's public names of 0.0.x that the desk does not answer itself, each
# with the public verb that does its work, or, where none does, what to run instead.
_GIT_ITSELF = "git itself in the vault folder (no public verb)"
_WRITES = "the write verbs, each its own commit (no public verb)"
GIT_WRAPPER = AliasTable(
    "the git wrapper on vault.git",
    {
        name: Alias(f"vault.git.{name}", new)
        for name, new in {
            "changed_between": "vault.git.changes(since=<commit>)",
            "commit": _WRITES,
            "commit_contents": _WRITES,
            "config": _GIT_ITSELF,
            "config_guard": "vault.admin.doctor, which reports git config that runs programs",
            "dirty_paths": "vault.status().dirty",
            "execute": _GIT_ITSELF,
            "execute_bytes": _GIT_ITSELF,
            "forget_tracked": "nothing: an internal cache (no public verb)",
            "human_identity": _GIT_ITSELF,
            "init": "Vault.init",
            "is_repo": _GIT_ITSELF,
            "log": "vault.git.changes, vault.git.last_commit or vault.history",
            "maintain": "nothing: every commit starts git's maintenance (no public verb)",
            "operation_in_progress": _GIT_ITSELF,
            "popen": _GIT_ITSELF,
            "program_settings": "vault.admin.doctor, which reports git config that runs programs",
            "refs_under": _GIT_ITSELF,
            "root": "vault.root",
            "run": _GIT_ITSELF,
            "run_bytes": _GIT_ITSELF,
            "show": "vault.history (a memory's versions) or " + _GIT_ITSELF,
            "tracked": _GIT_ITSELF,
        }.items()
    },
)
