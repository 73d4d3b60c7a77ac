"""The MCP server over HTTP, with a boundary: a credential or a private socket.

``mdmem serve --http`` listens on 127.0.0.1 only, and 127.0.0.1 is shared by
every user and process of the machine, so a request must carry the user's
bearer token (``Authorization: Bearer <token>``); anything else gets 401
before it reaches the MCP layer. The token lives in a file only its owner can
read (0600), made on first use in the user's mdmem config folder
(:func:`token_path`); ``--new-token`` replaces it. A token file that others
could read is replaced too (the old token may have been seen), and one that
is not a plain file of this user is refused.

``mdmem serve --socket PATH`` serves the same HTTP on a unix socket instead,
guarded as the warm server's is: the socket's folder must be this user's and
closed to others (0700), the socket is 0600, and on Linux each connection's
peer uid is checked (``SO_PEERCRED``) and a foreign one closed unanswered.
No token is needed there: who may connect is the credential.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from mdmem.atomicfile import PRIVATE
from mdmem.config import config_home
from mdmem.errors import MdmemError
from mdmem.files.textfile import atomic_write

__all__ = [
    "TOKEN_FILE",
    "BearerGate",
    "ensure_token",
    "peer_checked_protocol",
    "serve_http",
    "token_path",
]

log = logging.getLogger("mdmem.mcp")

TOKEN_FILE = "mcp-http-token"
_MIN_TOKEN_CHARS = 32

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_path() -> Path:
    """Where the user's MCP-over-HTTP token lives (in the mdmem config folder)."""
    return config_home() / TOKEN_FILE


def ensure_token(path: Path | None = None, *, renew: bool = False) -> tuple[str, str]:
    """The token in ``path`` (default :func:`token_path`), made if missing; (token, what
    happened: "read", "created" or "renewed")."""
    path = path or token_path()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return _write_token(path), "created"
    except OSError as exc:
        raise MdmemError(f"cannot read the MCP token file {path}: {exc}") from None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        raise MdmemError(
            f"{path} is not a plain file of yours; remove it, and mdmem makes a new token"
        )
    if renew:
        return _write_token(path), "renewed"
    if stat.S_IMODE(st.st_mode) & 0o077:
        log.warning("%s could be read by other users: replacing the token", path)
        return _write_token(path), "renewed"
    token = path.read_text(encoding="utf-8", errors="replace").strip()
    if len(token) < _MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        return _write_token(path), "renewed"
    return token, "read"


def _write_token(path: Path) -> str:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    # Created 0600 (never wider for a moment), then moved over the old one.
    atomic_write(path, (token + "\n").encode("ascii"), mode=PRIVATE)
    return token


class BearerGate:
    """ASGI middleware: a request without ``Authorization: Bearer <token>`` gets 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode("ascii")
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan: the server's own start and stop
            return
        given = b""
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        self.refused += 1
        log.info("refused an MCP request without the token (%d so far)", self.refused)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="mdmem"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def peer_checked_protocol(allowed_uid: int) -> type[Any]:
    """uvicorn's HTTP protocol, closing a connection from another user unanswered."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from mdmem.ipc.sockets import peer_uid

    class PeerChecked(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            sock = transport.get_extra_info("socket")
            uid = peer_uid(sock) if sock is not None else None
            if uid is not None and uid != allowed_uid:
                log.warning("refused an MCP connection from uid %s", uid)
                transport.close()
                return
            super().connection_made(transport)

    return PeerChecked


def _bind_unix(path: Path) -> socket.socket:
    """A listening unix socket at ``path``, in a private folder; a stale file replaced."""
    from mdmem.ipc.sockets import ensure_private_folder

    ensure_private_folder(path.parent)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise MdmemError(f"{path} exists and is not a socket; pick another path")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # nobody listens: left by a server that was killed
        else:
            raise MdmemError(f"another server listens on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(socket.SOMAXCONN)
    return sock


def serve_http(
    app: ASGIApp,
    *,
    port: int,
    unix_socket: Path | None = None,
    token: str | None = None,
) -> None:
    """Serve ``app`` until Ctrl-C: on 127.0.0.1:``port`` behind ``token``, or on
    ``unix_socket`` for this user only (see the module doc)."""
    import uvicorn

    if unix_socket is None:
        if not token:
            raise MdmemError("serving MCP over TCP needs a token")
        gated = BearerGate(app, token)
        config = uvicorn.Config(gated, host="127.0.0.1", port=port, log_level="warning")
        uvicorn.Server(config).run()
        return
    sock = _bind_unix(unix_socket)
    try:
        config = uvicorn.Config(
            app, http=peer_checked_protocol(os.getuid()), log_level="warning"
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            unix_socket.unlink()
