"""The merge drivers a vault's ``.gitattributes`` names, and the repair of old ones.

Append-only files (daily logs, JOURNAL.md, sessions) are marked
``merge=mdmem-append``. Only mdmem defines that driver (for the git commands
it runs, see :mod:`mdmem.git.merge_driver`); plain git (``git pull``, the
Obsidian Git plugin) does not know the name and falls back to its normal
three-way text merge, which shows a conflict where both sides appended. Vaults
made before used git's built-in ``union`` driver, which resolves that
conflict silently and can glue two entries into one, losing a block id;
:func:`union_lines` finds those lines and :func:`without_union` renames the
driver, leaving every other byte of the file as it was.
"""

from __future__ import annotations

import re

__all__ = [
    "APPEND_DRIVER",
    "FIELDS_LINES",
    "LEGACY_APPEND_DRIVERS",
    "union_lines",
    "without_union",
]

APPEND_DRIVER = "mdmem-append"
# Names older vaults' .gitattributes use for the same files; mdmem merges them alike.
LEGACY_APPEND_DRIVERS = ("union",)

_LOSSY = "merge=union"
# The fields files beside notes (mdmem.files.sidecar) are append-only records,
# each a line of its own: git's built-in union keeps every record of both sides,
# which is their merge (mdmem's own merges also report one field changed two ways).
FIELDS_LINES = (
    "# What mdmem knows about each memory line, beside its note: append-only\n"
    "# records, so both sides' records are kept, even by plain git.\n"
    "**/.fields/*.jsonl merge=union\n"
    "# Retired memories, moved out of their note (MEMORY.earlier.md): lines only ever\n"
    "# appended or taken out, each its own, so both sides' are kept.\n"
    "*.earlier.md merge=union\n"
)


def _is_fields_pattern(pattern: str) -> bool:
    """The line format's own union lines (fields files, archives): not lossy."""
    pattern = pattern.strip()
    return (".fields/" in pattern and pattern.endswith(".jsonl")) or pattern.endswith(
        ".earlier.md"
    )
_SPACE = re.compile(r"(\s+)")
# The comment of the template's first version, replaced along with the lines it explains.
_OLD_COMMENT = (
    "# Append-only files merge by union, so agents on two machines appending to the\n"
    "# same day's log never conflict (mdmem sync).\n"
)
_NEW_COMMENT = (
    "# Append-only files use mdmem's block-aware merge driver: `mdmem sync` merges\n"
    "# both sides' entries block by block. Plain git (git pull, Obsidian Git) does\n"
    "# not know the driver and makes its normal text merge, with conflict markers,\n"
    "# instead of git's built-in union, which can glue two entries and lose an id.\n"
)


def _split(line: str) -> tuple[str, list[str]] | None:
    """(pattern part, the rest split into tokens and spaces) of an attributes line."""
    body = line.rstrip("\r\n")
    stripped = body.lstrip()
    if not stripped or stripped.startswith("#"):
        return None
    lead = body[: len(body) - len(stripped)]
    if stripped.startswith('"'):  # a C-quoted pattern may hold spaces
        end = 1
        while end < len(stripped) and stripped[end] != '"':
            end += 2 if stripped[end] == "\\" else 1
        cut = end + 1
    else:
        match = _SPACE.search(stripped)
        cut = match.start() if match else len(stripped)
    return lead + stripped[:cut], _SPACE.split(stripped[cut:])


def union_lines(text: str) -> list[tuple[int, str]]:
    """(line number, pattern) of each line that gives files git's ``union`` merge."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = _split(line)
        if parts is not None and _LOSSY in parts[1] and not _is_fields_pattern(parts[0]):
            found.append((number, parts[0].strip()))
    return found


def without_union(text: str) -> str:
    """``text`` with ``merge=union`` renamed to mdmem's driver.

    Every other byte stays, except the first template's comment, which
    described the union merge: it is replaced by the current one.
    """
    out = []
    for line in text.splitlines(keepends=True):
        parts = _split(line)
        if parts is not None and _LOSSY in parts[1] and not _is_fields_pattern(parts[0]):
            ending = line[len(line.rstrip("\r\n")) :]
            rest = [f"merge={APPEND_DRIVER}" if t == _LOSSY else t for t in parts[1]]
            line = parts[0] + "".join(rest) + ending
        out.append(line)
    result = "".join(out)
    for newline in ("\n", "\r\n"):
        old = _OLD_COMMENT.replace("\n", newline)
        if old in result:
            result = result.replace(old, _NEW_COMMENT.replace("\n", newline), 1)
    return result
