"""CLI commands for the git-native features: changes, provenance, sync, purge.

Imported by :mod:`mdmem.cli`, which so registers them on ``main``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mdmem.cli.context import Context, emit, json_option, main, progress_bars

if TYPE_CHECKING:  # annotations only: the heavy modules load when a command runs
    from mdmem.git.history import Change, Changes

EXIT_CONFLICT = 3


def _short(text: str | None, width: int = 90) -> str:
    if text is None:
        return "(text unavailable)"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _who(change: Change) -> str:
    return change.author if change.is_agent else f"{change.author} (human)"


def _print_changes(result: Changes) -> None:
    rng = f"{result.base[:10] if result.base else '(start)'}..{(result.head or '')[:10]}"
    if result.empty:
        click.echo(f"No changes since {result.since} ({rng}).")
        return
    click.echo(
        f"Changes since {result.since} ({rng}): {result.commits} commits "
        f"({result.agent_commits} by agents, {result.human_commits} by humans)"
    )
    if result.remembered:
        click.echo(f"\nRemembered ({len(result.remembered)})")
        for c in result.remembered:
            state = f" [{c.status}]" if c.status and c.status != "active" else ""
            click.echo(f"  + {c.id} {c.kind or ''}{state}: {_short(c.text)}")
            click.echo(f"      {c.path}  by {_who(c)}, {c.date[:16].replace('T', ' ')}")
    if result.superseded:
        click.echo(f"\nSuperseded ({len(result.superseded)})")
        for s in result.superseded:
            click.echo(f"  ~ {s.old_id} → {s.new_id or '?'}")
            click.echo(f"      was: {_short(s.old_text, 80)}")
            click.echo(f"      now: {_short(s.new_text, 80)}")
    if result.resolved:
        click.echo(f"\nResolved ({len(result.resolved)})")
        for c in result.resolved:
            click.echo(f"  ✓ {c.id}: {_short(c.text)}  (by {_who(c)})")
    if result.forgotten:
        click.echo(f"\nForgotten ({len(result.forgotten)})")
        for c in result.forgotten:
            click.echo(f"  - {c.id}: {_short(c.text)}  (by {_who(c)})")
    if result.human_edits:
        click.echo(f"\nEdited by humans ({len(result.human_edits)} commits)")
        for h in result.human_edits:
            click.echo(f"  {h.commit[:10]} {h.date[:16].replace('T', ' ')} {h.author}: {h.subject}")
            click.echo(f"      files: {', '.join(h.paths) or '-'}")
            if h.memory_ids:
                click.echo(f"      memories: {', '.join(h.memory_ids)}")


@main.command("changes")
@click.option(
    "--since",
    default="last-session",
    show_default=True,
    help="'last-session' (this agent's), a date/time (ISO, or e.g. 'yesterday') or a commit.",
)
@click.option("--session", default=None, help="The session asking (its start stays the base).")
@click.option("--mark", is_flag=True, help="Then record the current commit as seen.")
@json_option
@click.pass_obj
def changes_cmd(obj: Context, since: str, session: str | None, mark: bool, as_json: bool) -> None:
    """What changed in the vault since the last session, a date or a commit."""
    vault = obj.vault()
    result = vault.changes(since, session=session)
    if mark:
        vault.mark_seen(session=session)
    emit(result, as_json, lambda: _print_changes(result))


@main.command("provenance")
@click.argument("memory_id")
@json_option
@click.pass_obj
def provenance_cmd(obj: Context, memory_id: str, as_json: bool) -> None:
    """Who wrote each line of a memory (git blame) and which commit created it."""
    prov = obj.vault().provenance(memory_id)

    def human() -> None:
        origin = "human" if prov.written_by_human else "agent"
        click.echo(f"{prov.memory_id}  {prov.path}:{prov.line_start}-{prov.line_end}  ({origin})")
        if prov.created_commit:
            click.echo(
                f"created {prov.created_commit[:10]} by {prov.created_by} on {prov.created_date}"
            )
        click.echo(f"authors: {', '.join(prov.authors)}; last: {prov.last_author}")
        for la in prov.lines:
            click.echo(f"  {la.line:>5}  {la.commit[:10]}  {la.date[:16]}  {la.author}")

    emit(prov, as_json, human)


@main.command("sync")
@click.option("--remote", default="origin", show_default=True, help="The git remote.")
@click.option("--no-push", is_flag=True, help="Only pull (fetch and rebase).")
@click.option(
    "--force-push",
    is_flag=True,
    help="Overwrite the remote branch (needed once after a purge).",
)
@json_option
@click.pass_obj
def sync_cmd(obj: Context, remote: str, no_push: bool, force_push: bool, as_json: bool) -> None:
    """Pull from and push to a git remote; conflicts leave the vault unchanged."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        result = vault.sync(remote, push=not no_push, force_push=force_push, progress=progress)

    def human() -> None:
        if not result.ok:
            click.echo(
                f"sync stopped: {len(result.conflicts)} file(s) changed on both sides; "
                "the vault is unchanged. Reconcile these by hand, commit, then sync again:",
                err=True,
            )
            for conflict in result.conflicts:
                click.echo(f"  {conflict.path}", err=True)
            return
        forced = " (remote overwritten)" if result.forced else ""
        click.echo(
            f"synced {result.branch} with {result.remote}: pulled {result.pulled}, "
            f"pushed {result.pushed}{forced}"
        )
        for change in result.changed_paths:
            old = f"{change.old_path} → " if change.old_path else ""
            click.echo(f"  {change.status} {old}{change.path}")

    emit(result, as_json, human)
    if not result.ok:
        raise click.exceptions.Exit(EXIT_CONFLICT)


@main.command("purge")
@click.argument("memory_id")
@click.option("--yes", is_flag=True, help="Confirm: rewrite the whole git history.")
@json_option
@click.pass_obj
def purge_cmd(obj: Context, memory_id: str, yes: bool, as_json: bool) -> None:
    """Forget a memory and erase its text from every commit (rewrites history)."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        result = vault.purge(memory_id, confirm=yes, progress=progress)

    def human() -> None:
        click.echo(
            f"purged {result.memory_id}: {result.commits_rewritten} of {result.commits} commits "
            f"rewritten ({result.method}, {result.seconds:.2f}s)"
        )
        if result.derived:
            click.echo(f"removed with it, made from it: {', '.join(result.derived)}")
        if result.regenerated:
            click.echo(f"written again from their other sources: {', '.join(result.regenerated)}")
        for old, new in result.renamed:
            click.echo(f"renamed {old} -> {new} (its name came from the purged text)")
        if result.also_in:
            click.echo(
                f"the text also appears in {', '.join(result.also_in)}: "
                "those memories are their own and were left as they are"
            )
        click.echo(
            "clones and the remote still hold the text: run `mdmem sync --force-push`, "
            "then re-clone elsewhere"
        )

    emit(result, as_json, human)
