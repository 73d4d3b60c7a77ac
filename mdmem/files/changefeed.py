"""Which markdown files changed since the last look, from Linux inotify.

Recall must see an edit made on disk just before it. The stat scan does that
at one ``stat`` per file: about 50-100 ms at 10k files on a small VM, more
than the rest of a recall. inotify reports the same changes, and reading its
queue is synchronous: an event is queued by the kernel before the writer's
``write``/``rename`` returns, so draining the queue at recall time sees every
edit that finished before the call, with no race against a background thread.

The feed only narrows the scan; whenever it cannot vouch for the whole tree it
says so (``drain`` returns None) and the caller stats everything, as without
it: queue overflow, a folder created, moved or deleted (new folders need
watches; a move changes every path under it), a watch lost. It is used only
where inotify is known to see every writer: Linux, on a local filesystem (a
network or FUSE mount does not report changes made on other machines).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
import sys

__all__ = ["LOCAL_FILESYSTEMS", "ChangeFeed"]

# Notes, and the fields files beside them (mdmem.files.sidecar).
_WATCHED = (".md", ".md.jsonl")

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")
# Whole-tree events: the caller must scan everything.
_RESCAN = _IN_Q_OVERFLOW | _IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF

#: Filesystem types whose changes all pass through this kernel: a feed is
#: opened only on these (:meth:`ChangeFeed.open`; tests empty it to stand
#: in for a network mount).
LOCAL_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "ramfs", "bcachefs"}
)


def _fs_type(path: str) -> str | None:
    """The filesystem type of the mount holding ``path`` (from /proc/self/mountinfo)."""
    best, kind = "", None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
    except OSError:
        return None
    return kind


class ChangeFeed:
    """An inotify instance watching the vault's folders (see the module docstring)."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self._fd = fd
        self._libc = libc
        self._dirs: dict[int, str] = {}  # watch descriptor -> folder relative to the root
        self._broken = False

    @classmethod
    def open(cls, root: str) -> ChangeFeed | None:
        """A feed for the vault at ``root``, or None where inotify cannot vouch for it."""
        if not sys.platform.startswith("linux"):
            return None
        if _fs_type(os.path.realpath(root)) not in LOCAL_FILESYSTEMS:
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init = libc.inotify_init1
        except (OSError, AttributeError):
            return None
        init.argtypes = [ctypes.c_int]
        init.restype = ctypes.c_int
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_add_watch.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        return cls(fd, libc)

    def watch(self, rel_dir: str, directory: str) -> None:
        """Watch one folder; call before listing it, so no change falls in between."""
        if self._fd < 0:
            return
        wd = self._libc.inotify_add_watch(self._fd, os.fsencode(directory), _MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOSPC, errno.ENOMEM):
                # Out of watches (fs.inotify.max_user_watches): stat scans from now on.
                self._broken = True
            return  # a folder gone meanwhile: the scan does not list it either
        self._dirs[wd] = rel_dir

    def drain(self) -> set[str] | None:
        """Markdown paths touched since the last drain, or None: scan everything."""
        if self._fd < 0 or self._broken:
            return None
        touched: set[str] = set()
        rescan = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self._broken = True
                return None
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
                name_bytes = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                if mask & _RESCAN or mask & _IN_ISDIR:
                    rescan = True
                    if mask & _IN_IGNORED:
                        self._dirs.pop(wd, None)
                    continue
                rel_dir = self._dirs.get(wd)
                name = os.fsdecode(name_bytes.rstrip(b"\0"))
                if rel_dir is None or name.startswith(".") or not name.endswith(_WATCHED):
                    continue
                touched.add(f"{rel_dir}/{name}" if rel_dir else name)
        return None if rescan else touched

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        # inotify instances are a per-user budget (often 128): a vault that is
        # never closed must not hold one for the life of the process.
        with contextlib.suppress(Exception):  # also at interpreter shutdown
            self.close()
