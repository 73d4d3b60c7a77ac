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
    hook_latency_ms = 1000        # the other events: how long they wait for the warm server

A project file travels with the repository, so (docs/hooks.md#policy-files): it can
only narrow what is captured and only lower budgets (a scope, a vault among those
the *user* listed, or more capture need ``mdmem hooks trust``); it has no key
that names an endpoint, a credential or a program. The user's own
``hooks.toml`` in the mdmem config folder (:func:`mdmem.config.config_home`)
sets the ceilings::

    vault = "/home/me/notes"      # default vault of the hooks
    enabled = true
    capture = "summaries"         # default for projects without .mdmem.toml
    capture_max = "everything"    # the most a project file may ask for
    outside_repositories = "off"  # or "folder": capture outside a repository too
    session_tokens = 1500
    prompt_tokens = 800
    prompt_latency_ms = 300
    hook_latency_ms = 1000
    warm_server = true            # a hook that finds no warm server starts one
    [vaults]
    work = "/home/me/work-vault"

Without a project file: memory on, the user's default vault, and
``capture = "summaries"`` (a session summary plus decisions, gotchas and bug
fixes; no raw turns or tool output).

Scope: a project gets one derived from what is unique to its repository
(:mod:`mdmem.projects.identity`): ``project:<name>-<hash>``, the hash of the
``origin`` remote normalised with its host and owner, else of an id recorded
in the repository's own git config on first use, so no two repositories share
one. A project file may name another scope, and may capture more than the
user's default, only once the person confirmed that file (``mdmem hooks
trust``, bound to its content: :mod:`mdmem.projects.trust`); a file owned by
another user is ignored. Outside a git repository nothing is captured (recall
reads the root) unless the user's ``outside_repositories = "folder"`` gives the
folder a scope of its own. Recall in a project reads the vault root (the
user's own profile), the project's scope and any old short-name scope the
person adopted for it (``mdmem hooks adopt``); captures go to the project's scope.

Which vault a hook uses: the one the project file names (one of the user's),
else the one its command names (``--vault`` or ``--vault-name``, as ``hooks
install`` wrote it), else ``$MDMEM_VAULT``, else the user's default ``vault``,
else the nearest folder with ``mdmem.toml`` above the current one. The
user's default never overrides a vault a hook command names.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mdmem.config import config_home
from mdmem.ipc.capped import read_capped
from mdmem.projects import trust
from mdmem.projects.identity import folder_identity, legacy_scope, project_identity

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
    "hook_latency_ms": 1000,
    "outside_repositories": "off",
}
# Outside any repository: "off" captures nothing (recall reads the root);
# "folder" captures into a scope of the working folder's own (folder_identity).
OUTSIDE_CHOICES = ("off", "folder")
_BUDGETS = ("session_tokens", "prompt_tokens", "prompt_latency_ms", "hook_latency_ms")
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
    # Where the scope came from: "project file (confirmed)", "repository" (derived),
    # "folder" (outside a repository, when the user asked for it) or None (root).
    scope_from: str | None = None
    identity: str | None = None  # what the derived scope is a hash of (remote, id, path)
    # "remote", "git config", "new id", "new id (copied)", "path", "folder"
    identity_from: str | None = None
    legacy_scope: str | None = None  # the short-name scope of before (project:api)
    also_reads: tuple[str, ...] = ()  # old scopes this project adopted (recall only)
    capture: str = "summaries"
    session_tokens: int = 1500
    prompt_tokens: int = 800
    prompt_latency_ms: int = 300
    # How long every hook but prompt-submit waits for the warm server (the ping included).
    hook_latency_ms: int = 1000
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
    values, problem, _ = _read_bytes(path)
    return values, problem


def _read_bytes(path: Path) -> tuple[dict[str, Any], str | None, bytes]:
    # A project file comes with the repository: a FIFO or a device there must
    # not hang or flood the hook, so only a regular file is read, and only so much.
    data = read_capped(path, _MAX_FILE_BYTES + 1)
    if data is None:
        return {}, f"{path}: not a readable regular file", b""
    if len(data) > _MAX_FILE_BYTES:
        return {}, f"{path}: larger than {_MAX_FILE_BYTES // 1024} KB", b""
    try:
        return tomllib.loads(data.decode("utf-8")), None, data
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        return {}, f"{path}: unreadable ({' '.join(str(exc).split())})", b""


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
    outside = data.get("outside_repositories", DEFAULTS["outside_repositories"])
    if outside not in OUTSIDE_CHOICES:
        notes.append(f"{USER_FILE}: outside_repositories must be one of {OUTSIDE_CHOICES}")
        outside = DEFAULTS["outside_repositories"]
    out["outside_repositories"] = outside
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
    confirmed = False
    if path is not None:
        foreign = trust.owner_if_foreign(path)
        if foreign is not None:
            # Another local user's file (a shared parent folder) says nothing for us.
            notes.append(f"{path}: ignored, owned by another user (uid {foreign})")
        else:
            project, problem, data = _read_bytes(path)
            if problem:
                notes.append(problem)
            confirmed = bool(data) and trust.is_confirmed(path, data, env)
    for key in sorted(set(project) - _PROJECT_KEYS):
        notes.append(f"{POLICY_FILE}: ignored key {key!r} (a project file can't set it)")
    unconfirmed = f"is not confirmed (run: mdmem hooks trust {path.parent if path else ''})"

    enabled = bool(user["enabled"])
    if project.get("enabled") is False:
        enabled = False  # a project may switch memory off, never on against the user

    vault: Path | None = user["vault"]
    from_project = False
    wanted = project.get("vault")
    if wanted is not None and not confirmed:
        # Which of the user's vaults gets this project's sessions is theirs to say:
        # a cloned file could send a work repository's captures to a personal vault.
        notes.append(f"{path}: vault {wanted!r} refused: this file {unconfirmed}")
    elif wanted is not None:
        vault, note = _choose_vault(wanted, user)
        from_project = note is None
        if note:
            notes.append(note)

    identity = project_identity(cwd)
    if identity is not None and identity.copied_from:
        notes.append(
            f"{identity.top} is a copy of the repository at {identity.copied_from} "
            "(its project id came with the copy): it has an id of its own now, so "
            "the two copies' memories stay apart"
        )
    capture_ceiling = user["capture_max"]
    if identity is None and cwd and Path(cwd).is_absolute():
        if user["outside_repositories"] == "folder":
            identity = folder_identity(cwd)
        else:
            # Captured into the root, a session anywhere would reach every project's prompt.
            capture_ceiling = "off"
    derived = identity.scope if identity is not None else None
    scope = project.get("scope")
    if scope is not None and not isinstance(scope, str):
        notes.append(f"{POLICY_FILE}: scope must be a string")
        scope = None
    if scope and scope != derived and not confirmed:
        notes.append(f"{path}: scope {scope!r} refused: this file {unconfirmed}")
        scope = None
    scope_from = "project file (confirmed)" if scope else None
    if not scope:
        scope = derived
        from_folder = identity is not None and identity.source == "folder"
        scope_from = ("folder" if from_folder else "repository") if scope else None
    old = legacy_scope(cwd)
    also_reads = trust.adopted(identity.key, env) if identity is not None else ()

    cap_max = CAPTURE_LEVELS.index(user["capture_max"])
    capture = user["capture"]
    if "capture" in project:
        asked = project["capture"]
        if asked not in CAPTURE_LEVELS:
            notes.append(f"{POLICY_FILE}: capture must be one of {', '.join(CAPTURE_LEVELS)}")
        elif CAPTURE_LEVELS.index(asked) > CAPTURE_LEVELS.index(capture) and not confirmed:
            notes.append(f"{path}: capture {asked!r} refused: this file {unconfirmed}")
        else:
            capture = asked
    if CAPTURE_LEVELS.index(capture) > cap_max:
        notes.append(f"capture {capture!r} is above the user's capture_max; using it")
        capture = CAPTURE_LEVELS[cap_max]
    if CAPTURE_LEVELS.index(capture) > CAPTURE_LEVELS.index(capture_ceiling):
        capture = capture_ceiling  # outside a repository, by the user's outside_repositories

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
        identity=identity.key if identity is not None else None,
        identity_from=identity.source if identity is not None else None,
        legacy_scope=old if old != scope else None,
        also_reads=tuple(s for s in also_reads if s != scope),
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
    """The vault and policy of a hook run that :mod:`mdmem.hookkit.client` described.

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
    out["also_reads"] = list(policy.also_reads)
    return out


_TEXT_FIELDS = ("scope", "scope_from", "source", "identity", "identity_from", "legacy_scope")


def policy_from_json(data: Mapping[str, Any]) -> Policy:
    """The inverse of :func:`policy_to_json`; unknown keys and odd values are dropped."""
    known = {f.name: f for f in fields(Policy)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known or value is None:
            continue
        if key == "vault":
            values[key] = Path(str(value))
        elif key in ("notes", "also_reads"):
            values[key] = tuple(str(n) for n in value) if isinstance(value, list) else ()
        elif key == "capture":
            values[key] = _level(value, "summaries")
        elif key in ("enabled", "vault_from_project"):
            values[key] = bool(value)
        elif key in _BUDGETS:
            budget = _budget(value)
            if budget is not None:
                values[key] = budget
        elif key in _TEXT_FIELDS and isinstance(value, str):
            values[key] = value
    return Policy(**values)


def project_scope(cwd: str | os.PathLike[str] | None) -> str | None:
    """The scope of the repository ``cwd`` is in (:mod:`mdmem.projects.identity`), or None."""
    found = project_identity(cwd)
    return found.scope if found is not None else None
