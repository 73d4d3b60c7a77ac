"""mdmem: agent memory as an Obsidian-style markdown vault under git.

>>> from mdmem import Vault
>>> vault = Vault.init("my-vault")                    # doctest: +SKIP
>>> vault.remember("The user prefers metric units.", kind="preference")  # doctest: +SKIP
"""

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
