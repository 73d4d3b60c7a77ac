"""Module paths that moved in 0.1.x, still importable (with a warning) until they go.

``import mdmem.agent.tools`` keeps working after the tool calls moved to
:mod:`mdmem.mcp.tools`: a finder on ``sys.meta_path`` answers each old path
in :data:`MOVED_MODULES` with the module at its new path (the same object,
so ``isinstance`` and monkeypatching see one module) and warns once per
import with the new path and the release that removes the old one. No file
stays behind at an old path, so a module's history follows it in git.
"""

from __future__ import annotations

import importlib
import sys
import warnings

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["MOVED_MODULES", "REMOVED_IN", "install"]

#: The release that removes every old path below.
REMOVED_IN = "0.2"

#: old dotted path -> new dotted path
MOVED_MODULES: dict[str, str] = {
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
    "mdmem.agent.relevance": "mdmem.hookkit.relevance",
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
}


class MovedModuleFinder:
    """Finds an old path of :data:`MOVED_MODULES` and loads it as the module it became."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in MOVED_MODULES:
            return None
        from importlib.util import spec_from_loader

        return spec_from_loader(fullname, self)  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; the old path goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        # The new module itself: the import system keeps its name and spec.
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path ran when it was imported."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (``import mdmem`` does)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
