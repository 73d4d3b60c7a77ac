"""Old names that still answer, each with its replacement and the version that removes it.

Every alias table of mdmem has this one shape — old name → :class:`Alias`
(replacement, removal version) — whatever answers through it: the
pre-0.1.0 ``Vault`` attributes (:data:`mdmem.deprecations.MOVED`), the git
wrapper's methods on ``vault.git`` (:data:`mdmem.git.desk.GIT_WRAPPER`), the
old command names (:data:`mdmem.cli.context.CLI_ALIASES`) and the module
paths below. Every use warns, naming the replacement and the removal version
(Python: ``DeprecationWarning``; the CLI: one line on stderr). Each table
registers itself in :data:`TABLES`, so one test walks them all: it fails once
``mdmem.__version__`` reaches an alias's removal version while the alias is
still here, and when ``docs/upgrading.md`` misses one.

At the bottom of the house (standard library only): the module shims in
``mdmem.store``, ``mdmem.index`` and ``mdmem.memory`` import it.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType

__all__ = [
    "MODULES",
    "REMOVAL",
    "TABLES",
    "Alias",
    "AliasTable",
    "all_tables",
    "moved_module",
    "overdue",
    "version_key",
]

REMOVAL = "0.2.0"
"""The release that removes the names that moved in 0.1.0."""


def version_key(version: str) -> tuple[int, ...]:
    """``"0.1.0"`` → ``(0, 1, 0)``; a pre-release suffix (``0.2.0rc1``) counts as that release."""
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (3 - len(parts)))


@dataclass(frozen=True)
class Alias:
    """One old name: what to use instead and the release that removes it."""

    old: str  # as a user writes it: "Vault.store", "mdmem.store.ids", "mdmem import"
    new: str  # the same for its replacement
    removal: str = REMOVAL

    @property
    def message(self) -> str:
        return f"{self.old} is deprecated and is removed in {self.removal}: use {self.new}"

    def warn(self, stacklevel: int = 2) -> None:
        """A ``DeprecationWarning`` at the caller's caller (``stacklevel`` as in warnings.warn)."""
        warnings.warn(self.message, DeprecationWarning, stacklevel=stacklevel + 1)


class AliasTable(Mapping[str, Alias]):
    """A named, read-only table of aliases, keyed by the name code looks up."""

    def __init__(self, name: str, entries: Mapping[str, Alias]) -> None:
        self.name = name
        self._entries = dict(entries)
        TABLES.append(self)

    def __getitem__(self, key: str) -> Alias:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"AliasTable({self.name!r}, {len(self)} aliases)"


TABLES: list[AliasTable] = []
"""Every alias table imported so far (:func:`all_tables` imports them all)."""

# The modules that hold an alias table, above this one: imported by name, so
# the bottom of the house does not depend on them.
_HOLDERS = ("mdmem.deprecations", "mdmem.git.desk", "mdmem.cli.context", "mdmem.agent.tools")


def all_tables() -> list[AliasTable]:
    """Every alias table of mdmem."""
    for holder in _HOLDERS:
        importlib.import_module(holder)
    return list(TABLES)


def overdue(version: str) -> list[Alias]:
    """The aliases a release ``version`` must no longer have (its removal version reached)."""
    return [
        a
        for t in all_tables()
        for a in t.values()
        if version_key(version) >= version_key(a.removal)
    ]


MODULES = AliasTable(
    "module paths",
    {
        old: Alias(old, new)
        for old, new in {
            "mdmem.store.textfile": "mdmem.files.textfile",
            "mdmem.store.blocks": "mdmem.files.blocks",
            "mdmem.store.escape": "mdmem.files.escape",
            "mdmem.store.ids": "mdmem.files.ids",
            "mdmem.store.people": "mdmem.files.people",
            "mdmem.store.catalog": "mdmem.files.catalog",
            "mdmem.store.changefeed": "mdmem.files.changefeed",
            "mdmem.index.manifest": "mdmem.files.manifest",
            "mdmem.index.health": "mdmem.files.health",
            "mdmem.memory.llm": "mdmem.providers.llm",
            "mdmem.index.embedders": "mdmem.providers.embedders",
            "mdmem.index.minilm": "mdmem.providers.minilm",
            "mdmem.index.registry": "mdmem.providers.registry",
            "mdmem.memory.llm_rerank": "mdmem.recall.llm_rerank",
        }.items()
    },
)
"""Module paths of 0.0.x, each now a shim that hands back the module at its new path."""


def moved_module(name: str) -> ModuleType:
    """Run by the shim at ``name``: warn, and make the import hand back the new module."""
    alias = MODULES[name]
    # The importer's frame sits under importlib's own; past the shim and this call.
    alias.warn(stacklevel=3)
    module = importlib.import_module(alias.new)
    sys.modules[name] = module
    return module
