"""The thin client of the warm server: ask a running ``mdmem`` server over its unix socket.

A CLI call or a coding-agent hook runs in a fresh process on every prompt;
opening a vault there costs the imports (numpy, GitPython, the embedder...)
and the index load. The warm server (:mod:`mdmem.warm.server`, started
by ``mdmem serve --daemon``) keeps one vault open; this module is how a
fresh process reaches it. It imports the standard library only, so a caller
that gets its answer here never loads mdmem's heavy modules.

Where the socket is: one folder per user, mode 0700 and owned by the user
(``$MDMEM_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/mdmem``, else
``<tmp>/mdmem-<uid>``); in it one socket per vault, named by a hash of the
vault's real path (and of ``MDMEM_STATE_DIR``, which selects the derived
state the server would use). A folder that another user owns or can enter
is never used: the client answers None and the server refuses to start.

Protocol: one request per connection, one JSON object per line each way::

    → {"v": 1, "root": "/real/vault/path", "method": "recall", "params": {...}}
    ← {"ok": true, "result": ...}   or   {"ok": false, "error": {"type": ..., "message": ...}}

A caller with a budget (a hook) asks through :func:`ask_within`: a server that
takes a request, gives no answer in time and then answers no ``ping`` either
is *wedged*; a marker beside its socket (``<key>.wedged``) has the callers after
it skip that server, at once, for :data:`WEDGED_SECONDS`.
"""

from __future__ import annotations

# Standard library only, and only what a call needs: a CLI call or a hook that
# the server answers pays for every import here (no pathlib, typing, tempfile).
import _socket as socket  # the C module: socket.py adds enum, selectors and array
import json
import os
import sys
import time

try:  # the built-in digest: hashlib would load OpenSSL first (~10 ms on a hook's start)
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment,unused-ignore]

from mdmem.ipc.boundedjson import loads_bounded
from mdmem.ipc.sockets import private_folder_ok

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, NoReturn

__all__ = [
    "PING_SECONDS",
    "PROTOCOL",
    "READ_COMMANDS",
    "WEDGED_SECONDS",
    "ServerPaths",
    "ask",
    "ask_within",
    "cli_command",
    "find_root",
    "paths_for",
    "recv_message",
    "request",
    "runtime_dir",
    "send_message",
    "server_socket_exists",
    "server_starting",
    "settings_env",
    "spawn_server",
    "thin_cli",
]

PROTOCOL = 1
MAX_MESSAGE = 64 * 1024 * 1024  # a hook may carry a large tool output; the server caps it too
_SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS; keep a margin

# The commands a CLI process hands to a running server: they only read, so
# falling back to running them here after a timeout can't do anything twice.
READ_COMMANDS = frozenset({"recall", "context", "get", "history", "status"})
_GROUP_VALUE_OPTIONS = ("--vault", "--agent")
_GROUP_FLAGS = ("-q", "--quiet")
CLI_TIMEOUT_SECONDS = 30.0  # then the command runs in-process after all
#: A live server answers ``ping`` from its own loop at once, however busy its
#: workers are: no answer in this long after a late one means it is wedged.
#: Milliseconds suffice on an idle machine; the rest is for a loaded one, where
#: a server wrongly found wedged would be skipped for a minute.
PING_SECONDS = 0.25
#: How long callers of :func:`ask_within` skip a server found wedged; then one
#: of them pays its wait again to see whether it came back.
WEDGED_SECONDS = 60.0
_MARKER_MAX = 64  # bytes of a wedged marker: which socket file it is about
# Variables that steer the client or the server itself, not the vault's settings.
_PROCESS_ONLY = frozenset(
    {
        "MDMEM_NO_SERVER",
        "MDMEM_SERVER",
        "MDMEM_VAULT",  # which vault: the socket already says
        "MDMEM_SERVER_TIMEOUT",
        "MDMEM_SERVER_IDLE",
        "MDMEM_RUNTIME_DIR",
        "MDMEM_DEBUG",
    }
)


class ServerPaths:
    """The files of one vault's server: socket, lock (held while it runs) and log."""

    def __init__(self, folder: Path, key: str) -> None:
        self.folder = folder
        self.key = key
        self.socket = folder / f"{key}.sock"
        self.lock = folder / f"{key}.lock"
        self.log = folder / f"{key}.log"

    def __repr__(self) -> str:
        return f"ServerPaths({str(self.socket)!r})"


