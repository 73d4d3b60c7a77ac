"""Asking the model about memory: ``reflect`` (synthesis) and ``flush`` (extraction).

``reflect(query)`` recalls memories and asks the LLM for one answer across
them, citing each memory it used as ``path#^id`` (operator_use / Hindsight
``reflect``). Offline - or when nothing was recalled - it returns the recalled
memories and says plainly that no synthesis ran.

``flush(messages)`` runs before a conversation's older messages are compacted
away (OpenClaw/OrcBot memory flush): durable facts and preferences in those
messages are stored with ``remember`` (so dedupe and supersede apply), in one
commit. With an LLM it asks the model; without one it keeps only explicit
statements of the user (:func:`mdmem.memory.capture.extractive.explicit_facts`): "remember
that…", "I prefer…", "my X is…". Nothing else is guessed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError
from mdmem.files.ids import ID_PATTERN
from mdmem.memory.capture import extractive
from mdmem.memory.capture.sessions import validate_session_id
from mdmem.models import Hit, Memory
from mdmem.providers.llm import DATA_INSTRUCTIONS, data_block

if TYPE_CHECKING:
    from mdmem.memory.consolidation.lifecycle import AutoResolver
    from mdmem.models import Recall
    from mdmem.providers.llm import LLMClient
    from mdmem.store.memories import MemoryStore

__all__ = ["FlushResult", "Reflection", "flush", "reflect"]

log = logging.getLogger("mdmem")

_CITED_ID = re.compile(rf"\^({ID_PATTERN})")
_MAX_FLUSH_CHARS = 60_000

REFLECT_SYSTEM = (
    "You are mdmem's reflection step. Answer the QUESTION using only the MEMORIES given as "
    "data; each memory starts with its citation (path#^id). Combine memories when the answer "
    "needs several; prefer newer memories when they disagree; say so when the memories do "
    "not contain the answer.\n"
    f"{DATA_INSTRUCTIONS}\n"
    'Reply with one JSON object: {"answer": "<answer in plain prose>", '
    '"citations": ["<path#^id of each memory used>", ...]}'
)

FLUSH_SYSTEM = (
    "You are mdmem's memory flush. The messages below are about to be removed from an AI "
    "agent's context window. Extract what must survive: durable facts about the user, their "
    "work and the world, decisions taken, and the user's preferences. Skip small talk, "
    "temporary state and anything already obvious. One self-contained sentence per item, "
    "third person ('The user ...').\n"
    f"{DATA_INSTRUCTIONS}\n"
    'Reply with one JSON object: {"facts": ["..."], "preferences": ["..."]} '
    "(empty lists when nothing is worth keeping)."
)


@dataclass(frozen=True)
class Reflection:
    """An answer across memories. ``synthesized`` is False when no model ran."""

    query: str
    answer: str
    citations: list[str]
    memories: list[Hit]
    synthesized: bool
    model: str | None = None


@dataclass(frozen=True)
class FlushResult:
    memories: list[Memory] = field(default_factory=list)  # stored or already known
    new: int = 0
    used_llm: bool = False
    commit: str | None = None


# -------------------------------------------------------------------- reflect ----


def reflect(
    recall_fn: Callable[..., Recall],
    query: str,
    *,
    llm: LLMClient | None,
    k: int = 8,
    **filters: Any,
) -> Reflection:
    """An answer synthesised from ``recall_fn(query, k=k, **filters)``, citing each memory."""
    recall = recall_fn(query, k=k, **filters)
    hits = list(recall.items)
    if llm is None or not hits:
        why = (
            "no LLM is configured"
            if llm is None
            else "no memories matched, so there was nothing to synthesise"
        )
        lines = [f"No synthesis ran ({why})."]
        if hits:
            lines.append("Recalled memories:")
            lines += [f"- {' '.join(h.text.split())} ({h.citation})" for h in hits]
        return Reflection(query, "\n".join(lines), [h.citation for h in hits], hits, False)
    listing = "\n".join(
        f"{h.citation} ({h.kind}, {h.created:%Y-%m-%d}): {' '.join(h.text.split())}" for h in hits
    )
    messages = [
        {"role": "system", "content": REFLECT_SYSTEM},
        {
            "role": "user",
            "content": data_block("question", query) + "\n\n" + data_block("memories", listing),
        },
    ]

    def check(data: dict[str, Any]) -> None:
        if not str(data["answer"]).strip():
            raise ValueError("answer is empty")

    data = llm.chat_json(messages, required={"answer": str, "citations": list}, validate=check)
    known = {h.citation: h for h in hits}
    by_id = {h.id: h.citation for h in hits}
    cited: list[str] = []
    for raw in [*data["citations"], *_CITED_ID.findall(str(data["answer"]))]:
        citation = _match(str(raw), known, by_id)
        if citation and citation not in cited:
            cited.append(citation)
    return Reflection(query, str(data["answer"]).strip(), cited, hits, True, llm.model)


def _match(raw: str, known: dict[str, Hit], by_id: dict[str, str]) -> str | None:
    raw = raw.strip().strip("[]()")
    if raw in known:
        return raw
    found = re.search(rf"\^?({ID_PATTERN})", raw)
    if found and found.group(1) in by_id:
        return by_id[found.group(1)]
    return None  # a citation the model made up


# ---------------------------------------------------------------------- flush ----


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")
        )
    return ""


def _conversation(messages: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for message in messages:
        if not isinstance(message, dict):
            raise InvalidInputError("flush takes OpenAI-style message dicts")
        role = str(message.get("role") or "")
        if role not in ("user", "assistant"):
            continue  # system prompts and raw tool results are not the user's knowledge
        text = _text(message.get("content")).strip()
        if text:
            out.append((role, text))
    return out


def flush(
    store: MemoryStore,
    resolver: AutoResolver,
    messages: Iterable[dict[str, Any]],
    *,
    llm: LLMClient | None,
    scope: str | None = None,
    session: str | None = None,
) -> FlushResult:
    convo = _conversation(messages)
    if not convo:
        return FlushResult(used_llm=False)
    items: list[tuple[str, str]] = []  # (text, kind)
    if llm is not None:
        transcript = "\n".join(f"{role}: {text}" for role, text in convo)
        if len(transcript) > _MAX_FLUSH_CHARS:
            transcript = transcript[-_MAX_FLUSH_CHARS:]  # the newest part matters most
        data = llm.chat_json(
            [
                {"role": "system", "content": FLUSH_SYSTEM},
                {"role": "user", "content": data_block("messages", transcript)},
            ],
            required={"facts": list, "preferences": list},
        )
        items += [(str(t), "fact") for t in data["facts"] if str(t).strip()]
        items += [(str(t), "preference") for t in data["preferences"] if str(t).strip()]
    else:
        items += [(f.text, f.kind) for f in extractive.explicit_facts(convo)]
    if not items:
        return FlushResult(used_llm=llm is not None)
    fields = [("origin", "flush")]
    if session:
        fields.append(("session", validate_session_id(session)))
    stored: list[Memory] = []
    subject = f"flush: {len(items)} facts before compaction"
    with resolver.judge_with(llm), store.writer.transaction(subject) as tx:
        for text, kind in items:
            clean = " ".join(text.split()).replace("::", ":")
            try:
                stored.append(store.remember(clean, kind=kind, scope=scope, fields=fields))
            except InvalidInputError as exc:
                log.warning("flush skipped an item (%s): %s", exc, clean[:80])
        if tx.ops:
            kept = [t for t in tx.trailers if t[0] != "Op"]
            tx.set_message(subject, [*dict.fromkeys(kept), ("Op", "flush")])
    new = sum(1 for m in stored if m.was_new)
    return FlushResult(
        memories=stored,
        new=new,
        used_llm=llm is not None,
        commit=store.git.head() if new else None,
    )
