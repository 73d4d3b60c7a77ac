"""``mdmem ui``: the memory viewer in the browser (:mod:`mdmem.ui`)."""

from __future__ import annotations

import logging
import shutil
import subprocess

import click

from mdmem.cli.context import Context, main

__all__ = ["ui"]


def _person(obj: Context) -> str | None:
    """Who the viewer's buttons commit as: --agent, else git's user.name for the vault."""
    if obj.agent:
        return obj.agent
    git = shutil.which("git")
    if git is None:
        return None
    try:
        found = subprocess.run(
            [git, "-C", str(obj.root()), "config", "user.name"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


@main.command("ui")
@click.option("--port", type=int, default=0, help="Port on 127.0.0.1 (default: a free one).")
@click.pass_obj
def ui(obj: Context, port: int) -> None:
    """Browse, search and review memories in your browser (127.0.0.1 only).

    Prints a URL that carries a one-run key: open it, and the browser gets a
    session of its own (a random path and a cookie sent only with it). Pages
    only read; the buttons (resolve, forget, merge or reject a review) run the
    same verbs as the CLI, committed as you (--agent, else git's user.name).
    Ctrl-C stops it.
    """
    from mdmem.ui import UiServer
    from mdmem.vault import Vault

    logging.getLogger("mdmem.ui").setLevel(logging.WARNING)
    vault = Vault.open(obj.root(), agent=_person(obj))
    try:
        server = UiServer(vault, port=port)
        click.echo(f"mdmem ui: open {server.url}", err=False)
        click.echo("(the key in that URL is the credential; Ctrl-C stops the viewer)", err=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.close()
    finally:
        vault.close()
