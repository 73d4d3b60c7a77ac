"""What the person confirmed about projects, kept in their own config folder.

A ``.mdmem.toml`` travels with a repository (or lies in a shared parent
folder), so by itself it may only narrow what the hooks do. To let one choose
a scope or widen capture, the person confirms it once (``mdmem hooks trust``):
the confirmation is the sha256 of the file's bytes under its absolute path,
so an edit, a pull or another checkout's copy needs confirming again. A file
owned by another user is never read, confirmed or not, and a project file
that is a symbolic link never counts as confirmed: trust binds to a file and
its bytes where they lie, never to a name that leads there.

The same store records which old short-name scope (``project:api``, the
hooks' rule before identities) a project adopted (``mdmem hooks adopt``), so
its recall reads those memories too; one old scope goes to one project only.

Stored as ``trusted-projects.json`` beside the user's ``hooks.toml``, never in
the vault or the repository.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mdmem.config import Confirmations
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
    """Whether the person confirmed exactly these bytes at this path.

    A project file that is a symbolic link is never confirmed, wherever it
    leads: a cloned repository whose ``.mdmem.toml`` links to a file the
    person confirmed for another project would otherwise borrow that
    confirmation (and that project's scope) by naming it.
    """
    if path.is_symlink():
        return False
    entry = _load(env)["files"].get(_key(path))
    return isinstance(entry, dict) and entry.get("sha256") == digest(data)


def confirm(path: Path, data: bytes, env: Mapping[str, str] | None = None) -> str:
    """Record that the person confirmed ``data`` (the file's bytes, read by the caller)."""
    foreign = owner_if_foreign(path)
    if foreign is not None:
        raise ConfigError(f"{path} belongs to another user (uid {foreign}); not confirmed")
    if path.is_symlink():
        raise ConfigError(
            f"{path} is a symbolic link; a link is never confirmed (confirm the file it leads to)"
        )
    sha = digest(data)
    with _changing(env) as store:
        store["files"][_key(path)] = {"sha256": sha}
    return sha


def forget(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Withdraw a confirmation; whether there was one."""
    with _changing(env) as store:
        return store["files"].pop(_key(path), None) is not None


def adopted(identity: str, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The old short-name scopes the project ``identity`` adopted."""
    return tuple(sorted(s for s, who in _load(env)["adopted"].items() if who == identity))


def adopt(identity: str, scope: str, env: Mapping[str, str] | None = None) -> None:
    """Let the project ``identity`` read the old scope ``scope``; refused if another has it."""
    with _changing(env) as store:
        holder = store["adopted"].get(scope)
        if holder not in (None, identity):
            raise ConfigError(
                f"{scope} is already adopted by {holder}: "
                "two repositories' memories are never merged"
            )
        store["adopted"][scope] = identity


def _key(path: Path) -> str:
    # The folder resolved, the file itself not: the record names the file
    # where it lies (is_confirmed refuses a link before looking it up).
    path = path.expanduser()
    return str(path.parent.resolve() / path.name)


def _load(env: Mapping[str, str] | None) -> dict[str, dict[str, Any]]:
    return _parts(Confirmations(STORE_FILE, env).read())


@contextmanager
def _changing(env: Mapping[str, str] | None) -> Iterator[dict[str, dict[str, Any]]]:
    """The store to change, saved (0600, atomically) when the body returns."""
    with Confirmations(STORE_FILE, env).change() as records:
        store = _parts(records)
        yield store
        records.clear()
        records.update({"version": 1, **store})


def _parts(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for part in ("files", "adopted"):
        value = data.get(part)
        out[part] = dict(value) if isinstance(value, dict) else {}
    return out
