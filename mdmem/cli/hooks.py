"""``mdmem hook <event>`` (what a coding agent's hooks run) and ``mdmem hooks ...`` (set-up).

``mdmem hook`` always exits 0 with output the host accepts: a hook that fails
must not block the user's prompt. Failures go to the hook log (in the vault's
state dir, or ``hook-errors.jsonl`` in the mdmem config folder when no vault
could be opened) and, where the host shows one, a one-line notice.

It stays light: the host's formats and the project policy are standard-library
modules; the vault (and with it Whoosh, FAISS, numpy) is loaded only when the
warm server doesn't answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from mdmem.agent import hostformats as hf
from mdmem.agent.projectpolicy import policy_to_json, resolve_policy
from mdmem.cli.context import Context, emit, json_option, main
from mdmem.config import config_home
from mdmem.hookmain import MAX_STDIN_BYTES, PROBE_ENV, answer_hook

# -- mdmem hook <event> ---------------------------------------------------------


@main.command("hook")
@click.argument("event", type=click.Choice(hf.EVENTS))
@click.option("--host", "host_name", type=click.Choice(list(hf.HOSTS)), default="claude-code")
@click.pass_obj
def hook(obj: Context, event: str, host_name: str) -> None:
    """Run one hook event: host JSON on stdin, the host's answer on stdout (always exit 0)."""
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    click.echo(answer_hook(obj.vault_path, obj.agent, host_name, event, raw))


# -- mdmem hooks install / uninstall -------------------------------------------


@main.group("hooks")
def hooks_group() -> None:
    """Hooks for coding agents (Claude Code, Codex, Cursor): install, log, doctor."""


def _where(host_name: str, user: bool, directory: str | None) -> Path:
    h = hf.host(host_name)
    if user:
        return Path.home() / h.config_user
    base = Path(directory).expanduser() if directory else Path.cwd()
    return base.resolve() / h.config_project


def _location_options(func: Any) -> Any:
    func = click.option(
        "--dir",
        "directory",
        type=click.Path(file_okay=False),
        default=None,
        help="Project folder (default: the current directory).",
    )(func)
    # Never the user's own file unless asked: --project is the default.
    return click.option(
        "--user/--project",
        "user",
        default=False,
        help="The user's own config (~/...), or this project's (default).",
    )(func)


def _mdmem_command() -> list[str]:
    found = shutil.which("mdmem")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "mdmem"]


def hook_command(host_name: str, event: str, vault: Path | None) -> str:
    """The shell command a host runs for ``event`` (the vault baked in when known)."""
    words = _mdmem_command()
    if vault is not None:
        words += ["--vault", str(vault.resolve())]
    words += ["hook", event, "--host", host_name]
    return " ".join(shlex.quote(w) for w in words)


def _backup_path(config: Path) -> Path:
    digest = hashlib.sha256(str(config.resolve()).encode()).hexdigest()[:20]
    return config_home() / "hook-backups" / f"{digest}.json"


def _read_config(path: Path) -> tuple[dict[str, Any], str | None]:
    if not path.exists():
        return {}, None
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise click.ClickException(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise click.ClickException(f"{path} does not hold a JSON object")
    return data, text


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.mdmem-{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _install_vault(obj: Context) -> Path | None:
    try:
        return obj.root().resolve()
    except Exception:  # no vault known now: the hook finds one when it runs
        return None


@hooks_group.command("install")
@click.argument("host_name", metavar="HOST", type=click.Choice(list(hf.HOSTS)))
@_location_options
@json_option
@click.pass_obj
def install(obj: Context, host_name: str, user: bool, directory: str | None, as_json: bool) -> None:
    """Add mdmem's hooks to HOST's config, merging with what is there (idempotent)."""
    path = _where(host_name, user, directory)
    data, original = _read_config(path)
    vault = _install_vault(obj)
    commands = {e: hook_command(host_name, e, vault) for e in hf.host(host_name).events}
    try:
        changed = hf.merge_hooks(host_name, data, commands)
    except ValueError as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    backup = _backup_path(path)
    if changed:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        record = _load_backup(backup)
        if record is None or record.get("installed") != original:
            # Only the file as it was before mdmem touched it is worth restoring.
            record = {"path": str(path), "original": original}
        record["installed"] = text
        _write_atomic(backup, json.dumps(record, ensure_ascii=False))
        _write_atomic(path, text)
    result = {
        "host": host_name,
        "path": str(path),
        "changed": changed,
        "events": sorted(commands),
        "vault": str(vault) if vault else None,
        "backup": str(backup) if backup.exists() else None,
    }

    def human() -> None:
        verb = "installed" if changed else "already installed:"
        click.echo(f"{verb} {len(commands)} {host_name} hooks in {path}")
        if vault is None:
            click.echo(
                "note: no vault given; the hooks will use $MDMEM_VAULT or `vault` in "
                "hooks.toml (pass --vault to write one into the hooks)",
                err=True,
            )

    emit(result, as_json, human)


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
    obj: Context, host_name: str, user: bool, directory: str | None, as_json: bool
) -> None:
    """Restore HOST's config as it was (or, if edited since, remove only mdmem's hooks)."""
    path = _where(host_name, user, directory)
    backup = _backup_path(path)
    record = _load_backup(backup)
    current = path.read_text(encoding="utf-8") if path.exists() else None
    how = "nothing to remove"
    if record is not None and current is not None and record.get("installed") == current:
        original = record.get("original")
        if original is None:
            path.unlink()
            how = "removed the file mdmem created"
        else:
            _write_atomic(path, str(original))
            how = "restored the file as it was"
    elif current is not None:
        data, _ = _read_config(path)
        if hf.remove_hooks(host_name, data):
            _write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            how = "removed mdmem's hooks (the file changed since install)"
    backup.unlink(missing_ok=True)
    emit(
        {"host": host_name, "path": str(path), "result": how},
        as_json,
        lambda: click.echo(f"{host_name}: {how} ({path})"),
    )


@hooks_group.command("policy")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False),
    default=None,
    help="Project folder (default: the current directory).",
)
@json_option
def policy_command(directory: str | None, as_json: bool) -> None:
    """The policy the hooks apply in a project: .mdmem.toml narrowed by your hooks.toml."""
    cwd = str((Path(directory).expanduser() if directory else Path.cwd()).resolve())
    policy = resolve_policy(cwd)
    data = policy_to_json(policy)

    def human() -> None:
        click.echo(f"policy file: {policy.source or '(none: the defaults)'}")
        for key in ("enabled", "vault", "scope", "capture"):
            click.echo(f"{key}: {data[key]}")
        for key in ("session_tokens", "prompt_tokens", "prompt_latency_ms"):
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
    from mdmem.agent.hooklog import HookLog

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
    """A payload shaped as the host documents it (see mdmem.agent.hostformats)."""
    h = hf.host(host_name)
    extra: dict[str, Any] = {}
    if event == "session-start":
        extra["source"] = "startup"
    elif event == "prompt-submit":
        extra["prompt"] = prompt
    elif event == "post-tool-use":
        output_key = "tool_output" if host_name == "cursor" else "tool_response"
        extra.update(tool_name="Bash", tool_input={"command": "true"}, **{output_key: ""})
    if host_name == "cursor":
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


