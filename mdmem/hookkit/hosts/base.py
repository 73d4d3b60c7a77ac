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
    "Fields",
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
class Fields:
    """Where a host's payload keeps what mdmem reads (:func:`mdmem.hookkit.hosts.parse_input`):
    Claude Code's names by default, which Codex shares. Of a tuple, the first field
    present in the payload wins: a host that names one thing two ways lists first
    the name every one of its events carries (what ``hooks doctor`` sends)."""

    session: tuple[str, ...] = ("session_id",)
    #: The project folder the host runs in.
    cwd: tuple[str, ...] = ("cwd",)
    #: Of :attr:`cwd`, the fields holding a list of folders, the first the project's.
    folder_lists: frozenset[str] = frozenset()
    transcript: str = "transcript_path"
    prompt: str = "prompt"
    source: str = "source"  # session start: startup | resume | clear | compact
    tool_name: str = "tool_name"
    tool_input: str = "tool_input"
    tool_output: str = "tool_response"  # a tool's output in a post-tool payload
    error: str = "error"  # a failure's message in a post-tool-failure payload
    call_id: str = "tool_use_id"
    interrupted: str = "is_interrupt"  # true: the person stopped the call
    #: (field, value) saying the person refused the call's permission, or None: like
    #: an interrupted call, not the tool's failure.
    refused: tuple[str, str] | None = None
    #: (command, output) of a payload that is a shell command and its output with no
    #: tool name, or None where the host sends none.
    shell: tuple[str, str] | None = None


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
    #: Where its payloads keep what mdmem reads.
    fields: Fields = field(default_factory=Fields)

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
