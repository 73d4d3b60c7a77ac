"""A project's identity: what is unique to its repository, as a readable scope.

A short name is not an identity: ``acme/api`` and ``otherco/api`` share
``api``, and every remote-less ``app`` folder shares ``app``. So the identity
of a repository is, in order:

1. its ``origin`` remote, normalised (:func:`normalise_remote`): host, owner
   and name in lower case, without the user, port, scheme or ``.git`` suffix,
   so every clone and every spelling of one remote agree;
2. else an id recorded in the repository's own git config
   (``git config mdmem.projectid <random>``) the first time a hook runs
   there — the repository's ``.git/config`` is never cloned, so no one can
   ship an id inside a repository, and a person may set the same id in two
   checkouts by hand to make them one project. Beside the id, the place it
   was recorded for: the real path of the git folder holding that config
   (``mdmem.projectpath``) and the identity of its object store
   (``mdmem.projectstore``, device and inode). ``cp -r`` of a repository
   copies its config, id and all, but not those two: a copy notices that it
   is one (neither matches) and records a new id of its own, so two copies'
   captures never meet. A repository moved on the same disk keeps its
   object store's inode: it keeps its id and records its new path;
3. else (git could not record the id) the repository's absolute path.

The scope is ``project:<name>-<12 hex of sha256(identity)>``: the name keeps it
readable (and a sane folder name, ``scopes/project/api-3f9a…``), the 48-bit
hash makes it unique and out of reach of anyone who can only choose a short
name. Files are read, not git run, except once to record an id.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "ID_KEY",
    "PATH_KEY",
    "STORE_KEY",
    "ProjectIdentity",
    "find_repository",
    "folder_identity",
    "legacy_scope",
    "normalise_remote",
    "project_identity",
]

ID_KEY = "mdmem.projectid"
PATH_KEY = "mdmem.projectpath"
STORE_KEY = "mdmem.projectstore"
_HASH_CHARS = 12
_MAX_GIT_FILE = 64 * 1024
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEYVAL = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*?)\s*$")
_NAME_BAD = re.compile(r"[^a-z0-9._-]+")
_ID_OK = re.compile(r"[A-Za-z0-9._-]{8,128}")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$")
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]{2,}):(?!//)(.*)$")


@dataclass(frozen=True)
class ProjectIdentity:
    """Who a working folder's project is: ``key`` is unique, ``scope`` is its readable form."""

    key: str  # "github.com/acme/api", "id:…", "path:/…" or "folder:/…"
    # "remote", "git config", "new id", "new id (copied)", "path" or "folder"
    source: str
    name: str  # the readable part of the scope
    top: str  # the repository's top level (or the folder, outside one)
    copied_from: str = ""  # "new id (copied)": the git folder the old id was recorded for

    @property
    def scope(self) -> str:
        digest = hashlib.sha256(self.key.encode("utf-8")).hexdigest()[:_HASH_CHARS]
        return f"project:{_clean(self.name, 63 - _HASH_CHARS)}-{digest}"


def normalise_remote(url: str, base: str | os.PathLike[str] | None = None) -> str | None:
    """One spelling for one remote: ``host/owner/name`` in lower case, or ``file:/path``.

    ``git@GitHub.com:Acme/API.git``, ``ssh://git@github.com:22/acme/api`` and
    ``https://user@github.com/acme/api/`` are all ``github.com/acme/api``. A
    local path (``/srv/git/api``, ``file://…``, ``../api`` from ``base``) is
    its absolute, normalised path.
    """
    url = url.strip().strip("\"'").strip()
    if not url:
        return None
    host = ""
    if m := _SCHEME.match(url):
        scheme, rest = m.group(1).lower(), m.group(2)
        if scheme == "file":
            return _local(rest, base)
        authority, _, path = rest.partition("/")
        host = authority.rsplit("@", 1)[-1]
        host = host.split("]")[-1] if host.startswith("[") else host.split(":")[0]
        host = host or authority.strip("[]")
    elif (m := _SCP.match(url)) and "/" not in m.group(1):
        host, path = m.group(1).rsplit("@", 1)[-1], m.group(2)
    else:
        return _local(url, base)
    parts = [p for p in path.replace("\\", "/").split("/") if p and p != "."]
    if not host or not parts:
        return None
    if parts[-1].lower().endswith(".git"):
        parts[-1] = parts[-1][:-4]
    return "/".join([host, *parts]).lower().strip("/")


def _local(path: str, base: str | os.PathLike[str] | None) -> str:
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None:
        p = Path(base) / p
    return "file:" + os.path.normpath(str(p))


def find_repository(cwd: str | os.PathLike[str] | None) -> tuple[Path, Path] | None:
    """(top level, its ``.git``) for the repository ``cwd`` is in, or None outside one."""
    if not cwd:
        return None
    here = Path(cwd).expanduser()
    if not here.is_absolute():
        return None  # a relative cwd from a payload means nothing here
    for top in (here, *here.parents):
        dot_git = top / ".git"
        if dot_git.exists():
            return top, dot_git
    return None


