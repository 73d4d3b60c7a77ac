"""Compare-and-swap of one file against a person editing it at the same time.

The writer stages its new bytes, checks that the file still holds what it
read, and renames over it. A user-space compare-and-swap can't stop an
editor from writing a moment after the check, so the replaced inode is
watched for a while (:class:`Orphans`) and bytes that land there are carried
over to the new file.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import GitError, MdmemError
from mdmem.files.textfile import (
    FileStat,
    atomic_write,
    discard_temp,
    file_stat,
    fsync_file,
    install_temp,
    safe_path,
    write_temp,
)
from mdmem.models import one_line
from mdmem.store.editors import Pending

__all__ = ["Orphans", "Swapped", "after_their_appends", "swap", "undo", "undo_all"]

log = logging.getLogger("mdmem")

_CAREFUL_WAIT = 0.02
_APPEND_MERGES = 3  # re-stagings per swap when someone keeps appending to the file
_ORPHAN_WATCH = 5.0  # seconds a replaced inode is watched for late writes


@dataclass(frozen=True)
class Swapped:
    """What a successful swap did."""

    base: bytes | None  # the file as our rename replaced it (None: there was none)
    ours: bytes  # what our rename put in place
    # The file right after the rename, or None if it was no longer only ours
    # by then (someone wrote to it within those microseconds).
    stat: FileStat | None


class Orphans:
    """Replaced files still open elsewhere: bytes written to them are carried over."""

    def __init__(self) -> None:
        self._watched: list[tuple[int, int, Path, float]] = []

    def __bool__(self) -> bool:
        return bool(self._watched)

    def watch(self, fd: int, size: int, full: Path) -> None:
        """Keep ``fd`` (the replaced inode of ``full``, ``size`` bytes) for a while."""
        self._watched.append((fd, size, full, time.monotonic() + _ORPHAN_WATCH))

    def expire_all(self) -> None:
        """Make every watch end at the next :meth:`rescue` (on close)."""
        self._watched = [(fd, n, p, 0.0) for fd, n, p, _ in self._watched]

    def rescue(self) -> None:
        """Bytes written to a file we had already replaced are appended to the new one.

        A process that opened the file just before our rename may write a
        moment after it; those bytes land in the unlinked old inode. Every
        later write (and close) looks there first, so they are not lost.
        """
        keep = []
        for fd, expected, full, deadline in self._watched:
            try:
                size = os.fstat(fd).st_size
                if size > expected:
                    extra = os.pread(fd, size - expected, expected)
                    _append_in_place(full, extra)
                    log.info("recovered %d bytes written to a replaced %s", len(extra), full.name)
                    expected = size
            except OSError:
                pass
            if time.monotonic() < deadline:
                keep.append((fd, expected, full, deadline))
            else:
                os.close(fd)
        self._watched = keep


def swap(
    full: Path,
    pending: Pending,
    orphans: Orphans,
    *,
    contended: bool = False,
    careful: bool = False,
) -> Swapped | None:
    """Replace the file if it still holds what we read; None if it changed.

    When both sides only appended, lines someone appended meanwhile are kept
    and ours go after them, with no replay (a fast typist cannot starve the
    write); ``Swapped.base`` then holds their version, which the writer
    commits as theirs before ours. Bytes an editor writes to the replaced
    inode after the rename are put after ours in the file, and left for the
    next commit of human edits.

    The new content is staged and fsynced first, so the compare and the
    rename are microseconds apart: the window in which a human's save could
    slip between them is as small as a user-space CAS can make it.
    """
    # Under contention (an editor saving faster than we can fsync) the fsync
    # moves after the rename, shrinking the read-to-rename window to
    # microseconds; the write is still atomic, and durable on return.
    ours = pending.tf.to_bytes()
    expected = pending.original
    synced = not contended
    tmp = write_temp(full, ours, fsync=synced)
    old_fd = None
    try:
        for _ in range(_APPEND_MERGES + 1):
            try:
                old_fd = os.open(full, os.O_RDONLY)
                current: bytes | None = _read_fd(old_fd)
            except FileNotFoundError:
                current = None
            if current == expected:
                break
            merged = after_their_appends(expected, ours, current, pending.only_appends)
            discard_temp(tmp)
            if merged is None:
                return None
            # Both sides only appended: our lines go after theirs, with no
            # replay, so a fast typist cannot starve the write.
            if old_fd is not None:
                os.close(old_fd)
                old_fd = None
            expected, ours, synced = current, merged, False
            tmp = write_temp(full, ours, fsync=False)
        else:
            discard_temp(tmp)
            return None
        staged = os.stat(tmp).st_ino
        install_temp(tmp, full)
        right_after = file_stat(full)
        if right_after is not None and right_after[:2] != (staged, len(ours)):
            right_after = None  # written to already: what git reads may not be ours
        done = Swapped(base=current, ours=ours, stat=right_after)
        if not synced:
            fsync_file(full)
        if careful:
            # An editor that opened the file just before the rename may write
            # a moment later; give it that moment before checking the old
            # inode, so its bytes are not left in an unlinked file.
            time.sleep(_CAREFUL_WAIT)
        if old_fd is not None and os.fstat(old_fd).st_size != len(current or b""):
            # An editor appended to the old inode after our check: its bytes
            # are in a file that is no longer linked. Put them back.
            theirs = _read_fd(old_fd)
            # Bytes appended to the new file meanwhile are kept too.
            try:
                now_new = full.read_bytes()
            except FileNotFoundError:
                now_new = ours
            if current is not None and theirs.startswith(current) and now_new.startswith(ours):
                # They only appended: keep our edit and put their lines after
                # it. Replaying instead could starve the write, as a fast
                # typist appends inside every wait window.
                _append_in_place(full, theirs[len(current) :])
                return done
            if now_new.startswith(ours):
                theirs += now_new[len(ours) :]
            atomic_write(full, theirs)
            pending.original = theirs
            return None
        if old_fd is not None and careful:
            # Keep watching the replaced inode for a moment: an editor holding
            # it open may still append there.
            orphans.watch(old_fd, len(current or b""), full)
            old_fd = None
        return done
    finally:
        if old_fd is not None:
            os.close(old_fd)


def after_their_appends(
    original: bytes | None, ours: bytes, current: bytes | None, only_appends: bool
) -> bytes | None:
    """``current`` plus the lines we appended to ``original``; None unless both only appended."""
    if not only_appends or original is None or current is None:
        return None
    if not (original.endswith(b"\n") and current.endswith(b"\n")):
        return None
    if not (current.startswith(original) and ours.startswith(original)):
        return None
    return current + ours[len(original) :]


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _append_in_place(full: Path, extra: bytes) -> None:
    """Put ``extra`` at the end of the file as it is now, in place.

    Not a rename: someone may be appending to the new file at this very moment
    (a typist saves every few ms), and replacing it with what we read a moment
    ago would drop their line. O_APPEND writes land after theirs.
    """
    fd = os.open(full, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            extra = b"\n" + extra
        view = memoryview(extra)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def undo(full: Path, done: Swapped) -> str | None:
    """Put back what our swap replaced (its commit failed); None when done, else why not.

    Bytes someone added after ours since (an editor's append) are kept after
    the restored text. A file rewritten since is theirs now: left alone. On a
    full disk an append is undone by truncating, which needs no free block; a
    rewrite that can't be staged in a temp file is written over in place.
    """
    try:
        current: bytes | None = full.read_bytes()
    except FileNotFoundError:
        current = None
    if current is None or not current.startswith(done.ours):
        return "it changed since"
    extra = current[len(done.ours) :]
    if done.base is None and not extra:
        full.unlink()
        return None
    restored = (done.base or b"") + extra
    if done.base is not None and done.ours.startswith(done.base):
        with open(full, "r+b") as fh:  # in place: truncating first frees the blocks
            fh.truncate(len(done.base))
            fh.seek(len(done.base))
            fh.write(extra)
            fh.flush()
            os.fsync(fh.fileno())
        return None
    try:
        atomic_write(full, restored)
    except OSError:
        with open(full, "r+b") as fh:
            fh.truncate(min(len(restored), len(current)))
            fh.seek(0)
            fh.write(restored)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
    return None


def undo_all(root: Path, installed: dict[str, Swapped], failure: Exception) -> GitError:
    """:func:`undo` each file, after ``failure`` (their commit's); the error that says so."""
    left: list[str] = []
    for rel, done in installed.items():
        try:
            why = undo(safe_path(root, rel), done)
        except OSError as exc:
            why = exc.strerror or str(exc)
        if why is not None:
            left.append(f"{rel} ({why})")
    cause = str(failure) if isinstance(failure, MdmemError) else one_line(str(failure))
    if left:
        return GitError(f"{cause}; could not put back {', '.join(left)}: it holds the change")
    return GitError(f"{cause}; the write was undone, the files are as they were")
