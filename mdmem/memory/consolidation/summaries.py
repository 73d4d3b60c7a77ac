"""Automatic session summaries (Otto's task summaries, OAK's ``session_summary``).

:func:`summarize_session` writes one ``session_summary`` memory for the turns
of ``sessions/<id>.md`` that no earlier summary covers. The summary is an
ordinary list item of the scope's MEMORY.md; its links are inline fields set
by code, never read from the text::

    - Session s1 (2026-01-15, 12 turns). Deployed the API … [kind:: session_summary]
      [session:: s1] [from:: ^m-…] [to:: ^m-…] [turns:: 12] ^m-…

``from``/``to`` name the first and last turn it covers (ids sort by creation
time, turns are appended in order), so a second call summarises only the
turns after ``to`` and a call with nothing new returns the latest summary:
a span is never summarised twice. With an LLM the summary is the model's
(turns go in as delimited data, never as instructions); without one, or when
the model fails, it is extractive (:func:`mdmem.memory.capture.extractive.summarize`)
and says so with the ``[summarizer:: extractive]`` field.

OAK never auto-resolves ``session_summary`` observations, and neither does
mdmem (:mod:`mdmem.memory.consolidation.lifecycle` exempts the kind), so resolving a
session keeps its summary in recall.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mdmem.errors import LLMError
from mdmem.files import blocks as blk
from mdmem.memory.capture.sessions import Session, session_id_of, summary_text, summary_turn
from mdmem.memory.consolidation import lifecycle
from mdmem.models import Block, Memory, one_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, LLMClient, data_block

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "SUMMARY_KIND",
    "latest_summary",
    "resolve_session",
    "session_scopes",
    "summaries_of",
    "summarize_session",
]

log = logging.getLogger("mdmem")

SUMMARY_KIND = "session_summary"
# Otto's compaction summary keeps "intent, key decisions, tool results, the
# current approach, and any error-handling context"; one paragraph suffices.
_MAX_SUMMARY_CHARS = 1200
_MAX_PROMPT_CHARS = 24_000

_SYSTEM = (
    "You are a session summarizer for an AI agent's memory. Summarise the session "
    "transcript in one short paragraph (at most 5 sentences): what was asked, what "
    "approach was taken, what was decided, which errors came up and how they were "
    "fixed, and the outcome. Write plain sentences in the third person, no headings, "
    "no lists, no markdown. " + DATA_INSTRUCTIONS
)


def summaries_of(store: MemoryStore, session_id: str, scope: str) -> list[Block]:
    """The summaries written for a session in ``scope``, oldest first."""
    store.refresh()
    found = [
        b
        for b in store.catalog.blocks(memories_only=True)
        if b.kind == SUMMARY_KIND and b.scope == scope and b.field("session") == session_id
    ]
    return sorted(found, key=lambda b: b.id)


def latest_summary(store: MemoryStore, session_id: str, scope: str) -> Block | None:
    found = summaries_of(store, session_id, scope)
    return found[-1] if found else None


def _llm_summary(llm: LLMClient, session_id: str, turns: list[tuple[str, str]]) -> str:
    lines: list[str] = []
    used = 0
    # The newest turns matter most for "the outcome": drop from the start.
    for role, text in reversed(turns):
        line = f"{role}: {text}"
        if used + len(line) > _MAX_PROMPT_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
    transcript = "\n".join(reversed(lines))
    reply = llm.chat(
        [
            {"role": "system", "content": _SYSTEM},
            {
                "role": "user",
                "content": data_block(f"session {session_id}", transcript)
                + "\n\nWrite the summary now.",
            },
        ],
        max_tokens=400,
    )
    return one_line(reply.strip().strip('"'), _MAX_SUMMARY_CHARS)


def summarize_session(
    store: MemoryStore,
    session_id: str,
    *,
    scope: str | None = None,
    llm: LLMClient | None = None,
) -> Memory | None:
    """Write the summary of the session's unsummarised turns; see the module docstring.

    Returns the new summary, the latest existing one when no turn is new, or
    None when the session has no turns.
    """
    if scope is None:
        # No scope given (the CLI, a host that doesn't know a contact's link): the turns
        # are where the session's file is, e.g. the linked person's scope. Only when the
        # id names exactly one file; otherwise the root's, as before.
        found = session_scopes(store, session_id)
        if len(found) == 1:
            scope = found[0]
    session = Session(store, session_id, scope=scope)
    entries = [
        store.block(m.id) for m in session.entries() if m.kind in ("chat_message", "tool_output")
    ]
    with store.writer.batch(subject=None):
        # Under the vault lock: two hosts ending the same session at once
        # must not both summarise the same span.
        last = latest_summary(store, session.id, session.scope)
        after = (last.field("to") or "").lstrip("^") if last is not None else ""
        fresh = [b for b in entries if not after or b.id > after]
        if not fresh:
            return Memory.from_block(last, was_new=False) if last is not None else None
        turns = [p for p in (summary_turn(b) for b in fresh) if p[1]]
        text = ""
        method = "llm"
        if llm is not None and turns:
            try:
                text = _llm_summary(llm, session.id, turns)
            except LLMError as exc:
                log.warning("LLM session summary failed, using extractive: %s", exc)
        if not text:
            method = "extractive"
        fields = [
            ("session", session.id),
            ("from", f"^{fresh[0].id}"),
            ("to", f"^{fresh[-1].id}"),
            ("turns", str(len(fresh))),
        ]
        if method == "extractive":
            fields.append(("summarizer", "extractive"))
        # A secret the model echoes (or a turn kept under secrets="off"
        # elsewhere) is redacted, not refused: refusing would lose the
        # summary and fail the resolve-session that asked for it.
        mode = "off" if store.settings.secrets == "off" else "redact"
        return store.remember(
            summary_text(session.id, fresh, text),
            kind=SUMMARY_KIND,
            scope=blk.validate_scope(session.scope),
            fields=fields,
            secrets=mode,
        )


def resolve_session(
    store: MemoryStore,
    session_id: str,
    *,
    scope: str | None = None,
    llm: LLMClient | None = None,
) -> list[Memory]:
    """Summarise the session's last turns, then resolve its memories: one commit.

    The summary stays active (see :func:`mdmem.memory.consolidation.lifecycle.session_memories`).
    """
    with store.writer.batch(subject=f"resolve session {session_id}"):
        # No scope given: the session's file may live in any scope.
        scopes = [scope] if scope is not None else session_scopes(store, session_id)
        for each in scopes:
            summarize_session(store, session_id, scope=each, llm=llm)
        return lifecycle.resolve_session(store, session_id, scope=scope)


def session_scopes(store: MemoryStore, session_id: str) -> list[str]:
    """The scopes whose ``sessions/`` folder holds a file of this session id, sorted."""
    store.refresh()
    return sorted(
        {
            blk.scope_of_path(path)[0]
            for path in list(store.catalog.files)
            if session_id_of(path) == session_id
        }
    )
