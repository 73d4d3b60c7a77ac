"""``mdmem session …``: conversations and agent runs (``vault.sessions``).

``record``, ``summarize``, ``resolve``, ``capture-tools``, ``flush-reminder``,
``consolidate-stale``, ``pending add|take|list`` and ``action add|list|complete``:
thin views of the desk's verbs. Library modules are imported inside the
commands, so ``mdmem --help`` stays cheap.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main, memory_line, read_text, scope_option
from mdmem.errors import InvalidInputError

__all__ = [
    "action_group",
    "capture_tools_cmd",
    "consolidate_stale_cmd",
    "flush_reminder_cmd",
    "pending_group",
    "resolve_session_cmd",
    "session_group",
    "session_record",
    "summarize_session_cmd",
]


@main.group("session")
def session_group() -> None:
    """Conversations and agent runs: record turns, summarise, capture tool calls."""


@session_group.command("record")
@click.argument("session_id")
@click.argument("text")
@click.option(
    "--role",
    type=click.Choice(["user", "assistant", "system", "tool"]),
    required=True,
    help="Who sent the message.",
)
@click.option("--speaker", default=None, help="The person who spoke (a group chat's member).")
@click.option("--when", default=None, help="When it was said (ISO date/time; default now).")
@click.option("--event-id", default=None, help="The message id at its source (dedupes).")
@click.option("--source", default=None, help="Where the conversation happens (telegram, cli...).")
@click.option("--contact", default=None, help="The conversation's contact (telegram:123).")
@scope_option
@click.option("--redact", is_flag=True, help="Store secrets redacted instead of refusing.")
@json_option
@click.pass_obj
def session_record(
    obj: Context,
    session_id: str,
    text: str,
    role: str,
    speaker: str | None,
    when: str | None,
    event_id: str | None,
    source: str | None,
    contact: str | None,
    scope: str | None,
    redact: bool,
    as_json: bool,
) -> None:
    """Record one chat turn (TEXT, or - to read it from stdin)."""
    body = sys.stdin.read() if text == "-" else text
    moment = _when(when)
    session = obj.vault().session(session_id, source=source, contact=contact, scope=scope)
    memory = session.record(
        role,
        body,
        event_id,
        speaker=speaker,
        when=moment,
        secrets="redact" if redact else None,
    )

    def human() -> None:
        note = "" if memory.was_new else " (already recorded)"
        click.echo(f"recorded {memory.id} → {memory.path}:{memory.line}{note}")

    emit(memory, as_json, human)


def _when(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(f"--when: not an ISO date/time: {value!r}") from None


@session_group.command("summarize")
@click.argument("session_id")
@scope_option
@json_option
@click.pass_obj
def summarize_session_cmd(obj: Context, session_id: str, scope: str | None, as_json: bool) -> None:
    """Write a session_summary of the turns no summary covers yet (LLM, else extractive)."""
    memory = obj.vault().sessions.summarize(session_id, scope=scope)

    def human() -> None:
        if memory is None:
            click.echo(f"session {session_id} has no turns")
        else:
            memory_line("summarized" if memory.was_new else "summary", memory)
            click.echo(memory.text)

    emit(memory, as_json, human)


def _calls(raw: str) -> list[Any]:
    from mdmem.memory.capture.toolcalls import ToolCall

    text = raw.strip()
    if not text:
        return []
    try:
        items = (
            json.loads(text)
            if text.startswith("[")
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except ValueError as exc:
        raise InvalidInputError(
            f"tool calls must be JSON (a list, or one object a line): {exc}"
        ) from None
    calls = []
    allowed = {"tool", "input", "output", "success", "exit_code", "when", "id"}
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise InvalidInputError(f"tool call {n}: an object with a string 'tool' is needed")
        unknown = sorted(set(item) - allowed)
        if unknown:
            raise InvalidInputError(f"tool call {n}: unknown key(s) {', '.join(unknown)}")
        when = item.get("when")
        try:
            moment = datetime.fromisoformat(when) if isinstance(when, str) else None
        except ValueError:
            raise InvalidInputError(f"tool call {n}: 'when' is not an ISO date-time") from None
        code = item.get("exit_code")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise InvalidInputError(f"tool call {n}: 'exit_code' must be an integer")
        success = item.get("success")
        if success is not None and not isinstance(success, bool):
            raise InvalidInputError(f"tool call {n}: 'success' must be true or false")
        args = item.get("input", "")
        if not isinstance(args, (str, dict)):
            raise InvalidInputError(f"tool call {n}: 'input' must be a string or an object")
        calls.append(
            ToolCall(
                item["tool"],
                args,
                str(item.get("output") or ""),
                success=success,
                exit_code=code,
                when=moment,
                id=str(item["id"]) if item.get("id") is not None else None,
            )
        )
    return calls


@session_group.command("capture-tools")
@click.argument("session_id")
@click.argument("calls_file", default="-")
@scope_option
@json_option
@click.pass_obj
def capture_tools_cmd(
    obj: Context, session_id: str, calls_file: str, scope: str | None, as_json: bool
) -> None:
    """Gotchas from failed tool calls, bug_fixes from their fixes (JSON list or JSONL; - stdin)."""
    if calls_file == "-":
        raw = read_text("-")
    else:
        try:
            with open(calls_file, encoding="utf-8") as fh:
                raw = fh.read()
        except OSError as exc:
            raise InvalidInputError(f"cannot read {calls_file}: {exc.strerror}") from None
    memories = obj.vault().sessions.capture_tool_results(session_id, _calls(raw), scope=scope)

    def human() -> None:
        if not memories:
            click.echo("nothing new")
        for m in memories:
            memory_line(m.kind, m)

    emit(memories, as_json, human)


@session_group.group("pending")
def pending_group() -> None:
    """Messages that arrived while the agent was busy (FIFO, 30-day TTL)."""


@pending_group.command("add")
@click.argument("text")
@click.option("--channel", default="default", show_default=True)
@click.option("--sender", default=None)
@click.option("--source", default=None, help="Platform, e.g. slack or telegram.")
@click.option("--event-id", default=None, help="The platform's message id (queued once).")
@click.option("--ttl-days", type=float, default=None, help="Default 30 (Otto).")
@json_option
@click.pass_obj
def pending_add_cmd(
    obj: Context,
    text: str,
    channel: str,
    sender: str | None,
    source: str | None,
    event_id: str | None,
    ttl_days: float | None,
    as_json: bool,
) -> None:
    """Queue a message for the agent's next task (TEXT - reads stdin)."""
    message = obj.vault().sessions.pending.push(
        read_text(text),
        channel=channel,
        sender=sender,
        source=source,
        event_id=event_id,
        ttl_days=ttl_days,
    )
    emit(message, as_json, lambda: click.echo(f"queued #{message.seq} on {message.channel}"))


