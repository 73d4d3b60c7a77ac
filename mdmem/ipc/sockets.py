"""Private unix sockets: a folder only this user can enter, and who is on the other end.

The warm server and the MCP server over HTTP listen on unix sockets; both
trust the folder the socket sits in (mode 0700, owned by this user) and,
where the system says, the peer's uid. Standard library only (the error class
is imported when one is raised), so the warm client can check a folder on
its fast path.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import socket
    from pathlib import Path

__all__ = ["ensure_private_folder", "peer_uid", "private_folder_ok"]


def _uid() -> int:
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid is not None else 0


def private_folder_ok(folder: str | os.PathLike[str]) -> bool:
    """True when ``folder`` is a real directory owned by this user that nobody else can enter."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == _uid()
        and stat.S_IMODE(st.st_mode) & 0o077 == 0
    )


def ensure_private_folder(folder: Path) -> None:
    """Create ``folder`` 0700, or check that it is ours, a real directory, closed to others.

    A folder that already exists is never chmodded: it may be a home folder or
    a shared temporary folder (1777) whose mode others rely on, so a folder
    that isn't private is refused, never "fixed".
    """
    from mdmem.errors import MdmemError

    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as exc:
        raise MdmemError(f"cannot create the server folder {folder}: {exc}") from None
    if not private_folder_ok(folder):
        raise MdmemError(
            f"{folder} is not a private folder of this user (mode 0700, yours, not a link): "
            "use a folder only you can enter (a missing one is created 0700), "
            "or set MDMEM_RUNTIME_DIR"
        )


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``), or None if unknown."""
    import socket  # the server's side only: the hook client keeps to the C module
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None  # elsewhere the 0700 folder is the guard
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)

