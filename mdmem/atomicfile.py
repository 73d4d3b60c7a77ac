"""Replacing a file atomically: the one way mdmem writes a whole file.

A temp file with a unique name (pid and random) beside the target, written,
fsynced, given its mode, renamed over the target, the folder fsynced: a
reader sees the old file or the new one, never half of either, and two
processes writing the same file at once never share a temp file (a fixed
name such as ``name.tmp`` let one rename the other's half-written bytes).

``mode``: the new file's permissions. None keeps the old file's (0644 for a
new one). ``PRIVATE`` (0600) is for what only the person may read — what
they confirmed (:mod:`mdmem.config` trust records), tokens: the temp file is
created 0600, so the bytes are never readable by others, not even for the
moment before a chmod.

Standard library only, at the bottom of the package: the hook's thin path and
:mod:`mdmem.config` write through it too. :mod:`mdmem.files.textfile`
re-exports it for the store and the indexes.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "PRIVATE",
    "atomic_file",
    "atomic_write",
    "discard_temp",
    "fsync_dir",
    "fsync_file",
    "install_temp",
    "write_temp",
]

#: Only the owner may read or write (trust records, tokens).
PRIVATE = 0o600
_NEW_FILE = 0o644


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, replace."""
    tmp = write_temp(path, data, fsync=fsync, mode=mode)
    install_temp(tmp, path, fsync=fsync)


@contextmanager
def atomic_file(path: Path, *, mode: int | None = None) -> Iterator[BinaryIO]:
    """A binary handle on a temp file beside ``path`` that replaces it when the
    ``with`` body ends without an error (fsynced first); on an error the temp
    file is removed and ``path`` is left as it was. For output written as a
    stream (an export, an index serialised in chunks)."""
    tmp, fd = _open_temp(path, mode)
    try:
        with os.fdopen(fd, "w+b") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        _set_mode(tmp, path, mode)
    except BaseException:
        discard_temp(tmp)
        raise
    install_temp(tmp, path)


def write_temp(path: Path, data: bytes, *, fsync: bool = True, mode: int | None = None) -> Path:
    """Stage ``data`` beside ``path`` (same folder; ``mode``, else the old file's),
    fsynced unless asked not to. Install it with :func:`install_temp`."""
    tmp, fd = _open_temp(path, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        _set_mode(tmp, path, mode)
    except BaseException:
        discard_temp(tmp)
        raise
    return tmp


def install_temp(tmp: Path, path: Path, *, fsync: bool = True) -> None:
    """Atomically put a staged temp file in place and make the rename durable."""
    try:
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    if fsync:
        fsync_dir(path.parent)


def discard_temp(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the OS lets a folder be fsynced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_temp(path: Path, mode: int | None) -> tuple[Path, int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    # ".<name>.mdmem-<pid>-<random>.tmp": unique per writer, and what doctor
    # looks for when a killed process left one behind.
    tmp = path.with_name(f".{path.name}.mdmem-{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE if mode is None else mode)
    return tmp, fd


def _set_mode(tmp: Path, path: Path, mode: int | None) -> None:
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            return  # created 0644 (less the umask), as any new file
    os.chmod(tmp, mode)
