"""Conversation compaction for an agent's working context (after Otto).

When a chat history grows past ``threshold`` messages, the older part is
replaced by one system message holding an LLM summary, and the
``keep_recent`` newest messages stay verbatim::

    [system prompt(s)] [SUMMARY_MARKER summary] [recent messages ...]

The split never separates an assistant message that made tool calls from the
tool results answering it, and the recent part never starts with an orphaned
tool message (providers reject those). Later rounds hand the previous summary
to the summariser so it builds on it. Before older messages are dropped,
``flush`` receives them so durable facts can be written to the vault first.
The summariser is, by default, the LLM configured in the environment. If
summarising is impossible (no LLM, or the call fails), a safe trim keeps the
system prompt, the previous summary and the recent messages.

Messages are OpenAI chat dicts (roles system/user/assistant/tool; assistant
``tool_calls`` ``[{"id": ...}]``, tool ``tool_call_id``). The input list and
its dicts are never mutated.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mdmem.errors import InvalidInputError, LLMNotConfiguredError, LLMResponseError
from mdmem.providers.llm import DATA_INSTRUCTIONS, LLMClient, LLMConfig, data_block

__all__ = [
    "SUMMARY_MARKER",
    "CompactionResult",
    "Summarizer",
    "compact",
    "default_summarizer",
    "is_summary_message",
]

log = logging.getLogger("mdmem.agent.compaction")

SUMMARY_MARKER = "[mdmem conversation summary]"

Message = dict[str, Any]
Summarizer = Callable[[list[dict[str, Any]], str | None], str]


@dataclass
class CompactionResult:
    """Outcome of :func:`compact`.

    ``messages`` is the new history; ``compacted`` says whether anything was
    dropped; ``summary`` is the new summary text (None on fallback or no-op);
    ``fell_back`` is True when the safe trim replaced summarising (no LLM
    configured, ``summarize=False``, or the summary failed);
    ``dropped`` counts the conversation messages removed from the history.
    """

    messages: list[Message]
    compacted: bool
    summary: str | None
    fell_back: bool
    dropped: int


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                else:
                    parts.append(f"[{part.get('type', 'attachment')}]")
        return "\n".join(parts)
    return str(content)


def is_summary_message(message: Message) -> bool:
    """True for a system message produced by :func:`compact`."""
    return message.get("role") == "system" and _text(message.get("content")).startswith(
        SUMMARY_MARKER
    )


def _summary_text(message: Message) -> str:
    return _text(message.get("content"))[len(SUMMARY_MARKER) :].strip()


def _call_ids(message: Message) -> set[str]:
    if message.get("role") != "assistant":
        return set()
    ids = set()
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id") is not None:
            ids.add(str(call["id"]))
    return ids


def _is_tool(message: Message) -> bool:
    return message.get("role") == "tool"


def _safe_split(body: list[Message], split: int) -> int:
    """Move ``split`` earlier until no tool result in ``body[split:]`` answers
    an assistant tool call in ``body[:split]``, and ``body[split]`` is no tool result."""
    owner: dict[str, int] = {}  # tool_call_id -> index of the latest assistant announcing it
    owner_of: list[int | None] = []
    for i, msg in enumerate(body):
        if _is_tool(msg):
            owner_of.append(owner.get(str(msg.get("tool_call_id"))))
        else:
            owner_of.append(None)
            for cid in _call_ids(msg):
                owner[cid] = i
    changed = True
    while changed and split > 0:
        changed = False
        earliest = min((o for o in owner_of[split:] if o is not None and o < split), default=None)
        if earliest is not None:
            split, changed = earliest, True
        while 0 < split < len(body) and _is_tool(body[split]):
            split -= 1
            changed = True
    return split


def _drop_orphans(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """Split ``messages`` into (kept, orphans): a tool result is an orphan when
    no earlier assistant message in ``messages`` announced its tool_call_id."""
    announced: set[str] = set()
    kept: list[Message] = []
    orphans: list[Message] = []
    for msg in messages:
        if _is_tool(msg):
            if str(msg.get("tool_call_id")) in announced:
                kept.append(msg)
            else:
                orphans.append(msg)
            continue
        announced |= _call_ids(msg)
        kept.append(msg)
    return kept, orphans


def compact(
    messages: list[dict[str, Any]],
    summarize: Summarizer | Literal[False] | None = None,
    threshold: int = 12,
    keep_recent: int = 8,
    *,
    flush: Callable[[list[dict[str, Any]]], object] | None = None,
) -> CompactionResult:
    """Compact ``messages`` when there are more than ``threshold`` of them.

    ``summarize(older_messages, previous_summary)`` returns the new summary
    text. None (the default) means the LLM configured in the environment
    (``OPENAI_BASE_URL``/``OPENAI_API_KEY`` plus ``MDMEM_LLM_MODEL``), through
    :func:`default_summarizer`; with no LLM configured the safe trim runs
    instead. ``False`` asks for the trim alone, without any LLM call.

    ``flush(older_messages)`` is the memory flush: it is called first, with
    exactly the messages that leave the history, so their durable facts can be
    stored before they are gone. Pass ``flush=vault.sessions.flush``, or use
    :func:`mdmem.agent.hooks.compact_with_vault` / :meth:`mdmem.agent.hooks.MemoryHooks.compact`,
    which wire in the vault's flush and the vault's configured LLM.
    See the module docstring for the rules.
    """
    if threshold < 0 or keep_recent < 0:
        raise InvalidInputError("threshold and keep_recent must be >= 0")
    if len(messages) <= threshold:
        return CompactionResult(copy.deepcopy(list(messages)), False, None, False, 0)

    lead = 0
    while (
        lead < len(messages)
        and messages[lead].get("role") == "system"
        and not is_summary_message(messages[lead])
    ):
        lead += 1
    head = messages[:lead]
    previous_msgs = [m for m in messages[lead:] if is_summary_message(m)]
    body = [m for m in messages[lead:] if not is_summary_message(m)]

    split = _safe_split(body, max(0, len(body) - keep_recent))
    recent, orphans = _drop_orphans(body[split:])
    # Orphaned tool results (only possible in malformed input) cannot stay in
    # the history; they join the older part so their content is not lost.
    older = copy.deepcopy(body[:split] + orphans)
    if not older:
        return CompactionResult(copy.deepcopy(list(messages)), False, None, False, 0)

    previous: str | None = None
    if previous_msgs:
        previous = "\n\n".join(t for t in (_summary_text(m) for m in previous_msgs) if t) or None

    if flush is not None:
        try:
            flush(copy.deepcopy(older))
        except Exception as exc:
            log.warning("memory flush before compaction failed: %s: %s", type(exc).__name__, exc)

    summarizer: Summarizer | None
    if summarize is None:
        summarizer = _configured_summarizer()
    elif summarize is False:
        summarizer = None
    else:
        summarizer = summarize
    summary: str | None = None
    if summarizer is not None:
        try:
            result = summarizer(copy.deepcopy(older), previous)
            if not isinstance(result, str) or not result.strip():
                raise LLMResponseError("summarizer returned no text")
            summary = result.strip()
        except Exception as exc:
            log.warning(
                "conversation summary failed, trimming instead: %s: %s", type(exc).__name__, exc
            )

    out = copy.deepcopy(head)
    if summary is not None:
        out.append({"role": "system", "content": f"{SUMMARY_MARKER}\n{summary}"})
    else:
        out.extend(copy.deepcopy(previous_msgs))
    out.extend(copy.deepcopy(recent))
    return CompactionResult(
        messages=out,
        compacted=True,
        summary=summary,
        fell_back=summary is None,
        dropped=len(older),
    )


# -- LLM-backed summariser ----------------------------------------------------


def _configured_summarizer() -> Summarizer | None:
    """:func:`default_summarizer` over the environment's LLM, or None without one."""
    config = LLMConfig.from_env()
    if not config.configured:
        log.info("no LLM configured: compaction trims instead of summarising")
        return None
    try:
        return default_summarizer(LLMClient(config))
    except LLMNotConfiguredError as exc:
        log.warning("cannot set up the LLM for compaction, trimming instead: %s", exc)
        return None


