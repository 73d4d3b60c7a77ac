"""``mdmem hooks install`` / ``uninstall``: mdmem's hooks into a host's settings file and out.

Where the hooks go: the person's own settings for the project (the
``personal`` default where the host reads one: Claude Code's
``.claude/settings.local.json``, which git ignores), with this machine's
``mdmem`` and vault paths. Codex and Cursor read no per-project personal file,
so for them the default is the project's file (``shared``), written portable,
as it is whenever the shared file is asked for: ``mdmem`` from PATH and the
vault by a name from each person's own ``hooks.toml`` (install registers the
name). ``user`` writes the user's file for every project.

A settings file that is a symlink is edited where it points (never replaced by
a copy); in a project, a path that leads outside it (a ``.claude`` linked to
``~/.claude``) is refused, as is a file that is not UTF-8 or not a JSON
object. Install merges (other keys and hooks stay; a second install changes
nothing) and keeps the file as it was in a backup beside the user's config,
so uninstall restores it byte for byte, or, if it was edited since, removes
only mdmem's entries.

What a hook command runs is ``mdmem`` (the console script) or ``python -m
mdmem``: both enter :mod:`mdmem.__main__`, never a module path of this kit,
so a hook installed by an older version keeps working when modules move.

The click commands (:mod:`mdmem.cli.hooks`) parse options and print; this
module does the work and raises :class:`~mdmem.errors.HookConfigError` for
anything the person must fix.
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
import tomllib
from pathlib import Path
from typing import Any

from mdmem.config import config_home
from mdmem.errors import HookConfigError
from mdmem.files.textfile import atomic_write
from mdmem.hookkit import hosts as hf
from mdmem.hookkit.policy import USER_FILE, user_settings
from mdmem.ipc.capped import read_capped

__all__ = [
    "backup_path",
    "config_file",
    "elsewhere",
    "hook_command",
    "install",
    "location",
    "portable_command",
    "project_folder",
    "read_config",
    "uninstall",
]

_MAX_CONFIG_BYTES = 16 * 1024 * 1024


def project_folder(directory: str | None) -> Path:
    """The project folder: ``directory``, else the current one (resolved)."""
    return (Path(directory).expanduser() if directory else Path.cwd()).resolve()


def location(host_name: str, asked: str | None) -> str:
    """The location ``asked``, or the host's default: its personal project file, else shared."""
    h = hf.host(host_name)
    if asked is None:
        return "personal" if h.config_personal else "shared"
    if asked == "personal" and h.config_personal is None:
        raise HookConfigError(
            f"{host_name} reads no per-project personal settings file: use --shared "
            "(this project's file, written portable) or --user (your file, every project)"
        )
    return asked


def config_file(host_name: str, where: str, directory: str | None) -> Path:
    """The host's settings file at ``where`` for the project in ``directory``."""
    return hf.config_path(host_name, where, project_folder(directory), Path.home())


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


def backup_path(config: Path) -> Path:
    """Where the settings file ``config`` as it was before install is kept."""
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
            raise HookConfigError(
                f"{path} leads to {real}, outside the project {inside}: mdmem does not "
                "edit files outside a project for a project install (use --user for your "
                "own settings, or make the link a folder of the project)"
            )
    if real.exists() and not real.is_file():
        raise HookConfigError(f"{path} is not a regular file; leave it or remove it")
    return real


def read_config(path: Path) -> tuple[dict[str, Any], str | None]:
    """The JSON object in a host config (``{}`` if absent) and its text as it was."""
    if not path.exists():
        return {}, None
    data = read_capped(path, _MAX_CONFIG_BYTES + 1)
    if data is None:
        raise HookConfigError(f"{path} is not a readable regular file")
    if len(data) > _MAX_CONFIG_BYTES:
        raise HookConfigError(f"{path} is larger than 16 MB: not a settings file")
    try:
        text = data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")
    except UnicodeDecodeError as exc:
        raise HookConfigError(
            f"{path} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start}); "
            "save it as UTF-8 first, mdmem will not rewrite it"
        ) from None
    try:
        parsed = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise HookConfigError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(parsed, dict):
        raise HookConfigError(f"{path} does not hold a JSON object")
    return parsed, text


def _write_atomic(path: Path, text: str) -> None:
    """Replace the file ``path`` (no symlink: see :func:`_target`), keeping its mode."""
    atomic_write(path, text.encode("utf-8"))


def _vault_name(vault: Path | None, asked: str | None) -> tuple[str | None, str | None]:
    """The name the portable commands use for ``vault``, registering it in the user's
    ``hooks.toml`` when needed; (name, what was done or None)."""
    settings = user_settings()[0]
    known: dict[str, Path] = settings["vaults"]
    if asked is not None:
        if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", asked):
            raise HookConfigError(f"--vault-name {asked!r}: letters, digits, . _ - only")
        if asked in known:
            if vault is not None and known[asked].resolve() != vault:
                raise HookConfigError(
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
            raise HookConfigError(f"{path} is not a readable regular file")
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
        raise HookConfigError(
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


def install(
    host_name: str,
    where: str,
    directory: str | None,
    vault: Path | None,
    vault_name: str | None = None,
) -> dict[str, Any]:
    """Add mdmem's hooks to the host's settings file at ``where`` (see :func:`location`),
    merging with what is there (idempotent); what was done, as ``hooks install --json``
    shows it (``notes``: what the person should know).

    ``vault``: the vault the commands name (resolved), or None to leave the choice to
    each hook run; ``vault_name``: the name a shared file's commands give it."""
    project = project_folder(directory)
    path = config_file(host_name, where, directory)
    target = _target(path, project if where != "user" else None)
    data, original = read_config(target)
    notes: list[str] = []
    events = hf.host(host_name).events
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
        commands = {e: portable_command(host_name, e, name) for e in events}
    else:
        commands = {e: hook_command(host_name, e, vault) for e in events}
        if vault is None:
            notes.append(
                f"no vault given; the hooks will use $MDMEM_VAULT or `vault` in {USER_FILE} "
                "(pass --vault to write one into the hooks)"
            )
    try:
        changed = hf.merge_hooks(host_name, data, commands)
    except ValueError as exc:
        raise HookConfigError(f"{path}: {exc}") from None
    backup = backup_path(target)
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
    notes += elsewhere(host_name, where, directory)
    result: dict[str, Any] = {
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
    return result


def elsewhere(host_name: str, where: str, directory: str | None) -> list[str]:
    """Notes about mdmem hooks of ``host_name`` in its other files (each event would run twice)."""
    here = Path(os.path.realpath(config_file(host_name, where, directory)))
    out = []
    for other in hf.LOCATIONS:
        if other == where or (other == "personal" and not hf.host(host_name).config_personal):
            continue
        path = config_file(host_name, other, directory)
        if Path(os.path.realpath(path)) == here:
            continue
        try:
            found = hf.installed_commands(host_name, read_config(path)[0])
        except HookConfigError:
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


def uninstall(host_name: str, where: str, directory: str | None) -> dict[str, Any]:
    """Restore the host's settings file at ``where`` as it was (or, if edited since,
    remove only mdmem's hooks); what was done, as ``hooks uninstall --json`` shows it."""
    path = config_file(host_name, where, directory)
    target = _target(path, project_folder(directory) if where != "user" else None)
    backup = backup_path(target)
    record = _load_backup(backup)
    data, current = read_config(target)
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
    return {"host": host_name, "path": str(path), "location": where, "result": how}
