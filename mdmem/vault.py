"""The Vault: mdmem's one front door, a table of contents.

The contract verbs (docs/api.md) are methods; everything else sits on a desk,
a small class in the package it fronts, built from the same parts:

====================  ==========================================================
``vault.sessions``    conversations: open/record, summaries, tool calls, flush,
                      pending messages, action notes (:mod:`mdmem.memory.desks.sessions`)
``vault.git``         changes since last session, authors, sync, reviews, undo,
                      purge (:mod:`mdmem.git.desk`)
``vault.admin``       doctor, watch, cleanup, retention, refresh, status
                      (:mod:`mdmem.memory.desks.admin`)
``vault.library``     ingest documents, import/export, list, show
                      (:mod:`mdmem.memory.desks.library`)
``vault.contacts``    people and their platform ids (:mod:`mdmem.memory.desks.contacts`)
``vault.usefulness``  feedback on recalled memories (:mod:`mdmem.recall.usefulness`)
====================  ==========================================================

Data flow of a write: validate → guard secrets → under the vault lock, commit
any human edits as the human → splice the block into its file (compare-and-
swap, atomic replace) → one git commit authored by the agent → indexes
updated → return (:class:`~mdmem.store.writer.Writer`). Helpers that take a
vault (prompt assembly, synthesis, compaction) live in :mod:`mdmem.agent`.
Names from before 0.1.0 answer for one release through :data:`MOVED`.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.config import Settings
from mdmem.deprecations import MOVED, answer, forget_with_purge
from mdmem.errors import InvalidInputError
from mdmem.git import provenance as git_provenance
from mdmem.git import timetravel
from mdmem.git.desk import GitDesk
from mdmem.git.versions import Version
from mdmem.index.progress import Progress
from mdmem.maintenance import adopt
from mdmem.memory.desks.admin import Admin, VaultStatus
from mdmem.memory.desks.contacts import Contacts
from mdmem.memory.desks.library import Library
from mdmem.memory.desks.parts import MemoryParts
from mdmem.memory.desks.reading import Reading, reader_for
from mdmem.memory.desks.sessions import Sessions
from mdmem.models import Block, Memory, Recall
from mdmem.providers.llm import USE_CONFIGURED_LLM, LLMChoice, LLMClient
from mdmem.recall.recaller import Recaller
from mdmem.recall.usefulness import UsefulnessDesk
from mdmem.store.gitstore import Identity
from mdmem.store.inputs import MAX_MEMORY_CHARS
from mdmem.store.memories import MemoryStore
from mdmem.store.vaultdir import find_vault_root, locate
from mdmem.store.visibility import EVERYONE, Reader

if TYPE_CHECKING:
    from mdmem.index.indexer import IndexStats
    from mdmem.memory.capture.sessions import Session
    from mdmem.memory.consolidation.consolidate import ConsolidationResult
    from mdmem.memory.consolidation.reflect import Reflection

__all__ = ["MAX_MEMORY_CHARS", "Vault", "VaultStatus", "Version", "find_vault_root"]

log = logging.getLogger("mdmem")


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
        # The author of this vault's writes is a setting like the others (settings.agent).
        settings = replace(settings, agent=agent) if agent else settings
        store = MemoryStore(root.resolve(), settings, agent=settings.agent, progress=progress)
        self._store = store
        self._closed = False
        self._parts = MemoryParts(store)
        self._recaller = Recaller(
            store,
            human_of=functools.partial(git_provenance.written_by_human, store),
            llm=self._parts.configured_llm,
            past=functools.partial(timetravel.source_at, store),
        )
        self.contacts = Contacts(store)
        self.sessions = Sessions(self._parts, self.contacts, self.reading)
        self.git = GitDesk(store, self.reading)
        self.admin = Admin(self._parts)
        self.library = Library(self._parts, self.sessions, self.reading)
        self.usefulness = UsefulnessDesk(store.block, lambda: self._recaller.usefulness)

    @property
    def root(self) -> Path:
        return self._store.root

    @property
    def settings(self) -> Settings:
        return self._store.settings

    @property
    def llm(self) -> LLMClient | None:
        """The configured LLM (``[llm]`` + OPENAI_* environment), or None."""
        return self._parts.configured_llm()

    # ---------------------------------------------------------- lifecycle --

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        *,
        agent: str | None = None,
        exist_ok: bool = False,
        author: str | None = None,
        **overrides: Any,
    ) -> Vault:
        """Copy ``vault_template``, ``git init`` and make the first commit.

        A folder that already holds files is adopted: the person's files are
        committed first as theirs (``author`` "Name <email>", default their git
        identity), settings files are merged, never replaced; ``.admin.adoption``
        says what was done.
        """
        root = Path(path).expanduser()
        if exist_ok and (root / "mdmem.toml").exists():
            return cls.open(root, agent=agent, **overrides)
        # A folder with files (an Obsidian vault) is adopted: see mdmem.maintenance.adopt.
        adoption = adopt.adopt(root, agent=agent, author=author)
        vault = cls.open(root, agent=agent, **overrides)
        adopt.commit_mdmem(vault._store.git, Identity.agent(vault.settings.agent), adoption)
        vault.admin.adoption = adoption
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
        root, settings = locate(path, **overrides)
        agent = agent or os.environ.get("MDMEM_AGENT") or None
        return cls(root, settings, agent=agent, progress=progress)

    def close(self) -> None:
        """Checkpoint the vector index and release index handles."""
        if not self._closed:
            self._closed = True
            self._recaller.close()
            self._store.close()

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r}, agent={self.settings.agent!r})"

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
        """Store one memory (importance 1-10, capped at 5 for a planning/investigation
        origin); ``.superseded`` lists what it retired."""
        return self._store.remember(
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
        return self._store.log(text, category, scope=scope, tags=tags, when=when, secrets=secrets)

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
        return self._store.journal(text, scope=scope, tags=tags, when=when, secrets=secrets)

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
        return self._store.learn(topic, text, scope=scope, tags=tags, secrets=secrets)

    def get(self, memory_id: str, *, reader: Reader = EVERYONE) -> Memory:
        """One memory by id (``m-…``, with or without the caret, or a note's
        ``path#heading``), shown; ScopeDeniedError when ``reader`` may not see it."""
        return self.reading(reader).get(memory_id)

    def forget(
        self,
        memory_id: str,
        *,
        reason: str | None = None,
        purge: bool = False,
        confirm: bool = False,
    ) -> Memory:
        """Remove a memory's block from its file; git history keeps it (to erase it
        from history too, see ``vault.git.purge``)."""
        if purge:
            return forget_with_purge(self, memory_id, confirm=confirm)
        return self._store.forget(memory_id, reason=reason)

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
        return self._store.supersede(memory_id, text, kind=kind, tags=tags, secrets=secrets)

    def resolve(self, memory_id: str, *, status: str = "resolved") -> Memory:
        """Mark a memory resolved (or another status); it leaves default recall."""
        return self._store.resolve(memory_id, status=status)

    def archive(self, memory_id: str) -> Memory:
        """Hide an active memory from recall without retiring it (reversible)."""
        return self._store.archive(memory_id)

    def unarchive(self, memory_id: str) -> Memory:
        """Make an archived memory active again."""
        return self._store.unarchive(memory_id)

    @contextmanager
    def batch(
        self, subject: str | None = "batch import", *, consolidate: bool = True
    ) -> Iterator[Vault]:
        """Group many writes into one commit (and one file write per file).

        Auto-resolve runs at the end, over the batch's new memories together (a
        ``Memory`` returned inside has an empty ``superseded``; the commit lists
        what was retired). Session turns recorded inside join the commit; automatic
        consolidation runs once, after (``consolidate=False``: not at all, for a
        caller that must hand the vault back quickly, as a hook capture does)."""
        with self._store.batch(subject):
            yield self
        if consolidate and self._store.writer.current is None:  # the outermost batch committed
            self._parts.maybe_consolidate()

    def session(
        self,
        session_id: str,
        source: str | None = None,
        contact: str | None = None,
        *,
        scope: str | None = None,
    ) -> Session:
        """Short-term memory of one conversation (``.record()``); see ``vault.sessions``."""
        return self.sessions.open(session_id, source, contact, scope=scope)

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
        reader: Reader = EVERYONE,
        **controls: Any,
    ) -> Recall:
        """The memories most relevant to ``query``, best first, with citations.

        ``scope``: one scope, several, or None for every scope ("" is the
        vault root). ``mode``: hybrid (default), keyword or vector only.
        ``as_of``: a commit-ish or a date/time: search the vault as it was
        then (hits carry ``commit``). Edits made on disk since the last call
        are indexed first. ``reader``: who is asking (:class:`Reader`: scopes
        and contact); blocks, and copies of blocks, it may not see are left
        out. ``controls`` (:mod:`mdmem.recall.controls`):
        ``exclude_ids``, ``source``, ``contact``, ``session``, ``author``,
        ``status``, ``scope_weights``, ``fallback``, and ``tier`` (0 abstracts,
        1 overviews, 2 full text).
        """
        return self.reading(reader).recall(
            query,
            k,
            kinds,
            tags,
            scope,
            since,
            until,
            include_inactive,
            mode=mode,
            as_of=as_of,
            **controls,
        )

    def reading(
        self,
        reader: Reader | None = None,
        *,
        scopes: Iterable[str] | str | None = None,
        contact: str | None = None,
    ) -> Reading:
        """Every read verb for one reader, returning only what it may see, redacted
        (:class:`~mdmem.memory.desks.reading.Reading`). Give a :class:`Reader`, or
        the ``scopes`` a door allows (None: all) and the ``contact`` it talks with;
        nothing at all reads as everyone."""
        if reader is None:
            reader = reader_for(self.contacts, scopes, contact)
        elif scopes is not None or contact is not None:
            raise InvalidInputError("reading() takes a reader, or scopes and a contact: not both")
        pending = self.sessions.pending
        return Reading(self._store, self._recaller, self.contacts, self._parts.llm, reader, pending)

    def context(
        self, query: str, max_chars: int = 6000, *, reader: Reader = EVERYONE, **filters: Any
    ) -> str:
        """A "## Recalled Memory" block for a prompt, citing each memory as path#^id."""
        return self.reading(reader).context(query, max_chars, **filters)

    # ------------------------------------------------------- the long run --

    def consolidate(
        self,
        llm: LLMChoice = USE_CONFIGURED_LLM,
        *,
        dry_run: bool = False,
        force: bool = False,
        entries: list[Block] | None = None,
        reason: str = "manual",
        review: bool | None = None,
        progress: Progress | None = None,
    ) -> ConsolidationResult:
        """Fold pending session entries into episode notes and facts (one commit).

        ``llm``: default the configured model; ``None``: the extractive summariser.
        ``dry_run``: compute everything, write nothing, return the diff.
        ``force``: accept drafts the drop-ratio safety check would reject.
        ``review``: commit to a branch ``mdmem/consolidate-<date>`` for a person
        to merge or reject, leaving the working tree alone (default: the
        ``[consolidation] review`` setting); ``.branch`` names it.
        """
        return self._parts.consolidate(
            llm,
            dry_run=dry_run,
            force=force,
            entries=entries,
            reason=reason,
            review=review,
            progress=progress,
        )

    def reflect(
        self,
        query: str,
        *,
        k: int = 8,
        llm: LLMChoice = USE_CONFIGURED_LLM,
        reader: Reader = EVERYONE,
        **filters: Any,
    ) -> Reflection:
        """An answer synthesised across recalled memories, citing ``path#^id``."""
        return self.reading(reader).reflect(query, k=k, llm=llm, **filters)

    def reindex(
        self, full: bool = False, *, progress: Callable[[str, int, int], None] | None = None
    ) -> IndexStats:
        """Bring the indexes up to date (incremental), or rebuild both from scratch."""
        return self._store.reindex(full, progress=progress)

    def history(self, memory_id: str, *, reader: Reader = EVERYONE) -> list[Version]:
        """Every version of one memory in git, oldest first, following moves; with a
        ``reader``, only the versions it may see (each judged by where it lived)."""
        return self.reading(reader).history(memory_id)

    def status(self) -> VaultStatus:
        """Counts by kind, scope and status, index health, git state, open reviews."""
        return self.admin.status()

    # ----------------------------------------------------- names of 0.0.x --

    if not TYPE_CHECKING:  # mypy flags an old name in our own code instead of Any

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") or name not in MOVED:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            return answer(self, name)
