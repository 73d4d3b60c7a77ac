"""What each coding-agent host sends a hook and expects back, and its hook config file.

Pure standard library: the cold path of ``mdmem hook`` imports this before it
knows whether it needs a vault at all. One module per host holds what is that
host's own, written from its documentation, as data (a :class:`Host`, with the
:class:`Fields` its payloads use): :mod:`~mdmem.hookkit.hosts.claude_code`,
:mod:`~mdmem.hookkit.hosts.codex`, :mod:`~mdmem.hookkit.hosts.cursor`. Each
records every event's stdin in ``tests/hookkit/data/hooks/<host>.<event>.json``.

A new host is a new module here, its entry in :data:`HOSTS`, those fixtures,
and its line in the fast client's copies (:data:`mdmem.hookkit.client.HOST_EVENTS`,
``HOST_CWD``, ``FOLDER_LISTS``: that module may import nothing of this package;
``tests/hookkit/test_client.py`` keeps them equal). Nothing else changes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdmem.hookkit.hosts import claude_code, codex, cursor
from mdmem.hookkit.hosts.base import EVENTS, INJECTING, LOCATIONS, Fields, Host

__all__ = [
    "EVENTS",
    "HOSTS",
    "INJECTING",
    "LOCATIONS",
    "Fields",
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
    """A host's hook payload in mdmem's terms (read where the host's :class:`Fields` say)."""

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
    call_id: str | None = None  # the tool call's own id, where the host sends one


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first(
    raw: dict[str, Any], names: tuple[str, ...], lists: frozenset[str] = frozenset()
) -> str | None:
    """The first of ``names`` that holds text (a field of ``lists``: its first item)."""
    for name in names:
        value = raw.get(name)
        if name in lists:
            value = value[0] if isinstance(value, list) and value else None
        if _text(value) is not None:
            return str(value)
    return None


def parse_input(host_name: str, event: str, data: Any) -> HookInput:
    """The fields mdmem uses from one payload, where the host keeps them
    (:attr:`Host.fields`); absent or odd fields become None."""
    h = host(host_name)
    f = h.fields
    raw = data if isinstance(data, dict) else {}
    tool_output = raw.get(f.tool_output)
    tool_name = _text(raw.get(f.tool_name))
    tool_input = raw.get(f.tool_input)
    if tool_name is None and f.shell is not None and _text(raw.get(f.shell[0])):
        # afterShellExecution-style payloads: the command and its output.
        command, output = f.shell
        tool_name, tool_input, tool_output = "Shell", {"command": raw[command]}, raw.get(output)
    error = _text(raw.get(f.error))
    if event == "post-tool-failure" and error is None:
        error = "the tool call failed"  # the event itself says so, even with no message
    refused = f.refused is not None and raw.get(f.refused[0]) == f.refused[1]
    return HookInput(
        host=h.name,
        event=event,
        session_id=_first(raw, f.session) or "unknown",
        cwd=_first(raw, f.cwd, f.folder_lists),
        transcript_path=_text(raw.get(f.transcript)),
        prompt=_text(raw.get(f.prompt)),
        source=_text(raw.get(f.source)),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_output=tool_output,
        raw=raw,
        error=error if event == "post-tool-failure" else None,
        interrupted=raw.get(f.interrupted) is True or refused,
        call_id=_text(raw.get(f.call_id)),
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
