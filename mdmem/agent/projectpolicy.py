"""Per-project hook policy: ``.mdmem.toml`` at a code repository's root.

The hooks find the file by walking up from the payload's ``cwd``::

    # .mdmem.toml — travels with the repository
    enabled = true                # false: the hooks inject and capture nothing here
    vault = "work"                # a name from the user's own [vaults] list (see below)
    scope = "project:shop"        # where captures go and what recall searches
    capture = "summaries"         # off | summaries | everything
    session_tokens = 1500         # session-start budget
    prompt_tokens = 800           # prompt-submit budget
    prompt_latency_ms = 300

A project file travels with the repository, so (docs/hooks.md#policy-files): it can
only choose among vaults the *user* listed, only narrow what is captured, and
only lower budgets; it has no key that names an endpoint, a credential or a
program. The user's own ``hooks.toml`` in the mdmem config folder
(:func:`mdmem.config.config_home`) sets the ceilings::

    vault = "/home/me/notes"      # default vault of the hooks
    enabled = true
    capture = "summaries"         # default for projects without .mdmem.toml
    capture_max = "everything"    # the most a project file may ask for
    session_tokens = 1500
    prompt_tokens = 800
    prompt_latency_ms = 300
    warm_server = true            # a hook that finds no warm server starts one
    [vaults]
    work = "/home/me/work-vault"

Without a project file: memory on, the user's default vault, and
``capture = "summaries"`` (a session summary plus decisions, gotchas and bug
fixes; no raw turns or tool output).

Scope: a project without ``scope`` in its file gets one derived from its
repository (:func:`project_scope`): ``project:<name>``, the name from the
``origin`` remote's URL (the same in every clone) or else the folder of the
git top level, so one project's captures never reach another project's
prompt. Outside a git repository the scope is the vault root. Recall in a
project reads the vault root (the user's own profile) *and* the project's
scope; captures go to the project's scope.

Which vault a hook uses: the one the project file names (one of the user's),
else the one its command names (``--vault`` or ``--vault-name``, as ``hooks
install`` wrote it), else ``$MDMEM_VAULT``, else the user's default ``vault``,
else the nearest folder with ``mdmem.toml`` above the current one. The
user's default never overrides a vault a hook command names.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mdmem.agent.capped import read_capped
from mdmem.config import config_home

__all__ = [
    "CAPTURE_LEVELS",
    "POLICY_FILE",
    "Policy",
    "find_policy_file",
    "hook_vault_root",
    "named_vault",
    "policy_from_json",
    "policy_to_json",
    "project_scope",
    "resolve_policy",
    "resolve_route",
]

POLICY_FILE = ".mdmem.toml"
USER_FILE = "hooks.toml"
CAPTURE_LEVELS = ("off", "summaries", "everything")
DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "warm_server": True,
    "capture": "summaries",
    "capture_max": "everything",
    "session_tokens": 1500,
    "prompt_tokens": 800,
    "prompt_latency_ms": 300,
}
_BUDGETS = ("session_tokens", "prompt_tokens", "prompt_latency_ms")
_PROJECT_KEYS = {"enabled", "vault", "scope", "capture", *_BUDGETS}


@dataclass(frozen=True)
class Policy:
    """What the hooks do for one project (resolved from the user's and the project's files)."""

    enabled: bool = True
    # The project's choice (vault_from_project) or the user's default; the hook
    # command's own vault comes between the two (see the module doc).
    vault: Path | None = None
    vault_from_project: bool = False
    scope: str | None = None
    # Where the scope came from: "project file", "repository" (derived), or None (root).
    scope_from: str | None = None
    capture: str = "summaries"
    session_tokens: int = 1500
    prompt_tokens: int = 800
    prompt_latency_ms: int = 300
    source: str | None = None  # the .mdmem.toml that applied, if any
    notes: tuple[str, ...] = field(default_factory=tuple)  # what was ignored, and why

    def captures(self, level: str) -> bool:
        """Whether this policy captures at least ``level`` (summaries < everything)."""
        return CAPTURE_LEVELS.index(self.capture) >= CAPTURE_LEVELS.index(level)


def find_policy_file(cwd: str | os.PathLike[str] | None) -> Path | None:
    """The nearest ``.mdmem.toml`` at or above ``cwd`` (None without a cwd or a file)."""
    if not cwd:
        return None
    here = Path(cwd).expanduser()
    if not here.is_absolute():
        return None  # a relative cwd from a payload means nothing here
    for candidate in (here, *here.parents):
        path = candidate / POLICY_FILE
        if path.is_file():
            return path
    return None


_MAX_FILE_BYTES = 256 * 1024  # a settings file, not a data file


def _read(path: Path) -> tuple[dict[str, Any], str | None]:
    # A project file comes with the repository: a FIFO or a device there must
    # not hang or flood the hook, so only a regular file is read, and only so much.
    data = read_capped(path, _MAX_FILE_BYTES + 1)
    if data is None:
        return {}, f"{path}: not a readable regular file"
    if len(data) > _MAX_FILE_BYTES:
        return {}, f"{path}: larger than {_MAX_FILE_BYTES // 1024} KB"
    try:
        return tomllib.loads(data.decode("utf-8")), None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        return {}, f"{path}: unreadable ({' '.join(str(exc).split())})"


def _level(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value in CAPTURE_LEVELS else default


def _budget(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def user_settings(env: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The user's own hook settings (trusted), defaults filled in."""
    path = config_home(env) / USER_FILE
    data, problem = _read(path) if path.is_file() else ({}, None)
    notes = [problem] if problem else []
    out = dict(DEFAULTS)
    for key in ("enabled", "warm_server"):
        if isinstance(data.get(key), bool):
            out[key] = data[key]
    out["capture_max"] = _level(data.get("capture_max"), DEFAULTS["capture_max"])
    out["capture"] = _level(data.get("capture"), DEFAULTS["capture"])
    for key in _BUDGETS:
        value = _budget(data.get(key))
        if value is not None:
            out[key] = value
    vaults = data.get("vaults")
    out["vaults"] = {
        str(k): Path(str(v)).expanduser()
        for k, v in (vaults.items() if isinstance(vaults, dict) else [])
        if isinstance(v, str) and v
    }
    default = data.get("vault")
    out["vault"] = Path(default).expanduser() if isinstance(default, str) and default else None
    return out, notes


