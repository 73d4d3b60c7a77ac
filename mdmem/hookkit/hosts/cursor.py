"""Cursor — https://cursor.com/docs/agent/hooks.

``.cursor/hooks.json`` / ``~/.cursor/hooks.json``: ``{"version": 1, "hooks":
{event: [{"command"}]}}``; stdin ``conversation_id``, ``generation_id``,
``hook_event_name``, ``workspace_roots``, ``transcript_path``. ``sessionStart``
answers ``{"continue": true, "additional_context"}``; ``beforeSubmitPrompt``
answers only ``{"continue": bool}`` — Cursor gives that event no way to add
context, so recall reaches a Cursor agent at session start. ``postToolUse``
carries ``tool_name``, ``tool_input``, ``tool_output``; ``postToolUseFailure``
carries ``tool_name``, ``tool_input``, ``error_message``, ``failure_type`` —
``error``, ``timeout`` or ``permission_denied`` — and ``is_interrupt``;
shell-execution payloads carry ``command`` and ``output`` with no tool name.
Cursor shows ``user_message`` to the person at session start and before a
compaction only. Like Codex, no per-project personal file.
"""

from __future__ import annotations

from typing import Any

from mdmem.hookkit.hosts.base import TIMEOUTS, Fields, Host

__all__ = ["HOST"]


def _answer(host: Host, event: str, context: str, notice: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if event == "session-start":
        out = {"continue": True}
        if context:
            out["additional_context"] = context
    elif event == "prompt-submit":
        out = {"continue": True}  # the only field Cursor reads here
    if notice and event in host.notice_events:
        out[host.notice_key] = notice
    return out


def _context(answer: dict[str, Any]) -> str:
    return str(answer.get("additional_context") or "")


HOST = Host(
    "cursor",
    {
        "session-start": "sessionStart",
        "prompt-submit": "beforeSubmitPrompt",
        "post-tool-use": "postToolUse",
        "post-tool-failure": "postToolUseFailure",
        "pre-compact": "preCompact",
        "stop": "stop",
        "session-end": "sessionEnd",
    },
    config_project=".cursor/hooks.json",
    config_user=".cursor/hooks.json",
    nested=False,
    timeouts=TIMEOUTS,
    inject_events=frozenset({"session-start"}),
    notice_events=frozenset({"session-start", "pre-compact"}),
    notice_key="user_message",
    answer=_answer,
    context_in=_context,
    plain_stdout_is_context=False,
    fields=Fields(
        # Every event names the conversation and the workspace; a few add a
        # session_id (the same id) or the folder a tool ran in (a cwd).
        session=("conversation_id", "session_id"),
        cwd=("workspace_roots", "cwd"),
        folder_lists=frozenset({"workspace_roots"}),
        tool_output="tool_output",
        error="error_message",
        refused=("failure_type", "permission_denied"),
        shell=("command", "output"),
    ),
)
