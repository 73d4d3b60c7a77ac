"""``mdmem server …`` and ``mdmem serve --daemon``: the warm server from the command line.

``serve --daemon`` (or ``server start``) starts :class:`~mdmem.agent.warm_server.WarmServer`
for the vault in a background process and waits until it answers;
``server status`` and ``server stop`` talk to it; ``server run`` is the
process itself (in the foreground, for a supervisor such as systemd).

The server answers the ``cli`` method for the read commands of
:data:`mdmem.agent.warm.READ_COMMANDS`: it runs the same click command
against its open vault and hands back stdout, stderr and the exit code, so
output through the server is the in-process output byte for byte.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mdmem.agent.warm import READ_COMMANDS, cli_command, paths_for, request
from mdmem.cli.context import EXIT_ERROR, Context, OpenedVault, emit, json_option, main
from mdmem.errors import InvalidInputError, MdmemError

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["cli_method", "server_group", "start_daemon"]

START_SECONDS = 120.0  # opening a big vault and loading the embedder, on a busy machine


def cli_method(vault: Vault, params: dict[str, Any]) -> dict[str, Any]:
    """``cli``: run ``mdmem ARGV`` (a read command) against the open vault; its output."""
    from click.testing import CliRunner

    argv = params.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise InvalidInputError("cli needs 'argv', a list of strings")
    command = cli_command(argv)
    if command not in READ_COMMANDS:
        raise InvalidInputError(f"the warm server runs only read commands, not {command!r}")
    result = CliRunner().invoke(main, argv, obj=OpenedVault(vault), prog_name="mdmem")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # The group turns every error into a line and an exit code; this is a bug.
        raise MdmemError(f"internal error ({type(result.exception).__name__}: {result.exception})")
    return {"stdout": result.stdout, "stderr": result.stderr, "code": result.exit_code}


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
    from mdmem.agent.warm_server import ensure_private_folder

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
    from mdmem.agent.warm_server import DEFAULT_IDLE_SECONDS, ServerLock, WarmServer, warm_up
    from mdmem.vault import Vault

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
    vault = Vault.open(root, agent=obj.agent)
    try:
        server = WarmServer(vault, idle_seconds=idle, paths=paths, lock=lock)
        server.register("cli", cli_method)
        warm_up(vault)
        server.bind()
        click.echo(f"mdmem warm server pid {os.getpid()} on {paths.socket}", err=True)
        server.serve_forever()
    finally:
        lock.release()
        vault.close()


@server_group.command("status")
@json_option
@click.pass_obj
def server_status(obj: Context, as_json: bool) -> None:
    """Whether a warm server runs for this vault (exit 1 if not)."""
    root = obj.root().expanduser().resolve()
    info = request(root, "ping", timeout=2.0)
    data = info or {"root": str(root), "running": False, "socket": str(paths_for(root).socket)}
    if info is not None:
        data = {"running": True, **info}

    def human() -> None:
        if info is None:
            click.echo(f"no warm server for {root}")
        else:
            click.echo(
                f"warm server pid {info['pid']} for {root}: up {info['uptime_s']:.0f} s, "
                f"{info['requests']} requests, stops after {info['idle_seconds']:.0f} s idle"
            )

    emit(data, as_json, human)
    if info is None:
        raise click.exceptions.Exit(EXIT_ERROR)


@server_group.command("stop")
@json_option
@click.pass_obj
def server_stop(obj: Context, as_json: bool) -> None:
    """Stop the warm server of this vault (nothing to do if none runs)."""
    root = obj.root().expanduser().resolve()
    answer = request(root, "stop", timeout=5.0)
    if answer is not None:
        # Wait for the socket to go, so a start right after does not find the old one.
        deadline = time.monotonic() + 10.0
        while paths_for(root).socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    emit(
        {"root": str(root), "stopped": answer is not None},
        as_json,
        lambda: click.echo(
            f"stopped the warm server for {root}" if answer else f"no warm server for {root}"
        ),
    )
