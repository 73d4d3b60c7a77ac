"""Which process is the coding agent that ran a hook, and whether it still runs.

A host (Claude Code, Codex, Cursor) runs ``mdmem hook …`` as a child, often
through a shell. The warm server keeps running while a host session that
used it is alive, so the hook tells it which process the host is:
:func:`host_process` walks up from the hook's parent past shells and
wrappers and names the first other process, with its start time where the
platform says (Linux ``/proc``), so a recycled pid is not mistaken for the
host. :func:`is_alive` answers for such a pair later.

Standard library only: a hook that the warm server answers imports this.
"""

from __future__ import annotations

import os

__all__ = ["host_process", "is_alive", "start_time"]

# What may stand between a host and the hook it runs: shells, exec wrappers and
# the interpreter of a `python -m mdmem` line. Not a host, whatever it does.
_WRAPPERS = frozenset(
    {
        "sh",
        "bash",
        "dash",
        "zsh",
        "fish",
        "ksh",
        "mksh",
        "env",
        "nice",
        "nohup",
        "timeout",
        "setsid",
        "stdbuf",
        "uv",
        "uvx",
        "mdmem",
    }
)
_MAX_HOPS = 6


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(command name, parent pid, start time in clock ticks) from ``/proc``, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    # "pid (comm) state ppid …": comm may hold spaces and parentheses.
    left, right = raw.find("("), raw.rfind(")")
    if left < 0 or right < left:
        return None
    fields = raw[right + 2 :].split()
    try:
        return raw[left + 1 : right], int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux), or None if unknown."""
    info = _stat(pid)
    return info[2] if info else None


def _is_wrapper(name: str) -> bool:
    return name in _WRAPPERS or name.startswith("python")


def host_process() -> tuple[int, int | None] | None:
    """(pid, start time or None) of the process that ran this hook, past shells.

    None when the parent is gone (the hook was orphaned to init). Where
    ``/proc`` is missing, the parent pid with no start time.
    """
    pid = os.getppid()
    if pid <= 1:
        return None
    for _ in range(_MAX_HOPS):
        info = _stat(pid)
        if info is None:
            return pid, None  # no /proc here: the parent is the best guess
        name, parent, start = info
        if not _is_wrapper(name) or parent <= 1:
            return pid, start
        pid = parent
    return pid, start_time(pid)


def is_alive(pid: int, start: int | None = None) -> bool:
    """Whether process ``pid`` runs (and, given ``start``, is the same process)."""
    if pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, as another user
    except OSError:
        return False
    if start is None:
        return True
    now = start_time(pid)
    return now is None or now == start
