"""The one exception tree of mdmem.

Every error mdmem raises on purpose derives from :class:`MdmemError`, so a
caller (and the CLI, which turns them into one-line messages) can catch one
class::

    MdmemError
    ├── ConfigError              mdmem.toml or MDMEM_* settings are invalid
    ├── VaultNotFoundError       no vault at the path / none found walking up
    ├── VaultExistsError         Vault.init on a folder that already holds one
    ├── InvalidInputError        bad kind, scope, id, text or argument (also ValueError)
    │   ├── SecretRefusedError   text looks like it carries a secret
    │   └── HumanNoteError       a write verb named a note a person wrote (path.md#Heading)
    ├── PathOutsideVaultError    a path or symlink would lead out of the vault
    ├── MemoryNotFoundError      no memory with that id (also KeyError)
    ├── DuplicateIdError         the id is on more than one line (a copied line)
    ├── ConflictError            a concurrent edit could not be reconciled
    ├── LockTimeoutError         the vault lock could not be taken in time
    ├── GitError                 a git command failed
    ├── IndexError_              a derived index is unusable (rebuild it)
    │   └── DimensionMismatchError  vectors of another size than the index
    ├── EmbedderError            the embedder failed or is not installed
    ├── LLMError                 the language model path failed
    │   ├── LLMNotConfiguredError   no endpoint/model configured
    │   └── LLMResponseError        the reply was not usable (after repair)
    ├── ScopeDeniedError         a scope outside what the host allowed
    └── VaultFileError           a file mdmem must write to cannot be parsed
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

__all__ = [
    "ConfigError",
    "ConflictError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "EmbedderError",
    "GitError",
    "HookConfigError",
    "HumanNoteError",
    "IndexError_",
    "InvalidInputError",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMResponseError",
    "LockTimeoutError",
    "MdmemError",
    "MemoryNotFoundError",
    "PathOutsideVaultError",
    "PurgeIncompleteError",
    "ScopeDeniedError",
    "SecretRefusedError",
    "Spelled",
    "VaultExistsError",
    "VaultFileError",
    "VaultNotFoundError",
    "add_message_filter",
]

# Messages quote the input they refuse ("invalid tag '…'", "not a memory id:
# '…'"); when that input is a secret, the message must not carry it on to a
# terminal, a log or a model. The secret guard (mdmem.store.secret_guard)
# registers its redactor here: this bottom layer cannot import it.
_message_filters: list[Callable[[str], str]] = []


def add_message_filter(fn: Callable[[str], str]) -> None:
    """Pass every future error message through ``fn`` (once per function)."""
    if fn not in _message_filters:
        _message_filters.append(fn)


def _filtered(message: str) -> str:
    for fn in _message_filters:
        message = fn(message)
    return message


@dataclass(frozen=True)
class Spelled:
    """An argument an error message names, as the Python API and the command line spell it."""

    python: str  # secrets='redact'
    cli: str  # --redact


class MdmemError(Exception):
    """Base of every error mdmem raises on purpose.

    String arguments pass through the registered message filters, so a
    secret quoted from the input is redacted in ``str(exc)`` and ``exc.args``.
    """

    # The message as the command line says it (flags, not parameters); None: str(exc).
    cli_message: str | None = None

    def __init__(self, *args: object) -> None:
        super().__init__(*(_filtered(a) if isinstance(a, str) else a for a in args))

    @classmethod
    def naming(cls, *parts: str | Spelled) -> Self:
        """An error whose message names arguments: ``str(exc)`` spells them
        as the Python API does, :attr:`cli_message` as the command line does."""
        error = cls("".join(p if isinstance(p, str) else p.python for p in parts))
        error.cli_message = _filtered("".join(p if isinstance(p, str) else p.cli for p in parts))
        return error


class ConfigError(MdmemError):
    """Settings in mdmem.toml or the MDMEM_* environment are invalid."""


class VaultNotFoundError(MdmemError):
    """No vault (a folder with mdmem.toml) at or above the given path."""


class VaultExistsError(MdmemError):
    """Vault.init was asked to create a vault where one already exists."""


class InvalidInputError(MdmemError, ValueError):
    """An argument is not acceptable: unknown kind, bad scope, empty text..."""


class SecretRefusedError(InvalidInputError):
    """The text looks like it carries a secret and the guard is set to refuse."""


class HumanNoteError(InvalidInputError):
    """A verb that changes a memory was given a note a person wrote (``path.md#Heading``):
    mdmem reads human notes but leaves editing them to people."""


class PathOutsideVaultError(MdmemError):
    """A path, or a symlink on the way to it, leads outside the vault."""


class MemoryNotFoundError(MdmemError, KeyError):
    """No memory block with that id exists in the vault."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "memory not found"


class DuplicateIdError(MdmemError):
    """The id a call names is on more than one line: a person copied the line.

    The call is refused rather than acting on one of them; ``places`` lists
    each line as (path, line number, scope), and ``mdmem doctor --fix`` gives
    the copy a fresh id.
    """

    def __init__(
        self, message: str, memory_id: str = "", places: tuple[tuple[str, int, str], ...] = ()
    ) -> None:
        super().__init__(message)
        self.memory_id = memory_id
        self.places = places


class ConflictError(MdmemError):
    """A concurrent change (a human editing, a merge) could not be reconciled."""


class LockTimeoutError(MdmemError):
    """The cross-process vault lock was not acquired within the timeout."""


class GitError(MdmemError):
    """A git command failed; the message carries git's own words."""


class PurgeIncompleteError(GitError):
    """The purged text is still somewhere the error names: after the purge rewrote
    what it knew how to, or (``rewritten`` False) before it changed anything, when a
    kept memory holds one of its fragments in words of its own."""

    places: tuple[str, ...] = ()  # every holder left, the message shows the first few
    rewritten: bool = True  # False: the purge stopped first; nothing changed


class IndexError_(MdmemError):  # noqa: N801, N818 - must not shadow the builtin IndexError
    """A derived index (keyword, vector, manifest) is unusable; reindex rebuilds it."""


class DimensionMismatchError(IndexError_):
    """Vectors of one size were offered to an index built for another size."""


class EmbedderError(MdmemError):
    """The embedder failed, or its weights or extra are not installed."""


class LLMError(MdmemError):
    """The language-model path failed (network, protocol, retries exhausted)."""


class LLMNotConfiguredError(LLMError):
    """No LLM endpoint/model is configured; the message says how to set one."""


class LLMResponseError(LLMError):
    """The model's reply could not be used, even after one repair attempt."""


class ScopeDeniedError(MdmemError):
    """A scope outside the set the host application allowed was requested."""


class HookConfigError(MdmemError):
    """A coding agent's settings file can't take mdmem's hooks as asked: it leads
    outside the project, is not UTF-8 or not a JSON object, or the host has no
    such file; fix it, or ask for another location."""


class VaultFileError(MdmemError):
    """A vault file mdmem must write to cannot be parsed (binary, bad UTF-8,
    malformed or oversized frontmatter, conflict markers); fix or move it."""


class TeamError(MdmemError):
    """The repository's team tier can't do what was asked: no repository, no team
    folder, an id that is no proposal, a team file with uncommitted edits."""