_SUMMARY_SYSTEM = """You compact the history of an AI agent's working conversation.
Write a concise summary that lets the agent continue the task without the older messages.
Preserve:
- the user's original intent and any changes to it;
- key decisions made, and why;
- tool calls that mattered and their results (names, ids, values, file paths, numbers);
- the current approach and the next steps planned;
- errors met, how they were handled, and what must still be avoided or retried.
If a previous summary is given, update it: keep what still holds, add what is new,
and drop what the newer messages made obsolete. Write plain text or short bullet points,
no preamble. {data_rules}"""

_MAX_MESSAGE_CHARS = 2000


def _render(messages: list[Message]) -> str:
    lines = []
    for msg in messages:
        role = str(msg.get("role", "?"))
        text = _text(msg.get("content"))
        if len(text) > _MAX_MESSAGE_CHARS:
            text = text[:_MAX_MESSAGE_CHARS] + " …[truncated]"
        if role == "tool":
            head = f"[tool result id={msg.get('tool_call_id')}]"
        elif msg.get("name"):
            head = f"[{role} {msg.get('name')}]"
        else:
            head = f"[{role}]"
        parts = [f"{head} {text}".rstrip()]
        for call in msg.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            fn = call.get("function") or {}
            args = fn.get("arguments", "")
            if not isinstance(args, str):
                args = json.dumps(args)
            if len(args) > _MAX_MESSAGE_CHARS:
                args = args[:_MAX_MESSAGE_CHARS] + " …[truncated]"
            parts.append(f"  -> calls {fn.get('name', '?')}({args}) id={call.get('id')}")
        lines.append("\n".join(parts))
    return "\n".join(lines)


def default_summarizer(client: LLMClient) -> Summarizer:
    """A ``summarize`` for :func:`compact` backed by ``client``.

    The older messages (and the previous summary) reach the model as
    delimited data blocks, never as instructions.
    """

    def summarize(older: list[dict[str, Any]], previous_summary: str | None) -> str:
        parts = []
        if previous_summary:
            parts.append("Previous summary:\n" + data_block("previous-summary", previous_summary))
        parts.append("Older messages to fold in:\n" + data_block("conversation", _render(older)))
        parts.append("Write the updated summary now.")
        reply = client.chat(
            [
                {"role": "system", "content": _SUMMARY_SYSTEM.format(data_rules=DATA_INSTRUCTIONS)},
                {"role": "user", "content": "\n\n".join(parts)},
            ]
        )
        text = reply.strip()
        if not text:
            raise LLMResponseError("the summary reply was empty")
        return text

    return summarize
