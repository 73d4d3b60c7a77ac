"""The warm server: one open vault per user and vault, answering on a private unix socket.

``mdmem serve --daemon`` starts it; the CLI's read commands and the coding-agent
hooks reach it through :func:`mdmem.agent.warm.request` and fall back to
opening the vault themselves when it is not there. It keeps what a fresh
process pays for on every call loaded: the imports, the keyword and vector
indexes and the embedder.

Safety:

* the socket lives in a folder only its user can enter (0700) and is itself
  0600; on Linux each connection's peer uid is checked (``SO_PEERCRED``) and
  a connection from another user is closed unanswered;
* one server per vault: it holds an exclusive ``flock`` on ``<key>.lock`` for
  its whole life, so a second start finds the first, and a socket file left by
  a killed server (whose lock the kernel released) is stale and replaced;
* it stops by itself after ``idle`` seconds without a request
  (:data:`DEFAULT_IDLE_SECONDS`), on ``stop``, SIGTERM or SIGINT, closing the
  vault so the vector index is checkpointed.

Requests are served one at a time (a vault is one writer anyway, and the CLI
capture swaps the process's stdout); a client that sends nothing for
:data:`REQUEST_SECONDS` is dropped so it can't hold the others up.

Methods: ``ping``, ``recall``, ``context``, ``stop`` and ``hook`` (the
coding-agent events of :mod:`mdmem.agent.hostkit`, when installed). Layers
above add their own with :meth:`WarmServer.register` (the CLI adds ``cli``).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import logging
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mdmem.agent.warm import (
    PROTOCOL,
    ServerPaths,
    paths_for,
    private_folder_ok,
    recv_message,
    send_message,
)
from mdmem.errors import InvalidInputError, MdmemError
from mdmem.models import to_jsonable
from mdmem.recall.search import cite_context

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = [
    "DEFAULT_IDLE_SECONDS",
    "REQUEST_SECONDS",
    "Handler",
    "ServerLock",
    "WarmServer",
    "context_result",
    "ensure_private_folder",
    "peer_uid",
    "recall_filters",
    "warm_up",
]

log = logging.getLogger("mdmem.server")

DEFAULT_IDLE_SECONDS = 1800.0  # 30 minutes: a working session's pauses, not a whole day
REQUEST_SECONDS = 5.0  # to read one request; the answer may take as long as the work does
_POLL_SECONDS = 0.5  # how often the accept loop looks at the idle clock and the stop flag

Handler = Callable[["Vault", dict[str, Any]], Any]

_RECALL_PARAMS = frozenset(
    {"k", "kinds", "tags", "scope", "since", "until", "include_inactive", "mode", "as_of"}
)


class ServerLock:
    """The exclusive ``flock`` that makes a server the only one of its vault.

    The kernel drops it when the process dies, however it dies, so a lock
    that can be taken means any socket file left behind is stale.
    """

    def __init__(self, paths: ServerPaths) -> None:
        self.paths = paths
        self._handle: TextIO | None = None

    def acquire(self) -> bool:
        """Take the lock (creating the private folder); False when another server holds it."""
        import fcntl

        ensure_private_folder(self.paths.folder)
        handle = open(self.paths.lock, "a+", encoding="utf-8")  # noqa: SIM115 - held for life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file releases the flock
            self._handle = None


class WarmServer:
    """Serve ``vault`` on its socket until idle, stopped or signalled.

    ``allowed_uid`` is the only peer uid answered (default: this process's).
    """

    def __init__(
        self,
        vault: Vault,
        *,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        paths: ServerPaths | None = None,
        allowed_uid: int | None = None,
        lock: ServerLock | None = None,
    ) -> None:
        if idle_seconds <= 0:
            raise InvalidInputError(f"idle time must be positive, got {idle_seconds}")
        self.vault = vault
        self.root = os.path.realpath(vault.root)
        self.paths = paths or paths_for(vault.root)
        self.idle_seconds = float(idle_seconds)
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self.started = time.time()
        self.requests = 0
        self.refused = 0
        self._last = time.monotonic()
        self._stop = threading.Event()
        # A lock taken by the caller (before its slow vault open) stays the caller's to release.
        self._lock = lock
        self._own_lock = False
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self.methods: dict[str, Handler] = {
            "ping": self._ping,
            "recall": recall_method,
            "context": context_method,
            "stop": self._stop_method,
            "hook": hook_method,
        }

    def register(self, name: str, handler: Handler) -> None:
        """Answer ``name`` with ``handler(vault, params)`` (its result must be JSON-able)."""
        self.methods[name] = handler

    # -- life cycle -----------------------------------------------------------

    def bind(self) -> None:
        """Listen on the socket (taking the lock first if not yet); a leftover file is stale."""
        if self._lock is None:
            lock = ServerLock(self.paths)
            if not lock.acquire():
                raise MdmemError(f"a warm server already runs for {self.root}")
            self._lock, self._own_lock = lock, True
        path = self.paths.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # we hold the lock: whoever made this file is gone
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(16)
        listener.settimeout(_POLL_SECONDS)
        self._listener = listener
        self._socket_ino = os.stat(path).st_ino
        self._last = time.monotonic()

    def serve_forever(self) -> None:
        """Answer requests until idle for ``idle_seconds``, ``stop``, or SIGTERM/SIGINT."""
        if self._listener is None:
            self.bind()
        listener = self._listener
        assert listener is not None
        with self._signals():
            try:
                while not self._stop.is_set():
                    try:
                        conn, _ = listener.accept()
                    except TimeoutError:
                        if time.monotonic() - self._last > self.idle_seconds:
                            log.info("idle for %.0f s: stopping", self.idle_seconds)
                            break
                        continue
                    except InterruptedError:
                        continue
                    with conn:
                        self.handle(conn)
                    self._last = time.monotonic()
            finally:
                self.shutdown()

    def stop(self) -> None:
        """Ask the loop to end (from a signal handler, another thread or a request)."""
        self._stop.set()

    def shutdown(self) -> None:
        """Remove the socket (if still ours), release the lock. The vault stays the caller's."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(OSError):
                if os.stat(self.paths.socket).st_ino == self._socket_ino:
                    self.paths.socket.unlink()
        if self._lock is not None and self._own_lock:
            self._lock.release()
            self._lock, self._own_lock = None, False

    # -- one request ----------------------------------------------------------

    def handle(self, conn: socket.socket) -> None:
        """Read one request from ``conn``, answer it (or refuse a foreign peer)."""
        uid = peer_uid(conn)
        if uid is not None and uid != self.allowed_uid:
            self.refused += 1
            log.warning("refused a connection from uid %s", uid)
            return
        try:
            message = recv_message(conn, time.monotonic() + REQUEST_SECONDS)
        except (OSError, ValueError) as exc:
            log.info("dropped a request: %s", exc)
            return
        answer = self.answer(message)
        try:
            conn.settimeout(REQUEST_SECONDS)
            send_message(conn, answer)
        except OSError as exc:  # the client gave up waiting
            log.info("could not answer: %s", exc)

    def answer(self, message: Any) -> dict[str, Any]:
        """The reply to one decoded request: ``{"ok": true, "result": …}`` or an error."""
        self.requests += 1
        try:
            method, params = self._check(message)
            return {"ok": True, "result": to_jsonable(self.methods[method](self.vault, params))}
        except MdmemError as exc:
            return _error(type(exc).__name__, str(exc))
        except Exception as exc:  # a bug must not end the server, nor leak a traceback
            log.exception("request failed")
            return _error("MdmemError", f"internal error ({type(exc).__name__}: {exc})")

    def _check(self, message: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(message, dict) or message.get("v") != PROTOCOL:
            raise InvalidInputError(f"not an mdmem request (protocol {PROTOCOL})")
        if message.get("root") != self.root:
            raise InvalidInputError(f"this server serves {self.root}, not {message.get('root')}")
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or method not in self.methods:
            raise InvalidInputError(f"unknown method {method!r}")
        if not isinstance(params, dict):
            raise InvalidInputError("params must be an object")
        return method, params

    def _ping(self, vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "root": self.root,
            "socket": str(self.paths.socket),
            "version": _version(),
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 3),
            "idle_seconds": self.idle_seconds,
            "requests": self.requests,
            "refused": self.refused,
            "methods": sorted(self.methods),
        }

    def _stop_method(self, vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
        self.stop()
        return {"stopping": True, "pid": os.getpid()}

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        signals = (signal.SIGTERM, signal.SIGINT)
        previous = {sig: signal.signal(sig, lambda *_: self.stop()) for sig in signals}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


# -- the built-in methods -------------------------------------------------------


def recall_filters(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The query and the keyword arguments of :meth:`Vault.recall` a request may set."""
    query = params.get("query")
    if not isinstance(query, str):
        raise InvalidInputError("recall needs a 'query' string")
    unknown = sorted(set(params) - _RECALL_PARAMS - {"query", "max_chars"})
    if unknown:
        raise InvalidInputError(f"unknown recall parameter(s): {', '.join(unknown)}")
    return query, {k: v for k, v in params.items() if k in _RECALL_PARAMS}


def recall_method(vault: Vault, params: dict[str, Any]) -> Any:
    """``recall``: the :class:`~mdmem.models.Recall` as ``mdmem recall --json`` prints it."""
    query, filters = recall_filters(params)
    return vault.recall(query, **filters)


def context_result(vault: Vault, query: str, max_chars: int, filters: dict[str, Any]) -> Any:
    """``mdmem context --json``'s object: the block and the memories it cites."""
    result = vault.recall(query, **filters)
    block, cited = cite_context(result, max_chars)
    return {
        "query": query,
        "context": block,
        "ids": [hit.id for hit in cited],
        "citations": [hit.citation for hit in cited],
        "degraded": result.degraded,
    }


def context_method(vault: Vault, params: dict[str, Any]) -> Any:
    """``context``: a "## Recalled Memory" block (``max_chars``, default 6000) and its ids."""
    query, filters = recall_filters(params)
    max_chars = params.get("max_chars", 6000)
    if not isinstance(max_chars, int) or isinstance(max_chars, bool):
        raise InvalidInputError("max_chars must be an integer")
    return context_result(vault, query, max_chars, filters)


def hook_method(vault: Vault, params: dict[str, Any]) -> Any:
    """``hook``: one coding-agent hook event, by :func:`mdmem.agent.hostkit.run_event`.

    Params: ``host``, ``event``, ``payload`` (the host's hook JSON) and
    ``policy`` (the project's policy, as hostkit takes it).
    """
    try:
        hostkit: Any = importlib.import_module("mdmem.agent.hostkit")
    except ImportError:
        raise InvalidInputError("this mdmem has no hook kit (mdmem.agent.hostkit)") from None
    return hostkit.run_event(
        vault, params.get("host"), params.get("event"), params.get("payload"), params.get("policy")
    )


def warm_up(vault: Vault) -> None:
    """Load what the first recall would (see ``vault.admin.warm_up``)."""
    vault.admin.warm_up()


# -- helpers --------------------------------------------------------------------


def ensure_private_folder(folder: Path) -> None:
    """Create ``folder`` 0700, or check it: ours, a real directory, closed to others."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise MdmemError(f"cannot create the server folder {folder}: {exc}") from None
    st = os.lstat(folder)
    if st.st_uid == os.getuid() and not os.path.islink(folder):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)  # ours but opened up (umask, a copy): close it again
    if not private_folder_ok(folder):
        raise MdmemError(
            f"{folder} is not a private folder of this user (mode 0700): "
            "remove it or set MDMEM_RUNTIME_DIR"
        )


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux ``SO_PEERCRED``), or None if unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None  # elsewhere the 0700 folder is the guard
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"type": kind, "message": message}}


def _version() -> str:
    try:
        return importlib.metadata.version("mdmem")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
