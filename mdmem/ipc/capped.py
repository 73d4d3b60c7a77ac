"""Reading a file that a hook payload or a repository names, without trusting it.

A payload's ``transcript_path`` or a project's ``.mdmem.toml`` may be a FIFO
(opening it for reading waits for a writer forever), a device (``/dev/zero``
never ends, and its size says 0), a symlink to either, or a huge file.
:func:`read_capped` reads only regular files, without blocking on the open,
in bounded chunks and never more than a cap.

Standard library only: the hook's thin path imports it.
"""

from __future__ import annotations

import os
import stat

__all__ = ["read_capped"]

_CHUNK = 1024 * 1024


def read_capped(path: str | os.PathLike[str], cap: int) -> bytes | None:
    """The last ``cap`` bytes of the regular file at ``path``; None for anything else.

    Opened without blocking (a FIFO with no writer would wait forever) and
    checked after opening (a symlink may point at a device); read in chunks
    and never past ``cap`` bytes, even from a file that grows meanwhile.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > cap:
            os.lseek(fd, st.st_size - cap, os.SEEK_SET)  # the newest part matters most
        parts: list[bytes] = []
        left = cap
        while left > 0:
            chunk = os.read(fd, min(_CHUNK, left))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)
    except OSError:
        return None
    finally:
        os.close(fd)
