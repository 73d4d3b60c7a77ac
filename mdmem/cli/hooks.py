"""``mdmem hook <event>`` (what a coding agent's hooks run) and ``mdmem hooks ...`` (set-up):
the click layer over the hook kit (:mod:`mdmem.hookkit`), which does the work.

``mdmem hook`` always exits 0 with output the host accepts: a hook that fails
must not block the user's prompt (Claude Code reads exit 2 as "block"), so
an unknown event, host or option is logged and answered, never a usage error
(:mod:`mdmem.hookkit.cold`; a hook line normally never reaches click: see
:mod:`mdmem.__main__`). ``hooks install`` / ``uninstall`` edit a host's
settings file (:mod:`mdmem.hookkit.install`: where each host's go, the
portable commands of a shared file, symlinks, backups), ``hooks doctor`` runs
what is installed (:mod:`mdmem.hookkit.doctor`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main
from mdmem.config import config_home
from mdmem.hookkit import doctor as hook_doctor
from mdmem.hookkit import hosts as hf
from mdmem.hookkit import install as hook_install
from mdmem.hookkit.cold import answer_hook, read_stdin
from mdmem.hookkit.policy import policy_to_json, resolve_policy

# -- mdmem hook <event> ---------------------------------------------------------


@main.command(
    "hook", context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.argument("event", required=False, default="")
@click.option("--host", "host_name", default="claude-code", help=f"One of {', '.join(hf.HOSTS)}.")
@click.option("--vault-name", default=None, help="A vault named in your hooks.toml [vaults].")
@click.pass_context
def hook(ctx: click.Context, event: str, host_name: str, vault_name: str | None) -> None:
    """Run one hook event: host JSON on stdin, the host's answer on stdout (always exit 0).

    EVENT is one of: session-start, prompt-submit, post-tool-use,
    post-tool-failure, pre-compact, stop, session-end.
    """
    obj: Context = ctx.obj
    out = answer_hook(
        obj.vault_path,
        obj.agent,
        host_name,
        event,
        read_stdin(),
        vault_name=vault_name,
        unknown=list(ctx.args),
    )
    click.echo(out)


# -- mdmem hooks install / uninstall -------------------------------------------


@main.group("hooks")
def hooks_group() -> None:
    """Hooks for coding agents (Claude Code, Codex, Cursor): install, log, doctor."""


_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (default: the current directory).",
)


def _location_options(func: Any) -> Any:
    func = _dir_option(func)
    func = click.option(
        "--project", "location", flag_value="shared", hidden=True, help="Same as --shared."
    )(func)
    func = click.option(
        "--user",
        "location",
        flag_value="user",
        help="Your own settings for every project (~/.claude/settings.json, ~/.codex/..., "
        "~/.cursor/...).",
    )(func)
    func = click.option(
        "--shared",
        "location",
        flag_value="shared",
        help="The project's committed file (.claude/settings.json, .codex/hooks.json, "
        ".cursor/hooks.json), with portable commands: mdmem from PATH, the vault by name.",
    )(func)
    return click.option(
        "--personal",
        "location",
        flag_value="personal",
        default=None,
        help="Your personal file for this project (Claude Code: .claude/settings.local.json; "
        "the default where the host has one).",
    )(func)


def _install_vault(obj: Context) -> Path | None:
    try:
        return obj.root().resolve()
    except Exception:  # no vault known now: the hook finds one when it runs
        return None


@hooks_group.command("install")
@click.argument("host_name", metavar="HOST", type=click.Choice(list(hf.HOSTS)))
@_location_options
@click.option(
    "--vault-name",
    default=None,
    help="With --shared: the name the commands give the vault (registered in your hooks.toml).",
)
@json_option
@click.pass_obj
def install(
    obj: Context,
    host_name: str,
    location: str | None,
    directory: str | None,
    vault_name: str | None,
    as_json: bool,
) -> None:
    """Add mdmem's hooks to HOST's config, merging with what is there (idempotent).

    By default, your personal settings for this project (Claude Code's
    .claude/settings.local.json); for Codex and Cursor, which have none, the
    project's file with portable commands (no path of this machine in it).
    """
    where = hook_install.location(host_name, location)
    result = hook_install.install(host_name, where, directory, _install_vault(obj), vault_name)

    def human() -> None:
        verb = "installed" if result["changed"] else "already installed:"
        path = result["path"]
        shown = f"{path} (-> {result['target']})" if "target" in result else path
        click.echo(f"{verb} {len(result['events'])} {host_name} hooks in {shown} ({where})")
        if where == "shared" and location is None:
            click.echo(
                f"note: {host_name} reads no per-project personal file, so they went into the "
                "project's file, without paths of this machine (--user: your own file instead)",
                err=True,
            )
        for note in result["notes"]:
            click.echo(f"note: {note}", err=True)

    emit(result, as_json, human)


@hooks_group.command("uninstall")
@click.argument("host_name", metavar="HOST", type=click.Choice(list(hf.HOSTS)))
@_location_options
@json_option
@click.pass_obj
def uninstall(
    obj: Context, host_name: str, location: str | None, directory: str | None, as_json: bool
) -> None:
    """Restore HOST's config as it was (or, if edited since, remove only mdmem's hooks)."""
    where = hook_install.location(host_name, location)
    result = hook_install.uninstall(host_name, where, directory)
    emit(
        result,
        as_json,
        lambda: click.echo(f"{host_name}: {result['result']} ({result['path']})"),
    )


@hooks_group.command("policy")
@_dir_option
@json_option
def policy_command(directory: str | None, as_json: bool) -> None:
    """The policy the hooks apply in a project: .mdmem.toml narrowed by your hooks.toml."""
    cwd = str((Path(directory).expanduser() if directory else Path.cwd()).resolve())
    policy = resolve_policy(cwd)
    data = policy_to_json(policy)

    def human() -> None:
        click.echo(f"policy file: {policy.source or '(none: the defaults)'}")
        click.echo(f"enabled: {data['enabled']}")
        # No vault here means the hook command's (--vault), else $MDMEM_VAULT, else nearest.
        fallback = "(the hook command's, else $MDMEM_VAULT)"
        click.echo(f"vault: {data['vault'] or fallback}")
        if policy.identity:
            click.echo(f"identity: {policy.identity} (from the {policy.identity_from})")
        where = f" (from the {policy.scope_from})" if policy.scope_from else ""
        reads = ", ".join(["the root", *policy.also_reads])
        click.echo(f"scope: {policy.scope or 'root'}{where}; recall also reads {reads}")
        old = policy.legacy_scope
        # Named only where the old scope has files (or the vault is the hook command's).
        there = True
        if old is not None and policy.vault is not None:
            there = (policy.vault / "scopes" / "project" / old.split(":", 1)[1]).is_dir()
        if old and old not in policy.also_reads and there:
            click.echo(
                f"older captures: {old} is not read here; if it holds this "
                "repository's memories alone, run: mdmem hooks adopt"
            )
        click.echo(f"capture: {data['capture']}")
        for key in ("session_tokens", "prompt_tokens", "prompt_latency_ms", "hook_latency_ms"):
            click.echo(f"{key}: {data[key]}")
        for note in policy.notes:
            click.echo(f"note: {note}")

    emit(data, as_json, human)


# -- mdmem hooks log ----------------------------------------------------------------


@hooks_group.command("log")
@click.option("-n", "limit", type=int, default=20, show_default=True, help="Newest N entries.")
@json_option
@click.pass_obj
def hooks_log(obj: Context, limit: int, as_json: bool) -> None:
    """What the hooks injected (time, event, host, memory ids, tokens) and why."""
    from mdmem.hookkit.log import HookLog

    entries = HookLog(obj.vault().admin.state_dir).entries(limit)
    # Runs that failed before any vault could be opened are logged beside the user's config.
    outside = config_home() / "hook-errors.jsonl"
    errors = HookLog.read_lines(outside, limit)
    if as_json:
        emit({"entries": entries, "errors_outside_vault": errors}, True, lambda: None)
        return

    def human() -> None:
        if not entries:
            click.echo("no hook runs logged yet")
        for e in errors:
            click.echo(
                f"{e.get('time', '?')} {e.get('host', '?')} {e.get('event', '?')}: "
                f"ERROR (no vault) {e.get('error', '')}"
            )
        for e in entries:
            flags = [f for f in ("degraded", "timed_out") if e.get(f)]
            line = (
                f"{e.get('time', '?')} {e.get('host', '?')} {e.get('event', '?')}: "
                f"{len(e.get('ids') or [])} memories, {e.get('tokens', 0)} tokens, "
                f"{e.get('took_ms', '?')} ms"
            )
            if e.get("over_budget_ms"):
                flags.append(f"over the latency budget by {e['over_budget_ms']} ms")
            if flags:
                line += f" [{', '.join(flags)}]"
            if e.get("error"):
                line += f" ERROR {e['error']}"
            if e.get("skipped"):
                line += f" ({e['skipped']})"
            click.echo(line)
            for why in e.get("why") or []:
                signals = ", ".join(f"{k} {v}" for k, v in (why.get("scores") or {}).items())
                click.echo(f"    {why.get('id')} score {why.get('score')} ({signals})")

    emit(entries, False, human)


# -- mdmem hooks doctor -----------------------------------------------------------


@hooks_group.command("doctor")
@click.option("--host", "hosts", multiple=True, type=click.Choice(list(hf.HOSTS)))
@_dir_option
@json_option
@click.pass_obj
def doctor(obj: Context, hosts: tuple[str, ...], directory: str | None, as_json: bool) -> None:
    """Run each installed hook as its host would (personal, shared and user files) and check
    its answer: exit 0, the host's JSON, and for the hooks that inject, context from the
    vault. Writes nothing: the hooks run as probes (no capture, no commit)."""
    report, ran = hook_doctor.check(hosts, directory)

    def human() -> None:
        for c in report["checks"]:
            state = "ok  " if c["ok"] else "FAIL"
            extra = f" ({c['ms']} ms)" if "ms" in c else ""
            problem = f": {c['problem']}" if c.get("problem") else ""
            note = f" [{c['note']}]" if c.get("note") else ""
            click.echo(f"{state} {c['host']} {c['event']}{extra}{problem}{note}")
        for vault in report["vaults"]:
            click.echo(f"vault: {vault}")
        if len(report["vaults"]) > 1:
            click.echo("note: the hooks reach more than one vault")
        click.echo(f"{ran} hook(s) checked in {report['seconds']} s; nothing was written")

    emit(report, as_json, human)
    if not report["ok"]:
        raise click.exceptions.Exit(1)