def _baked_vault(command: str) -> Path | None:
    words = shlex.split(command)
    if "--vault" in words[:-1]:
        return Path(words[words.index("--vault") + 1])
    return None


@hooks_group.command("doctor")
@click.option("--host", "hosts", multiple=True, type=click.Choice(list(hf.HOSTS)))
@_location_options
@json_option
@click.pass_obj
def doctor(
    obj: Context, hosts: tuple[str, ...], user: bool, directory: str | None, as_json: bool
) -> None:
    """Plant a canary memory, run each installed hook as its host would, check the canary."""
    cwd = (Path(directory).expanduser() if directory else Path.cwd()).resolve()
    checks: list[dict[str, Any]] = []
    planned: list[tuple[str, str, str]] = []  # (host, event, command)
    for host_name in hosts or tuple(hf.HOSTS):
        path = _where(host_name, user, directory)
        data, _ = _read_config(path)
        commands = hf.installed_commands(host_name, data)
        if not commands and hosts:
            checks.append(_fail(host_name, "-", f"no mdmem hooks in {path}"))
        planned += [(host_name, e, c) for e, c in commands.items()]
    if planned:
        checks += _run_probes(obj, planned, cwd)
    elif not checks:
        checks.append(_fail("-", "-", "no mdmem hooks installed here (mdmem hooks install HOST)"))
    ok = all(c["ok"] for c in checks)

    def human() -> None:
        for c in checks:
            state = "ok  " if c["ok"] else "FAIL"
            extra = f" ({c['ms']} ms)" if "ms" in c else ""
            problem = f": {c['problem']}" if c.get("problem") else ""
            click.echo(f"{state} {c['host']} {c['event']}{extra}{problem}")

    emit({"ok": ok, "checks": checks}, as_json, human)
    if not ok:
        raise click.exceptions.Exit(1)


def _fail(host_name: str, event: str, problem: str) -> dict[str, Any]:
    return {"host": host_name, "event": event, "ok": False, "problem": problem}


def _run_probes(
    obj: Context, planned: list[tuple[str, str, str]], cwd: Path
) -> list[dict[str, Any]]:
    """One canary for the whole run, forgotten again whatever happens."""
    from mdmem.vault import Vault

    policy = resolve_policy(str(cwd))
    root = policy.vault or _baked_vault(planned[0][2]) or obj.root()
    token = "mdmemcanary" + hashlib.sha1(os.urandom(8)).hexdigest()[:10]
    with Vault.open(root, agent="mdmem-doctor") as vault:
        canary = vault.remember(
            f"Hook canary {token}: mdmem hooks doctor checks this comes back.",
            kind="preference",
            tags=["pinned"],
            scope=policy.scope,
        )
    try:
        return [_probe(h, e, c, cwd, token) for h, e, c in planned]
    finally:
        with Vault.open(root, agent="mdmem-doctor") as vault:
            vault.forget(canary.id, reason="hooks doctor canary")


def _probe(host_name: str, event: str, command: str, cwd: Path, token: str) -> dict[str, Any]:
    result: dict[str, Any] = {"host": host_name, "event": event, "ok": False}
    payload = _doctor_payload(host_name, event, cwd, f"what is the hook canary {token}?")
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            shell=True,  # the host runs it through a shell, so the doctor does too
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=cwd,
            env={**os.environ, PROBE_ENV: "1"},
            timeout=hf.host(host_name).timeouts[event],
        )
    except subprocess.TimeoutExpired:
        result["problem"] = "timed out"
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
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())[:200]
        result["problem"] = f"exit {proc.returncode}: {err or 'no output'}"
    elif not isinstance(data, dict):
        result["problem"] = f"output is not the JSON object {host_name} reads: {stdout[:120]!r}"
    elif "hook failed" in str(data.get("systemMessage") or data.get("user_message") or ""):
        result["problem"] = str(data.get("systemMessage") or data.get("user_message"))[:300]
    elif hf.can_inject(host_name, event) and token not in hf.context_of(host_name, stdout):
        result["problem"] = "the canary memory did not come back in the hook's context"
    else:
        result["ok"] = True
    return result
