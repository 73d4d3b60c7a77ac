"""``mdmem consolidate`` and ``mdmem reflect``: the verbs that ask the model (or
the extractive fallback) to make something new out of memories."""

from __future__ import annotations

import click

from mdmem.cli.context import Context, emit, json_option, main, progress_bars

__all__ = ["consolidate_cmd", "reflect_cmd"]


@main.command("consolidate")
@click.option("--dry-run", is_flag=True, help="Print the diff it would commit; write nothing.")
@click.option(
    "--force", is_flag=True, help="Accept drafts that would drop more than 25% of given facts."
)
@click.option(
    "--review/--no-review",
    default=None,
    help="Commit to a branch mdmem/consolidate-DATE for `mdmem git review` "
    "(default: [consolidation] review).",
)
@json_option
@click.pass_obj
def consolidate_cmd(
    obj: Context, dry_run: bool, force: bool, review: bool | None, as_json: bool
) -> None:
    """Fold pending session entries into episode notes and facts (one commit)."""
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        result = vault.consolidate(dry_run=dry_run, force=force, review=review, progress=progress)

    def human() -> None:
        if not result.episodes and not result.rejected:
            click.echo("nothing to consolidate")
        verb = "would write" if dry_run else "wrote"
        if result.branch:
            verb = f"proposed on {result.branch}:"
        for ep in result.episodes:
            how = "extractive" if ep.extractive else ep.model
            click.echo(f"{verb} {ep.path} ({ep.entries} entries, {len(ep.facts)} facts, {how})")
        if result.facts:
            click.echo(f"{len(result.facts)} new facts: " + ", ".join(m.id for m in result.facts))
        if result.llm_requests:
            judge = ""
            if result.judge_requests:
                judge = (
                    f" (judge: {result.judge_requests} requests, "
                    f"{result.judge_prompt_tokens} prompt tokens)"
                )
            click.echo(
                f"LLM: {result.llm_requests} requests, {result.prompt_tokens} prompt tokens, "
                f"{result.completion_tokens} completion tokens{judge}"
            )
        for rej in result.rejected:
            click.echo(
                f"rejected {len(rej.entries)} entries ({rej.contact or 'no contact'}, "
                f"{rej.day}): {rej.reason}",
                err=True,
            )
        if dry_run and result.diff:
            click.echo(result.diff, nl=False)
        if result.branch:
            click.echo(
                f"see it with `mdmem git review {result.branch}`, then --merge or --reject it"
            )

    emit(result, as_json, human)
    if result.rejected:
        click.get_current_context().exit(1)


@main.command("reflect")
@click.argument("query")
@click.option("-k", "k", type=int, default=8, show_default=True, help="Memories to recall.")
@click.option("--scope", "scopes", multiple=True, help="Scope filter (repeatable).")
@json_option
@click.pass_obj
def reflect_cmd(obj: Context, query: str, k: int, scopes: tuple[str, ...], as_json: bool) -> None:
    """An answer synthesised across recalled memories, citing path#^id."""
    scope = [("" if s in ("root", "(root)") else s) for s in scopes] or None
    result = obj.vault().reflect(query, k=k, scope=scope)

    def human() -> None:
        click.echo(result.answer)
        if result.synthesized and result.citations:
            click.echo()
            for citation in result.citations:
                click.echo(f"  [{citation}]")

    emit(result, as_json, human)