def runtime_dir() -> Path:
    """The per-user folder for server sockets (not created here)."""
    from pathlib import Path

    return Path(_runtime_dir())


def paths_for(vault_root: str | os.PathLike[str]) -> ServerPaths:
    """Where the server of the vault at ``vault_root`` listens (its real path is the key)."""
    from pathlib import Path

    folder, key = _locate(vault_root)
    return ServerPaths(Path(folder), key)


def _runtime_dir() -> str:
    override = os.environ.get("MDMEM_RUNTIME_DIR")
    if override:
        return os.path.expanduser(override)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return os.path.join(xdg, "mdmem")
    return _tmp_folder()


def _tmp_folder() -> str:
    # tempfile.gettempdir()'s first choices, without importing tempfile (and random).
    tmp = os.environ.get("TMPDIR") or os.environ.get("TEMP") or os.environ.get("TMP") or "/tmp"
    return os.path.join(tmp, f"mdmem-{_uid()}")


def _locate(vault_root: str | os.PathLike[str]) -> tuple[str, str]:
    """The socket folder and the vault's key (a hash of its real path and state dir)."""
    real = os.path.realpath(os.fspath(vault_root))
    seed = f"{real}\n{os.environ.get('MDMEM_STATE_DIR', '')}"
    key = sha256(seed.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    folder = _runtime_dir()
    if len(os.path.join(folder, f"{key}.sock").encode()) > _SUN_PATH_MAX:
        # A deep runtime dir would overflow sockaddr_un: fall back to the short one.
        folder = _tmp_folder()
    return folder, key


def request(
    vault_root: str | os.PathLike[str],
    method: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float = 10.0,
) -> Any:
    """Ask the warm server of ``vault_root`` to run ``method``; its result, or None.

    None means no server is running for this vault, the socket folder is not
    private, or no answer came within ``timeout`` seconds (the caller then
    does the work itself, or degrades). An error the server reports (a bad
    query, an unknown memory id) is raised as the same
    :class:`~mdmem.errors.MdmemError` subclass it was there.
    """
    return ask(vault_root, method, params, timeout=timeout)[1]


def ask(
    vault_root: str | os.PathLike[str],
    method: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float = 10.0,
) -> tuple[str, Any]:
    """:func:`request`, saying what happened: ``("ok", result)``, ``("absent", None)``
    (no server took the request) or ``("late", None)`` (it took the request and
    gave no answer in time: it may still carry it out). Server errors raise."""
    deadline = time.monotonic() + max(timeout, 0.0)
    folder, key = _locate(vault_root)
    socket_path = os.path.join(folder, f"{key}.sock")
    if not private_folder_ok(folder) or not os.path.exists(socket_path):
        return "absent", None
    message = {
        "v": PROTOCOL,
        "root": os.path.realpath(os.fspath(vault_root)),
        "method": method,
        "params": params or {},
    }
    family = getattr(socket, "AF_UNIX", None)
    if family is None:  # no unix sockets on this platform: never a server
        return "absent", None
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return "absent", None
    sent = False
    try:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.connect(socket_path)
        send_message(sock, message)
        sock.shutdown(socket.SHUT_WR)
        sent = True
        answer = recv_message(sock, deadline)
    except (OSError, ValueError):
        # No listener (a stale socket file), refused, timed out or cut off.
        return ("late" if sent else "absent"), None
    finally:
        sock.close()
    if not isinstance(answer, dict):
        return "absent", None
    if answer.get("ok"):
        return "ok", answer.get("result")
    _raise(answer.get("error"))


def ask_within(
    vault_root: str | os.PathLike[str],
    method: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float,
    check: float = PING_SECONDS,
) -> tuple[str, Any]:
    """:func:`ask` for a caller that must answer its own caller in time (a hook).

    Waits ``timeout`` seconds for the answer and, when none came, at most
    ``check`` more for a ``ping``. A server that answers the ping is busy:
    ``("late", None)``, and it may still carry the request out; one gone
    meanwhile, ``("absent", None)``. One that takes the ping and doesn't
    answer it is wedged (stopped, deadlocked, or cut off mid-answer): it is
    marked so beside its socket, and ``("wedged", None)``. While the mark is
    younger than :data:`WEDGED_SECONDS` and the socket is the one it was made
    for (a server started since has another), the server is not asked at all:
    ``("skipped", None)`` at once. Otherwise as :func:`ask`.
    """
    folder, key = _locate(vault_root)
    if not private_folder_ok(folder):
        return "absent", None
    marker = os.path.join(folder, f"{key}.wedged")
    try:
        st = os.stat(os.path.join(folder, f"{key}.sock"))
    except OSError:
        return "absent", None
    # The socket file as bound: a server started since binds another (an inode
    # number may come back once freed; its time of binding does not).
    bound = f"{st.st_ino}:{st.st_mtime_ns}"
    if _marked(marker, bound):
        return "skipped", None
    status, result = ask(vault_root, method, params, timeout=timeout)
    if status != "late":
        return status, result
    try:
        pinged = ask(vault_root, "ping", timeout=check)[0]
    except Exception:  # an error answer is an answer: someone is there
        pinged = "ok"
    if pinged == "ok":
        return "late", None
    if pinged == "absent":
        return "absent", None  # it is gone (a crash): the caller starts another
    _mark(marker, bound)
    return "wedged", None


def _marked(marker: str, bound: str) -> bool:
    """Whether ``marker`` says the server on the socket ``bound`` was found wedged lately."""
    try:
        fd = os.open(marker, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        age = time.time() - os.fstat(fd).st_mtime
        text = os.read(fd, _MARKER_MAX)
    except OSError:
        return False
    finally:
        os.close(fd)
    # A mark from the future (the clock was set back) is not trusted to be recent.
    return 0 <= age < WEDGED_SECONDS and text.strip() == bound.encode()


def _mark(marker: str, bound: str) -> None:
    """Write the wedged mark for the server on the socket ``bound`` (best effort)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(marker, flags, 0o600)
    except OSError:
        return
    try:
        os.write(fd, f"{bound}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def send_message(sock: socket.socket, message: Any) -> None:
    """One JSON object and a newline (non-ASCII escaped, so the line is plain bytes)."""
    sock.sendall(json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n")


def recv_message(sock: socket.socket, deadline: float) -> Any:
    """Read one newline-terminated JSON object before ``deadline`` (monotonic seconds).

    Raises TimeoutError when the deadline passes and ValueError on a message
    that is cut off, too large or not JSON.
    """
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer in time")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise ValueError("message too large")
        if chunk.endswith(b"\n"):
            break
    data = b"".join(chunks)
    if not data.endswith(b"\n"):
        raise ValueError("message cut off")
    return loads_bounded(data)


def _raise(error: Any) -> NoReturn:
    """Re-raise a server-side error as the same class of the mdmem tree (imported only now)."""
    import mdmem.errors as errors

    info = error if isinstance(error, dict) else {}
    name = str(info.get("type") or "MdmemError")
    message = str(info.get("message") or "the warm server failed")
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.MdmemError)):
        cls = errors.MdmemError
    raise cls(message)


def _uid() -> int:
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid is not None else 0


# -- the CLI's thin path ----------------------------------------------------------


def cli_command(argv: list[str]) -> str | None:
    """The subcommand word of ``mdmem ARGV`` (after the group's own options), or None."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _GROUP_VALUE_OPTIONS:
            i += 2
        elif word in _GROUP_FLAGS or word.startswith(("--vault=", "--agent=")):
            i += 1
        elif word.startswith("-"):
            return None  # -h, -V or an option the thin path does not know: the full CLI
        else:
            return word
    return None


def find_root(argv: list[str], cwd: str | None = None) -> str | None:
    """The vault ``mdmem ARGV`` would open: --vault (before or after the command),
    $MDMEM_VAULT, else the nearest folder with mdmem.toml; None if there is none."""
    given: str | None = None
    for i, word in enumerate(argv):
        if word == "--":
            break
        if word == "--vault" and i + 1 < len(argv):
            given = argv[i + 1]
            break
        if word.startswith("--vault="):
            given = word.split("=", 1)[1]
            break
    given = given or os.environ.get("MDMEM_VAULT")
    # A subfolder of a vault means the vault (mdmem.store.vaultdir.resolve_vault_path);
    # another repository on the way up is not part of it.
    here = os.path.realpath(os.path.expanduser(given) if given else (cwd or os.getcwd()))
    while True:
        if os.path.isfile(os.path.join(here, "mdmem.toml")):
            return here
        if given and os.path.exists(os.path.join(here, ".git")):
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def server_socket_exists(vault_root: str | os.PathLike[str]) -> bool:
    """Whether the vault's server socket is there (it may still be a stale one)."""
    folder, key = _locate(vault_root)
    return os.path.exists(os.path.join(folder, f"{key}.sock"))


def server_starting(vault_root: str | os.PathLike[str]) -> bool:
    """Whether a server holds the vault's lock (starting up, running or stopping)."""
    try:
        import fcntl
    except ImportError:  # no flock here: never a server either
        return False
    folder, key = _locate(vault_root)
    if not private_folder_ok(folder):
        return False
    try:
        fd = os.open(os.path.join(folder, f"{key}.lock"), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we got
    return False


def spawn_server(vault_root: str | os.PathLike[str]) -> bool:
    """Start the vault's warm server in the background, not waiting for it (True if launched).

    Several callers may race: the server's lock lets one run, the others exit.
    """
    import subprocess  # only on this path: a served call never needs it

    folder, key = _locate(vault_root)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not private_folder_ok(folder):
        return False
    root = os.path.realpath(os.fspath(vault_root))
    # A `hooks doctor` probe must not make the server a probe for good.
    env = {k: v for k, v in os.environ.items() if k != "MDMEM_HOOK_PROBE"}
    try:
        with open(os.path.join(folder, f"{key}.log"), "ab") as log_file:
            subprocess.Popen(
                [sys.executable, "-m", "mdmem", "--vault", root, "server", "run"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,  # outlives this command and its terminal's Ctrl-C
                close_fds=True,
            )
    except OSError:
        return False
    return True


def settings_env() -> str:
    """A digest of the environment that settings are read from (``MDMEM_*``,
    ``OPENAI_*``, the config and cache homes): a server started with another
    one would answer with other settings, so the CLI does not use it."""
    names = sorted(
        k
        for k in os.environ
        if (k.startswith(("MDMEM_", "OPENAI_")) and k not in _PROCESS_ONLY)
        or k in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
    )
    seed = "\0".join(f"{k}={os.environ[k]}" for k in names)
    return sha256(seed.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def thin_cli(argv: list[str]) -> int | None:
    """Run ``mdmem ARGV`` through the vault's warm server; the exit code, or None.

    None (the caller runs the full CLI) unless ARGV is a read command of
    :data:`READ_COMMANDS`, a server answers for its vault with the same
    settings environment (:func:`settings_env`), and neither
    ``MDMEM_NO_SERVER`` nor ``MDMEM_DEBUG`` (tracebacks come from in-process)
    is set. The server runs the same command, so the output is the same.
    With ``MDMEM_SERVER=auto`` a call that finds no server starts one in the
    background for the calls after it.
    """
    if os.environ.get("MDMEM_NO_SERVER") or os.environ.get("MDMEM_DEBUG"):
        return None
    if cli_command(argv) not in READ_COMMANDS or "--" in argv:
        return None
    if any(word in ("-h", "--help") or word.startswith("--agent") for word in argv):
        return None  # help is the full CLI's; --agent: the server's vault has its own
    root = find_root(argv)
    if root is None:
        return None
    if os.environ.get("MDMEM_SERVER") == "auto" and not server_socket_exists(root):
        spawn_server(root)  # for the next call; this one runs in-process
        return None
    try:
        timeout = float(os.environ.get("MDMEM_SERVER_TIMEOUT") or CLI_TIMEOUT_SECONDS)
    except ValueError:
        timeout = CLI_TIMEOUT_SECONDS
    try:
        params = {"argv": argv, "env": settings_env(), "cwd": os.getcwd()}
        answer = request(root, "cli", params, timeout=timeout)
    except Exception:  # the server refused the request itself: let the full CLI say why
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("code"), int):
        return None
    sys.stdout.write(str(answer.get("stdout") or ""))
    sys.stdout.flush()
    sys.stderr.write(str(answer.get("stderr") or ""))
    sys.stderr.flush()
    return int(answer["code"])