def project_identity(
    cwd: str | os.PathLike[str] | None, *, record: bool = True
) -> ProjectIdentity | None:
    """The identity of the repository ``cwd`` is in (None outside one).

    ``record``: without a remote, write a new random id to the repository's
    git config if it has none (False: report what would be, ``source="path"``).
    """
    found = find_repository(cwd)
    if found is None:
        return None
    top, dot_git = found
    config = _git_config(dot_git)
    values = _config_values(config)
    remote = values.get(("remote", "origin", "url"))
    key = normalise_remote(remote, top) if remote else None
    if key is not None:
        name = PurePosixPath(key.split(":", 1)[-1] if key.startswith("file:") else key).name
        return ProjectIdentity(key, "remote", name or top.name, str(top))
    recorded = values.get(("mdmem", "", "projectid"))
    place = _place(config)
    if recorded and _ID_OK.fullmatch(recorded):
        seen = (values.get(("mdmem", "", "projectpath")), values.get(("mdmem", "", "projectstore")))
        if place is None or seen[0] in (None, place[0]) or seen[1] == place[1]:
            # Recorded here (or before places were recorded, or moved on the same
            # disk): the id holds; the place is noted for the next copy to notice.
            if record and config is not None and place is not None and seen != place:
                _record_place(config, place)
            return ProjectIdentity(f"id:{recorded}", "git config", top.name, str(top))
        # Recorded for another repository: this is a copy (cp -r) of it.
        if record and config is not None and place is not None:
            made = _record_id(config, place, replace=True)
            if made:
                return ProjectIdentity(
                    f"id:{made}", "new id (copied)", top.name, str(top), seen[0] or ""
                )
    elif record and config is not None and not recorded:
        made = _record_id(config, place)
        if made:
            return ProjectIdentity(f"id:{made}", "new id", top.name, str(top))
    # Unwritable (or a hand-set id git would not parse): the path is unique on this machine.
    return ProjectIdentity(f"path:{top}", "path", top.name, str(top))


def folder_identity(cwd: str | os.PathLike[str]) -> ProjectIdentity:
    """A scope of its own for a folder outside any repository (opt-in, see the hooks docs)."""
    here = Path(os.path.normpath(Path(cwd).expanduser()))
    return ProjectIdentity(f"folder:{here}", "folder", here.name or "root", str(here))


def legacy_scope(cwd: str | os.PathLike[str] | None) -> str | None:
    """The short-name scope the hooks derived before 0.1.1 (``project:api``), for migration."""
    found = find_repository(cwd)
    if found is None:
        return None
    top, dot_git = found
    remote = _config_values(_git_config(dot_git)).get(("remote", "origin", "url"))
    name = top.name
    if remote:
        last = re.split(r"[/:\\]", remote.strip().strip("\"'").rstrip("/"))[-1]
        name = last[:-4] if last.endswith(".git") else last
    clean = _NAME_BAD.sub("-", name.lower()).strip(".-_")[:64].rstrip(".-_")
    return f"project:{clean}" if clean else None


def _clean(name: str, limit: int) -> str:
    clean = _NAME_BAD.sub("-", name.lower()).strip(".-_")[:limit].rstrip(".-_")
    if not clean or not clean[0].isalnum():
        clean = ("p" + clean)[:limit]
    return clean


def _git_config(dot_git: Path) -> Path | None:
    """The repository's ``config``: ``.git/config``, or a worktree's common dir's."""
    if dot_git.is_dir():
        return dot_git / "config"
    data = _read_small(dot_git)  # a worktree's or submodule's "gitdir: …"
    text = data.decode("utf-8", "replace").strip() if data else ""
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:") :].strip())
    if not gitdir.is_absolute():
        gitdir = dot_git.parent / gitdir
    common = _read_small(gitdir / "commondir")
    if common:
        other = Path(common.decode("utf-8", "replace").strip())
        gitdir = other if other.is_absolute() else gitdir / other
    return gitdir / "config"


def _config_values(config: Path | None) -> dict[tuple[str, str, str], str]:
    """The first value of each ``(section, subsection, key)`` in a git config file."""
    data = _read_small(config) if config is not None else None
    out: dict[tuple[str, str, str], str] = {}
    section: tuple[str, str] | None = None
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if m := _SECTION.match(line):
            section = (m.group(1).lower(), m.group(2) or "")
            line = m.group(3)
        if section is not None and (kv := _KEYVAL.match(line)):
            value = kv.group(2).split(" #")[0].split(" ;")[0].strip().strip('"')
            out.setdefault((*section, kv.group(1).lower()), value)
    return out


def _place(config: Path | None) -> tuple[str, str] | None:
    """(real path of the git folder holding ``config``, "device:inode" of its object
    store): what a copy of the repository does not share with it. None when unknown."""
    if config is None:
        return None
    try:
        folder = config.parent.resolve()
        objects = os.stat(folder / "objects")
    except OSError:
        return None
    return str(folder), f"{objects.st_dev}:{objects.st_ino}"


def _git_config_file(config: Path, *args: str) -> bool:
    try:
        subprocess.run(
            ["git", "config", "--file", str(config), *args],
            capture_output=True,
            timeout=10,
            check=True,
            env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _record_place(config: Path, place: tuple[str, str]) -> None:
    _git_config_file(config, PATH_KEY, place[0])
    _git_config_file(config, STORE_KEY, place[1])


def _record_id(
    config: Path, place: tuple[str, str] | None, *, replace: bool = False
) -> str | None:
    """Add a random project id to ``config`` (``replace``: instead of a copied one);
    the first one recorded wins a race."""
    made = secrets.token_hex(8)
    mode = "--replace-all" if replace else "--add"
    if not _git_config_file(config, mode, ID_KEY, made):
        return None
    if place is not None:
        _record_place(config, place)
    # Two hooks starting at once may both add one: every reader takes the first.
    first = _config_values(config).get(("mdmem", "", "projectid"))
    return first if first and _ID_OK.fullmatch(first) else None


def _read_small(path: Path) -> bytes | None:
    # Git's own small files: a regular file only (a FIFO planted as .git would hang).
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MAX_GIT_FILE)
    except OSError:
        return None
    finally:
        os.close(fd)
