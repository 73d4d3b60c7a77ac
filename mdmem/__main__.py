"""`python -m mdmem` and the `mdmem` command.

:func:`run` first offers a read command to the vault's warm server (see
:mod:`mdmem.agent.warm`: standard library only, so an answered call never
imports click, numpy or the indexes); otherwise, or when no server runs, it
runs the full command line.
"""

from __future__ import annotations

import sys


def run() -> None:
    """The `mdmem` entry point."""
    from mdmem.agent.warm import thin_cli

    code = thin_cli(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from mdmem.cli import main

    main()


if __name__ == "__main__":
    run()
