"""Where things live in a vault, and what a place says about them: scopes and
their folders, the kind a file's memories default to, memory files and their
archives, a typed line's key, a note's own date.

Pure functions of paths and values: nothing here reads a file.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from mdmem.errors import InvalidInputError
from mdmem.models import KIND_LABELS

__all__ = [
    "ARCHIVE_SUFFIX",
    "ROOT_SCOPE",
    "UNDATED",
    "archive_path",
    "default_kind_for",
    "is_entry_file",
    "is_scope",
    "is_typed_key",
    "kind_label",
    "memory_file_kind",
    "name_date",
    "own_date",
    "parse_datetime",
    "scope_dir",
    "scope_of_path",
    "unarchived_path",
    "validate_scope",
]

# Used with fullmatch: "$" would also match before a final newline ("user:alice\n").
_SCOPE = re.compile(r"([a-z][a-z0-9_-]{0,31}):([a-z0-9][a-z0-9._-]{0,63})")
# The vault root scope is "" in the API; where a reader needs a word for it
# (frontmatter, commit trailers, tool arguments) it is "root".
ROOT_SCOPE = "root"

_FILE_KINDS = {
    "MEMORY.md": "fact",
    "USER.md": "preference",
    "LEARNING.md": "learning",
    "WORLD.md": "world",
    "JOURNAL.md": "journal",
}
_ENTRY_KINDS = frozenset({"log", "journal", "chat_message", "document_chunk"})
#: Where retired list items of a memory file go, beside it: ``MEMORY.md`` ->
#: ``MEMORY.earlier.md`` (a name of its own, so ``[[MEMORY]]`` still means one note).
ARCHIVE_SUFFIX = ".earlier.md"

# A line a person typed without an id, in a memory file, is a block of its own
# at once, keyed by its text until mdmem gives it an id: "USER.md#item-3f2a9c1b".
_TYPED_KEY = re.compile(r"#item-[0-9a-f]{12}(?: \(\d+\))?\Z")


def validate_scope(scope: str | None) -> str:
    """``None``/``""`` is the vault root; otherwise ``kind:name`` in lower case."""
    if scope is None or scope == "":
        return ""
    if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
        raise InvalidInputError(
            f"invalid scope {scope!r}: use kind:name in lower case, e.g. project:marketing"
        )
    return scope


def is_scope(value: str) -> bool:
    """Whether ``value`` is a scope's ``kind:name`` (the root's ``""`` is not)."""
    return _SCOPE.fullmatch(value) is not None


def scope_dir(scope: str) -> PurePosixPath:
    """Where a scope's files live: the root, or ``scopes/<kind>/<name>``."""
    if not scope:
        return PurePosixPath()
    kind, name = scope.split(":", 1)
    return PurePosixPath("scopes", kind, name)


# Called a few times per block on the write path with a handful of distinct paths.
@lru_cache(maxsize=4096)
def scope_of_path(path: str) -> tuple[str, str]:
    """(scope, path relative to the scope folder) for a vault-relative path."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 4 and parts[0] == "scopes":
        scope = f"{parts[1]}:{parts[2]}"
        if _SCOPE.fullmatch(scope):
            return scope, "/".join(parts[3:])
    return "", path


@lru_cache(maxsize=4096)
def default_kind_for(path: str) -> str:
    _, inner = scope_of_path(path)
    parts = PurePosixPath(inner).parts
    if len(parts) == 1 and _home_name(parts[0]) in _FILE_KINDS:
        return _FILE_KINDS[_home_name(parts[0])]  # MEMORY.earlier.md: MEMORY.md's retired lines
    if len(parts) == 1 and parts[0] in _FILE_KINDS:
        return _FILE_KINDS[parts[0]]
    if parts and parts[0] == "daily":
        return "log"
    if parts and parts[0] == "episodes":
        return "episode"
    if parts and parts[0] == "sessions":
        return "chat_message"
    if len(parts) == 2 and parts[0] == "documents":
        return "document_chunk"  # mdmem.memory.library.documents writes these files
    return "note"


def is_entry_file(path: str) -> bool:
    return default_kind_for(path) in _ENTRY_KINDS


@lru_cache(maxsize=4096)
def memory_file_kind(path: str) -> str | None:
    """The kind of a memory file (``MEMORY.md``, ``USER.md``, ``LEARNING.md``,
    ``WORLD.md``, of the root or a scope, and their archives), where a line a
    person types is a memory at once; None for any other file."""
    _, inner = scope_of_path(path)
    parts = PurePosixPath(inner).parts
    if len(parts) != 1:
        return None
    name = _home_name(parts[0])
    if name in _FILE_KINDS and name != "JOURNAL.md":
        return _FILE_KINDS[name]
    return None


def _home_name(name: str) -> str:
    """``MEMORY.md`` for ``MEMORY.earlier.md``; any other name as it is."""
    return name[: -len(ARCHIVE_SUFFIX)] + ".md" if name.endswith(ARCHIVE_SUFFIX) else name


def archive_path(path: str) -> str:
    """Where a retired line of ``path`` goes: ``MEMORY.earlier.md`` beside ``MEMORY.md``."""
    return path[: -len(".md")] + ARCHIVE_SUFFIX


def unarchived_path(path: str) -> str | None:
    """The note an archive file belongs to (None when ``path`` is not an archive)."""
    if not path.endswith(ARCHIVE_SUFFIX):
        return None
    return path[: -len(ARCHIVE_SUFFIX)] + ".md"


def kind_label(kind: str) -> str | None:
    """The word a line of ``kind`` starts with (``Decision``), or None."""
    return KIND_LABELS.get(kind)


def is_typed_key(block_id: str) -> bool:
    """Whether a block key is a typed line's (a list item a person wrote, without an id yet)."""
    return "#item-" in block_id and _TYPED_KEY.search(block_id) is not None


# The date of a note that has none of its own (see parse): the epoch, which
# the manifest already reads back for a missing date; recall's recency skips it.
UNDATED = datetime.fromtimestamp(0, tz=UTC)
_DAILY = re.compile(r"(?:^|/)(\d{4})-(\d{2})-(\d{2})\.md$")


def name_date(path: str) -> datetime | None:
    """A daily note's date from its name (``journal/2025-03-02.md``), else None."""
    match = _DAILY.search(path)
    if match is None:
        return None
    try:
        year, month, day = (int(g) for g in match.groups())
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None  # 2025-13-40.md names no day


def own_date(path: str, meta: dict[str, Any]) -> datetime | None:
    """The date a note gives itself: its frontmatter's ``created``/``date``,
    else a daily note's name; None when it gives none (then git history may:
    :mod:`mdmem.store.gitdates`)."""
    return parse_datetime(meta.get("created") or meta.get("date")) or name_date(path)


def parse_datetime(value: Any) -> datetime | None:
    """ISO date or datetime (or a YAML date) to an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip().replace(" ", "T", 1) if "T" not in str(value) else str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
