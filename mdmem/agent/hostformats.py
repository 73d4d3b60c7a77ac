"""What each coding-agent host sends a hook and expects back, and its hook config file.

Pure standard library: ``mdmem hook`` imports this before it knows whether it
needs a vault at all. Each format is written from the host's own documentation:

* Claude Code — https://docs.claude.com/en/docs/claude-code/hooks (settings.json
  ``hooks``: event → ``[{"matcher", "hooks": [{"type": "command", "command",
  "timeout"}]}]``; stdin ``session_id``, ``transcript_path``, ``cwd``,
  ``hook_event_name`` plus ``source`` / ``prompt`` / ``tool_name``,
  ``tool_input``, ``tool_response`` / ``trigger``; SessionStart and
  UserPromptSubmit add ``hookSpecificOutput.additionalContext`` to the model's
  context; ``systemMessage`` is shown to the user). PostToolUse fires only
  after a tool *succeeded*; a failed call (a Bash command exiting non-zero, an
  edit that did not apply) goes to PostToolUseFailure with ``tool_use_id``,
  ``error`` (the failure message) and ``is_interrupt`` (the user stopped it).
  Settings files: ``.claude/settings.json`` (the project's, committed),
  ``.claude/settings.local.json`` (the project's, personal: git-ignored) and
  ``~/.claude/settings.json`` (the user's).
* Codex CLI — https://developers.openai.com/codex/hooks (``.codex/hooks.json``
  or ``~/.codex/hooks.json``, the same event → matcher group → handlers shape
  and the same common input fields; SessionStart, UserPromptSubmit,
  PostToolUse, PreCompact, Stop; ``hookSpecificOutput.additionalContext`` and
  ``systemMessage`` as in Claude Code; Stop wants JSON on stdout). Codex has
  no failure event: PostToolUse fires for every call and ``tool_response``
  is the tool's output (for a shell command, its text), so a failure is read
  from the output's documented shapes (:mod:`mdmem.agent.toolfailure`).
  Codex reads no per-project personal file: the personal one is the user's.
* Cursor — https://cursor.com/docs/agent/hooks (``.cursor/hooks.json`` /
  ``~/.cursor/hooks.json``: ``{"version": 1, "hooks": {event: [{"command"}]}}``;
  stdin ``conversation_id``, ``generation_id``, ``hook_event_name``,
  ``workspace_roots``, ``transcript_path``; ``sessionStart`` answers
  ``{"continue": true, "additional_context"}``; ``beforeSubmitPrompt`` answers
  only ``{"continue": bool}`` — Cursor gives that event no way to add context,
  so recall reaches a Cursor agent at session start; ``postToolUse`` carries
  ``tool_name``, ``tool_input``, ``tool_output``; ``postToolUseFailure``
  carries ``tool_name``, ``tool_input``, ``error_message``, ``failure_type``
  — ``error``, ``timeout`` or ``permission_denied`` — and ``is_interrupt``).
  Like Codex, no per-project personal file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdmem.store.write_guard import safe_id

__all__ = [
    "EVENTS",
    "HOSTS",
    "LOCATIONS",
    "HookInput",
    "Host",
    "can_inject",
    "config_path",
    "context_of",
    "host",
    "installed_commands",
    "is_mdmem_command",
    "merge_hooks",
    "parse_input",
    "remove_hooks",
    "render_output",
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

    def native(self, event: str) -> str:
        return self.events[event]

    def event_of(self, native: str) -> str | None:
        for ours, theirs in self.events.items():
            if theirs == native:
                return ours
        return None


_TIMEOUTS = {
    "session-start": 30,
    "prompt-submit": 10,  # the hook answers within its own budget; this is the host's ceiling
    "post-tool-use": 30,
    "post-tool-failure": 30,
    "pre-compact": 120,
    "stop": 120,
    "session-end": 120,
}

HOSTS: dict[str, Host] = {
    "claude-code": Host(
        "claude-code",
        {
            "session-start": "SessionStart",
            "prompt-submit": "UserPromptSubmit",
            "post-tool-use": "PostToolUse",
            "post-tool-failure": "PostToolUseFailure",
            "pre-compact": "PreCompact",
            "stop": "Stop",
            "session-end": "SessionEnd",
        },
        ".claude/settings.json",
        ".claude/settings.json",
        True,
        _TIMEOUTS,
        ".claude/settings.local.json",
    ),
    "codex": Host(
        "codex",
        {
            "session-start": "SessionStart",
            "prompt-submit": "UserPromptSubmit",
            "post-tool-use": "PostToolUse",
            "pre-compact": "PreCompact",
            "stop": "Stop",
        },
        ".codex/hooks.json",
        ".codex/hooks.json",
        True,
        _TIMEOUTS,
    ),
    "cursor": Host(
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
        ".cursor/hooks.json",
        ".cursor/hooks.json",
        False,
        _TIMEOUTS,
    ),
}


def host(name: str) -> Host:
    try:
        return HOSTS[name]
    except KeyError:
        raise ValueError(f"unknown host {name!r}; one of: {', '.join(HOSTS)}") from None


def config_path(host_name: str, location: str, project: Path, home: Path) -> Path:
    """The hook config file of ``host_name`` at ``location`` (one of :data:`LOCATIONS`).

    ``personal`` is the project's git-ignored file where the host reads one
    (Claude Code's ``settings.local.json``), else the user's own file: a
    host without a per-project personal file has only that one.
    """
    h = host(host_name)
    if location == "shared":
        return project / h.config_project
    if location == "personal" and h.config_personal is not None:
        return project / h.config_personal
    if location in ("personal", "user"):
        return home / h.config_user
    raise ValueError(f"unknown location {location!r}; one of: {', '.join(LOCATIONS)}")


# -- input ------------------------------------------------------------------


@dataclass(frozen=True)
class HookInput:
    """A host's hook payload in mdmem's terms (every host's field names mapped)."""

    host: str
    event: str
    session_id: str
    cwd: str | None
    transcript_path: str | None
    prompt: str | None
    source: str | None  # session start: startup | resume | clear | compact
    tool_name: str | None
    tool_input: Any
    tool_output: Any
    raw: dict[str, Any]
    # A failure event's message, and whether the person stopped the call
    # (interrupted, or refused its permission): not the tool's fault.
    error: str | None = None
    interrupted: bool = False


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_input(host_name: str, event: str, data: Any) -> HookInput:
    """The fields mdmem uses from one payload; absent or odd fields become None."""
    h = host(host_name)
    raw = data if isinstance(data, dict) else {}
    session = _text(raw.get("session_id")) or _text(raw.get("conversation_id")) or "unknown"
    session = safe_id(session)  # it becomes a file name, a field, a commit message
    cwd = _text(raw.get("cwd"))
    if cwd is None and isinstance(raw.get("workspace_roots"), list) and raw["workspace_roots"]:
        cwd = _text(raw["workspace_roots"][0])  # Cursor names the workspace, not a cwd
    tool_output = raw.get("tool_response", raw.get("tool_output"))
    tool_name = _text(raw.get("tool_name"))
    tool_input = raw.get("tool_input")
    if tool_name is None and h.name == "cursor" and _text(raw.get("command")):
        # afterShellExecution-style payloads: the command and its output.
        tool_name, tool_input, tool_output = "Shell", {"command": raw["command"]}, raw.get("output")
    error = _text(raw.get("error")) or _text(raw.get("error_message"))
    if event == "post-tool-failure" and error is None:
        error = "the tool call failed"  # the event itself says so, even with no message
    interrupted = raw.get("is_interrupt") is True or raw.get("failure_type") == "permission_denied"
    return HookInput(
        host=h.name,
        event=event,
        session_id=session,
        cwd=cwd,
        transcript_path=_text(raw.get("transcript_path")),
        prompt=_text(raw.get("prompt")),
        source=_text(raw.get("source")),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_output=tool_output,
        raw=raw,
        error=error if event == "post-tool-failure" else None,
        interrupted=interrupted,
    )


# -- output -----------------------------------------------------------------


def can_inject(host_name: str, event: str) -> bool:
    """Whether the host lets a hook add context to the model at ``event``."""
    if event not in INJECTING:
        return False
    return not (host(host_name).name == "cursor" and event == "prompt-submit")


def render_output(host_name: str, event: str, context: str = "", notice: str = "") -> str:
    """The stdout a host accepts for ``event``: context for the model, a notice for the user.

    Always valid for the host, even when both are empty: Cursor and Codex read
    JSON on stdout, Claude Code accepts it.
    """
    h = host(host_name)
    out: dict[str, Any]
    if h.name == "cursor":
        out = {}
        if event == "session-start":
            out = {"continue": True}
            if context:
                out["additional_context"] = context
        elif event == "prompt-submit":
            out = {"continue": True}  # the only field Cursor reads here
        if notice and event in ("pre-compact", "session-start"):
            out["user_message"] = notice
        return json.dumps(out, ensure_ascii=False)
    out = {}
    if context and event in INJECTING:
        out["hookSpecificOutput"] = {
            "hookEventName": h.native(event),
            "additionalContext": context,
        }
    if notice:
        out["systemMessage"] = notice
    return json.dumps(out, ensure_ascii=False)


def context_of(host_name: str, stdout: str) -> str:
    """The context an answer gives the model (what ``hooks doctor`` checks); "" if none."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return stdout.strip() if host_name != "cursor" else ""
    if not isinstance(data, dict):
        return ""
    if host_name == "cursor":
        return str(data.get("additional_context") or "")
    inner = data.get("hookSpecificOutput")
    return str(inner.get("additionalContext") or "") if isinstance(inner, dict) else ""


# -- the config file --------------------------------------------------------

_OURS = re.compile(
    r"(?:^|\s)hook\s+(?:" + "|".join(EVENTS) + r")\s+--host\s+(?:" + "|".join(HOSTS) + r")\b"
)


def is_mdmem_command(command: object) -> bool:
    """Whether a configured command is one ``mdmem hooks install`` wrote."""
    return isinstance(command, str) and "mdmem" in command and bool(_OURS.search(command))


def _entries(config: dict[str, Any]) -> dict[str, Any]:
    hooks = config.get("hooks")
    if hooks is None:
        hooks = config["hooks"] = {}
    if not isinstance(hooks, dict):
        raise ValueError('"hooks" in the config file is not an object')
    return hooks


def merge_hooks(host_name: str, config: dict[str, Any], commands: dict[str, str]) -> bool:
    """Add mdmem's command per event to ``config`` in place; True when anything changed.

    Other keys, other events and other hooks stay as they are; an mdmem entry
    already there for the event is replaced only if its command differs.
    """
    h = host(host_name)
    if not h.nested:
        config.setdefault("version", 1)
    hooks = _entries(config)
    changed = False
    for event, command in commands.items():
        native = h.native(event)
        groups = hooks.setdefault(native, [])
        if not isinstance(groups, list):
            raise ValueError(f'"hooks.{native}" in the config file is not a list')
        handler: dict[str, Any]
        if h.nested:
            handler = {"type": "command", "command": command, "timeout": h.timeouts[event]}
        else:
            handler = {"command": command}
        existing = _find(h, groups)
        if existing == handler:
            continue
        if existing is not None:
            _drop(h, groups)
        groups.append({"hooks": [handler]} if h.nested else handler)
        changed = True
    return changed


def _handlers(h: Host, groups: list[Any]) -> list[Any]:
    if not h.nested:
        return groups
    out: list[Any] = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            out.extend(group["hooks"])
    return out


def _find(h: Host, groups: list[Any]) -> dict[str, Any] | None:
    for handler in _handlers(h, groups):
        if isinstance(handler, dict) and is_mdmem_command(handler.get("command")):
            return handler
    return None


def _drop(h: Host, groups: list[Any]) -> None:
    def ours(handler: Any) -> bool:
        return isinstance(handler, dict) and is_mdmem_command(handler.get("command"))

    if not h.nested:
        groups[:] = [g for g in groups if not ours(g)]
        return
    kept = []
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            before = len(group["hooks"])
            group["hooks"] = [x for x in group["hooks"] if not ours(x)]
            if before and not group["hooks"]:
                continue  # a group that held only mdmem's handler goes with it
        kept.append(group)
    groups[:] = kept


def remove_hooks(host_name: str, config: dict[str, Any]) -> bool:
    """Remove mdmem's entries (and what they alone needed); True when anything changed."""
    h = host(host_name)
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for native in list(hooks):
        groups = hooks[native]
        if not isinstance(groups, list) or _find(h, groups) is None:
            continue
        _drop(h, groups)
        changed = True
        if not groups:
            del hooks[native]
    if changed and not hooks:
        del config["hooks"]
    return changed


def installed_commands(host_name: str, config: dict[str, Any]) -> dict[str, str]:
    """mdmem's command per mdmem event in a host config."""
    h = host(host_name)
    hooks = config.get("hooks")
    out: dict[str, str] = {}
    if not isinstance(hooks, dict):
        return out
    for native, groups in hooks.items():
        event = h.event_of(native)
        if event is None or not isinstance(groups, list):
            continue
        found = _find(h, groups)
        if found is not None:
            out[event] = str(found["command"])
    return out
