"""Checking parses taken from the manifest against the files themselves.

At open, a file whose stat signature matches its manifest row is not read:
its blocks come from the manifest. If that row is wrong (a manifest written
by an older mdmem after a failed index write, a file rewritten with the same
size, mtime and a recycled inode), memories in the file would be invisible
to ``get`` and recall. :class:`ManifestCheck` reads such files once per
process when it matters (a lookup that found nothing, a listing, ``status``,
``doctor``) and names those whose block ids differ from what the manifest
said, so the caller re-parses and re-indexes them. A file parsed from disk
in this process is never checked: its parse is the truth.
"""

from __future__ import annotations

import re

from mdmem.files.blocks import ParsedFile
from mdmem.files.catalog import Catalog, Signature
from mdmem.files.ids import ID_PATTERN

__all__ = ["ManifestCheck", "ids_in", "parse_matches"]

# A block id ends its line (see blocks._TRAILING_ID); bytes, so no decoding.
_TRAILING_ID = re.compile(rb"(?:^|[ \t])\^(" + ID_PATTERN.encode() + rb")[ \t]*\r?$", re.MULTILINE)


def ids_in(raw: bytes) -> set[str]:
    """Memory ids at the end of a line of ``raw`` (what the parser would find,
    give or take ids inside code fences)."""
    return {m.decode("ascii") for m in _TRAILING_ID.findall(raw)}


def parse_matches(parsed: ParsedFile, raw: bytes) -> bool:
    """Whether ``parsed`` has the memories the bytes hold (by id)."""
    return ids_in(raw) == {b.id for b in parsed.blocks if b.is_memory}


class ManifestCheck:
    """Finds files whose blocks came from the manifest but differ from the file."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._checked: dict[str, Signature] = {}

    def stale(self) -> list[str]:
        """Files (as loaded from the manifest, unchecked at this signature)
        whose memory ids are not what the file holds; each file is read once."""
        out: list[str] = []
        for path, state in list(self.catalog.files.items()):
            if state.parsed.file is not None or self._checked.get(path) == state.signature:
                continue  # parsed from disk in this process, or checked already
            try:
                raw = (self.catalog.root / path).read_bytes()
            except OSError:
                continue  # gone or unreadable: the next scan handles it
            self._checked[path] = state.signature
            if not parse_matches(state.parsed, raw):
                out.append(path)
        return out
