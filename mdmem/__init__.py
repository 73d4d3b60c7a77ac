"""mdmem: agent memory as an Obsidian-style markdown vault under git.

>>> from mdmem import Vault
>>> vault = Vault.init("my-vault")                    # doctest: +SKIP
>>> vault.remember("The user prefers metric units.", kind="preference")  # doctest: +SKIP
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see __getattr__)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from mdmem.agent.hooks import MemoryHooks, compact_with_vault
    from mdmem.agent.prompt import PromptContext, prompt_context
    from mdmem.errors import (
        ConfigError,
        ConflictError,
        DimensionMismatchError,
        DuplicateIdError,
        EmbedderError,
        GitError,
        HumanNoteError,
        IndexError_,
        InvalidInputError,
        LLMError,
        LLMNotConfiguredError,
        LLMResponseError,
        LockTimeoutError,
        MdmemError,
        MemoryNotFoundError,
        PathOutsideVaultError,
        ScopeDeniedError,
        SecretRefusedError,
        VaultExistsError,
        VaultFileError,
        VaultNotFoundError,
    )
    from mdmem.mcp.tools import Toolset
    from mdmem.memory.capture.sessions import Session
    from mdmem.models import KINDS, STATUSES, Block, Hit, Memory, Recall
    from mdmem.providers.llm import USE_CONFIGURED_LLM, LLMClient
    from mdmem.vault import Vault, VaultStatus, Version

__version__ = "0.1.0"



class _MovedModuleFinder:
    """Imports an old module path (``mdmem.agent.tools``, ``mdmem.store.ids``, ...) as the
    module it became, the same object, with a ``DeprecationWarning`` naming the new path and
    the release that removes the old one (:data:`mdmem.aliases.MODULES`).

    Last on ``sys.meta_path``, so it is asked only about modules no file provides; the
    table is read then, keeping ``import mdmem`` as cheap as a hook needs.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if not fullname.startswith("mdmem."):
            return None
        from mdmem.aliases import MODULES

        if fullname not in MODULES:
            return None
        from importlib.util import spec_from_loader

        return spec_from_loader(fullname, self)  # type: ignore[arg-type]

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        import importlib
        import warnings

        from mdmem.aliases import MODULES

        alias = MODULES[spec.name]
        warnings.warn(alias.message, DeprecationWarning, stacklevel=2)
        # The new module itself: the import system keeps its name and spec.
        return importlib.import_module(alias.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new path ran when it was imported."""


def _install_moved_module_finder() -> None:
    import sys

    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())


_install_moved_module_finder()

__all__ = [
    "KINDS",
    "STATUSES",
    "USE_CONFIGURED_LLM",
    "Block",
    "ConfigError",
    "ConflictError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "EmbedderError",
    "GitError",
    "Hit",
    "HumanNoteError",
    "IndexError_",
    "InvalidInputError",
    "LLMClient",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMResponseError",
    "LockTimeoutError",
    "MdmemError",
    "Memory",
    "MemoryHooks",
    "MemoryNotFoundError",
    "PathOutsideVaultError",
    "PromptContext",
    "Recall",
    "ScopeDeniedError",
    "SecretRefusedError",
    "Session",
    "Toolset",
    "Vault",
    "VaultExistsError",
    "VaultFileError",
    "VaultNotFoundError",
    "VaultStatus",
    "Version",
    "__version__",
    "compact_with_vault",
    "prompt_context",
]

# `import mdmem` stays cheap (a CLI call answered by the warm server, a hook):
# each public name is imported from its module the first time it is used
# (PEP 562). `from mdmem import Vault` works as before.
_HOMES = {
    **{name: "mdmem.models" for name in ("KINDS", "STATUSES", "Block", "Hit", "Memory", "Recall")},
    **{name: "mdmem.vault" for name in ("Vault", "VaultStatus", "Version")},
    **{name: "mdmem.agent.hooks" for name in ("MemoryHooks", "compact_with_vault")},
    **{name: "mdmem.agent.prompt" for name in ("PromptContext", "prompt_context")},
    **{name: "mdmem.providers.llm" for name in ("USE_CONFIGURED_LLM", "LLMClient")},
    "Toolset": "mdmem.mcp.tools",
    "Session": "mdmem.memory.capture.sessions",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name) or ("mdmem.errors" if name in __all__ else None)
    if home is None or name == "__version__":
        raise AttributeError(f"module 'mdmem' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
