"""What the person confirmed about projects, kept in their own config folder.

A ``.mdmem.toml`` travels with a repository (or lies in a shared parent
folder), so by itself it may only narrow what the hooks do. To let one choose
a scope or widen capture, the person confirms it once (``mdmem hooks trust``):
the confirmation is the sha256 of the file's bytes under its absolute path,
so an edit, a pull or another checkout's copy needs confirming again. A file
owned by another user is never read, confirmed or not.

The same store records which old short-name scope (``project:api``, the
hooks' rule before identities) a project adopted (``mdmem hooks adopt``), so
its recall reads those memories too; one old scope goes to one project only.

Stored as ``trusted-projects.json`` beside the user's ``hooks.toml``, never in
the vault or the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdmem.config import config_home
from mdmem.errors import ConfigError

__all__ = [
    "STORE_FILE",
    "adopt",
    "adopted",
    "confirm",
    "digest",
    "forget",
    "is_confirmed",
    "owner_if_foreign",
]

STORE_FILE = "trusted-projects.json"


def digest(data: bytes) -> str:
    """What a confirmation is bound to: the file's exact bytes."""
    return hashlib.sha256(data).hexdigest()


def owner_if_foreign(path: Path) -> int | None:
    """The owner's uid when ``path`` belongs to another user, else None."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # no owners to compare (Windows)
        return None
    try:
        uid = path.stat().st_uid
    except OSError:
        return None
    return uid if uid != getuid() else None


def is_confirmed(path: Path, data: bytes, env: Mapping[str, str] | None = None) -> bool:
    """Whether the person confirmed exactly these bytes at this path."""
    entry = _load(env)["files"].get(_key(path))
    return isinstance(entry, dict) and entry.get("sha256") == digest(data)


def confirm(path: Path, data: bytes, env: Mapping[str, str] | None = None) -> str:
    """Record that the person confirmed ``data`` (the file's bytes, read by the caller)."""
    foreign = owner_if_foreign(path)
    if foreign is not None:
        raise ConfigError(f"{path} belongs to another user (uid {foreign}); not confirmed")
    store = _load(env)
    sha = digest(data)
    store["files"][_key(path)] = {"sha256": sha}
    _save(store, env)
    return sha


def forget(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Withdraw a confirmation; whether there was one."""
    store = _load(env)
    found = store["files"].pop(_key(path), None) is not None
    if found:
        _save(store, env)
    return found


def adopted(identity: str, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The old short-name scopes the project ``identity`` adopted."""
    return tuple(sorted(s for s, who in _load(env)["adopted"].items() if who == identity))


def adopt(identity: str, scope: str, env: Mapping[str, str] | None = None) -> None:
    """Let the project ``identity`` read the old scope ``scope``; refused if another has it."""
    store = _load(env)
    holder = store["adopted"].get(scope)
    if holder not in (None, identity):
        raise ConfigError(
            f"{scope} is already adopted by {holder}: two repositories' memories are never merged"
        )
    store["adopted"][scope] = identity
    _save(store, env)


def _key(path: Path) -> str:
    return str(path.expanduser().resolve())


def _path(env: Mapping[str, str] | None) -> Path:
    return config_home(env) / STORE_FILE


def _load(env: Mapping[str, str] | None) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_path(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    out: dict[str, dict[str, Any]] = {}
    for part in ("files", "adopted"):
        value = data.get(part) if isinstance(data, dict) else None
        out[part] = dict(value) if isinstance(value, dict) else {}
    return out


def _save(store: dict[str, dict[str, Any]], env: Mapping[str, str] | None) -> None:
    path = _path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # Only the person may read or change what they confirmed.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"version": 1, **store}, out, indent=2, sort_keys=True)
    os.replace(tmp, path)
