"""``mdmem team …``: the team tier of the code repository you are in (:mod:`mdmem.team`)."""

from __future__ import annotations

from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main
from mdmem.errors import MdmemError

__all__ = ["team_group"]


def _folder(obj: Context, repo: str | None) -> Any:
    from mdmem.team import TeamFolder

    return TeamFolder.at(obj.here(repo))


def _line_of(line: Any) -> str:
    who = [f"captured by {line.captured_by}" if line.captured_by else ""]
    who.append(f"proposed by {line.proposed_by}" if line.proposed_by else "")
    if line.status == "accepted":
        who.append(f"accepted by {line.accepted_by} {line.accepted}".rstrip())
    if line.why:
        who.append(line.why)
    note = f"\n    note: {line.note}" if line.note else ""
    said = ", ".join(w for w in who if w) or "no proposal in git"
    return f"^{line.id}  {line.kind}  {line.where}\n    {line.text}\n    {said}{note}"


repo_option = click.option(
    "--repo",
    default=None,
    type=click.Path(file_okay=False),
    help="A folder inside the code repository (default: the current folder).",
)


@main.group("team")
def team_group() -> None:
    """Team memory in the code repository (.mdmem/team/, committed with the code).

    \b
    1. `mdmem team propose ID` copies a memory of your vault as a proposal: push the commit.
    2. A teammate runs `mdmem team review`, then `accept ID` or `reject ID` (a commit as them).
    3. After a pull, every teammate's agent sees accepted lines, once they `mdmem team trust`.
    """


@team_group.command("init")
@repo_option
@json_option
@click.pass_obj
def init_cmd(obj: Context, repo: str | None, as_json: bool) -> None:
    """Create .mdmem/team/ (a commit as you), register its merge driver, trust this checkout."""
    done = _folder(obj, repo).init()

    def human() -> None:
        if done.created:
            click.echo(f"created {done.folder} in {done.repo} (commit {str(done.commit)[:10]})")
        else:
            click.echo(f"{done.folder} is already set up in {done.repo}")
        click.echo(f"merge driver {done.driver} registered; this checkout is trusted")

    emit(done, as_json, human)


@team_group.command("propose")
@click.argument("memory_id")
@click.option("--note", default=None, help="Why the team should know it (kept beside the line).")
@click.option(
    "--to",
    "to",
    type=click.Choice(["decisions", "conventions", "gotchas"]),
    default=None,
    help="The team file (default: by the memory's kind).",
)
@click.option(
    "--allow-personal",
    is_flag=True,
    help="Propose a memory of a person's or contact's scope anyway (its fields still stay out).",
)
@repo_option
@json_option
@click.pass_obj
def propose_cmd(
    obj: Context,
    memory_id: str,
    note: str | None,
    to: str | None,
    allow_personal: bool,
    repo: str | None,
    as_json: bool,
) -> None:
    """Propose a memory of your vault to the team (a commit to push).

    MEMORY_ID is a memory of your vault (your captures included), or a line
    already in the team files that no proposal put there (typed by hand): it
    becomes a proposal for a teammate to accept.
    """
    folder = _folder(obj, repo)
    if folder.exists and folder.holds(memory_id):
        done = folder.propose_line(memory_id)
    else:
        source = _source(obj.person_vault(folder.checkout.root), memory_id)
        done = folder.propose(source, note=note, allow_personal=allow_personal, to=to)
    emit(
        done,
        as_json,
        lambda: click.echo(
            f"proposed ^{done.ids[0]} in {done.files[0]} (commit {str(done.commit)[:10]}); "
            "push it for review"
        ),
    )


def _source(vault: Any, memory_id: str) -> Any:
    """A memory of the person's vault as a proposal takes it: who captured it
    (an agent, a hook, or the person) from the vault's git history."""
    from mdmem.team import Source

    memory = vault.reading().to_copy(memory_id)
    by = vault.settings.agent
    role = "agent"
    try:
        prov = vault.git.provenance(memory.id)
        by = prov.created_by or by
        role = "person" if prov.written_by_human else "agent"
    except MdmemError:
        pass
    if (memory.field("captured") or "").lower() == "agent":
        role = "agent"
    return Source(
        id=memory.id,
        text=memory.text,
        kind=memory.kind,
        tags=memory.tags,
        scope=memory.scope,
        fields=memory.fields,
        created=memory.created,
        captured_by=f"{role} {by}",
    )


@team_group.command("review")
@repo_option
@json_option
@click.pass_obj
def review_cmd(obj: Context, repo: str | None, as_json: bool) -> None:
    """List open proposals (text, who captured, who proposed) and lines git shows
    nobody reviewed (typed by hand, accepted by their proposer, edited since)."""
    lines = _folder(obj, repo).lines()
    open_ = [line for line in lines if line.status == "proposed"]
    unreviewed = [line for line in lines if line.status == "unreviewed"]

    def human() -> None:
        if not open_:
            click.echo("no open proposals")
        for line in open_:
            click.echo(_line_of(line))
        if unreviewed:
            click.echo("")
            click.echo("not reviewed (never injected; `mdmem team propose ID` asks for a review):")
            for line in unreviewed:
                click.echo(_line_of(line))

    emit({"proposals": open_, "unreviewed": unreviewed}, as_json, human)


