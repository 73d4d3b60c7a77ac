"""mdmem: agent memory as an Obsidian-style markdown vault under git.

>>> from mdmem import Vault
>>> vault = Vault.init("my-vault")                    # doctest: +SKIP
>>> vault.remember("The user prefers metric units.", kind="preference")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdmem.errors import (
        ConfigError,
        ConflictError,
        DimensionMismatchError,
        DuplicateIdError,
        EmbedderError,
        GitError,
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
    from mdmem.models import KINDS, STATUSES, Block, Hit, Memory, Recall
    from mdmem.vault import Vault, VaultStatus, Version

__version__ = "0.1.0"

__all__ = [
    "KINDS",
    "STATUSES",
    "Block",
    "ConfigError",
    "ConflictError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "EmbedderError",
    "GitError",
    "Hit",
    "IndexError_",
    "InvalidInputError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMResponseError",
    "LockTimeoutError",
    "MdmemError",
    "Memory",
    "MemoryNotFoundError",
    "PathOutsideVaultError",
    "Recall",
    "ScopeDeniedError",
    "SecretRefusedError",
    "Vault",
    "VaultExistsError",
    "VaultFileError",
    "VaultNotFoundError",
    "VaultStatus",
    "Version",
    "__version__",
]

# `import mdmem` stays cheap (a CLI call answered by the warm server, a hook):
# each public name is imported from its module the first time it is used
# (PEP 562). `from mdmem import Vault` works as before.
_HOMES = {
    **{name: "mdmem.models" for name in ("KINDS", "STATUSES", "Block", "Hit", "Memory", "Recall")},
    **{name: "mdmem.vault" for name in ("Vault", "VaultStatus", "Version")},
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name) or ("mdmem.errors" if name in __all__ else None)
    if home is None or name == "__version__":
        raise AttributeError(f"module 'mdmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
