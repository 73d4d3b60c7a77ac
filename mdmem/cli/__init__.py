"""The ``mdmem`` command line: a thin click layer over :class:`mdmem.Vault`.

The contract verbs are top-level commands (``commands``, ``consolidation``);
everything else sits in a noun group named after the vault's desk it calls:
``session``, ``git``, ``admin``, ``library``, ``contacts``, ``usefulness``, ``team``,
plus the front doors ``hook``/``hooks``, ``server`` and ``serve``. ``context``
holds what every command shares (the group, the vault, output, one-line errors,
and the pre-0.1 command names that still answer as hidden aliases).
"""

from mdmem.cli import (
    admin,
    commands,
    consolidation,
    contacts,
    demo,
    documents,
    git,
    hooks,
    library,
    projects,
    serve,
    sessions,
    team,
    ui,
    usefulness,
    warm,
)
from mdmem.cli.context import main

__all__ = [
    "admin",
    "commands",
    "consolidation",
    "contacts",
    "demo",
    "documents",
    "git",
    "hooks",
    "library",
    "main",
    "projects",
    "serve",
    "sessions",
    "team",
    "ui",
    "usefulness",
    "warm",
]
