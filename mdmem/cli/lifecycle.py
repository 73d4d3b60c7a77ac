"""CLI commands for consolidation and the memory lifecycle (registered on ``mdmem``).

``consolidate``, ``review``, ``undo``, ``reflect``, ``feedback``, ``retention``,
``resolve-session``: thin views of the Vault methods of the same names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mdmem.cli.context import Context, emit, json_option, main, progress_bars

if TYPE_CHECKING:  # annotations only: the heavy modules load when a command runs
    from mdmem.git.review import Review

__all__ = [
    "consolidate_cmd",
    "feedback_cmd",
    "reflect_cmd",
    "resolve_session_cmd",
    "retention_cmd",
    "review_cmd",
    "undo_cmd",
]


@main.command("consolidate")
@click.option("--dry-run", is_flag=True, help="Print the diff it would commit; write nothing.")
@click.option(
    "--force", is_flag=True, help="Accept drafts that would drop more than 25% of given facts."
)
@click.option(
    "--review/--no-review",
    default=None,
    help="Commit to a branch mdmem/consolidate-DATE for `mdmem review` "
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
            click.echo(f"see it with `mdmem review {result.branch}`, then --merge or --reject it")

    emit(result, as_json, human)
    if result.rejected:
        click.get_current_context().exit(1)


def _counts(r: Review) -> str:
    return (
        f"{r.added} facts added, {r.superseded} superseded, {r.dropped} dropped; "
        f"{r.episodes} episodes from {r.entries} entries"
    )


@main.command("review")
@click.argument("branch", required=False)
@click.option("--merge", "merge", is_flag=True, help="Merge the review into the current branch.")
@click.option("--reject", "reject", is_flag=True, help="Delete the review branch.")
@json_option
@click.pass_obj
def review_cmd(obj: Context, branch: str | None, merge: bool, reject: bool, as_json: bool) -> None:
    """Consolidations waiting for review: list them, show one (counts and diff), merge or reject.

    Without BRANCH: the open reviews (the only one in full); --merge and
    --reject take the only one.
    """
    if merge and reject:
        raise click.UsageError("say --merge or --reject, not both")
    vault = obj.vault()
    if merge or reject:
        decision = vault.merge_review(branch) if merge else vault.reject_review(branch)

        def decided() -> None:
            r = decision.review
            if decision.action == "merged":
                click.echo(f"merged {r.branch} ({(decision.commit or '')[:10]}): {_counts(r)}")
            else:
                click.echo(f"rejected {r.branch}: its {r.entries} entries are pending again")

        emit(decision, as_json, decided)
        return
    if branch is None:
        open_reviews = vault.reviews()
        # --json always lists (a stable shape); people see the only review in full.
        if as_json or len(open_reviews) != 1:

            def listed() -> None:
                if not open_reviews:
                    click.echo("no consolidation is waiting for review")
                for r in open_reviews:
                    click.echo(f"{r.branch}  {r.commit[:10]}  {_counts(r)}")

            emit(open_reviews, as_json, listed)
            return
        branch = open_reviews[0].branch
    found = vault.review(branch)

    def shown() -> None:
        click.echo(f"{found.branch}  {found.commit[:10]}  {found.date}")
        click.echo(found.title)
        click.echo(_counts(found))
        for fact in found.dropped_facts:
            click.echo(f"  dropped: {fact}")
        click.echo()
        click.echo(found.diff, nl=False)
        click.echo(
            f"merge it with `mdmem review --merge {found.branch}`, "
            f"or reject it with `mdmem review --reject {found.branch}`",
            err=True,
        )

    emit(found, as_json, shown)


@main.command("undo")
@click.argument("commit")
@json_option
@click.pass_obj
def undo_cmd(obj: Context, commit: str, as_json: bool) -> None:
    """Revert one commit (a consolidation, a review merge...) with a new commit."""
    result = obj.vault().undo(commit)
    emit(
        result,
        as_json,
        lambda: click.echo(
            f"undid {result.reverted[:10]} ({result.subject}) in {result.commit[:10]}: "
            + ", ".join(result.paths)
        ),
    )


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


@main.command("feedback")
@click.argument("memory_id")
@click.option("--helpful/--unhelpful", default=None, help="Did recalling it help?")
@json_option
@click.pass_obj
def feedback_cmd(obj: Context, memory_id: str, helpful: bool | None, as_json: bool) -> None:
    """Mark a recalled memory helpful or unhelpful (moves its trust score)."""
    if helpful is None:
        raise click.UsageError("say --helpful or --unhelpful")
    score = obj.vault().feedback(memory_id, helpful)
    emit(
        score,
        as_json,
        lambda: click.echo(f"{score.id}: trust {score.trust:.2f} after {score.hits} recall hits"),
    )


@main.command("retention")
@click.option("--days", type=int, default=None, help="Age of retired memories (default 30).")
@click.option("--apply", is_flag=True, help="Redact them (default: only list them).")
@json_option
@click.pass_obj
def retention_cmd(obj: Context, days: int | None, apply: bool, as_json: bool) -> None:
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

    emit(report, as_json, human)


@main.command("resolve-session")
@click.argument("session_id")
@click.option("--scope", default=None, help="Only memories in this scope.")
@json_option
@click.pass_obj
def resolve_session_cmd(obj: Context, session_id: str, scope: str | None, as_json: bool) -> None:
    """Resolve every active memory recorded in or extracted from a session."""
    memories = obj.vault().resolve_session(session_id, scope=scope)

    def human() -> None:
        if not memories:
            click.echo(f"no active memories from session {session_id}")
        for m in memories:
            click.echo(f"resolved {m.id} ({m.kind}, {m.path}:{m.line})")

    emit(memories, as_json, human)
