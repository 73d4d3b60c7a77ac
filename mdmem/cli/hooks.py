"""``mdmem hook <event>`` (what a coding agent's hooks run) and ``mdmem hooks ...`` (set-up).

``mdmem hook`` always exits 0 with output the host accepts: a hook that fails
must not block the user's prompt (Claude Code reads exit 2 as "block"), so
an unknown event, host or option is logged and answered, never a usage error.
Failures go to the hook log (in the vault's state dir, or
``hook-errors.jsonl`` in the mdmem config folder when no vault could be
opened) and, where the host shows one, a one-line notice.

``hooks install`` writes where a person's own settings belong (the
``--personal`` default): Claude Code's ``.claude/settings.local.json``, which
Claude Code reads for this project only and git ignores, with this machine's
``mdmem`` and vault paths. Codex and Cursor read no per-project personal
file, so for them the default is the project's file (``--shared``), written
portable, as it is whenever the shared file is asked for: ``mdmem`` from
PATH and the vault by a name from each person's own ``hooks.toml``
(``--vault-name``; install registers the name for you). ``--user`` writes
the user's file for every project. A settings file that is a symlink is
edited where it points (never replaced by a copy); in a project, a path
that leads outside it (a ``.claude`` linked to ``~/.claude``) is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from mdmem.cli.context import Context, emit, json_option, main
from mdmem.config import config_home
from mdmem.files.textfile import atomic_write
from mdmem.hookkit import hosts as hf
from mdmem.hookkit.cold import PROBE_ENV, answer_hook, read_stdin
from mdmem.hookkit.policy import USER_FILE, policy_to_json, resolve_policy, user_settings
from mdmem.ipc.capped import read_capped

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


def _project(directory: str | None) -> Path:
    return (Path(directory).expanduser() if directory else Path.cwd()).resolve()


def _location(host_name: str, asked: str | None) -> str:
    """The location ``asked``, or the host's default: its personal project file, else shared."""
    h = hf.host(host_name)
    if asked is None:
        return "personal" if h.config_personal else "shared"
    if asked == "personal" and h.config_personal is None:
        raise click.ClickException(
            f"{host_name} reads no per-project personal settings file: use --shared "
            "(this project's file, written portable) or --user (your file, every project)"
        )
    return asked


def _where(host_name: str, location: str, directory: str | None) -> Path:
    return hf.config_path(host_name, location, _project(directory), Path.home())


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


def _mdmem_command() -> list[str]:
    found = shutil.which("mdmem")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "mdmem"]


def hook_command(host_name: str, event: str, vault: Path | None) -> str:
    """The shell command a host runs for ``event`` (this machine's paths: personal files)."""
    words = _mdmem_command()
    if vault is not None:
        words += ["--vault", str(vault.resolve())]
    words += ["hook", event, "--host", host_name]
    return " ".join(shlex.quote(w) for w in words)


def portable_command(host_name: str, event: str, vault_name: str | None) -> str:
    """The command for a shared file: ``mdmem`` on PATH, the vault by its name (if any)."""
    words = ["mdmem", "hook", event, "--host", host_name]
    if vault_name:
        words += ["--vault-name", vault_name]
    return " ".join(shlex.quote(w) for w in words)


def _backup_path(config: Path) -> Path:
    digest = hashlib.sha256(str(Path(os.path.realpath(config))).encode()).hexdigest()[:20]
    return config_home() / "hook-backups" / f"{digest}.json"


def _target(path: Path, project: Path | None) -> Path:
    """The file that writing ``path`` changes (symlinks followed), checked first.

    In a project (``project`` given) it must stay inside it; it must be a
    regular file if it exists.
    """
    real = Path(os.path.realpath(path))
    if project is not None:
        inside = Path(os.path.realpath(project))
        if not real.is_relative_to(inside):
            raise click.ClickException(
                f"{path} leads to {real}, outside the project {inside}: mdmem does not "
                "edit files outside a project for a project install (use --user for your "
                "own settings, or make the link a folder of the project)"
            )
    if real.exists() and not real.is_file():
        raise click.ClickException(f"{path} is not a regular file; leave it or remove it")
    return real


