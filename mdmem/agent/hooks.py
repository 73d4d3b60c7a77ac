"""Lifecycle hooks for an agent runtime (after operator_use's MemoryManager).

An agent loop calls :class:`MemoryHooks` at fixed points::

    block = hooks.prefetch(user_message)        # before a turn: "## Recalled Memory"
    ...model runs...
    hooks.on_turn_complete(user_message, reply) # record the turn, extract facts (LLM)
    hooks.queue_prefetch(next_query)            # warm the next turn in the background
    hooks.on_pre_compact(messages)              # before compaction: memory flush
    hooks.on_memory_write("add", "user", text)  # mirror writes made by another memory tool
    hooks.on_tool_result(ToolCall(...))         # tool output recorded; failures -> gotchas
    hooks.on_session_end(messages)              # final flush, then the session summary
    hooks.shutdown()                            # join background work

Hooks never break the agent: failures are logged and the hook returns an
empty result. With ``enabled=False`` every hook is a no-op.
:func:`compact_with_vault` compacts a chat history with the vault's LLM as
summariser and the vault's memory flush run first.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mdmem.agent.compaction import CompactionResult, Summarizer, compact, default_summarizer
from mdmem.agent.synthesis import check_method, synthesis_block
from mdmem.errors import InvalidInputError
from mdmem.models import KINDS, Memory, one_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, LLMClient, data_block
from mdmem.recall.asdata import render_recalled

if TYPE_CHECKING:
    from mdmem.memory.capture.sessions import Session
    from mdmem.memory.capture.toolcalls import ToolCall
    from mdmem.vault import Vault

__all__ = ["MemoryHooks", "compact_with_vault", "extract_facts", "vault_llm"]

log = logging.getLogger("mdmem.agent.hooks")

_MAX_FACTS = 10
_MAX_FACT_CHARS = 500
_MAX_TURN_CHARS = 6000
_FACT_KINDS = ("fact", "preference", "decision", "learning", "world", "gotcha", "discovery")

_EXTRACT_SYSTEM = (
    """You extract durable memories from one turn of a conversation between a \
user and an AI assistant. Durable means worth knowing in a future session: facts about the \
user or their world, preferences, decisions, commitments, lessons learned. Ignore small talk, \
transient task details, and anything the assistant merely guessed.
Reply with a JSON list, one object per memory, for example:
[{"content": "The user prefers metric units.", "kind": "preference", "tags": ["units"]}]
Each content is one self-contained statement in the third person. kind is one of: \
"""
    + ", ".join(_FACT_KINDS)
    + """. At most """
    + str(_MAX_FACTS)
    + """ items.
If there is nothing durable, reply with exactly: NONE
{data_rules}"""
)


def vault_llm(vault: Vault) -> LLMClient | None:
    """The vault's configured :class:`~mdmem.providers.llm.LLMClient`, or None if none is set."""
    return vault.llm


def _parse_facts(reply: str) -> list[dict[str, Any]]:
    """Facts from a model reply: a JSON list (or {"facts": [...]}), else bullet lines."""
    text = reply.strip()
    if not text or re.fullmatch(r"[\s\"'`.]*none[\s\"'`.]*", text, re.IGNORECASE):
        return []
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    candidate = fenced.group(1).strip() if fenced else text
    data: Any = None
    try:
        data = json.loads(candidate)
    except ValueError:
        start, end = candidate.find("["), candidate.rfind("]")
        if 0 <= start < end:
            try:
                data = json.loads(candidate[start : end + 1])
            except ValueError:
                data = None
    if isinstance(data, dict):
        data = data.get("facts", data.get("memories"))
    items: list[Any]
    if isinstance(data, list):
        items = data
    elif data is None:
        # operator_use's extraction answers one fact per line.
        items = [
            re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip()
            for line in text.splitlines()
            if line.strip() and line.strip().upper() != "NONE"
        ]
    else:
        items = []
    facts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            item = {"content": item}
        if not isinstance(item, dict):
            continue
        content = item.get("content") or item.get("fact") or item.get("text")
        if not isinstance(content, str) or not content.strip():
            continue
        kind = item.get("kind") if item.get("kind") in _FACT_KINDS else "fact"
        raw_tags: list[Any] = item["tags"] if isinstance(item.get("tags"), list) else []
        tags = [
            t
            for t in raw_tags
            if isinstance(t, str) and re.fullmatch(r"[A-Za-z_][\w/-]{0,63}", t.lstrip("#"))
        ]
        facts.append(
            {"content": " ".join(content.split())[:_MAX_FACT_CHARS], "kind": kind, "tags": tags}
        )
        if len(facts) >= _MAX_FACTS:
            break
    return facts


