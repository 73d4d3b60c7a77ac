"""What every host has: its events, config files, timeouts and the shape of its answers.

A :class:`Host` is data plus the few functions where hosts differ (how an answer
is shaped, where its context sits); each host's module fills one in. The
defaults are Claude Code's shapes, which Codex shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EVENTS",
    "INJECTING",
    "LOCATIONS",
    "TIMEOUTS",
    "Host",
    "hook_specific_answer",
    "hook_specific_context",
]

#: mdmem's own event names, the words of ``mdmem hook <event>``.
EVENTS = (
    "session-start",
    "prompt-submit",
    "post-tool-use",
    "post-tool-failure",
    "pre-compact",
    "stop",
    "session-end",
)
INJECTING = ("session-start", "prompt-submit")
#: Where ``hooks install`` writes: the person's own file (the default), the
#: project's shared (committed) file, or the user's file for every project.
LOCATIONS = ("personal", "shared", "user")


def hook_specific_answer(host: Host, event: str, context: str, notice: str) -> dict[str, Any]:
    """Claude Code's answer (Codex's too): ``hookSpecificOutput.additionalContext`` at
    the events that inject, ``systemMessage`` for the person."""
    out: dict[str, Any] = {}
    if context and event in host.inject_events:
        out["hookSpecificOutput"] = {
            "hookEventName": host.native(event),
            "additionalContext": context,
        }
    if notice:
        out[host.notice_key] = notice
    return out


def hook_specific_context(answer: dict[str, Any]) -> str:
    """The context a Claude Code or Codex answer gives the model."""
    inner = answer.get("hookSpecificOutput")
    return str(inner.get("additionalContext") or "") if isinstance(inner, dict) else ""


@dataclass(frozen=True)
class Host:
    name: str
    events: dict[str, str]  # mdmem event -> the host's event name
    config_project: str  # relative to the project root: the shared, committed file
    config_user: str  # relative to the home folder
    nested: bool  # Claude/Codex: matcher groups holding handlers; Cursor: flat list
    timeouts: dict[str, int]  # seconds the host waits, per mdmem event
    # Relative to the project root: the project's personal (git-ignored) file,
    # or None when the host reads none (then the user's file is the personal one).
    config_personal: str | None = None
    #: The events at which the host lets a hook add context for the model.
    inject_events: frozenset[str] = frozenset(INJECTING)
    #: The events at which the host shows the person a notice.
    notice_events: frozenset[str] = field(default_factory=lambda: frozenset(EVENTS))
    notice_key: str = "systemMessage"  # the answer's field for the person
    #: The host's answer for an event: (host, event, context, notice) -> JSON object.
    answer: Callable[[Host, str, str, str], dict[str, Any]] = hook_specific_answer
    #: The context an answer (a JSON object) gives the model.
    context_in: Callable[[dict[str, Any]], str] = hook_specific_context
    #: Whether plain (non-JSON) stdout reaches the model as context.
    plain_stdout_is_context: bool = True
    #: Whether a payload may be a shell command and its output with no tool name.
    shell_payloads: bool = False
    #: Whether the host names the session ``conversation_id`` and the project
    #: ``workspace_roots`` (not ``session_id`` and ``cwd``).
    conversation_ids: bool = False
    output_field: str = "tool_response"  # a tool's output in a post-tool payload
    error_field: str = "error"  # a failure's message in a post-tool-failure payload

    def native(self, event: str) -> str:
        return self.events[event]

    def event_of(self, native: str) -> str | None:
        for ours, theirs in self.events.items():
            if theirs == native:
                return ours
        return None


TIMEOUTS = {
    "session-start": 30,
    "prompt-submit": 10,  # the hook answers within its own budget; this is the host's ceiling
    "post-tool-use": 30,
    "post-tool-failure": 30,
    "pre-compact": 120,
    "stop": 120,
    "session-end": 120,
}