def _read_config(path: Path) -> tuple[dict[str, Any], str | None]:
    """The JSON object in a host config (``{}`` if absent) and its text as it was."""
    if not path.exists():
        return {}, None
    data = read_capped(path, 16 * 1024 * 1024 + 1)
    if data is None:
        raise click.ClickException(f"{path} is not a readable regular file")
    if len(data) > 16 * 1024 * 1024:
        raise click.ClickException(f"{path} is larger than 16 MB: not a settings file")
    try:
        text = data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{path} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); "
            "save it as UTF-8 first, mdmem will not rewrite it"
        ) from None
    try:
        parsed = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise click.ClickException(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(parsed, dict):
        raise click.ClickException(f"{path} does not hold a JSON object")
    return parsed, text


def _write_atomic(path: Path, text: str) -> None:
    """Replace the file ``path`` (no symlink: see :func:`_target`), keeping its mode."""
    atomic_write(path, text.encode("utf-8"))


def _install_vault(obj: Context) -> Path | None:
    try:
        return obj.root().resolve()
    except Exception:  # no vault known now: the hook finds one when it runs
        return None


def _vault_name(vault: Path | None, asked: str | None) -> tuple[str | None, str | None]:
    """The name the portable commands use for ``vault``, registering it in the user's
    ``hooks.toml`` when needed; (name, what was done or None)."""
    settings = user_settings()[0]
    known: dict[str, Path] = settings["vaults"]
    if asked is not None:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", asked):
            raise click.ClickException(f"--vault-name {asked!r}: letters, digits, . _ - only")
        if asked in known:
            if vault is not None and known[asked].resolve() != vault:
                raise click.ClickException(
                    f"{asked!r} already names {known[asked]} in your {USER_FILE}; pick another"
                )
            return asked, None
        if vault is None:
            return asked, f"add {asked} = \"<vault path>\" under [vaults] in your {USER_FILE}"
        return asked, _register_vault(asked, vault)
    if vault is None:
        return None, None
    for name, path in known.items():
        if path.resolve() == vault:
            return name, None
    base = re.sub(r"[^\w.-]", "-", vault.name).strip(".-") or "vault"
    name, n = base, 2
    while name in known:
        name, n = f"{base}-{n}", n + 1
    return name, _register_vault(name, vault)


def _register_vault(name: str, vault: Path) -> str:
    """Add ``name = "<vault>"`` under ``[vaults]`` in the user's hooks.toml (text kept)."""
    path = config_home() / USER_FILE
    text = ""
    if path.exists():
        data = read_capped(path, 1024 * 1024)
        if data is None:
            raise click.ClickException(f"{path} is not a readable regular file")
        text = data.decode("utf-8", "replace")
    line = f"{json.dumps(name)} = {json.dumps(str(vault))}\n"
    header = re.search(r"(?m)^\[vaults\][ \t]*(?:#.*)?$\n?", text)
    if header:
        end = header.end()
        new = text[:end] + ("" if text[:end].endswith("\n") else "\n") + line + text[end:]
    else:
        new = text + ("\n" if text and not text.endswith("\n") else "") + "\n[vaults]\n" + line
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        parsed = {}
    if (parsed.get("vaults") or {}).get(name) != str(vault):
        raise click.ClickException(
            f"could not add the vault name to {path} (its [vaults] is written another way): "
            f'add {name} = "{vault}" under [vaults] yourself, or pass --vault-name'
        )
    _write_atomic(path, new)
    return f"named the vault {name!r} in {path}"


def _git_ignore(project: Path, config: Path) -> str | None:
    """Make git ignore the personal file ``config`` (as Claude Code does); what was done."""

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                ["git", "-C", str(project), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None

    checked = git("check-ignore", "-q", "--", str(config))
    if checked is None or checked.returncode not in (0, 1):
        return None  # not a git repository (or no git): nothing can commit it by mistake
    if checked.returncode == 0:
        return None
    top = git("rev-parse", "--show-toplevel")
    exclude = git("rev-parse", "--git-path", "info/exclude")
    if top is None or exclude is None or top.returncode or exclude.returncode:
        return None
    rel = Path(os.path.realpath(config)).relative_to(Path(os.path.realpath(top.stdout.strip())))
    target = Path(exclude.stdout.strip())
    target = target if target.is_absolute() else project / target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as f:
            f.write(f"\n# personal settings: mdmem hooks install\n/{rel.as_posix()}\n")
    except OSError:
        return f"note: add {rel.as_posix()} to .gitignore: it holds this machine's paths"
    return f"git ignores {rel.as_posix()} now (in {target})"


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
    where = _location(host_name, location)
    project = _project(directory)
    path = _where(host_name, where, directory)
    target = _target(path, project if where != "user" else None)
    data, original = _read_config(target)
    vault = _install_vault(obj)
    notes: list[str] = []
    if where == "shared":
        name, did = _vault_name(vault, vault_name)
        notes += [did] if did else []
        if name is None:
            notes.append(
                "no vault given: the hooks use the project's .mdmem.toml, $MDMEM_VAULT or "
                f"`vault` in {USER_FILE} (pass --vault to name one)"
            )
        if shutil.which("mdmem") is None:
            notes.append("mdmem is not on PATH here: `make install-user` puts it there")
        commands = {e: portable_command(host_name, e, name) for e in hf.host(host_name).events}
    else:
        commands = {e: hook_command(host_name, e, vault) for e in hf.host(host_name).events}
        if vault is None:
            notes.append(
                f"no vault given; the hooks will use $MDMEM_VAULT or `vault` in {USER_FILE} "
                "(pass --vault to write one into the hooks)"
            )
    try:
        changed = hf.merge_hooks(host_name, data, commands)
    except ValueError as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    backup = _backup_path(target)
    if changed:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        record = _load_backup(backup)
        if record is None or record.get("installed") != original:
            # Only the file as it was before mdmem touched it is worth restoring.
            record = {"path": str(target), "original": original}
        record["installed"] = text
        _write_atomic(backup, json.dumps(record, ensure_ascii=False))
        _write_atomic(target, text)
    if where == "personal" and hf.host(host_name).config_personal is not None:
        did = _git_ignore(project, target)
        notes += [did] if did else []
    notes += _elsewhere(host_name, where, directory)
    result = {
        "host": host_name,
        "path": str(path),
        "location": where,
        "changed": changed,
        "events": sorted(commands),
        "vault": str(vault) if vault else None,
        "backup": str(backup) if backup.exists() else None,
        "notes": notes,
    }
    if target != path:
        result["target"] = str(target)

    def human() -> None:
        verb = "installed" if changed else "already installed:"
        shown = f"{path} (-> {target})" if target != path else str(path)
        click.echo(f"{verb} {len(commands)} {host_name} hooks in {shown} ({where})")
        if where == "shared" and location is None:
            click.echo(
                f"note: {host_name} reads no per-project personal file, so they went into the "
                "project's file, without paths of this machine (--user: your own file instead)",
                err=True,
            )
        for note in notes:
            click.echo(f"note: {note}", err=True)

    emit(result, as_json, human)


def _elsewhere(host_name: str, where: str, directory: str | None) -> list[str]:
    """Notes about mdmem hooks of ``host_name`` in its other files (each event would run twice)."""
    here = Path(os.path.realpath(_where(host_name, where, directory)))
    out = []
    for other in hf.LOCATIONS:
        if other == where or (other == "personal" and not hf.host(host_name).config_personal):
            continue
        path = _where(host_name, other, directory)
        if Path(os.path.realpath(path)) == here:
            continue
        try:
            found = hf.installed_commands(host_name, _read_config(path)[0])
        except click.ClickException:
            continue
        if found:
            out.append(
                f"{path} has mdmem hooks too: each event runs twice "
                f"(`mdmem hooks uninstall {host_name} --{other}` removes them)"
            )
    return out


def _load_backup(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@hooks_group.command("uninstall")
@click.argument("host_name", metavar="HOST", type=click.Choice(list(hf.HOSTS)))
@_location_options
@json_option
@click.pass_obj
def uninstall(
    obj: Context, host_name: str, location: str | None, directory: str | None, as_json: bool
) -> None:
    """Restore HOST's config as it was (or, if edited since, remove only mdmem's hooks)."""
    where = _location(host_name, location)
    path = _where(host_name, where, directory)
    target = _target(path, _project(directory) if where != "user" else None)
    backup = _backup_path(target)
    record = _load_backup(backup)
    data, current = _read_config(target)
    how = "nothing to remove"
    if record is not None and current is not None and record.get("installed") == current:
        original = record.get("original")
        if original is None and not path.is_symlink():
            target.unlink()
            how = "removed the file mdmem created"
        elif original is not None:
            _write_atomic(target, str(original))
            how = "restored the file as it was"
        elif hf.remove_hooks(host_name, data):
            _write_atomic(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            how = "removed mdmem's hooks"
    elif current is not None and hf.remove_hooks(host_name, data):
        _write_atomic(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        how = "removed mdmem's hooks (the file changed since install)"
    backup.unlink(missing_ok=True)
    emit(
        {"host": host_name, "path": str(path), "location": where, "result": how},
        as_json,
        lambda: click.echo(f"{host_name}: {how} ({path})"),
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


def _doctor_payload(host_name: str, event: str, cwd: Path, prompt: str) -> dict[str, Any]:
    """A payload shaped as the host documents it (see mdmem.hookkit.hosts)."""
    h = hf.host(host_name)
    extra: dict[str, Any] = {}
    if event == "session-start":
        extra["source"] = "startup"
    elif event == "prompt-submit":
        extra["prompt"] = prompt
    elif event == "post-tool-use":
        extra.update(tool_name="Bash", tool_input={"command": "true"}, **{h.output_field: ""})
    elif event == "post-tool-failure":
        extra.update(tool_name="Bash", tool_input={"command": "false"})
        extra[h.error_field] = "Exit code 1"
    if h.conversation_ids:
        return {
            "conversation_id": "mdmem-doctor",
            "generation_id": "mdmem-doctor",
            "hook_event_name": h.native(event),
            "workspace_roots": [str(cwd)],
            "transcript_path": None,
            **extra,
        }
    return {
        "session_id": "mdmem-doctor",
        "transcript_path": None,
        "cwd": str(cwd),
        "hook_event_name": h.native(event),
        **extra,
    }


_PROBE_LINE = re.compile(r"mdmem hooks doctor probe (\S+): vault (.+)")
_DOCTOR_WORKERS = 3  # hook processes at once: each is mostly start-up, on a shared machine
_PROBE_TIMEOUT_S = 60


@hooks_group.command("doctor")
@click.option("--host", "hosts", multiple=True, type=click.Choice(list(hf.HOSTS)))
@_dir_option
@json_option
@click.pass_obj
def doctor(obj: Context, hosts: tuple[str, ...], directory: str | None, as_json: bool) -> None:
    """Run each installed hook as its host would (personal, shared and user files) and check
    its answer: exit 0, the host's JSON, and for the hooks that inject, context from the
    vault. Writes nothing: the hooks run as probes (no capture, no commit)."""
    cwd = _project(directory)
    checks: list[dict[str, Any]] = []
    planned: dict[tuple[str, str, str], list[str]] = {}  # (host, event, command) -> files
    for host_name in hosts or tuple(hf.HOSTS):
        seen_paths: set[Path] = set()
        found_any = False
        for where in hf.LOCATIONS:
            path = _where(host_name, where, directory)
            real = Path(os.path.realpath(path))
            if real in seen_paths:
                continue
            seen_paths.add(real)
            try:
                commands = hf.installed_commands(host_name, _read_config(path)[0])
            except click.ClickException as exc:
                checks.append(_fail(host_name, "-", exc.message))
                continue
            for event, command in commands.items():
                found_any = True
                planned.setdefault((host_name, event, command), []).append(str(path))
        if not found_any and hosts:
            checks.append(_fail(host_name, "-", "no mdmem hooks in its settings files"))
    events_seen: dict[tuple[str, str], int] = {}
    for host_name, event, _ in planned:
        events_seen[(host_name, event)] = events_seen.get((host_name, event), 0) + 1
    token = "mdmemprobe" + hashlib.sha1(os.urandom(8)).hexdigest()[:10]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=_DOCTOR_WORKERS) as pool:
        probes = [
            pool.submit(_probe, host_name, event, command, cwd, token)
            for host_name, event, command in planned
        ]
        results = [f.result() for f in probes]
    for (host_name, event, _), files, result in zip(
        planned, planned.values(), results, strict=True
    ):
        result["files"] = files
        if events_seen[(host_name, event)] > 1:
            duplicate = "installed in more than one file: the host runs it more than once"
            result["note"] = "; ".join(filter(None, [result.get("note"), duplicate]))
        checks.append(result)
    if not planned and not checks:
        checks.append(_fail("-", "-", "no mdmem hooks installed here (mdmem hooks install HOST)"))
    vaults = sorted({c["vault"] for c in checks if c.get("vault")})
    ok = all(c["ok"] for c in checks)
    took = round(time.perf_counter() - started, 2)

    def human() -> None:
        for c in checks:
            state = "ok  " if c["ok"] else "FAIL"
            extra = f" ({c['ms']} ms)" if "ms" in c else ""
            problem = f": {c['problem']}" if c.get("problem") else ""
            note = f" [{c['note']}]" if c.get("note") else ""
            click.echo(f"{state} {c['host']} {c['event']}{extra}{problem}{note}")
        for vault in vaults:
            click.echo(f"vault: {vault}")
        if len(vaults) > 1:
            click.echo("note: the hooks reach more than one vault")
        click.echo(f"{len(planned)} hook(s) checked in {took} s; nothing was written")

    emit({"ok": ok, "checks": checks, "vaults": vaults, "seconds": took}, as_json, human)
    if not ok:
        raise click.exceptions.Exit(1)


def _fail(host_name: str, event: str, problem: str) -> dict[str, Any]:
    return {"host": host_name, "event": event, "ok": False, "problem": problem}


def _probe(host_name: str, event: str, command: str, cwd: Path, token: str) -> dict[str, Any]:
    result: dict[str, Any] = {"host": host_name, "event": event, "ok": False}
    payload = _doctor_payload(host_name, event, cwd, "what do you remember about this project?")
    host_timeout = hf.host(host_name).timeouts[event]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            shell=True,  # the host runs it through a shell, so the doctor does too
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=cwd,
            env={**os.environ, PROBE_ENV: token},
            # Longer than the host waits: a slow run is reported, a broken one failed.
            timeout=max(host_timeout, _PROBE_TIMEOUT_S),
        )
    except subprocess.TimeoutExpired:
        result["problem"] = f"no answer in {max(host_timeout, _PROBE_TIMEOUT_S)} s"
        return result
    except OSError as exc:
        result["problem"] = f"could not run: {exc}"
        return result
    result["ms"] = round((time.perf_counter() - started) * 1000)
    stdout = proc.stdout.decode("utf-8", "replace")
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    notice = str(data.get("systemMessage") or data.get("user_message") or "") if data else ""
    context = hf.context_of(host_name, stdout)
    probe = _PROBE_LINE.search(context)
    if probe and probe.group(1) == token:
        result["vault"] = probe.group(2).strip()
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())[:200]
        result["problem"] = f"exit {proc.returncode}: {err or 'no output'}"
    elif not isinstance(data, dict):
        result["problem"] = f"output is not the JSON object {host_name} reads: {stdout[:120]!r}"
    elif "hook failed" in notice:
        result["problem"] = notice[:300]
    elif hf.can_inject(host_name, event) and "vault" not in result:
        result["problem"] = "the hook's context did not come back from a vault"
    else:
        result["ok"] = True
        if result["ms"] > host_timeout * 1000:
            result["note"] = (
                f"slow: {host_name} gives up after {host_timeout} s "
                "(is the machine busy? a warm server answers in milliseconds)"
            )
    return result