def extract_facts(llm: LLMClient, user: str, assistant: str) -> list[dict[str, Any]]:
    """Ask ``llm`` for the durable facts in one turn; [] when it answers NONE."""
    turn = (
        "User message:\n"
        + data_block("user-message", user[:_MAX_TURN_CHARS])
        + "\n\nAssistant reply:\n"
        + data_block("assistant-reply", assistant[:_MAX_TURN_CHARS])
    )
    reply = llm.chat(
        [
            {
                "role": "system",
                "content": _EXTRACT_SYSTEM.replace("{data_rules}", DATA_INSTRUCTIONS),
            },
            {"role": "user", "content": turn + "\n\nList the durable memories now."},
        ]
    )
    return _parse_facts(reply)


def compact_with_vault(
    vault: Vault,
    messages: list[dict[str, Any]],
    llm: LLMClient | None = None,
    *,
    threshold: int = 12,
    keep_recent: int = 8,
    flush: Callable[[list[dict[str, Any]]], object] | None = None,
) -> CompactionResult:
    """:func:`mdmem.agent.compaction.compact` wired to a vault.

    The summariser is ``llm`` (default: the vault's configured LLM; none means
    the safe trim), and the flush is ``vault.sessions.flush`` so facts in the dropped
    messages reach the vault before they leave the history.
    """
    client = llm if llm is not None else vault_llm(vault)
    # The vault's settings already folded in the environment; if they name no
    # LLM, compact() must not look for one elsewhere: False means trim.
    summarize: Summarizer | Literal[False] = (
        default_summarizer(client) if client is not None else False
    )
    if flush is None:

        def flush(older: list[dict[str, Any]]) -> object:
            return vault.sessions.flush(older, llm=client)

    return compact(messages, summarize, threshold, keep_recent, flush=flush)


