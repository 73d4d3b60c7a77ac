"""The warm server: one open vault per user and vault, answering on a private unix socket.

``mdmem serve --daemon`` starts it (and a hook that finds none starts one for
the next call); the CLI's read commands and the coding-agent hooks reach it
through :func:`mdmem.agent.warm.request` and fall back to opening the vault
themselves when it is not there. It keeps what a fresh process pays for on
every call loaded: the imports, the keyword and vector indexes and the
embedder.

Safety:

* the socket lives in a folder only its user can enter (0700) and is itself
  0600; on Linux each connection's peer uid is checked (``SO_PEERCRED``) and
  a connection from another user is closed unanswered;
* one server per vault: it holds an exclusive ``flock`` on ``<key>.lock`` for
  its whole life, so a second start finds the first, and a socket file left by
  a killed server (whose lock the kernel released) is stale and replaced;
* it stops by itself after ``idle`` seconds without a request
  (:data:`DEFAULT_IDLE_SECONDS`) once no host session that used it is open
  (:class:`HostSessions`), on ``stop``, SIGTERM or SIGINT, closing the vault
  so the vector index is checkpointed.

No single request can stop it or hold up the others:

* one thread reads every connection without blocking (``selectors``): a
  request must arrive whole within :data:`REQUEST_SECONDS`, at most
  :data:`MAX_REQUEST` bytes and :data:`~mdmem.agent.warm.MAX_DEPTH` levels
  deep, or the connection is dropped; a slow sender costs a file descriptor,
  not a turn; the listen backlog is the system's maximum;
* ``ping`` and ``stop`` are answered by that thread at once, so ``server
  status`` and ``server stop`` work while a request is stuck;
* the work runs in lanes (:data:`LANES`): ``read`` (recall, context, the
  hooks that inject), ``write`` (the hooks that capture: post-tool-use,
  pre-compact, stop) and ``cli`` (one at a time: it swaps the process's
  stdout). A long write never delays a recall queued behind it; a writer
  that works in steps (the pre-compact flush) lets the reads in between
  them (:class:`ReadGate`);
* every exception (``RecursionError`` and ``MemoryError`` included) is caught
  per request, logged with its traceback and answered as an error.

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
import queue
import selectors
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mdmem.agent.hostproc import is_alive
from mdmem.agent.warm import (
    PROTOCOL,
    ServerPaths,
    loads_bounded,
    paths_for,
    private_folder_ok,
    send_message,
)
from mdmem.errors import InvalidInputError, MdmemError
from mdmem.models import to_jsonable
from mdmem.recall.asdata import cite_recalled

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = [
    "DEFAULT_IDLE_SECONDS",
    "LANES",
    "MAX_REQUEST",
    "REQUEST_SECONDS",
    "Handler",
    "HostSessions",
    "ReadGate",
    "ServerLock",
    "WarmServer",
    "context_result",
    "ensure_private_folder",
    "lock_holder",
    "peer_uid",
    "recall_filters",
    "warm_up",
]

log = logging.getLogger("mdmem.server")

DEFAULT_IDLE_SECONDS = 1800.0  # 30 minutes without a request once no host session is open
REQUEST_SECONDS = 5.0  # to deliver one request; the answer may take as long as the work does
SEND_SECONDS = 10.0  # to hand an answer to a client that stopped reading
MAX_REQUEST = 32 * 1024 * 1024  # a hook's 16 MB payload, JSON-escaped
MAX_BUFFERED = 256 * 1024 * 1024  # all requests being received at once
MAX_PENDING = 1024  # connections being read at once; more wait in the backlog
STOP_GRACE_SECONDS = 20.0  # for running requests to finish once the server stops
#: Lane -> worker threads. Reads run side by side; writes one at a time (the
#: vault has one writer); the CLI one at a time (it swaps sys.stdout).
LANES = {"read": 2, "write": 1, "cli": 1}
_QUEUE_LIMIT = 512  # requests waiting per lane; beyond it the client is told "busy"
_POLL_SECONDS = 0.5  # how often the loop looks at the idle clock and the stop flag
_INLINE = ("ping", "stop")
_READ_EVENTS = frozenset({"session-start", "prompt-submit"})

Handler = Callable[["Vault", dict[str, Any]], Any]
LaneOf = str | Callable[[dict[str, Any]], str]

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


def lock_holder(paths: ServerPaths) -> int | None:
    """The pid of the server holding the vault's lock (running or stopping), else None."""
    import fcntl

    if not private_folder_ok(paths.folder):
        return None
    try:
        handle = open(paths.lock, encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = handle.read(32).strip()
            return int(text) if text.isdigit() else -1
        return None


class ReadGate:
    """Lets a long write step aside for the reads that arrived meanwhile.

    Reads mark themselves with :meth:`reading`; a writer that works in steps
    calls :meth:`wait_clear` between them (with the vault's lock released),
    and waits until the reads that had begun by then are done, at most
    ``timeout`` seconds: reads that keep coming cannot hold the write back.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._active: set[int] = set()

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            ticket = self._next
            self._next += 1
            self._active.add(ticket)
        try:
            yield
        finally:
            with self._cond:
                self._active.discard(ticket)
                self._cond.notify_all()

    def wait_clear(self, timeout: float = 1.0) -> None:
        with self._cond:
            before = self._next
            self._cond.wait_for(lambda: not any(t < before for t in self._active), timeout)


@dataclass
class _Session:
    pid: int | None
    start: int | None
    last: float


class HostSessions:
    """The host sessions that used this server and may still call it.

    A session is open from its first hook event until its ``session-end``,
    until its host process (named by the hook, :mod:`mdmem.agent.hostproc`)
    is gone, or until it has been silent for :attr:`max_silence` seconds
    (hosts without a session end, such as Codex, and platforms where the
    host's pid is not known). While one is open the server does not stop
    for idleness.
    """

    def __init__(self, max_silence: float = 12 * 3600.0, unknown_silence: float = 2 * 3600.0):
        self.max_silence = max_silence
        self.unknown_silence = unknown_silence
        self._open: dict[tuple[str, str], _Session] = {}
        self._lock = threading.Lock()

    def note(self, params: dict[str, Any]) -> None:
        """Record a ``hook`` request's session (its host, payload and the client's host pid)."""
        payload = params.get("payload")
        raw = payload if isinstance(payload, dict) else {}
        sid = raw.get("session_id") or raw.get("conversation_id")
        host = params.get("host")
        if not isinstance(sid, str) or not sid or not isinstance(host, str):
            return
        key = (host, sid[:200])
        with self._lock:
            if params.get("event") == "session-end":
                self._open.pop(key, None)
                return
            client = params.get("client")
            info = client if isinstance(client, dict) else {}
            pid, start = info.get("host_pid"), info.get("host_start")
            self._open[key] = _Session(
                pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                start if isinstance(start, int) and not isinstance(start, bool) else None,
                time.monotonic(),
            )

    def open_count(self) -> int:
        """How many sessions are still open (closing the ones whose host is gone)."""
        now = time.monotonic()
        with self._lock:
            for key, s in list(self._open.items()):
                silence = now - s.last
                gone = s.pid is not None and not is_alive(s.pid, s.start)
                limit = self.max_silence if s.pid is not None else self.unknown_silence
                if gone or silence > limit:
                    del self._open[key]
            return len(self._open)


@dataclass
class _Job:
    conn: socket.socket
    method: str
    params: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    # Set once the answer is computed: a client that got its answer and asks
    # at once what runs must not see its own request still listed.
    answered: bool = False


class _Lane:
    """Worker threads taking requests from one bounded queue, in order."""

    def __init__(self, name: str, workers: int, run: Callable[[_Job, str], None]) -> None:
        self.name = name
        self._run = run
        self._queue: queue.Queue[_Job | None] = queue.Queue(maxsize=_QUEUE_LIMIT)
        self._running: dict[int, _Job] = {}
        self._lock = threading.Lock()
        # Daemon threads: a request stuck for good must not keep the process alive.
        self._threads = [
            threading.Thread(target=self._work, name=f"mdmem-{name}-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, job: _Job) -> bool:
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            return False
        return True

    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            job = self._queue.get()
            if job is None:
                return
            with self._lock:
                self._running[me] = job
            try:
                self._run(job, self.name)
            except BaseException:  # a lane must outlive any request
                log.exception("lane %s: a request escaped its handler", self.name)
            finally:
                with self._lock:
                    self._running.pop(me, None)

    def busy(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        with self._lock:
            jobs = [j for j in self._running.values() if not j.answered]
        return [
            {"lane": self.name, "method": _label(j), "seconds": round(now - j.started, 1)}
            for j in jobs
        ]

    def waiting(self) -> int:
        return self._queue.qsize()

    def close(self) -> None:
        for _ in self._threads:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)

    def join(self, deadline: float) -> bool:
        """Wait for the workers to finish (until ``deadline``, monotonic); True if they did."""
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)


def _label(job: _Job) -> str:
    if job.method == "hook":
        return f"hook {job.params.get('event')}"
    return job.method


@dataclass
class _Incoming:
    buffer: bytearray
    deadline: float


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
        sessions: HostSessions | None = None,
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
        self.dropped = 0
        self.sessions = sessions or HostSessions()
        self.gate = ReadGate()
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._count_lock = threading.Lock()
        # A lock taken by the caller (before its slow vault open) stays the caller's to release.
        self._lock = lock
        self._own_lock = False
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self._lanes: dict[str, _Lane] = {}
        self.methods: dict[str, Handler] = {
            "ping": self._ping,
            "recall": recall_method,
            "context": context_method,
            "stop": self._stop_method,
            "hook": self._hook,
        }
        self._lane_of: dict[str, LaneOf] = {
            "recall": "read",
            "context": "read",
            "hook": _hook_lane,
        }

    def register(self, name: str, handler: Handler, *, lane: LaneOf = "read") -> None:
        """Answer ``name`` with ``handler(vault, params)`` (its result must be JSON-able),
        run in ``lane`` (a name of :data:`LANES`, or a function of the params naming one)."""
        self.methods[name] = handler
        self._lane_of[name] = lane

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
        # The system's maximum: a burst of hook processes waits here, not refused.
        listener.listen(max(socket.SOMAXCONN, 128))
        listener.setblocking(False)
        self._listener = listener
        self._socket_ino = os.stat(path).st_ino
        self._last = time.monotonic()

    def serve_forever(self) -> bool:
        """Answer requests until idle (no host session open either), ``stop``, or
        SIGTERM/SIGINT. True when every running request finished before it returned."""
        if self._listener is None:
            self.bind()
        listener = self._listener
        assert listener is not None
        self._lanes = {name: _Lane(name, n, self._run_job) for name, n in LANES.items()}
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ, None)
        incoming: dict[socket.socket, _Incoming] = {}
        accepting = True
        with self._signals():
            try:
                while not self._stop.is_set():
                    wait = _POLL_SECONDS
                    if incoming:
                        soonest = min(i.deadline for i in incoming.values())
                        wait = max(0.0, min(wait, soonest - time.monotonic()))
                    for key, _ in selector.select(wait):
                        if key.data is None:
                            self._accept(listener, selector, incoming)
                        else:
                            self._receive(key.fileobj, selector, incoming)  # type: ignore[arg-type]
                    self._expire(selector, incoming)
                    # Too many half-sent requests: leave new ones in the backlog for now.
                    full = len(incoming) >= MAX_PENDING
                    if full == accepting:
                        accepting = not full
                        if full:
                            selector.unregister(listener)
                        else:
                            selector.register(listener, selectors.EVENT_READ, None)
                    if self._idle_for_good():
                        log.info("idle %.0f s, no host session open: stopping", self.idle_seconds)
                        break
            finally:
                for conn in list(incoming):
                    conn.close()
                selector.close()
                clean = self.shutdown()
        return clean

    def _idle_for_good(self) -> bool:
        if time.monotonic() - self._last <= self.idle_seconds:
            return False
        if any(lane.busy() or lane.waiting() for lane in self._lanes.values()):
            return False
        return self.sessions.open_count() == 0

    def stop(self) -> None:
        """Ask the loop to end (from a signal handler, another thread or a request)."""
        self._stop.set()

    def shutdown(self, grace: float | None = None) -> bool:
        """Stop listening (the socket goes at once), let running requests finish for up
        to ``grace`` seconds (:data:`STOP_GRACE_SECONDS`), release the lock. The vault
        stays the caller's.

        Returns False when a request was still running at the end: the vault
        may be in use by it, so the caller must not close it (and should exit).
        """
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            with contextlib.suppress(OSError):
                if os.stat(self.paths.socket).st_ino == self._socket_ino:
                    self.paths.socket.unlink()
        deadline = time.monotonic() + (STOP_GRACE_SECONDS if grace is None else grace)
        for lane in self._lanes.values():
            lane.close()
        clean = all(lane.join(deadline) for lane in self._lanes.values())
        if not clean:
            stuck = [b for lane in self._lanes.values() for b in lane.busy()]
            log.error("stopping with %d request(s) still running: %s", len(stuck), stuck)
        if clean and self._lock is not None and self._own_lock:
            self._lock.release()
            self._lock, self._own_lock = None, False
        return clean

    # -- receiving ------------------------------------------------------------

    def _accept(
        self,
        listener: socket.socket,
        selector: selectors.BaseSelector,
        incoming: dict[socket.socket, _Incoming],
    ) -> None:
        for _ in range(64):  # a burst is taken in one go, not one per poll
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors: the backlog keeps them
                log.warning("accept failed: %s", exc)
                return
            uid = peer_uid(conn)
            if uid is not None and uid != self.allowed_uid:
                self.refused += 1
                log.warning("refused a connection from uid %s", uid)
                conn.close()
                continue
            conn.setblocking(False)
            incoming[conn] = _Incoming(bytearray(), time.monotonic() + REQUEST_SECONDS)
            selector.register(conn, selectors.EVENT_READ, True)

    def _receive(
        self,
        conn: socket.socket,
        selector: selectors.BaseSelector,
        incoming: dict[socket.socket, _Incoming],
    ) -> None:
        state = incoming[conn]
        try:
            chunk = conn.recv(1024 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if chunk:
            state.buffer += chunk
            total = sum(len(i.buffer) for i in incoming.values())
            if len(state.buffer) > MAX_REQUEST or total > MAX_BUFFERED:
                self._drop(conn, selector, incoming, "request too large")
                return
            if not chunk.endswith(b"\n"):
                return
        selector.unregister(conn)
        del incoming[conn]
        if not chunk and not state.buffer.endswith(b"\n"):
            self.dropped += 1
            conn.close()  # the client went away mid-request
            return
        self._dispatch(conn, bytes(state.buffer))

    def _drop(
        self,
        conn: socket.socket,
        selector: selectors.BaseSelector,
        incoming: dict[socket.socket, _Incoming],
        why: str,
    ) -> None:
        self.dropped += 1
        log.info("dropped a request: %s", why)
        selector.unregister(conn)
        del incoming[conn]
        conn.close()

    def _expire(
        self, selector: selectors.BaseSelector, incoming: dict[socket.socket, _Incoming]
    ) -> None:
        now = time.monotonic()
        for conn in [c for c, i in incoming.items() if i.deadline <= now]:
            self._drop(conn, selector, incoming, f"not sent within {REQUEST_SECONDS:.0f} s")

    def _dispatch(self, conn: socket.socket, data: bytes) -> None:
        """Answer a whole request: at once (ping, stop, a refusal) or through its lane."""
        self._last = time.monotonic()
        try:
            message = loads_bounded(data)
            method, params = self._check(message)
        except (ValueError, MdmemError) as exc:
            self._count()
            kind = type(exc).__name__ if isinstance(exc, MdmemError) else "InvalidInputError"
            self._reply(conn, _error(kind, str(exc)[:500]), timeout=0.5)
            return
        if method in _INLINE:
            self._count()
            self._reply(conn, self._call(method, params), timeout=0.5)
            return
        if method == "hook" and not params.get("probe"):  # a doctor's probe is no session
            self.sessions.note(params)
        lane_of = self._lane_of.get(method, "read")
        name = lane_of(params) if callable(lane_of) else lane_of
        lane = self._lanes.get(name) or self._lanes["read"]
        if not lane.submit(_Job(conn, method, params)):
            self._count()
            self._reply(conn, _error("MdmemError", f"the warm server is busy ({name})"), 0.5)

    # -- answering ------------------------------------------------------------

    def _run_job(self, job: _Job, lane: str) -> None:
        try:
            self._count()
            if lane == "write":
                answer = self._call(job.method, job.params)
            else:
                with self.gate.reading():
                    answer = self._call(job.method, job.params)
            job.answered = True
            self._reply(job.conn, answer, SEND_SECONDS)
        finally:
            self._last = time.monotonic()

    def _count(self) -> None:
        with self._count_lock:
            self.requests += 1

    def _reply(self, conn: socket.socket, answer: dict[str, Any], timeout: float) -> None:
        try:
            conn.settimeout(timeout)
            try:
                send_message(conn, answer)
            except (TypeError, ValueError) as exc:  # a result JSON cannot carry
                log.error("could not encode an answer: %s", exc)
                send_message(conn, _error("MdmemError", "internal error (unencodable answer)"))
        except OSError as exc:  # the client gave up waiting
            log.info("could not answer: %s", exc)
        finally:
            conn.close()

    def answer(self, message: Any) -> dict[str, Any]:
        """The reply to one decoded request: ``{"ok": true, "result": …}`` or an error."""
        self._count()
        try:
            method, params = self._check(message)
        except MdmemError as exc:
            return _error(type(exc).__name__, str(exc))
        return self._call(method, params)

    def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return {"ok": True, "result": to_jsonable(self.methods[method](self.vault, params))}
        except MdmemError as exc:
            return _error(type(exc).__name__, str(exc))
        except Exception as exc:  # a bug must not end the server, nor leak a traceback
            log.exception("request %s failed", method)
            return _error("MdmemError", f"internal error ({type(exc).__name__}: {exc})"[:500])

    def _check(self, message: Any) -> tuple[str, dict[str, Any]]:
        if not isinstance(message, dict) or message.get("v") != PROTOCOL:
            raise InvalidInputError(f"not an mdmem request (protocol {PROTOCOL})")
        if message.get("root") != self.root:
            raise InvalidInputError(f"this server serves {self.root}, not {message.get('root')}")
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or method not in self.methods:
            raise InvalidInputError(f"unknown method {method!r}"[:200])
        if not isinstance(params, dict):
            raise InvalidInputError("params must be an object")
        return method, params

    def busy(self) -> list[dict[str, Any]]:
        """The requests running now: lane, method and seconds so far."""
        return [b for lane in self._lanes.values() for b in lane.busy()]

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
            "dropped": self.dropped,
            "busy": self.busy(),
            "waiting": {name: lane.waiting() for name, lane in self._lanes.items()},
            "sessions": self.sessions.open_count(),
            "methods": sorted(self.methods),
        }

    def _stop_method(self, vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
        self.stop()
        return {"stopping": True, "pid": os.getpid(), "busy": self.busy()}

    def _hook(self, vault: Vault, params: dict[str, Any]) -> Any:
        # A capture may work in steps; between them the reads waiting go first.
        return hook_method(vault, params, pause=self.gate.wait_clear)

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


def _hook_lane(params: dict[str, Any]) -> str:
    """Hooks that inject are reads; the ones that capture are writes."""
    return "read" if params.get("event") in _READ_EVENTS else "write"


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
    block, cited = cite_recalled(result, max_chars)
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


def hook_method(
    vault: Vault, params: dict[str, Any], *, pause: Callable[[], None] | None = None
) -> Any:
    """``hook``: one coding-agent hook event, by :func:`mdmem.agent.hostkit.run_event`.

    Params: ``host``, ``event``, ``payload`` (the host's hook JSON),
    ``policy`` (the project's policy, as hostkit takes it), ``probe`` (the
    token of a ``hooks doctor`` run) and ``client`` (the host's process, for
    :class:`HostSessions`). ``pause``: called between a capture's steps.
    """
    try:
        hostkit: Any = importlib.import_module("mdmem.agent.hostkit")
    except ImportError:
        raise InvalidInputError("this mdmem has no hook kit (mdmem.agent.hostkit)") from None
    probe = params.get("probe")
    return hostkit.run_event(
        vault,
        params.get("host"),
        params.get("event"),
        params.get("payload"),
        params.get("policy"),
        probe=probe if isinstance(probe, str) else None,
        pause=pause,
    )


def warm_up(vault: Vault) -> None:
    """Load what the first recall would (see ``vault.admin.warm_up``)."""
    vault.admin.warm_up()


# -- helpers --------------------------------------------------------------------


def ensure_private_folder(folder: Path) -> None:
    """Create ``folder`` 0700, or check that it is ours, a real directory, closed to others.

    A folder that already exists is never chmodded: it may be a home folder or
    a shared temporary folder (1777) whose mode others rely on, so a folder
    that isn't private is refused, never "fixed".
    """
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as exc:
        raise MdmemError(f"cannot create the server folder {folder}: {exc}") from None
    if not private_folder_ok(folder):
        raise MdmemError(
            f"{folder} is not a private folder of this user (mode 0700, yours, not a link): "
            "use a folder only you can enter (mdmem creates a missing one 0700), "
            "or set MDMEM_RUNTIME_DIR"
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
