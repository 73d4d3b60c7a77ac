"""`python -m mdmem` and the `mdmem` command.

:func:`run` first offers a read command to the vault's warm server (see
:mod:`mdmem.warm.client`: standard library only, so an answered call never
imports click, numpy or the indexes); otherwise, or when no server runs, it
runs the full command line.
"""

from __future__ import annotations

import sys


def run() -> None:
    """The `mdmem` entry point."""
    from mdmem.warm.client import thin_cli

    code = None
    if "hook" in sys.argv[1:]:
        # A coding agent runs `mdmem hook ...` on every prompt: no click, no
        # indexes. Other commands don't pay for importing the hook kit.
        from mdmem.hookmain import thin_hook

        code = thin_hook(sys.argv[1:])
    if code is None:
        code = thin_cli(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from mdmem.cli import main

    main(args=sys.argv[1:])  # explicit args: the group does not offer them to the server again


if __name__ == "__main__":
    run()
