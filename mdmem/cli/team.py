"""``mdmem team …``: the team tier of the code repository you are in (:mod:`mdmem.team`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main
from mdmem.errors import MdmemError

__all__ = ["team_group"]


def _state_root() -> Path:
    """Where the merge driver's script lives: mdmem's state root, outside any repository."""
    if os.environ.get("MDMEM_STATE_DIR"):
        return Path(os.environ["MDMEM_STATE_DIR"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("mdmem"))


def _folder(repo: str | None) -> Any:
    from mdmem.team import TeamFolder

    return TeamFolder.at(repo or os.getcwd())


def _writing_folder(repo: str | None) -> Any:
    """The folder, for a command that commits to the team files: it also defines
    the merge driver ``.gitattributes`` names in this clone's own git config, which
    never travels with a clone. Without it git merges the team files as plain
    text, and two teammates' proposals appended to one file conflict on pull."""
    folder = _folder(repo)
    folder.register_driver(_state_root())
    return folder


def _line_of(line: Any) -> str:
    who = f"captured by {line.captured_by or '?'}, proposed by {line.proposed_by or '?'}"
    if line.status == "accepted":
        who += f", accepted by {line.accepted_by or '?'} {line.accepted}".rstrip()
    note = f"\n    note: {line.note}" if line.note else ""
    return f"^{line.id}  {line.kind}  {line.where}\n    {line.text}\n    {who}{note}"


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
def init_cmd(repo: str | None, as_json: bool) -> None:
    """Create .mdmem/team/ (a commit as you), register its merge driver, trust this checkout."""
    done = _folder(repo).init(_state_root())

    def human() -> None:
        if done.created:
            click.echo(f"created {done.folder} in {done.repo} (commit {str(done.commit)[:10]})")
        else:
            click.echo(f"{done.folder} is already set up in {done.repo}")
        click.echo(f"merge driver {done.driver} registered; this checkout is trusted")

    emit(done, as_json, human)


@team_group.command("propose")
@click.argument("memory_id")
@click.option("--note", default=None, help="Why the team should know it (goes on the line).")
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
    """Copy a memory of your vault into the team folder as a proposal (a commit to push)."""
    from mdmem.team import Source

    folder = _writing_folder(repo)
    vault = obj.vault()
    memory = vault.get(memory_id)
    by = vault.agent
    role = "agent"
    try:
        prov = vault.git.provenance(memory.id)
        by = prov.created_by or by
        role = "person" if prov.written_by_human else "agent"
    except MdmemError:
        pass
    if (memory.field("captured") or "").lower() == "agent":
        role = "agent"
    source = Source(
        id=memory.id,
        text=memory.text,
        kind=memory.kind,
        tags=memory.tags,
        scope=memory.scope,
        fields=memory.fields,
        created=memory.created,
        captured_by=f"{role} {by}",
    )
    done = folder.propose(source, note=note, allow_personal=allow_personal, to=to)
    emit(
        done,
        as_json,
        lambda: click.echo(
            f"proposed ^{done.ids[0]} in {done.files[0]} (commit {str(done.commit)[:10]}); "
            "push it for review"
        ),
    )


@team_group.command("review")
@repo_option
@json_option
def review_cmd(repo: str | None, as_json: bool) -> None:
    """List open proposals: text, who captured, who proposed."""
    open_ = _folder(repo).proposals()

    def human() -> None:
        if not open_:
            click.echo("no open proposals")
        for line in open_:
            click.echo(_line_of(line))

    emit({"proposals": open_}, as_json, human)


def _decision(
    verb: str,
    ids: tuple[str, ...],
    repo: str | None,
    as_json: bool,
    *,
    every: bool = False,
    **kw: Any,
) -> None:
    folder = _writing_folder(repo)
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
def accept_cmd(memory_ids: tuple[str, ...], every: bool, repo: str | None, as_json: bool) -> None:
    """Accept proposals: one commit as you; every teammate's agent sees them after a pull."""
    _decision("accept", memory_ids, repo, as_json, every=every)


@team_group.command("reject")
@click.argument("memory_ids", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every open proposal.")
@click.option("--reason", default=None, help="Why (goes in the commit message).")
@repo_option
@json_option
def reject_cmd(
    memory_ids: tuple[str, ...], every: bool, reason: str | None, repo: str | None, as_json: bool
) -> None:
    """Reject proposals: their lines go, in one commit as you."""
    _decision("reject", memory_ids, repo, as_json, every=every, reason=reason)


@team_group.command("remove")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--reason", default=None, help="Why (goes in the commit message).")
@repo_option
@json_option
def remove_cmd(
    memory_ids: tuple[str, ...], reason: str | None, repo: str | None, as_json: bool
) -> None:
    """Remove accepted team memories, in one commit as you (push it for review)."""
    _decision("remove", memory_ids, repo, as_json, reason=reason)


@team_group.command("check")
@repo_option
@json_option
def check_cmd(repo: str | None, as_json: bool) -> None:
    """Exit 1 naming file:line of a secret, a personal field, a duplicate id, a bad line."""
    from mdmem.team import check, require_checkout

    findings = check(require_checkout(repo or os.getcwd()))

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
def trust_cmd(revoke: bool, repo: str | None, as_json: bool) -> None:
    """Let this checkout's team memory into your agents' prompts (recorded in your config)."""
    from mdmem.team import trust_checkout

    folder = _folder(repo)
    record = trust_checkout(folder.checkout, revoke=revoke)
    if not revoke:
        folder.register_driver(_state_root())
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
    from mdmem.team import team_context

    found = team_context(repo or os.getcwd(), query, obj.vault().admin.state_dir, k=k)

    def human() -> None:
        if found.status == "untrusted":
            click.echo("this checkout is not trusted: run `mdmem team trust` to let it in")
        elif found.status == "none":
            click.echo("no team memory here")
        else:
            click.echo(found.block() or "(no relevant team memory)")

    emit(found, as_json, human)
