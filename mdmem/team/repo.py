"""Where a code repository's team tier lives, read without starting git.

The team tier is the folder :data:`TEAM_DIR` of a git repository: one
markdown file per subject (:data:`TEAM_FILES`) and a README. This module
finds the repository a path is in, its ``origin`` remote and the team files,
by reading files only, so a hook can ask on every prompt within its budget.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import TeamError

__all__ = [
    "FIELDS_DIR",
    "TEAM_DIR",
    "TEAM_FILES",
    "Checkout",
    "fields_files",
    "find_checkout",
    "require_checkout",
    "team_files",
]

TEAM_DIR = ".mdmem/team"
#: The fields kept beside the team files (mdmem.files.sidecar), one file per note.
FIELDS_DIR = f"{TEAM_DIR}/.fields"
#: The team's files: what each holds.
TEAM_FILES = {
    "decisions.md": "Decisions the team took, and why",
    "conventions.md": "How this code base does things",
    "gotchas.md": "Traps in this code base and how to avoid them",
}
_MAX_CONFIG = 256 * 1024
_MAX_REF = 64 * 1024
_SHA = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Checkout:
    """A working tree of a git repository: its top folder, git dir and ``origin`` URL."""

    root: Path  # real path of the top folder
    git_dir: Path  # the folder holding HEAD (a worktree's own git dir)
    common_dir: Path  # the folder holding config (shared by worktrees)

    @property
    def team_dir(self) -> Path:
        return self.root / TEAM_DIR

    @property
    def name(self) -> str:
        """The repository's short name: the ``origin`` URL's last part, else the folder's."""
        url = self.remote().rstrip("/")
        last = url.replace("\\", "/").replace(":", "/").rsplit("/", 1)[-1] if url else ""
        last = last[:-4] if last.endswith(".git") else last
        return last or self.root.name

    def remote(self) -> str:
        """The ``origin`` remote's URL as ``.git/config`` says it ("" without one)."""
        try:
            with open(self.common_dir / "config", "rb") as handle:
                text = handle.read(_MAX_CONFIG).decode("utf-8", "replace")
        except OSError:
            return ""
        inside = False
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("["):
                inside = line.replace(" ", "").replace("'", '"') == '[remote"origin"]'
            elif inside and "=" in line:
                key, _, value = line.partition("=")
                if key.strip().lower() == "url":
                    return value.strip().strip('"')
        return ""

    def head(self) -> str | None:
        """The commit HEAD names, read from git's files (no git process): what the
        team tier's provenance is cached under. None when it can't be told."""
        ref = _small(self.git_dir / "HEAD")
        if ref is None:
            return None
        if not ref.startswith("ref:"):
            return ref if _is_sha(ref) else None
        name = ref[len("ref:") :].strip()
        for folder in (self.git_dir, self.common_dir):
            loose = _small(folder / name)
            if loose is not None and _is_sha(loose):
                return loose
        packed = _small(self.common_dir / "packed-refs", _MAX_CONFIG * 64) or ""
        for line in packed.splitlines():
            sha, _, refname = line.partition(" ")
            if refname.strip() == name and _is_sha(sha):
                return sha
        return None

    @property
    def shallow(self) -> bool:
        """Whether the clone's history is cut short (``git clone --depth``): what
        happened before its first commit, an acceptance included, is not there."""
        return (self.common_dir / "shallow").is_file()


def find_checkout(start: str | os.PathLike[str] | None) -> Checkout | None:
    """The git working tree ``start`` is in (walking up), or None."""
    if not start:
        return None
    here = Path(start).expanduser()
    if not here.is_absolute():
        here = Path.cwd() / here
    try:
        here = here.resolve()
    except OSError:
        return None
    for top in (here, *here.parents):
        dot_git = top / ".git"
        if dot_git.is_dir():
            return Checkout(top, dot_git, _common(dot_git))
        if dot_git.is_file():
            git_dir = _gitdir_of(dot_git)
            if git_dir is not None:
                return Checkout(top, git_dir, _common(git_dir))
    return None


def require_checkout(start: str | os.PathLike[str] | None) -> Checkout:
    """:func:`find_checkout`, or a one-line TeamError outside a repository."""
    found = find_checkout(start or os.getcwd())
    if found is None:
        raise TeamError(
            f"{start or os.getcwd()} is not inside a git repository; "
            "run `mdmem team` inside your code repository (or pass --repo)"
        )
    return found


def team_files(checkout: Checkout) -> list[tuple[str, Path]]:
    """(repository-relative path, real path) of each ``*.md`` team file except the
    README, sorted; a file or symlink leading outside the repository is left out."""
    return _files_in(
        checkout, TEAM_DIR, lambda name: name.endswith(".md") and name.lower() != "readme.md"
    )


def fields_files(checkout: Checkout) -> list[tuple[str, Path]]:
    """(repository-relative path, real path) of each fields file beside the team
    files (``.mdmem/team/.fields/*.md.jsonl``), sorted; none leading outside."""
    return _files_in(checkout, FIELDS_DIR, lambda name: name.endswith(".md.jsonl"))


def _files_in(
    checkout: Checkout, rel: str, wanted: Callable[[str], bool]
) -> list[tuple[str, Path]]:
    folder = checkout.root / rel
    try:
        real_folder = folder.resolve()
        entries = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    if checkout.root != real_folder and checkout.root not in real_folder.parents:
        return []
    found = []
    for entry in entries:
        if not wanted(entry.name):
            continue
        try:
            real = entry.resolve()
        except OSError:
            continue
        if checkout.root in real.parents and real.is_file():
            found.append((f"{rel}/{entry.name}", real))
    return found


def _small(path: Path, limit: int = _MAX_REF) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace").strip()
    except OSError:
        return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _SHA


def _gitdir_of(dot_git: Path) -> Path | None:
    try:
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    git_dir = Path(text[len("gitdir:") :].strip())
    return git_dir if git_dir.is_absolute() else (dot_git.parent / git_dir).resolve()


def _common(git_dir: Path) -> Path:
    try:
        text = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    common = Path(text)
    return common if common.is_absolute() else (git_dir / common).resolve()
