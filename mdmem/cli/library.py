"""``mdmem library …``: bulk in, bulk out, and browsing (``vault.library``).

``import`` (chat exports, JSONL, markdown folders), ``export``, ``list`` and
``show``; ``ingest`` (documents) is in :mod:`mdmem.cli.documents`.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from mdmem.atomicfile import atomic_file
from mdmem.cli.context import Context, emit, json_option, main, progress_bars, scope_option
from mdmem.models import KINDS, one_line

__all__ = [
    "export_cmd",
    "import_cmd",
    "library_group",
    "list_cmd",
    "show_cmd",
]

_FORMATS = ("chatgpt", "claude", "jsonl", "markdown")
_STATUSES = ("active", "resolved", "superseded")


@main.group("library")
def library_group() -> None:
    """Documents, chat exports and JSONL in; JSONL out; list and show memories."""


@library_group.command("import")
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
    help="PATH is an `mdmem library export` you made: bring it back whole (scopes, statuses, "
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
    captured, pins, contacts) is not taken from it. Of an `mdmem library export`
    only the active memories come in (none superseded, no one else's preference
    in your profile); `mdmem library import --restore EXPORT` brings an export of
    yours back whole, and lists the mdmem.toml settings it left behind.

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

        report = vault.library.import_(
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


@library_group.command("export")
@click.option(
    "--jsonl", "jsonl", is_flag=True, help="One JSON object a line (the only format; the default)."
)
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

    `mdmem library import --restore FILE` brings it back whole (into a fresh
    vault to move one); a plain `mdmem library import FILE` takes its
    memories as untrusted rows.
    """
    if output != "-" and not Path(output).parent.is_dir():
        raise click.UsageError(f"--output: no folder {Path(output).parent}")
    vault = obj.vault()
    with progress_bars(enabled=not obj.quiet) as progress:  # stderr: stdout may be the data
        if output == "-":
            vault.library.export(sys.stdout, progress=progress)
            return
        target = Path(output)
        # Replaced whole when the export is done: a failed export leaves the old file.
        with atomic_file(target) as raw:
            out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
            count = vault.library.export(out, progress=progress)
            out.flush()
            out.detach()  # the handle stays open for atomic_file to fsync and install
    if not obj.quiet:
        click.echo(f"exported {count} memories to {target}", err=True)


@library_group.command("list")
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
    """List memories (every status but archived, unless --status), newest first."""
    memories = obj.vault().library.list(
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
        for m in memories:
            status = "" if m.status == "active" else f" [{m.status}]"
            scope = f" {m.scope}" if m.scope else ""
            when = m.created.isoformat(timespec="minutes")[:16]
            click.echo(f"{when}  {m.id}  {m.kind}{scope}{status}  {one_line(m.text)[:100]}")
        if not memories:
            click.echo("no memories match", err=True)

    emit(memories, as_json, human)


@library_group.command("show")
@click.argument("memory_id")
@json_option
@click.pass_obj
def show_cmd(obj: Context, memory_id: str, as_json: bool) -> None:
    """One memory: text, metadata, history and who wrote it."""
    shown = obj.vault().library.show(memory_id)

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
