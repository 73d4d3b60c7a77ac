"""``mdmem cleanup``: the whole-store LLM cleanup pass over a scope's MEMORY and USER files."""

from __future__ import annotations

import click

from mdmem.cli.context import Context, emit, json_option, main, scope_option

__all__ = ["cleanup_cmd"]


@main.command("cleanup")
@scope_option
@click.option("--dry-run", is_flag=True, help="Print the diff it would commit; write nothing.")
@click.option(
    "--review/--no-review",
    default=None,
    help="Commit to a review branch for `mdmem review` (default: [cleanup] review).",
)
@click.option(
    "--if-due", is_flag=True, help="Run only if [cleanup] interval_hours passed since the last run."
)
@json_option
@click.pass_obj
def cleanup_cmd(
    obj: Context,
    scope: str | None,
    dry_run: bool,
    review: bool | None,
    if_due: bool,
    as_json: bool,
) -> None:
    """Merge duplicates, retire replaced facts, settle contradictions (LLM; one commit)."""
    result = obj.vault().cleanup(scope, dry_run=dry_run, review=review, if_due=if_due)

    def human() -> None:
        if result.skipped:
            click.echo(f"skipped: {result.skipped}")
            return
        click.echo(
            f"{result.memories} memories in {result.batches} batches; "
            f"{len(result.actions)} changes, {len(result.rejected)} proposals dropped"
        )
        for action in result.actions:
            what = action.get("ids") or [action.get("id")]
            click.echo(f"  {action['op']} {' '.join(what)}: {action['reason']}")
        for dropped in result.rejected:
            click.echo(f"  dropped ({dropped['why']}): {dropped['action']}")
        if result.branch:
            click.echo(f"proposed on {result.branch} (mdmem review)")
        elif result.commit:
            click.echo(f"committed {result.commit[:10]}")
        if dry_run and result.diff:
            click.echo(result.diff, nl=False)

    emit(result, as_json, human)
