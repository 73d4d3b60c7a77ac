"""CLI commands for consolidation and the memory lifecycle (registered on ``mdmem``).

``consolidate``, ``reflect``, ``feedback``, ``retention``, ``resolve-session``:
thin views of the Vault methods of the same names.
"""

from __future__ import annotations

import click

from .cli import _Context, _emit, json_option, main

__all__ = ["consolidate_cmd", "feedback_cmd", "reflect_cmd", "resolve_session_cmd", "retention_cmd"]


@main.command("consolidate")
@click.option("--dry-run", is_flag=True, help="Print the diff it would commit; write nothing.")
@click.option(
    "--force", is_flag=True, help="Accept drafts that would drop more than 25% of given facts."
)
@json_option
@click.pass_obj
def consolidate_cmd(obj: _Context, dry_run: bool, force: bool, as_json: bool) -> None:
    """Fold pending session entries into episode notes and facts (one commit)."""
    result = obj.vault().consolidate(dry_run=dry_run, force=force)

    def human() -> None:
        if not result.episodes and not result.rejected:
            click.echo("nothing to consolidate")
        verb = "would write" if dry_run else "wrote"
        for ep in result.episodes:
            how = "extractive" if ep.extractive else ep.model
            click.echo(f"{verb} {ep.path} ({ep.entries} entries, {len(ep.facts)} facts, {how})")
        if result.facts:
            click.echo(f"{len(result.facts)} new facts: " + ", ".join(m.id for m in result.facts))
        if result.llm_requests:
            click.echo(
                f"LLM: {result.llm_requests} requests, {result.prompt_tokens} prompt tokens, "
                f"{result.completion_tokens} completion tokens"
            )
        for rej in result.rejected:
            click.echo(
                f"rejected {len(rej.entries)} entries ({rej.contact or 'no contact'}, "
                f"{rej.day}): {rej.reason}",
                err=True,
            )
        if dry_run and result.diff:
            click.echo(result.diff, nl=False)

    _emit(result, as_json, human)
    if result.rejected:
        click.get_current_context().exit(1)


@main.command("reflect")
@click.argument("query")
@click.option("-k", "k", type=int, default=8, show_default=True, help="Memories to recall.")
@click.option("--scope", "scopes", multiple=True, help="Scope filter (repeatable).")
@json_option
@click.pass_obj
def reflect_cmd(obj: _Context, query: str, k: int, scopes: tuple[str, ...], as_json: bool) -> None:
    """An answer synthesised across recalled memories, citing path#^id."""
    scope = [("" if s in ("root", "(root)") else s) for s in scopes] or None
    result = obj.vault().reflect(query, k=k, scope=scope)

    def human() -> None:
        click.echo(result.answer)
        if result.synthesized and result.citations:
            click.echo()
            for citation in result.citations:
                click.echo(f"  [{citation}]")

    _emit(result, as_json, human)


@main.command("feedback")
@click.argument("memory_id")
@click.option("--helpful/--unhelpful", default=None, help="Did recalling it help?")
@json_option
@click.pass_obj
def feedback_cmd(obj: _Context, memory_id: str, helpful: bool | None, as_json: bool) -> None:
    """Mark a recalled memory helpful or unhelpful (moves its trust score)."""
    if helpful is None:
        raise click.UsageError("say --helpful or --unhelpful")
    score = obj.vault().feedback(memory_id, helpful)
    _emit(
        score,
        as_json,
        lambda: click.echo(f"{score.id}: trust {score.trust:.2f} after {score.hits} recall hits"),
    )


@main.command("retention")
@click.option("--days", type=int, default=None, help="Age of retired memories (default 30).")
@click.option("--apply", is_flag=True, help="Redact them (default: only list them).")
@json_option
@click.pass_obj
def retention_cmd(obj: _Context, days: int | None, apply: bool, as_json: bool) -> None:
    """Anonymise retired memories older than N days: text becomes [REDACTED]."""
    report = obj.vault().anonymize_retired(days, apply=apply)

    def human() -> None:
        if not report.memories:
            click.echo(f"no retired memories older than {report.days} days")
            return
        verb = "redacted" if report.applied else "would redact"
        for m in report.memories:
            click.echo(f"{verb} {m.id} ({m.status}, {m.path}:{m.line}): {m.text[:60]}")
        if not report.applied:
            click.echo("dry run: pass --apply to redact them", err=True)

    _emit(report, as_json, human)


@main.command("resolve-session")
@click.argument("session_id")
@click.option("--scope", default=None, help="Only memories in this scope.")
@json_option
@click.pass_obj
def resolve_session_cmd(obj: _Context, session_id: str, scope: str | None, as_json: bool) -> None:
    """Resolve every active memory recorded in or extracted from a session."""
    memories = obj.vault().resolve_session(session_id, scope=scope)

    def human() -> None:
        if not memories:
            click.echo(f"no active memories from session {session_id}")
        for m in memories:
            click.echo(f"resolved {m.id} ({m.kind}, {m.path}:{m.line})")

    _emit(memories, as_json, human)
