"""Short-term memories tied to an action id (OrcBot's action-scoped step memory).

OrcBot keeps "recent step observations within the current action", each
linked to it by ``metadata.actionId`` (with ``step`` and ``skill``), reads
them back with ``getActionMemories(actionId)`` and removes them with
``cleanupActionMemories(actionId)`` after the action completes.

Here an action's notes are entries of ``sessions/action-<id>.md`` (in the
scope's folder), written through the one writer like any session turn::

    ## 2026-01-15 14:23:01 · step 3 · web_search
    Tool web_search returned 10 results … [kind:: log] [action:: task-42] [step:: 3]
    [skill:: web_search] ^m-…

They are ``log`` memories, so recall and prompt assembly see them while the
action runs, and they are not session turns awaiting consolidation.
:meth:`ActionMemory.complete` removes them all in one commit (git history
keeps them); what should outlive the action is the host's to ``remember``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.models import Memory, first_line
from mdmem.store.writer import memory_trailers

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["ActionMemory"]

_ACTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
_SKILL = re.compile(r"[A-Za-z0-9_][\w.:/-]{0,63}")


class ActionMemory:
    """The short-term notes of one action; see the module docstring."""

    def __init__(self, store: MemoryStore, action_id: str, *, scope: str | None = None) -> None:
        if not isinstance(action_id, str) or not _ACTION.fullmatch(action_id) or ".." in action_id:
            raise InvalidInputError(
                f"invalid action id {action_id!r}: letters, digits, '.', '_' or '-'"
            )
        self.store = store
        self.id = action_id
        self.scope = blk.validate_scope(scope)
        self.path = str(blk.scope_dir(self.scope) / "sessions" / f"action-{action_id}.md")

    def __repr__(self) -> str:
        return f"ActionMemory({self.id!r})"

    def add(
        self,
        text: str,
        *,
        step: int | None = None,
        skill: str | None = None,
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Record one step observation of the action."""
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise InvalidInputError("step must be a non-negative integer")
        if skill is not None and (not isinstance(skill, str) or not _SKILL.fullmatch(skill)):
            raise InvalidInputError(f"invalid skill name {skill!r}")
        body = self.store.clean_text(text, secrets)
        fields = [("kind", "log"), ("action", self.id)]
        if step is not None:
            fields.append(("step", str(step)))
        if skill:
            fields.append(("skill", skill))
        moment = self.store.clock.local(when)
        label = " · ".join(x for x in (f"step {step}" if step is not None else "", skill) if x)
        heading = f"{moment:%Y-%m-%d %H:%M:%S}" + (f" · {label}" if label else "")
        memory_id = self.store.append_entry(
            self.path,
            heading,
            body,
            fields=fields,
            scope=self.scope,
            kind="log",
            header=[f"# Action {self.id}"],
            subject=f"action {self.id}: {first_line(body)}",
            trailers=[("Action", self.id)],
            op="action-note",
        )
        return Memory.from_block(self.store.block(memory_id), was_new=True)

    def memories(self) -> list[Memory]:
        """The action's notes still held, in the order they were written."""
        self.store.catalog.refresh(self.path)
        state = self.store.catalog.files.get(self.path)
        if state is None:
            return []
        return [
            Memory.from_block(b, was_new=False)
            for b in state.parsed.blocks
            if b.is_memory and b.field("action") == self.id
        ]

    def complete(self) -> int:
        """The action is done: remove its notes in one commit; returns how many."""
        notes = self.memories()
        if not notes:
            return 0
        subject = f"complete action {self.id}: {len(notes)} step notes cleaned up"
        with self.store.writer.transaction(subject) as tx:
            for note in notes:
                tx.remove_block(
                    note.id,
                    subject=subject,
                    trailers=[
                        *memory_trailers(note.id, "log", self.scope, "action-complete"),
                        ("Action", self.id),
                    ],
                )
        return len(notes)
