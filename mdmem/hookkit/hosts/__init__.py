"""What each coding-agent host sends a hook and expects back, and its hook config file.

Pure standard library: ``mdmem hook`` imports this before it knows whether it
needs a vault at all. One module per host holds what is that host's own, written
from its documentation: :mod:`~mdmem.hookkit.hosts.claude_code`,
:mod:`~mdmem.hookkit.hosts.codex`, :mod:`~mdmem.hookkit.hosts.cursor`. Each
records every event's stdin in ``tests/hookkit/data/hooks/<host>.<event>.json``;
a new host is a new module here, its entry in :data:`HOSTS`, and those fixtures.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdmem.hookkit.hosts import claude_code, codex, cursor
from mdmem.hookkit.hosts.base import EVENTS, INJECTING, LOCATIONS, Host

__all__ = [
    "EVENTS",
    "HOSTS",
    "INJECTING",
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

HOSTS: dict[str, Host] = {h.name: h for h in (claude_code.HOST, codex.HOST, cursor.HOST)}


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
    cwd = _text(raw.get("cwd"))
    if cwd is None and isinstance(raw.get("workspace_roots"), list) and raw["workspace_roots"]:
        cwd = _text(raw["workspace_roots"][0])  # Cursor names the workspace, not a cwd
    tool_output = raw.get("tool_response", raw.get("tool_output"))
    tool_name = _text(raw.get("tool_name"))
    tool_input = raw.get("tool_input")
    if tool_name is None and h.shell_payloads and _text(raw.get("command")):
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
    return event in host(host_name).inject_events


def render_output(host_name: str, event: str, context: str = "", notice: str = "") -> str:
    """The stdout a host accepts for ``event``: context for the model, a notice for the user.

    Always valid for the host, even when both are empty: Cursor and Codex read
    JSON on stdout, Claude Code accepts it.
    """
    h = host(host_name)
    return json.dumps(h.answer(h, event, context, notice), ensure_ascii=False)


def context_of(host_name: str, stdout: str) -> str:
    """The context an answer gives the model (what ``hooks doctor`` checks); "" if none."""
    h = host(host_name)
    try:
        data = json.loads(stdout)
    except ValueError:
        return stdout.strip() if h.plain_stdout_is_context else ""
    return h.context_in(data) if isinstance(data, dict) else ""


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
