"""``mdmem server …`` and ``mdmem serve --daemon``: the warm server from the command line.

``serve --daemon`` (or ``server start``) starts :class:`~mdmem.warm.server.WarmServer`
for the vault in a background process and waits until it answers;
``server status`` and ``server stop`` talk to it; ``server run`` is the
process itself (in the foreground, for a supervisor such as systemd).

The server answers the ``cli`` method for the read commands of
:data:`mdmem.warm.client.READ_COMMANDS`: it runs the same click command
against its open vault and hands back stdout, stderr and the exit code, so
output through the server is the in-process output byte for byte.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mdmem.cli.context import (
    EXIT_ERROR,
    LOG_FORMAT,
    Context,
    OpenedVault,
    emit,
    json_option,
    main,
)
from mdmem.errors import InvalidInputError, MdmemError
from mdmem.warm.client import READ_COMMANDS, cli_command, paths_for, request, settings_env

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["cli_method", "server_group", "start_daemon"]

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
START_SECONDS = 120.0  # opening a big vault and loading the embedder, on a busy machine


def cli_method(vault: Vault, params: dict[str, Any], *, env: str | None = None) -> dict[str, Any]:
    """``cli``: run ``mdmem ARGV`` (a read command) against the open vault; its output.

    ``env``: the server's :func:`~mdmem.warm.client.settings_env`; a caller with
    another one is refused (it runs the command itself, with its settings).
    """
    from click.testing import CliRunner

    if env is not None and params.get("env") != env:
        raise InvalidInputError(
            "this warm server was started with other MDMEM_*/OPENAI_* settings; "
            "restart it (mdmem server stop; mdmem serve --daemon) to use them"
        )
    argv = params.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise InvalidInputError("cli needs 'argv', a list of strings")
    command = cli_command(argv)
    if command not in READ_COMMANDS:
        raise InvalidInputError(f"the warm server runs only read commands, not {command!r}")
    # What the command logs goes to the caller's stderr, as in its own process
    # (the server's log handlers hold the server's stderr, not the captured one).
    quiet = any(a in ("-q", "--quiet") for a in argv[: argv.index(command)])
    handler = logging.StreamHandler(_CapturedStderr())
    handler.setLevel(logging.ERROR if quiet else logging.WARNING)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root_logger = logging.getLogger()
    root_logger.addHandler(handler)
    try:
        # The caller's folder: `mdmem recall` reads the team tier of the checkout it is in.
        cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else None
        result = CliRunner().invoke(main, argv, obj=OpenedVault(vault, cwd), prog_name="mdmem")
    finally:
        root_logger.removeHandler(handler)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # The group turns every error into a line and an exit code; this is a bug.
        raise MdmemError(f"internal error ({type(result.exception).__name__}: {result.exception})")
    return {"stdout": result.stdout, "stderr": result.stderr, "code": result.exit_code}


class _CapturedStderr:
    """A stream that writes to whatever ``sys.stderr`` is at the moment (the runner's capture)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _root(obj: Context, override: str | None) -> Path:
    if override:
        return Path(override)
    return obj.root()


def start_daemon(obj: Context, vault_override: str | None, idle: float | None) -> None:
    """Start the warm server of the vault in the background; wait until it answers."""
    root = _root(obj, vault_override).expanduser().resolve()
    if not (root / "mdmem.toml").is_file():
        raise MdmemError(f"{root} is not an mdmem vault (no mdmem.toml): run `mdmem init {root}`")
    info = request(root, "ping", timeout=2.0)
    if info is not None:
        click.echo(f"a warm server already runs for {root} (pid {info['pid']})")
        return
    paths = paths_for(root)
    from mdmem.ipc.sockets import ensure_private_folder

    ensure_private_folder(paths.folder)
    args = [sys.executable, "-m", "mdmem", "--vault", str(root)]
    if obj.agent:
        args += ["--agent", obj.agent]
    args += ["server", "run"]
    if idle is not None:
        args += ["--idle", str(idle)]
    with open(paths.log, "ab") as log_file:
        child = subprocess.Popen(  # our own interpreter and module
            args,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,  # outlives this shell command and its Ctrl-C
            close_fds=True,
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        info = request(root, "ping", timeout=1.0)
        if info is not None:
            click.echo(f"warm server for {root} running (pid {info['pid']}, {paths.socket})")
            return
        code = child.poll()
        if code == EXIT_RUNNING:
            continue  # another start won the lock: wait for it to answer
        if code is not None:
            raise MdmemError(f"the warm server did not start (exit {code}; see {paths.log})")
        time.sleep(0.05)
    raise MdmemError(
        f"the warm server did not answer within {START_SECONDS:.0f} s (see {paths.log})"
    )


EXIT_RUNNING = 3  # `server run` when another server holds the vault's lock
EXIT_STUCK = 4  # `server run` stopped while a request still ran


@main.group("server")
def server_group() -> None:
    """The warm server that keeps the vault open for quick CLI and hook calls."""


@server_group.command("start")
@click.option("--idle", type=float, default=None, help="Stop after this many idle seconds.")
@click.pass_obj
def server_start(obj: Context, idle: float | None) -> None:
    """Start the warm server in the background (same as `mdmem serve --daemon`)."""
    start_daemon(obj, None, idle)


@server_group.command("run")
@click.option(
    "--idle",
    type=float,
    default=None,
    help="Stop after this many seconds without a request (default: $MDMEM_SERVER_IDLE or 1800).",
)
@click.pass_obj
def server_run(obj: Context, idle: float | None) -> None:
    """Run the warm server in the foreground until idle, `server stop` or Ctrl-C."""
    # One BLAS thread, set before numpy loads: the server embeds one short query
    # at a time, where a thread pool only adds hand-offs, and on a busy machine
    # its threads fight the other processes' (measured: MiniLM query 16 ms with
    # one thread, 135 ms with the default pool, at load 14 on 2 cores). Your own
    # value of these variables wins.
    for var in BLAS_THREAD_VARS:
        os.environ.setdefault(var, "1")
    from mdmem.hookkit.runner import serve_hook
    from mdmem.vault import Vault
    from mdmem.warm.server import DEFAULT_IDLE_SECONDS, ServerLock, WarmServer, warm_up

    if idle is None:
        idle = float(os.environ.get("MDMEM_SERVER_IDLE") or DEFAULT_IDLE_SECONDS)
    root = obj.root().expanduser().resolve()
    if not (root / "mdmem.toml").is_file():
        raise MdmemError(f"{root} is not an mdmem vault (no mdmem.toml): run `mdmem init {root}`")
    logging.getLogger("mdmem.server").setLevel(logging.INFO)
    paths = paths_for(root)
    # The lock comes before the slow open: a second start learns at once that it is second.
    lock = ServerLock(paths)
    if not lock.acquire():
        click.echo(f"a warm server already runs for {root}", err=True)
        raise click.exceptions.Exit(EXIT_RUNNING)
    try:
        vault = Vault.open(root, agent=obj.agent)
        try:
            server = WarmServer(
                vault, idle_seconds=idle, paths=paths, lock=lock, hooks=serve_hook
            )
            env = settings_env()
            # One at a time: the command runs with this process's stdout swapped.
            server.register("cli", lambda v, params: cli_method(v, params, env=env), lane="cli")
            warm_up(vault)
            server.bind()
            click.echo(f"mdmem warm server pid {os.getpid()} on {paths.socket}", err=True)
            if not server.serve_forever():
                # A request is stuck (it was logged): closing the vault would wait
                # for it forever. Whatever it half did, the next writer recovers.
                logging.getLogger("mdmem.server").error("exiting with a request unfinished")
                logging.shutdown()
                os._exit(EXIT_STUCK)
        finally:
            vault.close()  # checkpointed before a new server may take the lock
    finally:
        lock.release()


@server_group.command("status")
@json_option
@click.pass_obj
def server_status(obj: Context, as_json: bool) -> None:
    """Whether a warm server runs for this vault (exit 1 if not)."""
    from mdmem.warm.server import lock_holder

    root = obj.root().expanduser().resolve()
    paths = paths_for(root)
    info = request(root, "ping", timeout=2.0)
    # No answer, yet the lock is held: a server that is stopping (or wedged).
    holder = lock_holder(paths) if info is None else None
    data: dict[str, Any] = {"root": str(root), "running": False, "socket": str(paths.socket)}
    if info is not None:
        data = {"running": True, **info}
    elif holder is not None:
        data["stopping_pid"] = holder

    def human() -> None:
        if info is not None:
            click.echo(
                f"warm server pid {info['pid']} for {root}: up {info['uptime_s']:.0f} s, "
                f"{info['requests']} requests, {info.get('sessions', 0)} host session(s) open, "
                f"stops after {info['idle_seconds']:.0f} s idle once none is"
            )
            for job in info.get("busy") or []:
                click.echo(f"  running: {job['method']} ({job['lane']}) for {job['seconds']} s")
        elif holder is not None:
            click.echo(f"a warm server for {root} is stopping (pid {holder}) and takes no requests")
        else:
            click.echo(f"no warm server for {root}")

    emit(data, as_json, human)
    if info is None:
        raise click.exceptions.Exit(EXIT_ERROR)


@server_group.command("stop")
@json_option
@click.pass_obj
def server_stop(obj: Context, as_json: bool) -> None:
    """Stop the warm server of this vault (nothing to do if none runs)."""
    from mdmem.warm.server import STOP_GRACE_SECONDS, lock_holder

    root = obj.root().expanduser().resolve()
    paths = paths_for(root)
    answer = request(root, "stop", timeout=5.0)
    pid = answer.get("pid") if isinstance(answer, dict) else lock_holder(paths)
    running = bool(answer.get("busy")) if isinstance(answer, dict) else False
    if answer is None and pid is not None and pid > 0:
        # It holds the vault's lock but does not answer: ask it the other way.
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    gone = pid is None
    if pid is not None:
        # Until the process has exited (running requests may finish first), a
        # start right after would find the old one still holding the vault.
        deadline = time.monotonic() + STOP_GRACE_SECONDS + 5.0
        while time.monotonic() < deadline:
            if lock_holder(paths) is None:
                gone = True
                break
            time.sleep(0.05)
    result = {"root": str(root), "stopped": pid is not None and gone, "pid": pid}
    if pid is not None and not gone:
        result["still_running"] = True

    def human() -> None:
        if pid is None:
            click.echo(f"no warm server for {root}")
        elif gone:
            extra = " (after its running requests finished)" if running else ""
            click.echo(f"stopped the warm server for {root}{extra}")
        else:
            click.echo(
                f"the warm server for {root} (pid {pid}) was told to stop but still runs "
                f"after {STOP_GRACE_SECONDS + 5:.0f} s; `kill {pid}` ends it"
            )

    emit(result, as_json, human)
