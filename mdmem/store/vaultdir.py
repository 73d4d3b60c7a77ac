"""Where a vault is, and what a new one needs: the folder side of ``Vault.init``/``open``
(the making itself, of a new folder or an adopted one, is mdmem.maintenance.adopt)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from mdmem.config import Settings, load_settings
from mdmem.errors import InvalidInputError, VaultExistsError, VaultNotFoundError
from mdmem.store.gitstore import GitStore

__all__ = [
    "check_new_vault",
    "enclosing_vault",
    "find_vault_root",
    "locate",
    "resolve_vault_path",
    "set_default_agent",
    "template_dir",
]

_AGENT_OK = re.compile(r"[A-Za-z0-9][\w.@-]{0,63}")
_AGENT_LINE = re.compile(r'^agent = "[^"\n]*"', re.MULTILINE)
_PACKAGE = Path(__file__).resolve().parent.parent


def find_vault_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` holding ``mdmem.toml``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "mdmem.toml").is_file():
            return candidate
    repository = _repository_of(here)
    if repository is not None:
        # Never "mdmem init" here: it would make the code repository a vault and
        # commit the template's files to its branch.
        raise VaultNotFoundError(
            f"no mdmem vault at or above {here} (inside the git repository {repository}): "
            "name your vault with --vault PATH or MDMEM_VAULT (a new one: `mdmem init` "
            "in a folder of its own, never a code repository)"
        )
    raise VaultNotFoundError(
        f"no mdmem vault at or above {here} (run `mdmem init PATH` or pass --vault)"
    )


def _repository_of(here: Path) -> Path | None:
    """The top of the git work tree ``here`` is in, or None."""
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def enclosing_vault(path: Path) -> Path | None:
    """The vault ``path`` lies inside (``path`` itself excluded), or None.

    Walks up from ``path`` (or the nearest part of it that exists) to the first
    folder holding ``mdmem.toml``; a git work tree of its own on the way (a
    ``.git`` folder or file) is another repository, not part of a vault above it.
    """
    target = path.expanduser().absolute()
    here = target
    while not here.exists() and here != here.parent:
        here = here.parent
    here = here.resolve()
    # A folder still to be made counts from its nearest existing ancestor on.
    candidates = (here, *here.parents) if here != target.resolve() else here.parents
    for candidate in candidates:
        if (candidate / "mdmem.toml").is_file():
            return candidate
        if (candidate / ".git").exists():
            return None
    return None


def resolve_vault_path(path: str | os.PathLike[str]) -> Path:
    """``path`` when it is a vault; the vault when ``path`` is a folder inside one
    (as git finds its repository from a subfolder); else VaultNotFoundError.

    A subfolder must not be taken for a new vault: ``mdmem init`` there would
    nest a second repository inside the first.
    """
    root = Path(path).expanduser()
    if (root / "mdmem.toml").is_file():
        return root
    if not (root / ".git").exists():
        outer = enclosing_vault(root)
        if outer is not None:
            return outer
    if (root / ".git").exists():
        raise VaultNotFoundError(
            f"{root} is a git repository, not an mdmem vault (no mdmem.toml): "
            "name your vault with --vault PATH or MDMEM_VAULT (`mdmem init PATH` makes a "
            "vault of a folder of notes, never of a code repository)"
        )
    raise VaultNotFoundError(
        f"{root} is not an mdmem vault (no mdmem.toml): run `mdmem init {root}`"
    )


def template_dir() -> Path:
    """``vault_template/`` of a source checkout, or the copy packaged with mdmem."""
    for candidate in (_PACKAGE.parent / "vault_template", _PACKAGE / "_vault_template"):
        if candidate.is_dir():
            return candidate
    raise VaultNotFoundError("vault_template is missing from this mdmem installation")


def check_new_vault(root: Path, agent: str | None) -> None:
    """Raise unless a vault may be made at ``root`` for ``agent`` (VaultExistsError
    when ``root`` holds one already, InvalidInputError for a bad agent name)."""
    if (root / "mdmem.toml").exists():
        raise VaultExistsError(f"{root} already holds an mdmem vault")
    outer = enclosing_vault(root)
    if outer is not None:
        raise VaultExistsError(
            f"{root} is inside the mdmem vault {outer}: a vault can't hold another "
            f"(use --vault {outer}, or init a folder outside it)"
        )
    if agent is not None and not _AGENT_OK.fullmatch(agent):
        raise InvalidInputError(f"invalid agent name {agent!r}: letters, digits, . _ - @")


def set_default_agent(root: Path, agent: str) -> None:
    """``agent`` becomes the vault's default author from now on, not only of the first commit."""
    toml = root / "mdmem.toml"
    toml.write_text(
        _AGENT_LINE.sub(f'agent = "{agent}"', toml.read_text(encoding="utf-8"), count=1),
        encoding="utf-8",
    )


def locate(path: str | os.PathLike[str] | None, **overrides: Any) -> tuple[Path, Settings]:
    """The vault folder at ``path`` (or found by walking up from the cwd) and its settings."""
    root = find_vault_root() if path is None else resolve_vault_path(path)
    if not (root / ".git").exists():
        GitStore.init(root)
    git = GitStore(root)
    return root, load_settings(root, is_tracked=lambda rel: rel in git.tracked(), **overrides)
