"""The vault lock: one writer at a time across processes, served in arrival order.

It has two parts, both built on ``flock``, which the kernel releases the
moment a process dies (a killed writer never leaves the lock taken):

* **The gate** gives mutual exclusion: an exclusive ``flock`` on the vault
  folder itself (its directory inode). A lock *file* can't do this safely: a
  flock belongs to an inode, so once someone deletes the file (clearing a
  cache folder), the next process creates a new file at the same path, locks
  that inode and gets in beside the holder. Checking after the lock that the
  path still names our inode does not help either: the newcomer's inode is
  the one at the path. The vault folder can't be replaced while the vault is
  in use, and no file is created for it (derived state stays out of the
  vault). Where directories can't be locked (some network file systems), a
  file in the state dir is used, checked against its path after each lock.
* **The queue** gives fairness. ``flock`` wakes waiters in no order, and a
  writer in a loop takes the lock again within a millisecond of releasing it,
  so polling waiters starved (one process made every write for minutes while
  three others timed out). Each acquire takes a numbered ticket, a file in
  ``<state dir>/vault-lock/`` that its owner keeps flocked while it waits and
  holds, and goes to the gate only when no lower ticket is left. A ticket
  whose flock is free belongs to a dead process and is skipped and removed.
  A writer that comes back gets a new ticket at the end of the queue, so the
  wait is bounded by the number of writers ahead times one write.

The queue is only about order: whatever happens to its files (deleted,
corrupted), the gate alone still keeps writers apart.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from mdmem.errors import LockTimeoutError

__all__ = ["VaultLock"]

_POLL = 0.002  # seconds between looks at the ticket ahead / the gate
_TICKET = re.compile(r"(\d{16})\.(\d+)\.[0-9a-f]+")
# flock on a directory fails with these where the file system can't lock one.
_NO_DIR_LOCKS = {errno.EBADF, errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP}


class VaultLock:
    """A fair, reentrant, cross-process exclusive lock for one vault.

    Not thread-safe on its own: the writer serialises its threads with a
    mutex before taking it.
    """

    def __init__(self, vault_root: Path, state_dir: Path) -> None:
        self.vault_root = vault_root
        self.queue_dir = state_dir / "vault-lock"
        self._fallback_file = state_dir / "vault.lock"
        self._depth = 0
        self._owner_pid = 0
        self._gate_fd: int | None = None
        self._ticket: tuple[int, Path] | None = None  # (fd, path) while waiting or held

    @property
    def held(self) -> bool:
        """Whether this object holds the lock (in this process)."""
        return self._depth > 0 and self._owner_pid == os.getpid()

    @contextmanager
    def hold(self, timeout: float) -> Iterator[None]:
        """The lock for the ``with`` body; :class:`LockTimeoutError` after ``timeout`` s."""
        self.acquire(timeout)
        try:
            yield
        finally:
            self.release()

    def acquire(self, timeout: float) -> None:
        """Take the lock, in turn; LockTimeoutError if ``timeout`` seconds pass first."""
        if self.held:
            self._depth += 1
            return
        self._forget_inherited()
        deadline = time.monotonic() + max(timeout, 0.0)
        try:
            mine = self._take_ticket(deadline)
            self._wait_for_turn(mine, deadline)
            self._gate_fd = self._enter_gate(deadline)
        except BaseException:
            self._drop_ticket()
            raise
        self._depth = 1
        self._owner_pid = os.getpid()

    def release(self) -> None:
        """Give the lock back (the outermost release opens the gate for the next ticket)."""
        if not self.held:
            return
        self._depth -= 1
        if self._depth:
            return
        gate, self._gate_fd = self._gate_fd, None
        if gate is not None:
            # The gate first: the next ticket then finds it open at once.
            with suppress(OSError):
                fcntl.flock(gate, fcntl.LOCK_UN)
            os.close(gate)
        self._drop_ticket()

    # -- the queue -----------------------------------------------------------

    def _take_ticket(self, deadline: float) -> str:
        """Queue up: a flocked ticket numbered after every ticket present."""
        self.queue_dir.mkdir(parents=True, exist_ok=True)
        with self._queue_mutex(deadline):
            numbers = [int(m.group(1)) for m in map(_TICKET.fullmatch, self._names()) if m]
            self._sweep_unfinished()
            name = f"{max(numbers, default=0) + 1:016d}.{os.getpid()}.{secrets.token_hex(4)}"
            # The ticket is locked before it gets its name, so no one can
            # take a ticket in the making for a dead one.
            draft = self.queue_dir / f".{name}.new"
            fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.rename(draft, self.queue_dir / name)
            except BaseException:
                os.close(fd)
                with suppress(OSError):
                    draft.unlink()
                raise
            self._ticket = (fd, self.queue_dir / name)
        return name

    def _wait_for_turn(self, mine: str, deadline: float) -> None:
        """Return once no ticket before ``mine`` is left (dead ones are removed)."""
        while True:
            ahead = sorted(n for n in self._names() if _TICKET.fullmatch(n) and n < mine)
            if not ahead:
                return
            # Watch the nearest one only: it waits for those before it.
            nearest = self.queue_dir / ahead[-1]
            while not _gone(nearest):
                if time.monotonic() >= deadline:
                    raise self._timeout(ahead)
                time.sleep(_POLL)

    def _drop_ticket(self) -> None:
        ticket, self._ticket = self._ticket, None
        if ticket is None:
            return
        fd, path = ticket
        try:
            with suppress(OSError):
                if os.path.samestat(os.stat(path), os.fstat(fd)):
                    path.unlink()
        finally:
            os.close(fd)  # closing releases its flock

    def _names(self) -> list[str]:
        try:
            return os.listdir(self.queue_dir)
        except FileNotFoundError:
            return []  # the state dir was cleared: no queue, the gate still holds

    def _sweep_unfinished(self) -> None:
        """Remove tickets a process died while making (under the queue mutex)."""
        for name in self._names():
            if name.startswith(".") and name.endswith(".new"):
                _gone(self.queue_dir / name)

    @contextmanager
    def _queue_mutex(self, deadline: float) -> Iterator[None]:
        """A short exclusive hold on the queue, for numbering tickets."""
        fd = _lock_path_file(self.queue_dir / "mutex", deadline)
        if fd is None:
            raise self._timeout([])
        try:
            yield
        finally:
            os.close(fd)

    # -- the gate ------------------------------------------------------------

    def _enter_gate(self, deadline: float) -> int:
        try:
            fd = os.open(self.vault_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            fd = None
        if fd is not None:
            try:
                while not _try_flock(fd):
                    if time.monotonic() >= deadline:
                        raise self._timeout([])
                    time.sleep(_POLL)
                return fd
            except OSError as exc:
                os.close(fd)
                if exc.errno not in _NO_DIR_LOCKS:
                    raise
            except BaseException:
                os.close(fd)
                raise
        locked = _lock_path_file(self._fallback_file, deadline)
        if locked is None:
            raise self._timeout([])
        return locked

    # -- helpers -------------------------------------------------------------

    def _forget_inherited(self) -> None:
        """In a forked child, drop the parent's descriptors without unlocking them."""
        if self._owner_pid and self._owner_pid != os.getpid():
            for fd in (self._gate_fd, self._ticket[0] if self._ticket else None):
                if fd is not None:
                    with suppress(OSError):
                        os.close(fd)
            self._gate_fd, self._ticket, self._depth, self._owner_pid = None, None, 0, 0

    def _timeout(self, ahead: list[str]) -> LockTimeoutError:
        holders = [m.group(2) for m in map(_TICKET.fullmatch, ahead) if m]
        who = f" (process {holders[0]} is ahead, {len(holders)} waiting)" if holders else ""
        return LockTimeoutError(f"another process holds the vault lock of {self.vault_root}{who}")


def _try_flock(fd: int, how: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _gone(path: Path) -> bool:
    """True when no live process holds the ticket at ``path`` (a dead one is removed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        if not _try_flock(fd, fcntl.LOCK_SH):
            return False
        # Free: its owner died, or released it and is about to remove it.
        with suppress(OSError):
            if os.path.samestat(os.stat(path), os.fstat(fd)):
                path.unlink()
        return True
    finally:
        os.close(fd)


def _lock_path_file(path: Path, deadline: float) -> int | None:
    """An exclusive flock on the file at ``path``, or None at the deadline.

    After each lock the path is checked to still name the locked inode: a
    file deleted (or replaced) between our open and our lock is not the lock
    any more, and the next opener would lock another one.
    """
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if _try_flock(fd):
                try:
                    if os.path.samestat(os.stat(path), os.fstat(fd)):
                        return fd
                except FileNotFoundError:
                    pass
                os.close(fd)
                continue  # it was replaced: lock the file now at the path
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        if time.monotonic() >= deadline:
            return None
        time.sleep(_POLL)
