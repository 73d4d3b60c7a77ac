"""Prefetch by synthesis (operator_use): ``prefetch_method = "reflect"``.

Instead of the top memories for a task, the prompt assembly
(:func:`mdmem.agent.prompt.prompt_context`) and the hooks' prefetch
(:meth:`mdmem.agent.hooks.MemoryHooks.prefetch`) can inject one answer the
configured LLM synthesised from them (``vault.reflect``), citing each memory
it used. With no LLM, nothing recalled, or a model that fails, they inject
the recalled memories as with ``"recall"``: synthesis is an upgrade, never
the reason a prompt goes without memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.models import one_line

if TYPE_CHECKING:
    from mdmem.memory.desks.reading import Reading
    from mdmem.vault import Vault

__all__ = ["PREFETCH_METHODS", "SYNTHESIS_TITLE", "check_method", "synthesis_block"]

log = logging.getLogger("mdmem.agent")

PREFETCH_METHODS = ("recall", "reflect")
SYNTHESIS_TITLE = "## Memory Synthesis"


def check_method(method: str | None, vault: Vault) -> str:
    """``method``, or the vault's ``[recall] prefetch_method`` when None."""
    chosen = vault.settings.recall.prefetch_method if method is None else method
    if chosen not in PREFETCH_METHODS:
        raise InvalidInputError(f"prefetch_method must be recall or reflect, got {chosen!r}")
    return chosen


def synthesis_block(
    vault: Vault,
    query: str,
    *,
    k: int,
    max_chars: int,
    scope: str | Sequence[str] | None = None,
    reading: Reading | None = None,
    title: str = SYNTHESIS_TITLE,
) -> tuple[str, list[str]] | None:
    """(the block, the ids it cites), or None when no synthesis ran; it draws only
    on what ``reading``'s reader may see (everyone's when None)."""
    reading = reading or vault.reading()
    try:
        answer = reading.reflect(query, k=max(1, min(k, 200)), scope=scope)
    except MdmemError as exc:
        log.warning("synthesis for the prompt failed, recalling instead: %s", exc)
        return None
    if not answer.synthesized:
        return None
    by_citation = {h.citation: h.id for h in answer.memories}
    ids = [by_citation[c] for c in answer.citations if c in by_citation]
    sources = ", ".join(answer.citations)
    body = answer.answer  # shown text: the reading view redacted it
    tail = f"\n\nSources: {sources}" if sources else ""
    room = max_chars - len(title) - len(tail) - 2
    if room < 40:
        tail, room = "", max_chars - len(title) - 2
    text = f"{title}\n\n{one_line(body, room) if len(body) > room else body}{tail}\n"
    return text, ids