def resolve_policy(cwd: str | None, env: Mapping[str, str] | None = None) -> Policy:
    """The policy for a hook run in ``cwd``: the user's settings narrowed by the project file."""
    user, notes = user_settings(env)
    path = find_policy_file(cwd)
    project: dict[str, Any] = {}
    if path is not None:
        project, problem = _read(path)
        if problem:
            notes.append(problem)
    for key in sorted(set(project) - _PROJECT_KEYS):
        notes.append(f"{POLICY_FILE}: ignored key {key!r} (a project file can't set it)")

    enabled = bool(user["enabled"])
    if project.get("enabled") is False:
        enabled = False  # a project may switch memory off, never on against the user

    vault: Path | None = user["vault"]
    from_project = False
    wanted = project.get("vault")
    if wanted is not None:
        vault, note = _choose_vault(wanted, user)
        from_project = note is None
        if note:
            notes.append(note)

    scope = project.get("scope")
    if scope is not None and not isinstance(scope, str):
        notes.append(f"{POLICY_FILE}: scope must be a string")
        scope = None
    scope_from = "project file" if scope else None
    if not scope:
        scope = project_scope(cwd)
        scope_from = "repository" if scope else None

    cap_max = CAPTURE_LEVELS.index(user["capture_max"])
    capture = user["capture"]
    if "capture" in project:
        asked = project["capture"]
        if asked not in CAPTURE_LEVELS:
            notes.append(f"{POLICY_FILE}: capture must be one of {', '.join(CAPTURE_LEVELS)}")
        else:
            capture = asked
    if CAPTURE_LEVELS.index(capture) > cap_max:
        notes.append(f"capture {capture!r} is above the user's capture_max; using it")
        capture = CAPTURE_LEVELS[cap_max]

    budgets: dict[str, int] = {}
    for key in _BUDGETS:
        ceiling = int(user[key])
        asked_budget = _budget(project.get(key)) if key in project else None
        if key in project and asked_budget is None:
            notes.append(f"{POLICY_FILE}: {key} must be a whole number >= 0")
        # A project may lower a budget, not raise it past the user's.
        budgets[key] = ceiling if asked_budget is None else min(asked_budget, ceiling)

    return Policy(
        enabled=enabled,
        vault=vault,
        vault_from_project=from_project,
        scope=scope or None,
        scope_from=scope_from,
        capture=capture,
        source=str(path) if path is not None else None,
        notes=tuple(notes),
        **budgets,
    )


