"""``mdmem git …``: what git knows about the vault (``vault.git``).

``changes`` (since the last session, a commit or a date), ``provenance``,
``sync``, ``review`` (consolidations waiting on branches), ``undo`` and ``purge``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mdmem.cli.context import Context, emit, json_option, main, progress_bars

__all__ = [
    "changes_cmd",
    "git_group",
    "provenance_cmd",
    "purge_cmd",
    "review_cmd",
    "sync_cmd",
    "undo_cmd",
]

if TYPE_CHECKING:  # annotations only: the heavy modules load when a command runs
    from mdmem.git.history import Change, Changes
    from mdmem.git.review import Review

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


@main.group("git")
def git_group() -> None:
    """What git knows: changes since last session, authors, sync, reviews, undo, purge."""


@git_group.command("changes")
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
    result = vault.git.changes(since, session=session)
    if mark:
        vault.git.mark_seen(session=session)
    emit(result, as_json, lambda: _print_changes(result))


@git_group.command("provenance")
@click.argument("memory_id")
@json_option
@click.pass_obj
def provenance_cmd(obj: Context, memory_id: str, as_json: bool) -> None:
    """Who wrote each line of a memory (git blame) and which commit created it."""
    prov = obj.vault().git.provenance(memory_id)

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


@git_group.command("sync")
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
        result = vault.git.sync(remote, push=not no_push, force_push=force_push, progress=progress)

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


@git_group.command("purge")
@click.argument("memory_id")
@click.option("--yes", is_flag=True, help="Confirm: rewrite the whole git history.")
@click.option(
    "--also",
    "also",
    multiple=True,
    metavar="TEXT",
    help="A string to erase too, wherever it stands (repeatable): a secret that reads "
    "like an ordinary word.",
)
@json_option
@click.pass_obj
def purge_cmd(
    obj: Context, memory_id: str, yes: bool, also: tuple[str, ...], as_json: bool
) -> None:
    """Forget a memory and erase its text from every commit (rewrites history).

    Its lines, its secrets and codes (and each --also TEXT) are erased
    wherever they are written: notes, file names, commit and tag messages,
    branches, stashes, git notes. A kept memory holding one of them in its
    own words stops the purge first, changing nothing. Afterwards everything
    is searched again; each place still holding the text is named and the
    command fails.
    """
    vault = obj.vault()
    with progress_bars(enabled=not as_json and not obj.quiet) as progress:
        result = vault.git.purge(memory_id, confirm=yes, also=also, progress=progress)

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
        if result.fragments:
            kinds = ", ".join(f"{n} {kind}" for kind, n in result.fragments.items())
            click.echo(f"looked for its fragments too: {kinds}")
        for place in result.cleaned:
            click.echo(f"redacted where it was quoted: {place}")
        if result.also_in:
            click.echo(
                f"the text also appears in {', '.join(result.also_in)}: "
                "those memories are their own and were left as they are"
            )
        click.echo(
            "clones and the remote still hold the text: run `mdmem git sync --force-push`, "
            "then re-clone elsewhere"
        )

    emit(result, as_json, human)


def _counts(r: Review) -> str:
    return (
        f"{r.added} facts added, {r.superseded} superseded, {r.dropped} dropped; "
        f"{r.episodes} episodes from {r.entries} entries"
    )


@git_group.command("review")
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
        decision = vault.git.merge_review(branch) if merge else vault.git.reject_review(branch)

        def decided() -> None:
            r = decision.review
            if decision.action == "merged":
                click.echo(f"merged {r.branch} ({(decision.commit or '')[:10]}): {_counts(r)}")
            else:
                click.echo(f"rejected {r.branch}: its {r.entries} entries are pending again")

        emit(decision, as_json, decided)
        return
    if branch is None:
        open_reviews = vault.git.reviews()
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
    found = vault.git.review(branch)

    def shown() -> None:
        click.echo(f"{found.branch}  {found.commit[:10]}  {found.date}")
        click.echo(found.title)
        click.echo(_counts(found))
        for fact in found.dropped_facts:
            click.echo(f"  dropped: {fact}")
        click.echo()
        click.echo(found.diff, nl=False)
        click.echo(
            f"merge it with `mdmem git review --merge {found.branch}`, "
            f"or reject it with `mdmem git review --reject {found.branch}`",
            err=True,
        )

    emit(found, as_json, shown)


@git_group.command("undo")
@click.argument("commit")
@json_option
@click.pass_obj
def undo_cmd(obj: Context, commit: str, as_json: bool) -> None:
    """Revert one commit (a consolidation, a review merge...) with a new commit."""
    result = obj.vault().git.undo(commit)
    emit(
        result,
        as_json,
        lambda: click.echo(
            f"undid {result.reverted[:10]} ({result.subject}) in {result.commit[:10]}: "
            + ", ".join(result.paths)
        ),
    )
