"""`python -m mdmem` and the `mdmem` command.

:func:`run` hands a ``hook`` line to :mod:`mdmem.hookkit.client` and offers a
read command to the vault's warm server (see :mod:`mdmem.warm.client`), both
standard library only, so an answered call never imports click, numpy or the
indexes; otherwise, or when no server runs, it runs the full command line.
"""

from __future__ import annotations

import sys


def run() -> None:
    """The `mdmem` entry point."""
    argv = sys.argv[1:]
    if "hook" in argv:
        # A coding agent runs `mdmem hook ...` before every prompt and after every
        # tool call: the warm server's answer needs the standard library only.
        from mdmem.hookkit import client

        handed = client.run(argv)
        if isinstance(handed, tuple):  # no warm answer: the cold path, with what was read
            from mdmem.hookkit.cold import thin_hook

            handed = thin_hook(argv, raw=handed[0], prior=handed[1])
        if handed is not None:
            sys.exit(handed)
    from mdmem.warm.client import thin_cli

    code = thin_cli(argv)
    if code is not None:
        sys.exit(code)
    from mdmem.cli import main

    main(args=argv)  # explicit args: the group does not offer them to the server again


if __name__ == "__main__":
    run()