def named_vault(name: str, env: Mapping[str, str] | None = None) -> Path | None:
    """The vault the user's ``hooks.toml`` lists under ``name`` in ``[vaults]``, or None."""
    return user_settings(env)[0]["vaults"].get(name)


def hook_vault_root(
    policy: Policy,
    vault_path: str | None,
    vault_name: str | None,
    env: Mapping[str, str] | None = None,
    workdir: str | None = None,
) -> tuple[Path, list[str]]:
    """The vault of a hook run (the order: see the module doc) and what was ignored.

    ``vault_path``/``vault_name``: the hook command's ``--vault``/``--vault-name``;
    ``workdir``: the hook process's own folder (default: this process's).
    Raises FileNotFoundError when no vault is named and none is found.
    """
    env = os.environ if env is None else env
    notes: list[str] = []
    if policy.vault is not None and policy.vault_from_project:
        return policy.vault, notes
    if vault_path:
        return Path(vault_path).expanduser(), notes
    if vault_name:
        named = named_vault(vault_name, env)
        if named is not None:
            return named, notes
        notes.append(f"no vault named {vault_name!r} in hooks.toml [vaults]")
    given = env.get("MDMEM_VAULT")
    if given:
        return Path(given).expanduser(), notes
    if policy.vault is not None:
        return policy.vault, notes
    here = Path(workdir or os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "mdmem.toml").is_file():
            return candidate, notes
    raise FileNotFoundError(
        "no vault for the hooks: pass --vault to `mdmem hooks install`, set MDMEM_VAULT, "
        "or `vault` in hooks.toml"
    )


def resolve_route(route: Mapping[str, Any]) -> tuple[Path, Policy]:
    """The vault and policy of a hook run that :mod:`mdmem.hookclient` described.

    ``route`` carries what the hook process would have decided them from:
    ``cwd`` (the payload's, else the process's), ``workdir`` (the process's),
    ``vault``/``vault_name`` (its options) and ``env`` (``MDMEM_CONFIG_HOME``
    already resolved, ``MDMEM_VAULT``), so the warm server decides as the
    hook process itself would. Raises FileNotFoundError (no vault) or ValueError.
    """
    env = route.get("env")
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise ValueError("a hook route needs an 'env' of strings")
    words = {k: route.get(k) for k in ("cwd", "workdir", "vault", "vault_name")}
    if any(v is not None and not isinstance(v, str) for v in words.values()):
        raise ValueError("a hook route's cwd, workdir, vault and vault_name are strings")
    policy = resolve_policy(words["cwd"], env)
    root, _ = hook_vault_root(policy, words["vault"], words["vault_name"], env, words["workdir"])
    return root, policy


def _choose_vault(wanted: Any, user: dict[str, Any]) -> tuple[Path | None, str | None]:
    """A project's vault choice, honoured only when it names one of the user's vaults."""
    default: Path | None = user["vault"]
    known: dict[str, Path] = user["vaults"]
    if not isinstance(wanted, str) or not wanted:
        return default, f"{POLICY_FILE}: vault must be a name from the user's [vaults]"
    if wanted in known:
        return known[wanted], None
    as_path = Path(wanted).expanduser()
    allowed = {p.resolve() for p in known.values()} | ({default.resolve()} if default else set())
    if as_path.is_absolute() and as_path.resolve() in allowed:
        return as_path, None
    return default, (
        f"{POLICY_FILE}: vault {wanted!r} is not one of the user's vaults "
        f"(list it under [vaults] in {USER_FILE}); using the default"
    )


