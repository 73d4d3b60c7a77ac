"""Where a vault is, and making a new one: the folder side of ``Vault.init``/``open``."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from mdmem.config import Settings, load_settings
from mdmem.errors import InvalidInputError, VaultExistsError, VaultNotFoundError
from mdmem.store.gitstore import GitStore

__all__ = ["create_vault_files", "find_vault_root", "locate", "template_dir"]

_AGENT_OK = re.compile(r"[A-Za-z0-9][\w.@-]{0,63}")
_AGENT_LINE = re.compile(r'^agent = "[^"\n]*"', re.MULTILINE)
_PACKAGE = Path(__file__).resolve().parent.parent


def find_vault_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` holding ``mdmem.toml``."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "mdmem.toml").is_file():
            return candidate
    raise VaultNotFoundError(
        f"no mdmem vault at or above {here} (run `mdmem init PATH` or pass --vault)"
    )


def template_dir() -> Path:
    """``vault_template/`` of a source checkout, or the copy packaged with mdmem."""
    for candidate in (_PACKAGE.parent / "vault_template", _PACKAGE / "_vault_template"):
        if candidate.is_dir():
            return candidate
    raise VaultNotFoundError("vault_template is missing from this mdmem installation")


def create_vault_files(root: Path, agent: str | None) -> None:
    """Copy the template into ``root`` (files already there are kept) and ``git init``.

    ``agent`` becomes the vault's default author from now on, not only of the
    first commit. Raises VaultExistsError when ``root`` holds a vault already.
    """
    if (root / "mdmem.toml").exists():
        raise VaultExistsError(f"{root} already holds an mdmem vault")
    if agent is not None and not _AGENT_OK.fullmatch(agent):
        raise InvalidInputError(f"invalid agent name {agent!r}: letters, digits, . _ - @")
    root.mkdir(parents=True, exist_ok=True)
    for item in template_dir().iterdir():
        target = root / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True)
        elif not target.exists():
            shutil.copy2(item, target)
    if agent is not None:
        toml = root / "mdmem.toml"
        toml.write_text(
            _AGENT_LINE.sub(f'agent = "{agent}"', toml.read_text(encoding="utf-8"), count=1),
            encoding="utf-8",
        )
    if not GitStore(root).is_repo():
        GitStore.init(root)


def locate(path: str | os.PathLike[str] | None, **overrides: Any) -> tuple[Path, Settings]:
    """The vault folder at ``path`` (or found by walking up from the cwd) and its settings."""
    if path is None:
        root = find_vault_root()
    else:
        root = Path(path).expanduser()
        if not (root / "mdmem.toml").is_file():
            raise VaultNotFoundError(
                f"{root} is not an mdmem vault (no mdmem.toml): run `mdmem init {root}`"
            )
    if not (root / ".git").exists():
        GitStore.init(root)
    git = GitStore(root)
    return root, load_settings(root, is_tracked=lambda rel: rel in git.tracked(), **overrides)