class MemoryHooks:
    """Memory for an agent runtime, at the points its loop already has.

    ``scope``: where reads look (one scope, several, or None for all) and
    where writes go (the scope, or the first of several; None is the root).
    ``llm``: an :class:`~mdmem.providers.llm.LLMClient` for fact extraction and
    compaction summaries; by default the vault's configured LLM, if any.
    ``sync_turns=False``: :meth:`on_turn_complete` neither records the turn
    nor extracts facts; the flush and the other hooks still run.
    ``prefetch=False``: :meth:`prefetch` returns "" and :meth:`queue_prefetch`
    does nothing, without recalling; writes still run.
    ``background``: run turn recording and extraction on a worker thread
    (``drain()`` waits for it); False runs them inline.
    ``prefetch_method``: "recall" or "reflect" (default: ``[recall]
    prefetch_method``); "reflect" injects an LLM synthesis of the memories,
    and the recalled memories when no synthesis can run.
    """

    def __init__(
        self,
        vault: Vault,
        *,
        enabled: bool = True,
        sync_turns: bool = True,
        prefetch: bool = True,
        max_prompt_chars: int = 6000,
        k: int = 5,
        scope: str | Sequence[str] | None = None,
        llm: LLMClient | None = None,
        session_id: str | None = None,
        source: str | None = None,
        contact: str | None = None,
        background: bool = True,
        prefetch_method: str | None = None,
    ) -> None:
        if max_prompt_chars < 100:
            raise InvalidInputError("max_prompt_chars must be at least 100")
        if not 1 <= k <= 200:
            raise InvalidInputError("k must be from 1 to 200")
        self.vault = vault
        # "recall" (top memories) or "reflect" (an LLM synthesis; see agent/synthesis.py).
        self.prefetch_method = check_method(prefetch_method, vault)
        self.enabled = enabled
        self.sync_turns = sync_turns
        self.prefetch_enabled = prefetch
        self.max_prompt_chars = max_prompt_chars
        self.k = k
        if scope is None or isinstance(scope, str):
            self.read_scope: str | list[str] | None = scope
            self.write_scope: str | None = scope
        else:
            self.read_scope = list(scope)
            self.write_scope = self.read_scope[0] if self.read_scope else None
        self.llm = llm if llm is not None else (vault_llm(vault) if enabled else None)
        self.session_id = session_id
        self.source = source
        self.contact = contact
        self.background = background
        self._session: Session | None = None
        # The summary on_session_end wrote (or found), for the host to show.
        self.last_summary: Memory | None = None
        self._lock = threading.Lock()
        self._generation = 0  # bumped by every write through the hooks
        self._warm: tuple[str, int, Future[str]] | None = None
        self._pending: list[Future[Any]] = []
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    # ------------------------------------------------------------ reading --

    def prefetch(self, query: str) -> str:
        """The "## Recalled Memory" block for ``query`` ("" when nothing is relevant)."""
        if not self.enabled or not self.prefetch_enabled or not query or not query.strip():
            return ""
        key = _key(query)
        with self._lock:
            warm = self._warm
            if warm is not None and warm[0] == key and warm[1] == self._generation:
                self._warm = None
            else:
                warm = None
        if warm is not None:
            try:
                return warm[2].result()
            except Exception as exc:
                log.warning("warmed prefetch failed (%s); recalling again", exc)
        return self._recall_block(query)

    def queue_prefetch(self, query: str) -> None:
        """Start recalling for ``query`` in the background; the next prefetch(query) uses it."""
        if not self.enabled or not self.prefetch_enabled or not query or not query.strip():
            return
        executor = self._pool()
        if executor is None:
            return
        with self._lock:
            future = executor.submit(self._recall_block, query)
            self._warm = (_key(query), self._generation, future)

    def _recall_block(self, query: str) -> str:
        # What the prefetch may show: these scopes, and nothing of another person's
        # (the contacts are read now: a link made since counts).
        reading = self.vault.reading(contact=self.contact)
        if self.prefetch_method == "reflect":
            made = synthesis_block(
                self.vault,
                query,
                k=self.k,
                scope=self.read_scope,
                reading=reading,
                max_chars=self.max_prompt_chars,
            )
            if made is not None:
                return made[0]
        try:
            result = reading.recall(query, k=self.k, scope=self.read_scope)
        except Exception as exc:
            log.warning("prefetch recall failed: %s: %s", type(exc).__name__, exc)
            return ""
        if not result.relevant_items:
            return ""
        return render_recalled(result, self.max_prompt_chars)

    # ------------------------------------------------------------ writing --

    def on_turn_complete(self, user: str, assistant: str) -> None:
        """Record the turn in the session and extract durable facts (when an LLM is set)."""
        if not self.enabled or not self.sync_turns:
            return
        self._bump()
        self._run(self._turn, user or "", assistant or "")

    def _turn(self, user: str, assistant: str) -> list[Memory]:
        session = self._session_log()
        if session is not None:
            try:
                if user.strip():
                    session.record("user", user)
                if assistant.strip():
                    session.record("assistant", assistant)
            except Exception as exc:
                log.warning("recording the turn failed: %s: %s", type(exc).__name__, exc)
        if self.llm is None:
            return []
        try:
            facts = extract_facts(self.llm, user, assistant)
        except Exception as exc:
            log.warning("fact extraction failed: %s: %s", type(exc).__name__, exc)
            return []
        stored: list[Memory] = []
        for fact in facts:
            try:
                stored.append(
                    self.vault.remember(
                        fact["content"],
                        kind=fact["kind"],
                        tags=fact["tags"],
                        scope=self.write_scope,
                    )
                )
            except Exception as exc:
                # One bad fact (a secret, an odd tag) must not lose the others.
                log.warning("could not store an extracted fact: %s: %s", type(exc).__name__, exc)
        # No generation bump here: on_turn_complete bumped already, and the one
        # worker runs a prefetch queued after this turn only once it is stored.
        return stored

    def on_session_end(self, messages: Sequence[dict[str, Any]] | None = None) -> list[Memory]:
        """Final pass at session end: wait for pending work, flush ``messages``, and
        write the session's summary (``last_summary``); returns the flushed memories."""
        if not self.enabled:
            return []
        self.drain()
        stored = self._flush(list(messages or []))
        if self.session_id is not None:
            try:
                self.last_summary = self.vault.sessions.summarize(
                    self.session_id, scope=self.write_scope, llm=self.llm
                )
            except Exception as exc:
                log.warning("session summary failed: %s: %s", type(exc).__name__, exc)
            else:
                self._bump()
        return stored

    def on_tool_result(self, call: ToolCall) -> list[Memory]:
        """After a tool ran: record its output in the session, and a failure as a
        ``gotcha`` (its later fix as a linked ``bug_fix``); returns those memories."""
        if not self.enabled:
            return []
        session = self._session_log()
        if session is None or self.session_id is None:
            return []
        try:
            if call.output.strip():
                session.record_tool_output(call.tool, call.output)
            found = self.vault.sessions.capture_tool_results(
                self.session_id, [call], scope=self.write_scope
            )
        except Exception as exc:
            log.warning("capturing a tool result failed: %s: %s", type(exc).__name__, exc)
            return []
        self._bump()
        return found

    def flush_reminder(self) -> str | None:
        """OrcBot's "store what matters before consolidation" text for this session,
        when 25 of its turns are pending and none was shown for 30 minutes; else None."""
        if not self.enabled or self.session_id is None:
            return None
        try:
            return self.vault.sessions.flush_reminder(
                session=self.session_id, scope=self.write_scope
            )
        except Exception as exc:
            log.warning("flush reminder failed: %s: %s", type(exc).__name__, exc)
            return None

    def on_pre_compact(self, messages: Sequence[dict[str, Any]]) -> list[Memory]:
        """Memory flush before compaction drops ``messages``: durable facts reach the vault."""
        if not self.enabled:
            return []
        return self._flush(list(messages))

    def _flush(self, messages: list[dict[str, Any]]) -> list[Memory]:
        if not messages:
            return []
        try:
            result = self.vault.sessions.flush(
                messages, llm=self.llm, scope=self.write_scope, session=self.session_id
            )
        except Exception as exc:
            log.warning("memory flush failed: %s: %s", type(exc).__name__, exc)
            return []
        self._bump()
        return list(result.memories)

    def on_memory_write(
        self, action: str, target: str, content: str | None = None
    ) -> Memory | None:
        """Mirror a write made through another memory tool into the vault.

        ``action``: add/remember/write (``target`` "user" stores a preference,
        "memory" or a kind name stores that kind), replace/supersede
        (``target`` is the memory id, ``content`` the new text), or
        remove/forget/delete (``target`` is the memory id).
        """
        if not self.enabled:
            return None
        verb = (action or "").strip().lower()
        try:
            if verb in ("add", "remember", "write", "save"):
                if not content or not content.strip():
                    return None
                kind = {"user": "preference", "memory": "fact"}.get(target, target)
                if kind not in KINDS:
                    kind = "fact"
                memory: Memory = self.vault.remember(content, kind=kind, scope=self.write_scope)
            elif verb in ("replace", "supersede", "update"):
                if not content or not content.strip():
                    return None
                memory = self.vault.supersede(target, content)
            elif verb in ("remove", "forget", "delete"):
                memory = self.vault.forget(target)
            else:
                log.info("on_memory_write: ignoring unknown action %r", action)
                return None
        except Exception as exc:
            log.warning("mirroring a memory write failed: %s: %s", type(exc).__name__, exc)
            return None
        self._bump()
        return memory

    def compact(
        self, messages: list[dict[str, Any]], *, threshold: int = 12, keep_recent: int = 8
    ) -> CompactionResult:
        """Compact ``messages``, flushing the dropped ones through :meth:`on_pre_compact`."""
        flush = self.on_pre_compact if self.enabled else None
        # self.llm is the hooks' decision (given, the vault's, or none when
        # disabled); no LLM here means trim, not a fresh look at the environment.
        summarize: Summarizer | Literal[False] = (
            default_summarizer(self.llm) if self.llm is not None else False
        )
        return compact(messages, summarize, threshold, keep_recent, flush=flush)

    # -------------------------------------------------------- lifecycle --

    def drain(self, timeout: float | None = None) -> None:
        """Wait for background recording and extraction to finish."""
        with self._lock:
            pending, self._pending = self._pending, []
        if pending:
            wait_futures(pending, timeout=timeout)
            for future in pending:
                if future.done() and future.exception() is not None:
                    log.warning("background memory work failed: %s", future.exception())

    def shutdown(self, *, close_vault: bool = False) -> None:
        """Finish background work and stop the worker; optionally close the vault."""
        if self._closed:
            return
        self.drain()
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
            self._warm = None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if close_vault:
            self.vault.close()

    def __enter__(self) -> MemoryHooks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # ---------------------------------------------------------- internals --

    def _pool(self) -> ThreadPoolExecutor | None:
        with self._lock:
            if self._closed:
                return None
            if self._executor is None:
                # One worker: turns are recorded in order, prefetch queues behind them.
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdmem-hooks")
            return self._executor

    def _run(self, func: Callable[..., Any], *args: Any) -> None:
        executor = self._pool() if self.background else None
        if executor is None:
            if self._closed:
                return
            func(*args)
            return
        future = executor.submit(func, *args)
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(future)

    def _bump(self) -> None:
        with self._lock:
            self._generation += 1

    def _session_log(self) -> Session | None:
        if self._session is not None:
            return self._session
        if self.session_id is None:
            self.session_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        try:
            self._session = self.vault.session(
                self.session_id, source=self.source, contact=self.contact, scope=self.write_scope
            )
        except Exception as exc:
            log.warning("cannot open the session log: %s: %s", type(exc).__name__, exc)
            return None
        return self._session


def _key(query: str) -> str:
    return one_line(query).casefold()