def policy_to_json(policy: Policy) -> dict[str, Any]:
    """A policy as plain JSON (for the warm server's ``hook`` method)."""
    out = {f.name: getattr(policy, f.name) for f in fields(Policy)}
    out["vault"] = str(policy.vault) if policy.vault is not None else None
    out["notes"] = list(policy.notes)
    return out


def policy_from_json(data: Mapping[str, Any]) -> Policy:
    """The inverse of :func:`policy_to_json`; unknown keys and odd values are dropped."""
    known = {f.name: f for f in fields(Policy)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known or value is None:
            continue
        if key == "vault":
            values[key] = Path(str(value))
        elif key == "notes":
            values[key] = tuple(str(n) for n in value) if isinstance(value, list) else ()
        elif key == "capture":
            values[key] = _level(value, "summaries")
        elif key in ("enabled", "vault_from_project"):
            values[key] = bool(value)
        elif key in _BUDGETS:
            budget = _budget(value)
            if budget is not None:
                values[key] = budget
        elif key in ("scope", "scope_from", "source") and isinstance(value, str):
            values[key] = value
    return Policy(**values)


_REMOTE = re.compile(r'^\s*\[remote\s+"origin"\]\s*$')
_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(\S.*?)\s*$", re.I)
_NAME_BAD = re.compile(r"[^a-z0-9._-]+")
_MAX_GIT_FILE = 64 * 1024


def project_scope(cwd: str | os.PathLike[str] | None) -> str | None:
    """``project:<name>`` for the git repository ``cwd`` is in, or None outside one.

    The name is the ``origin`` remote's repository name (``…/shop.git`` ->
    ``shop``), the same in every clone, else the top-level folder's name;
    lower-cased, runs of other characters as ``-``. Read from the files, not
    by running git: a hook answers within its latency budget.
    """
    if not cwd:
        return None
    here = Path(cwd).expanduser()
    if not here.is_absolute():
        return None
    for top in (here, *here.parents):
        dot_git = top / ".git"
        if dot_git.exists():
            break
    else:
        return None
    name = _origin_name(_git_config(dot_git)) or top.name
    return _as_scope(name)


def _git_config(dot_git: Path) -> Path | None:
    """The repository's ``config``: ``.git/config``, or a worktree's common dir's."""
    if dot_git.is_dir():
        return dot_git / "config"
    data = read_capped(dot_git, _MAX_GIT_FILE)  # a worktree's or submodule's "gitdir: …"
    if not data:
        return None
    text = data.decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:") :].strip())
    if not gitdir.is_absolute():
        gitdir = dot_git.parent / gitdir
    common = read_capped(gitdir / "commondir", _MAX_GIT_FILE)
    if common:
        other = Path(common.decode("utf-8", "replace").strip())
        gitdir = other if other.is_absolute() else gitdir / other
    return gitdir / "config"


def _origin_name(config: Path | None) -> str | None:
    data = read_capped(config, _MAX_GIT_FILE) if config is not None else None
    if not data:
        return None
    inside = False
    for line in data.decode("utf-8", "replace").splitlines():
        if _SECTION.match(line):
            inside = bool(_REMOTE.match(line))
        elif inside and (m := _URL.match(line)):
            url = m.group(1).strip("\"'").rstrip("/")
            # https://host/o/shop.git, git@host:o/shop.git, /srv/git/shop
            last = re.split(r"[/:\\]", url)[-1]
            return last[:-4] if last.endswith(".git") else last
    return None


def _as_scope(name: str) -> str | None:
    clean = _NAME_BAD.sub("-", name.lower()).strip(".-_")[:64].rstrip(".-_")
    if not clean:
        return None
    if not clean[0].isalnum():
        clean = "p" + clean
    return f"project:{clean}"
