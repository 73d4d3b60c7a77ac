"""Old names that still answer, each with its replacement and the version that removes it.

Every alias table of mdmem has this one shape — old name → :class:`Alias`
(replacement, removal version) — whatever answers through it: the
pre-0.1.0 ``Vault`` attributes (:data:`mdmem.deprecations.MOVED`), the git
wrapper's methods on ``vault.git`` (:data:`mdmem.git.desk.GIT_WRAPPER`), the
old command names (:data:`mdmem.cli.context.CLI_ALIASES`), setting names
(:data:`mdmem.config.SETTING_NAMES`, one warning in the log) and the module
paths below. Every use warns, naming the replacement and the removal version
(Python: ``DeprecationWarning``; the CLI: one line on stderr). Each table
registers itself in :data:`TABLES`, so one test walks them all: it fails once
``mdmem.__version__`` reaches an alias's removal version while the alias is
still here, and when ``docs/upgrading.md`` misses one.

At the bottom of the house (standard library only). The old module paths of
:data:`MODULES` are answered by the finder ``import mdmem`` installs
(:class:`mdmem.MovedModuleFinder`), which reads this table only when an old path
is imported.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

__all__ = [
    "MODULES",
    "REMOVAL",
    "TABLES",
    "Alias",
    "AliasTable",
    "all_tables",
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
_HOLDERS = (
    "mdmem.config",
    "mdmem.deprecations",
    "mdmem.git.desk",
    "mdmem.cli.context",
    "mdmem.mcp.tools",
)


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
    # the doors got rooms of their own (0.1.x)
    "mdmem.agent.tools": "mdmem.mcp.tools",
    "mdmem.agent.session_tools": "mdmem.mcp.session_tools",
    "mdmem.agent.mcp_server": "mdmem.mcp.server",
    "mdmem.agent.mcp_stdio": "mdmem.mcp.stdio",
    "mdmem.agent.mcp_http": "mdmem.mcp.http",
    "mdmem.agent.hostkit": "mdmem.hookkit.runner",
    "mdmem.agent.hostformats": "mdmem.hookkit.hosts",
    "mdmem.agent.projectpolicy": "mdmem.hookkit.policy",
    "mdmem.agent.transcript": "mdmem.hookkit.transcript",
    "mdmem.agent.hooklog": "mdmem.hookkit.log",
    "mdmem.agent.toolfailure": "mdmem.hookkit.toolfailure",
    "mdmem.agent.warm": "mdmem.warm.client",
    "mdmem.agent.warm_server": "mdmem.warm.server",
    "mdmem.agent.capped": "mdmem.ipc.capped",
    "mdmem.agent.hostproc": "mdmem.ipc.hostproc",
    # memory/ in rooms: capture, consolidation, library, desks (0.1.x)
    "mdmem.memory.sessions": "mdmem.memory.capture.sessions",
    "mdmem.memory.toolcalls": "mdmem.memory.capture.toolcalls",
    "mdmem.memory.actions": "mdmem.memory.capture.actions",
    "mdmem.memory.pending": "mdmem.memory.capture.pending",
    "mdmem.memory.reminders": "mdmem.memory.capture.reminders",
    "mdmem.memory.extractive": "mdmem.memory.capture.extractive",
    "mdmem.memory.consolidate": "mdmem.memory.consolidation.consolidate",
    "mdmem.memory.lifecycle": "mdmem.memory.consolidation.lifecycle",
    "mdmem.memory.subjects": "mdmem.memory.consolidation.subjects",
    "mdmem.memory.episode_text": "mdmem.memory.consolidation.episode_text",
    "mdmem.memory.provenance": "mdmem.memory.consolidation.regenerate",
    "mdmem.memory.cleanup": "mdmem.memory.consolidation.cleanup",
    "mdmem.memory.reflect": "mdmem.memory.consolidation.reflect",
    "mdmem.memory.summaries": "mdmem.memory.consolidation.summaries",
    "mdmem.memory.importer": "mdmem.memory.library.importer",
    "mdmem.memory.import_formats": "mdmem.memory.library.import_formats",
    "mdmem.memory.restore": "mdmem.memory.library.restore",
    "mdmem.memory.export": "mdmem.memory.library.export",
    "mdmem.memory.documents": "mdmem.memory.library.documents",
    "mdmem.memory.docconvert": "mdmem.memory.library.docconvert",
    "mdmem.memory.browse": "mdmem.memory.library.browse",
    "mdmem.memory.admin": "mdmem.memory.desks.admin",
    "mdmem.memory.session_desk": "mdmem.memory.desks.sessions",
    "mdmem.memory.contacts": "mdmem.memory.desks.contacts",
    "mdmem.memory.parts": "mdmem.memory.desks.parts",
    # the hook door in its room: the fast client and the cold path (0.1.x)
    "mdmem.hookclient": "mdmem.hookkit.client",
    "mdmem.hookmain": "mdmem.hookkit.cold",
        }.items()
    },
)
"""Module paths that moved (0.0.x's into files/providers/recall; 0.1.x's doors into rooms of
their own and memory/ into four): :class:`MovedModuleFinder` answers each with the module at its
new path. No file stays at an old path, so ``git log --follow`` tracks every module."""
