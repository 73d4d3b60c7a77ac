"""``vault.sessions``: short-term memory of conversations and agent runs.

One desk for everything that happens *during* a conversation: opening a
:class:`~mdmem.memory.capture.sessions.Session` to record turns and tool outputs,
summarising or resolving it, turning tool calls into gotchas and bug fixes,
flushing what a compaction is about to drop, the flush reminder, idle
consolidation, the pending-message buffer and action notes. ``vault.session(id)``
is the facade's shortcut for :meth:`Sessions.open`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mdmem.memory.capture import reminders, sessions, toolcalls
from mdmem.memory.capture.actions import ActionMemory
from mdmem.memory.capture.pending import PendingBuffer
from mdmem.memory.capture.sessions import Session
from mdmem.memory.consolidation import reflect, summaries
from mdmem.models import Memory
from mdmem.providers.llm import USE_CONFIGURED_LLM, LLMChoice

if TYPE_CHECKING:
    from mdmem.memory.capture.toolcalls import ToolCall
    from mdmem.memory.consolidation.consolidate import ConsolidationResult
    from mdmem.memory.consolidation.reflect import FlushResult
    from mdmem.memory.desks.contacts import Contacts
    from mdmem.memory.desks.parts import MemoryParts

__all__ = ["Sessions"]


class Sessions:
    """Conversations and agent runs of one vault (see the module docstring)."""

    def __init__(
        self, parts: MemoryParts, contacts: Contacts, view: Callable[..., Any]
    ) -> None:
        self._parts = parts
        self._store = parts.store
        self._contacts = contacts
        # The reading view (vault.reading): tool outputs are handed out through it.
        self._view = view

    def open(
        self,
        session_id: str,
        source: str | None = None,
        contact: str | None = None,
        *,
        scope: str | None = None,
        auto_consolidate: bool = True,
    ) -> Session:
        """Short-term memory of one conversation: ``.record()``, ``.record_tool_output()``.

        With no ``scope``, a contact linked to a person records into the
        person's scope. ``auto_consolidate``: consolidate once enough is
        pending after a write (``[consolidation] auto``); an import turns it off.
        """
        return sessions.Session(
            self._store,
            session_id,
            source=source,
            contact=contact,
            scope=scope if scope is not None else self._contacts.scope_for(contact),
            after_write=self._parts.maybe_consolidate if auto_consolidate else None,
            on_contact=self._contacts.seen,
        )

    def read_tool_output(self, key: str, *, scope: str | None = None) -> str:
        """The full text of a large tool output recorded under ``key`` (``tout_…``),
        shown; ``scope``: only one of that scope (``vault.reading(reader).tool_output``
        for a reader's)."""
        if scope is not None:
            sessions.read_tool_output(self._store, key, scope=scope)  # ScopeDeniedError
        text: str = self._view().tool_output(key)
        return text

    def summarize(
        self, session_id: str, *, scope: str | None = None, llm: LLMChoice = USE_CONFIGURED_LLM
    ) -> Memory | None:
        """A ``session_summary`` of the turns no summary covers yet (LLM, else extractive)."""
        return summaries.summarize_session(
            self._store, session_id, scope=scope, llm=self._parts.llm(llm)
        )

    def resolve(
        self, session_id: str, *, scope: str | None = None, llm: LLMChoice = USE_CONFIGURED_LLM
    ) -> list[Memory]:
        """Summarise the session, then resolve its active memories (entries, facts): one commit."""
        return summaries.resolve_session(
            self._store, session_id, scope=scope, llm=self._parts.llm(llm)
        )

    def capture_tool_results(
        self, session_id: str, calls: Iterable[ToolCall], *, scope: str | None = None
    ) -> list[Memory]:
        """Failed tool calls as gotchas, later fixes as bug_fixes linked by ``[fixes:: ^id]``."""
        return toolcalls.capture_tool_results(self._store, session_id, calls, scope=scope)

    def flush(
        self,
        messages: Iterable[dict[str, Any]],
        llm: LLMChoice = USE_CONFIGURED_LLM,
        *,
        scope: str | None = None,
        session: str | None = None,
    ) -> FlushResult:
        """Store durable facts from messages about to be compacted away
        (``llm=None``: the extractive rules only, no model call)."""
        return reflect.flush(
            self._store,
            self._parts.resolver,
            messages,
            llm=self._parts.llm(llm),
            scope=scope,
            session=session,
        )

    def flush_reminder(self, *, session: str | None = None, scope: str | None = None) -> str | None:
        """OrcBot's reminder to store what matters before consolidation, when due; else None."""
        return reminders.flush_reminder(
            self._store, self._store.agent, session=session, scope=scope
        )

    def consolidate_stale(self) -> ConsolidationResult | None:
        """Consolidate conversations idle for ``consolidation.stale_minutes`` (for a timer)."""
        return self._parts.consolidate_stale()

    @property
    def pending(self) -> PendingBuffer:
        """Messages waiting for the agent's next task: ``push``, ``take``, ``peek`` (FIFO, TTL)."""
        return PendingBuffer(self._store)

    def action(self, action_id: str, *, scope: str | None = None) -> ActionMemory:
        """Short-term notes of one action: ``.add()``, ``.memories()``, ``.complete()``."""
        return ActionMemory(self._store, action_id, scope=scope)
