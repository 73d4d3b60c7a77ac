"""What the vault's desks are built from: the store, the auto-resolver and the model.

Every desk (:mod:`mdmem.memory.desks.sessions`, :mod:`mdmem.memory.desks.library`,
:mod:`mdmem.memory.desks.admin`, the git desk) is a small class over these parts,
never over the :class:`~mdmem.vault.Vault` itself, so the facade stays a
table of contents and no desk can go around it. Consolidation lives here too
because two doors start it: the ``consolidate`` verb and the session writes
that trigger it automatically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdmem.index.progress import Progress
from mdmem.memory.consolidation import consolidate as consolidation
from mdmem.memory.consolidation.lifecycle import AutoResolver
from mdmem.memory.consolidation.regenerate import Regenerator
from mdmem.models import Block
from mdmem.providers.llm import (
    USE_CONFIGURED_LLM,
    LLMChoice,
    LLMClient,
    choose_llm,
    client_from_settings,
)

if TYPE_CHECKING:
    from mdmem.memory.consolidation.consolidate import ConsolidationResult
    from mdmem.store.memories import MemoryStore

__all__ = ["MemoryParts"]


class MemoryParts:
    """The store, its auto-resolver and the configured LLM of one open vault."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._configured: tuple[LLMClient | None] | None = None
        self.resolver = AutoResolver(store, self.configured_llm)
        # The writer calls auto-resolve after each remember and at a batch's end.
        store.auto_resolve = self.resolver
        store.writer.after_batch = self.resolver.after_batch
        # Purge writes derived copies again from their other sources.
        store.regenerate = Regenerator(store)

    def configured_llm(self) -> LLMClient | None:
        """The configured LLM (``[llm]`` + OPENAI_* environment), or None; made once."""
        if self._configured is None:
            self._configured = (client_from_settings(self.store.settings),)
        return self._configured[0]

    def llm(self, choice: LLMChoice = USE_CONFIGURED_LLM) -> LLMClient | None:
        """The model a call runs with (see :data:`~mdmem.providers.llm.USE_CONFIGURED_LLM`)."""
        return choose_llm(choice, self.configured_llm)

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
        """See :meth:`mdmem.vault.Vault.consolidate`."""
        return consolidation.consolidate(
            self.store,
            self.resolver,
            self.llm(llm),
            dry_run=dry_run,
            force=force,
            entries=entries,
            reason=reason,
            review=self.store.settings.consolidation.review if review is None else review,
            progress=progress,
        )

    def maybe_consolidate(self) -> None:
        """After a session write: consolidate when enough is pending (never raises)."""
        consolidation.maybe_auto_consolidate(
            self.store, lambda entries: self.consolidate(entries=entries, reason="threshold")
        )

    def consolidate_stale(self) -> ConsolidationResult | None:
        return consolidation.consolidate_stale(
            self.store, lambda entries: self.consolidate(entries=entries, reason="stale")
        )
