"""``mdmem hooks trust`` and ``mdmem hooks adopt``: what only the person may decide.

A ``.mdmem.toml`` in a repository may only narrow what the hooks do until the
person confirms it (``trust``, bound to the file's bytes, kept in their own
config folder: :mod:`mdmem.projects.trust`). Memories captured before project
identities went to a short-name scope (``project:api``) that two repositories
could share; ``adopt`` lets one project read them, and refuses a second.
"""

from __future__ import annotations

from pathlib import Path

import click

from mdmem.cli.context import emit, json_option
from mdmem.cli.hooks import hooks_group
from mdmem.errors import ConfigError
from mdmem.files.blocks import validate_scope
from mdmem.hookkit.policy import POLICY_FILE, find_policy_file, resolve_policy
from mdmem.ipc.capped import read_capped
from mdmem.projects import trust

__all__ = ["adopt_command", "trust_command"]

_MAX = 256 * 1024


def _policy_file(path: str | None) -> Path:
    where = Path(path or ".").expanduser().resolve()
    found = where if where.is_file() else find_policy_file(str(where))
    if found is None or found.name != POLICY_FILE:
        raise ConfigError(f"no {POLICY_FILE} at or above {where}")
    return found


@hooks_group.command("trust")
@click.argument("path", required=False, type=click.Path(exists=True))
@click.option("--forget", is_flag=True, help="Withdraw the confirmation instead.")
@json_option
def trust_command(path: str | None, forget: bool, as_json: bool) -> None:
    """Confirm a project's .mdmem.toml as it is now: it may then choose a scope and widen capture.

    PATH is the file or a folder at or below it (default: here). An edit to the
    file needs confirming again.
    """
    found = _policy_file(path)
    if forget:
        done = trust.forget(found)
        data = {"file": str(found), "confirmed": False, "was_confirmed": done}
        emit(data, as_json, lambda: click.echo(f"no longer confirmed: {found}"))
        return
    content = read_capped(found, _MAX + 1)
    if content is None or len(content) > _MAX:
        raise ConfigError(f"{found}: not a regular file of at most {_MAX // 1024} KB")
    sha = trust.confirm(found, content)
    policy = resolve_policy(str(found.parent))
    data = {"file": str(found), "confirmed": True, "sha256": sha, "scope": policy.scope}

    def human() -> None:
        click.echo(f"confirmed: {found} (sha256 {sha[:12]}; an edit needs confirming again)")
        click.echo(f"scope: {policy.scope or 'root'}; capture: {policy.capture}")
        for note in policy.notes:
            click.echo(f"note: {note}")

    emit(data, as_json, human)


@hooks_group.command("adopt")
@click.argument("scope", required=False)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (default: the current directory).",
)
@json_option
def adopt_command(scope: str | None, directory: str | None, as_json: bool) -> None:
    """Let this project's recall read an old short-name scope (default: its own, e.g. project:api).

    Only one project may adopt a scope: two repositories' memories are never merged.
    """
    policy = resolve_policy(str(Path(directory or ".").expanduser().resolve()))
    if policy.identity is None or policy.scope is None:
        raise ConfigError("not in a project: adopt runs in a repository's folder")
    old = validate_scope(scope or policy.legacy_scope)
    if not old or old == policy.scope:
        raise ConfigError("nothing to adopt: this project has no older scope")
    trust.adopt(policy.identity, old)
    data = {"scope": policy.scope, "identity": policy.identity, "adopted": old}
    emit(data, as_json, lambda: click.echo(f"{policy.scope} now also reads {old}"))