def _show(messages: list[Any], as_json: bool) -> None:
    def human() -> None:
        for m in messages:
            who = f" {m.sender}" if m.sender else ""
            click.echo(f"#{m.seq} [{m.at}]{who}: {m.text}")
        if not messages:
            click.echo("no pending messages")

    emit(messages, as_json, human)


@pending_group.command("take")
@click.option("--channel", default="default", show_default=True)
@click.option("--limit", type=int, default=None)
@json_option
@click.pass_obj
def pending_take_cmd(obj: Context, channel: str, limit: int | None, as_json: bool) -> None:
    """Hand the waiting messages to a task (each is returned once), oldest first."""
    _show(obj.vault().sessions.pending.take(channel=channel, limit=limit), as_json)


@pending_group.command("list")
@click.option("--channel", default="default", show_default=True)
@json_option
@click.pass_obj
def pending_list_cmd(obj: Context, channel: str, as_json: bool) -> None:
    """Show the waiting messages without taking them."""
    _show(obj.vault().sessions.pending.peek(channel=channel), as_json)


@session_group.command("flush-reminder")
@click.option("--session", default=None, help="Count only this session's pending turns.")
@scope_option
@json_option
@click.pass_obj
def flush_reminder_cmd(obj: Context, session: str | None, scope: str | None, as_json: bool) -> None:
    """Print the memory-flush reminder when it is due (25 pending turns, 30-minute cooldown)."""
    text = obj.vault().sessions.flush_reminder(session=session, scope=scope)
    emit({"reminder": text}, as_json, lambda: click.echo(text) if text else None)


@session_group.command("consolidate-stale")
@json_option
@click.pass_obj
def consolidate_stale_cmd(obj: Context, as_json: bool) -> None:
    """Consolidate conversations idle for consolidation.stale_minutes (default 10)."""
    result = obj.vault().sessions.consolidate_stale()

    def human() -> None:
        if result is None:
            click.echo("no idle conversations to consolidate")
        else:
            for episode in result.episodes:
                click.echo(f"episode {episode.id} → {episode.path}")

    emit(result, as_json, human)


@session_group.group("action")
def action_group() -> None:
    """Short-term step notes of one action, cleaned up when it completes (OrcBot)."""


@action_group.command("add")
@click.argument("action_id")
@click.argument("text")
@click.option("--step", type=int, default=None)
@click.option("--skill", default=None, help="The tool that ran.")
@scope_option
@json_option
@click.pass_obj
def action_add_cmd(
    obj: Context,
    action_id: str,
    text: str,
    step: int | None,
    skill: str | None,
    scope: str | None,
    as_json: bool,
) -> None:
    """Record a step observation of ACTION_ID (TEXT - reads stdin)."""
    memory = (
        obj.vault()
        .sessions.action(action_id, scope=scope)
        .add(read_text(text), step=step, skill=skill)
    )
    emit(memory, as_json, lambda: memory_line("noted", memory))


@action_group.command("list")
@click.argument("action_id")
@scope_option
@json_option
@click.pass_obj
def action_list_cmd(obj: Context, action_id: str, scope: str | None, as_json: bool) -> None:
    """The step notes an action still holds."""
    notes = obj.vault().sessions.action(action_id, scope=scope).memories()

    def human() -> None:
        for m in notes:
            click.echo(f"{m.id}: {m.text}")
        if not notes:
            click.echo(f"no notes for action {action_id}")

    emit(notes, as_json, human)


@action_group.command("complete")
@click.argument("action_id")
@scope_option
@json_option
@click.pass_obj
def action_complete_cmd(obj: Context, action_id: str, scope: str | None, as_json: bool) -> None:
    """The action is done: remove its step notes in one commit."""
    removed = obj.vault().sessions.action(action_id, scope=scope).complete()
    emit({"removed": removed}, as_json, lambda: click.echo(f"removed {removed} step notes"))


@session_group.command("resolve")
@click.argument("session_id")
@click.option("--scope", default=None, help="Only memories in this scope.")
@json_option
@click.pass_obj
def resolve_session_cmd(obj: Context, session_id: str, scope: str | None, as_json: bool) -> None:
    """Resolve every active memory recorded in or extracted from a session."""
    memories = obj.vault().sessions.resolve(session_id, scope=scope)

    def human() -> None:
        if not memories:
            click.echo(f"no active memories from session {session_id}")
        for m in memories:
            click.echo(f"resolved {m.id} ({m.kind}, {m.path}:{m.line})")

    emit(memories, as_json, human)
