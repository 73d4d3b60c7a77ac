"""Import, export, browse and record: ``mdmem import``, ``export``, ``list``, ``show``,
``session record``."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from mdmem.cli.context import Context, emit, json_option, main, progress_bars, scope_option
from mdmem.errors import InvalidInputError
from mdmem.models import KINDS, one_line

_FORMATS = ("chatgpt", "claude", "jsonl", "markdown")
_STATUSES = ("active", "resolved", "superseded")


@main.command("import")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    default=None,
    help="Export format (default: detected when unambiguous).",
)
@scope_option
@click.option(
    "--restore",
    is_flag=True,
    help="PATH is an `mdmem export` you made: bring it back whole (scopes, statuses, "
    "links, provenance). Only for your own exports.",
)
@click.option("--redact", is_flag=True, help="Store secrets redacted instead of refusing them.")
@json_option
@click.pass_obj
def import_cmd(
    obj: Context,
    path: str,
    fmt: str | None,
    scope: str | None,
    restore: bool,
    redact: bool,
    as_json: bool,
) -> None:
    """Import a ChatGPT or Claude.ai export, a JSONL of messages or a folder of notes.

    The file is not trusted: everything goes into --scope (rows naming another
    scope are refused), and what would set provenance (status, importance,
    captured, pins, contacts) is not taken from it. `mdmem import --restore
    EXPORT` brings back an `mdmem export --jsonl` of yours as it was.

    Importing the same export again adds nothing. Refused messages (secrets,
    characters no file can hold, unreadable conversations) are counted and
    listed; the rest go in.
    """
    if restore and (fmt not in (None, "jsonl") or scope is not None):
        raise click.UsageError("--restore takes the export as it is: no --format or --scope")
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:

        def tick(phase: str, done: int, total: int) -> None:
            # A chat import reports bytes of the input read (it streams):
            # shown as a percentage, not as thousands of "messages".
            if phase == "import" and total > 0:
                done, total = min(100, done * 100 // total), 100
            progress(phase, done, total)

        report = vault.import_(
            path,
            format=fmt,
            scope=scope,
            secrets="redact" if redact else None,
            progress=tick,
            restore=restore,
        )

    def human() -> None:
        if report.restored:
            click.echo(
                f"restored {len(report.files)} files from the export of "
                f"{report.source_vault or 'a vault'}: {report.added} of {report.messages} "
                f"memories new, {report.duplicates} already there, {report.refused} refused, "
                f"{report.commits} commit(s)"
            )
        else:
            what = "notes" if report.format == "markdown" else "messages"
            click.echo(
                f"imported {report.added} of {report.messages} {what} ({report.format}): "
                f"{report.duplicates} already there, {report.refused} refused, "
                f"{report.commits} commit(s)"
            )
        if report.first:
            click.echo(f"dates {report.first} … {report.last}")
        if report.ignored:
            taken = ", ".join(f"{k} ({n})" for k, n in sorted(report.ignored.items()))
            click.echo(f"not taken from the file (the caller sets these): {taken}", err=True)
        for note in report.notes:
            click.echo(f"note: {note}", err=True)
        for refusal in report.refusals[:20]:
            click.echo(f"  refused {refusal['where']}: {refusal['reason']}", err=True)
        if report.refused > 20:
            click.echo(f"  … {report.refused - 20} more refused (see --json)", err=True)

    emit(report, as_json, human)


@main.command("export")
@click.option("--jsonl", "jsonl", is_flag=True, required=True, help="One JSON object a line.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="File to write (default: stdout).",
)
@click.pass_obj
def export_cmd(obj: Context, jsonl: bool, output: str) -> None:
    """Write the vault's knowledge: every memory with its metadata, then its files.

    `mdmem import --restore FILE` brings it back whole (into a fresh vault
    to move one); a plain `mdmem import FILE` takes its memories as untrusted
    rows.
    """
    vault = obj.vault()
    with progress_bars(enabled=not obj.quiet) as progress:  # stderr: stdout may be the data
        if output == "-":
            vault.export_jsonl(sys.stdout, progress=progress)
            return
        target = Path(output)
        tmp = target.with_name(f".{target.name}.tmp")
        with tmp.open("w", encoding="utf-8", newline="\n") as out:
            count = vault.export_jsonl(out, progress=progress)
        tmp.replace(target)
    if not obj.quiet:
        click.echo(f"exported {count} memories to {target}", err=True)


@main.command("list")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Repeatable.")
@click.option("--scope", "scopes", multiple=True, help='Repeatable; "" is the vault root.')
@click.option("--status", "statuses", multiple=True, type=click.Choice(_STATUSES))
@click.option("-t", "--tag", "tags", multiple=True, help="Any of these tags (repeatable).")
@click.option("--since", default=None, help="Created on or after (ISO date/time).")
@click.option("--until", default=None, help="Created on or before (ISO date/time).")
@click.option("--author", default=None, help="A git author name or email of its lines.")
@click.option("-n", "--limit", type=int, default=50, show_default=True, help="0: no limit.")
@click.option("--oldest", is_flag=True, help="Oldest first (default: newest first).")
@json_option
@click.pass_obj
def list_cmd(
    obj: Context,
    kinds: tuple[str, ...],
    scopes: tuple[str, ...],
    statuses: tuple[str, ...],
    tags: tuple[str, ...],
    since: str | None,
    until: str | None,
    author: str | None,
    limit: int,
    oldest: bool,
    as_json: bool,
) -> None:
    """List memories (every status unless --status), newest first."""
    rows = obj.vault().list_memories(
        kinds=kinds or None,
        scopes=scopes or None,
        statuses=statuses or None,
        tags=tags or None,
        since=since,
        until=until,
        author=author,
        limit=limit or None,
        oldest_first=oldest,
    )

    def human() -> None:
        for row in rows:
            status = "" if row["status"] == "active" else f" [{row['status']}]"
            scope = f" {row['scope']}" if row["scope"] else ""
            click.echo(
                f"{row['created'][:16]}  {row['id']}  {row['kind']}{scope}{status}  "
                f"{one_line(row['text'])[:100]}"
            )
        if not rows:
            click.echo("no memories match", err=True)

    emit(rows, as_json, human)


@main.command("show")
@click.argument("memory_id")
@json_option
@click.pass_obj
def show_cmd(obj: Context, memory_id: str, as_json: bool) -> None:
    """One memory: text, metadata, history and who wrote it."""
    shown = obj.vault().show(memory_id)

    def human() -> None:
        row = shown.memory
        click.echo(f"{row['id']}  ({row['path']}:{row['line']})")
        click.echo(row["text"])
        click.echo("")
        for key in ("kind", "scope", "status", "created", "updated", "session", "heading"):
            if row.get(key):
                click.echo(f"{key + ':':<10}{row[key]}")
        if row["tags"]:
            click.echo(f"{'tags:':<10}{' '.join('#' + t for t in row['tags'])}")
        for key, value in row["fields"]:
            click.echo(f"{'field:':<10}{key} = {value}")
        if shown.provenance is not None:
            who = shown.provenance
            human_note = " (a person wrote some lines)" if who.written_by_human else ""
            click.echo(f"{'authors:':<10}{', '.join(who.authors)}{human_note}")
            if who.created_commit:
                click.echo(
                    f"{'created:':<10}{who.created_commit[:10]} by {who.created_by} "
                    f"on {who.created_date}"
                )
        if shown.history:
            click.echo("history:")
            for v in shown.history:
                state = "forgotten" if v.path is None else (v.status or "active")
                click.echo(f"  {v.date[:19]}  {v.commit[:10]}  {v.author}  [{state}]  {v.subject}")
        for problem in shown.problems:
            click.echo(f"note: {problem}", err=True)

    emit(shown, as_json, human)


@main.group("session")
def session_group() -> None:
    """Short-term memory of a conversation (chat turns)."""


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
