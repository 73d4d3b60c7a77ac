"""``mdmem serve``: run the MCP server (registered on :data:`mdmem.cli.main`).

Imported by :mod:`mdmem.cli`; ``python -m mdmem.cli.serve serve …``
works on its own too.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from mdmem.cli.context import Context, main

__all__ = ["serve"]


@main.command()
@click.option(
    "--vault",
    "vault_override",
    type=click.Path(file_okay=False),
    default=None,
    help="Vault folder (same as the global --vault).",
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    help="A scope the client may read and write (repeatable; 'root' is the vault root). "
    "Default: every scope.",
)
@click.option(
    "--default-scope",
    default=None,
    help="Where remember writes when no scope is given (default: the first --scope).",
)
@click.option(
    "--http",
    is_flag=True,
    help="Serve streamable HTTP on 127.0.0.1 instead of stdio; clients must send your token "
    "(Authorization: Bearer, from the file it names).",
)
@click.option("--port", type=int, default=8765, show_default=True, help="Port for --http.")
@click.option(
    "--socket",
    "unix_socket",
    type=click.Path(dir_okay=False),
    default=None,
    help="Serve HTTP on this unix socket instead (in a folder only you can enter; "
    "connections from other users are refused). No token needed.",
)
@click.option("--new-token", is_flag=True, help="With --http: replace the token first.")
@click.option(
    "--daemon",
    is_flag=True,
    help="Instead of MCP: start the warm server the CLI and hooks use, in the background.",
)
@click.option(
    "--idle",
    type=float,
    default=None,
    help="With --daemon: stop after this many seconds without a request (default 1800).",
)
@click.option(
    "--repo",
    default=None,
    type=click.Path(file_okay=False),
    help="MCP: the code repository whose team memory recall and context add once you "
    "trust it (default: the folder the server starts in).",
)
@click.pass_obj
def serve(
    obj: Context,
    vault_override: str | None,
    scopes: tuple[str, ...],
    default_scope: str | None,
    http: bool,
    port: int,
    unix_socket: str | None,
    new_token: bool,
    daemon: bool,
    idle: float | None,
    repo: str | None,
) -> None:
    """Run the MCP server over stdio (or HTTP: --http, --socket); --daemon: the warm server.

    The vault and the allowed scopes are fixed here; clients cannot change them.
    Over HTTP on 127.0.0.1 every request needs your bearer token, kept in a file
    only you can read (the path is printed); on --socket, only your own user's
    processes are answered.
    """
    from mdmem.store.vaultdir import resolve_vault_path
    from mdmem.vault import Vault, find_vault_root

    if daemon:
        from mdmem.cli.warm import start_daemon

        start_daemon(obj, vault_override, idle)
        return
    from mdmem.mcp.server import run

    # stdout is the protocol on stdio: everything else goes to stderr.
    root_logger = logging.getLogger()
    for handler in list(root_logger.handlers):
        root_logger.removeHandler(handler)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.ERROR if obj.quiet else logging.WARNING,
        format="mdmem: %(levelname)s: %(message)s",
    )
    path = vault_override or obj.vault_path or os.environ.get("MDMEM_VAULT")
    root = resolve_vault_path(path) if path else find_vault_root()
    token = None
    socket_path = Path(unix_socket).expanduser().absolute() if unix_socket else None
    if http and socket_path is None:
        from mdmem.mcp.http import ensure_token, token_path

        token, how = ensure_token(renew=new_token)
        click.echo(
            f"mdmem: MCP over HTTP on http://127.0.0.1:{port}/mcp; clients send "
            f"'Authorization: Bearer <token>' with the token in {token_path()} "
            f"({how}; only you can read it)",
            err=True,
        )
    elif socket_path is not None:
        click.echo(f"mdmem: MCP over HTTP on the unix socket {socket_path} (you only)", err=True)
    vault = Vault.open(root, agent=obj.agent)
    try:
        run(
            vault,
            list(scopes) or None,
            default_scope,
            http=http,
            port=port,
            unix_socket=socket_path,
            token=token,
            repo=obj.here(repo),
        )
    except KeyboardInterrupt:
        pass
    finally:
        vault.close()


if __name__ == "__main__":  # pragma: no cover
    main()
