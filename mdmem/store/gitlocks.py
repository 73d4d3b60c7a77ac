"""Git lock files (``.git/index.lock``, ``HEAD.lock``, ref locks) whose git is gone.

Git creates ``<file>.lock`` before it changes a file and renames or removes
it when done; its own signal handlers clean up on a crash, but a SIGKILL (an
OOM kill, a killed process group, a power loss) leaves the lock behind, and
every later git write fails with ``File exists`` until someone removes it.

The rule for removing one: **a lock is stale when no live git process can be
using the repository and the lock has not changed for ``grace`` seconds.**

* mdmem runs its git commands for a vault only under that vault's lock, so
  when we hold the vault lock no other mdmem git process can be writing it;
  but a person's own git (a ``git commit`` waiting in their editor holds
  ``index.lock`` for minutes) or a git orphaned by a killed writer may be.
* On Linux, live processes are read from ``/proc``: any process whose name
  starts with ``git`` and whose working directory is inside the vault, or
  whose command line or ``GIT_DIR``/``GIT_WORK_TREE``/``GIT_INDEX_FILE``
  names it, counts as using the repository. A git process whose details we
  may not read (another user's) counts as using it too. One that started
  after the lock was last written can't have made it (git takes its locks
  after it starts, and fails on one that exists), so a ``git log`` left open
  in a pager since does not keep a dead git's lock alive.
* Programs that write git repositories without running git (libgit2, JGit)
  hold their locks for milliseconds; the grace period lets them finish.
  Without ``/proc`` (macOS, BSD) only the age can be judged, so there the
  lock must be older than :data:`NO_PROC_AGE`.

A lock is removed only if it is still the same file (inode and mtime) after
the check, so a lock a new git created meanwhile is never touched.
"""

from __future__ import annotations

import functools
import os
import re
import time
from pathlib import Path

__all__ = [
    "NO_PROC_AGE",
    "WRITE_GRACE",
    "git_lock_files",
    "git_processes_using",
    "held_lock_in",
    "remove_if_stale",
    "stale_git_locks",
]

WRITE_GRACE = 2.0  # seconds a lock must be unchanged before a write removes it
NO_PROC_AGE = 60.0  # without /proc, the age that makes a lock stale
_PROC = Path("/proc")
# /proc gives boot time in whole seconds and start times in clock ticks.
_START_SLACK = 2.0
_GIT_ENV = (b"GIT_DIR=", b"GIT_WORK_TREE=", b"GIT_INDEX_FILE=", b"GIT_COMMON_DIR=")
# git: "Unable to create '/path/.git/index.lock': File exists."
_HELD = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def held_lock_in(message: str) -> Path | None:
    """The lock file a git error message says exists, if it says so."""
    match = _HELD.search(message)
    return Path(match.group(1)) if match else None


def git_lock_files(root: Path) -> list[Path]:
    """Lock files in the repository's ``.git``: top-level ones and ref locks."""
    git_dir = root / ".git"
    if not git_dir.is_dir():
        return []
    found = sorted(p for p in git_dir.glob("*.lock") if p.is_file())
    refs = git_dir / "refs"
    if refs.is_dir():
        found += sorted(p for p in refs.rglob("*.lock") if p.is_file())
    return found


def git_processes_using(root: Path, *, started_before: float | None = None) -> list[int] | None:
    """Pids of live git processes that may be using the repository; None without /proc.

    With ``started_before`` (a Unix time), only processes started by then.
    """
    if not (_PROC / "self").is_dir():
        return None
    root = root.resolve()
    me = os.getpid()
    pids = []
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        proc = _PROC / entry.name
        try:
            name = (proc / "comm").read_text().strip()
        except OSError:
            continue  # exited meanwhile
        if not name.startswith("git"):
            continue
        if started_before is not None and _started_at(proc) > started_before:
            continue
        if _uses(proc, root):
            pids.append(int(entry.name))
    return pids


def stale_git_locks(root: Path, *, grace: float) -> list[Path]:
    """The lock files in ``.git`` that :func:`remove_if_stale` would remove now."""
    return [lock for lock in git_lock_files(root) if _stale(lock, root, grace)]


def remove_if_stale(lock: Path, root: Path, *, grace: float) -> bool:
    """Remove ``lock`` if no git can own it (see the module rule); True if it is gone."""
    try:
        before = lock.stat()
    except FileNotFoundError:
        return True
    if not _stale(lock, root, grace):
        return False
    try:
        after = lock.stat()
        if (after.st_ino, after.st_mtime_ns) != (before.st_ino, before.st_mtime_ns):
            return False  # a new git took it meanwhile
        lock.unlink()
    except FileNotFoundError:
        pass
    return True


def _stale(lock: Path, root: Path, grace: float) -> bool:
    try:
        written = lock.stat().st_mtime
    except FileNotFoundError:
        return True
    owners = git_processes_using(root, started_before=written + _START_SLACK)
    if owners:
        return False
    needed = max(grace, NO_PROC_AGE) if owners is None else grace
    return time.time() - written >= needed


def _started_at(proc: Path) -> float:
    """A process's start as a Unix time (0.0 if unknown: then it counts as old)."""
    try:
        # Field 22, counted after the parenthesised name (which may hold spaces).
        ticks = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[19])
        return _boot_time() + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


@functools.cache
def _boot_time() -> float:
    for line in (_PROC / "stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise ValueError("no btime in /proc/stat")


def _uses(proc: Path, root: Path) -> bool:
    """Whether the process at ``proc`` (a /proc entry) may be using the repository."""
    try:
        cwd = os.readlink(proc / "cwd")
        cmdline = (proc / "cmdline").read_bytes()
        environ = (proc / "environ").read_bytes()
    except PermissionError:
        return True  # another user's git: we can't tell, so we don't touch its locks
    except OSError:
        return False  # it exited meanwhile
    if _inside(cwd, root):
        return True
    here = os.fsencode(root)
    if any(here in arg for arg in cmdline.split(b"\0")):
        return True
    return any(var.startswith(_GIT_ENV) and here in var for var in environ.split(b"\0"))


def _inside(path: str, root: Path) -> bool:
    path = path.removesuffix(" (deleted)")
    return path == str(root) or path.startswith(str(root) + os.sep)
