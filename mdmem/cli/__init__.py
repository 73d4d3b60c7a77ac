"""The ``mdmem`` command line: a thin click layer over :class:`mdmem.Vault`.

``context`` holds what every command shares (the group, the vault, output
and one-line errors); each other module registers its commands on the group.
"""

from mdmem.cli import (
    archive,
    cleanup,
    commands,
    contacts,
    documents,
    gitnative,
    hooks,
    lifecycle,
    providers,
    seeds,
    serve,
    transfer,
    warm,
)
from mdmem.cli.context import main

__all__ = [
    "archive",
    "cleanup",
    "commands",
    "contacts",
    "documents",
    "gitnative",
    "hooks",
    "lifecycle",
    "main",
    "providers",
    "seeds",
    "serve",
    "transfer",
    "warm",
]