def _decision(
    obj: Context,
    verb: str,
    ids: tuple[str, ...],
    repo: str | None,
    as_json: bool,
    *,
    every: bool = False,
    **kw: Any,
) -> None:
    folder = _folder(obj, repo)
    if every == bool(ids):
        raise click.UsageError("name the ids, or pass --all (not both)")
    if every:
        ids = tuple(line.id for line in folder.proposals())
        if not ids:
            emit({"ids": []}, as_json, lambda: click.echo("no open proposals"))
            return
    done = getattr(folder, verb)(list(ids), **kw)
    shown = ", ".join(f"^{i}" for i in done.ids)
    emit(
        done,
        as_json,
        lambda: click.echo(
            f"{verb.rstrip('e')}ed {shown} as {done.by} (commit {str(done.commit)[:10]})"
        ),
    )


@team_group.command("accept")
@click.argument("memory_ids", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every open proposal.")
@repo_option
@json_option
@click.pass_obj
def accept_cmd(
    obj: Context, memory_ids: tuple[str, ...], every: bool, repo: str | None, as_json: bool
) -> None:
    """Accept teammates' proposals: one commit as you; every teammate's agent sees them
    after a pull. Your own proposals wait for a teammate."""
    _decision(obj, "accept", memory_ids, repo, as_json, every=every)


@team_group.command("reject")
@click.argument("memory_ids", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every open proposal.")
@click.option("--reason", default=None, help="Why (goes in the commit message).")
@repo_option
@json_option
@click.pass_obj
def reject_cmd(
    obj: Context,
    memory_ids: tuple[str, ...],
    every: bool,
    reason: str | None,
    repo: str | None,
    as_json: bool,
) -> None:
    """Reject proposals: their lines go, in one commit as you."""
    _decision(obj, "reject", memory_ids, repo, as_json, every=every, reason=reason)


@team_group.command("remove")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--reason", default=None, help="Why (goes in the commit message).")
@repo_option
@json_option
@click.pass_obj
def remove_cmd(
    obj: Context, memory_ids: tuple[str, ...], reason: str | None, repo: str | None, as_json: bool
) -> None:
    """Remove team memories, in one commit as you (push it for review)."""
    _decision(obj, "remove", memory_ids, repo, as_json, reason=reason)


@team_group.command("check")
@repo_option
@json_option
@click.pass_obj
def check_cmd(obj: Context, repo: str | None, as_json: bool) -> None:
    """Exit 1 naming file:line of a secret, a personal field, a duplicate id, a bad
    line, or a line whose "accepted by" git does not bear out."""
    from mdmem.team import check, require_checkout

    findings = check(require_checkout(obj.here(repo)))

    def human() -> None:
        for finding in findings:
            click.echo(str(finding))
        if not findings:
            click.echo("team memory ok")

    emit({"ok": not findings, "findings": findings}, as_json, human)
    if findings:
        raise click.exceptions.Exit(1)


@team_group.command("trust")
@click.option("--revoke", is_flag=True, help="Stop trusting this checkout.")
@repo_option
@json_option
@click.pass_obj
def trust_cmd(obj: Context, revoke: bool, repo: str | None, as_json: bool) -> None:
    """Let this checkout's team memory into your agents' prompts (recorded in your config)."""
    from mdmem.team import trust_checkout

    folder = _folder(obj, repo)
    record = trust_checkout(folder.checkout, revoke=revoke)
    if not revoke:
        folder.register_driver()
    where = str(folder.checkout.root)
    emit(
        {"repo": where, "trusted": not revoke, **record},
        as_json,
        lambda: click.echo(f"{'no longer trusting' if revoke else 'trusting'} {where}"),
    )


@team_group.command("show")
@click.argument("query")
@click.option("-k", default=3, show_default=True, help="At most this many memories.")
@repo_option
@json_option
@click.pass_obj
def show_cmd(obj: Context, query: str, k: int, repo: str | None, as_json: bool) -> None:
    """What the prompt hook would inject from the team tier for QUERY."""
    where = obj.here(repo)
    composed = obj.person_vault(where).reading().compose(query, None, repo=where, team_k=k)
    team = composed.team

    def human() -> None:
        if team.status == "untrusted":
            click.echo("this checkout is not trusted: run `mdmem team trust` to let it in")
        elif team.status == "none":
            click.echo("no team memory here")
        else:
            click.echo(composed.team_block or "(no relevant team memory)")

    emit(composed.team_json(), as_json, human)
