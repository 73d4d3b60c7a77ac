"""Small questions about commits that several git-native features ask.

Which commit a name means, whether one commit is in another's history, and a
markdown file as it was at a commit. Each takes the
:class:`~mdmem.store.memories.MemoryStore` first and asks git through
``store.git`` (:class:`~mdmem.store.gitstore.GitStore`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mdmem.files import blocks as blk
from mdmem.files.sidecar import Fields, parse_records, resolve, sidecar_of
from mdmem.files.textfile import SkipFile, decode

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["fields_at", "is_ancestor", "is_sha", "parsed_at", "rev_parse"]

_HEX40 = re.compile(r"[0-9a-f]{40}")  # fullmatch: "$" would pass a final newline


def is_sha(text: str) -> bool:
    """Whether ``text`` is a full (40 hex digits, lower case) commit or object id."""
    return _HEX40.fullmatch(text) is not None


def rev_parse(store: MemoryStore, rev: str) -> str | None:
    """The commit ``rev`` names (a sha, branch, tag, ``HEAD~2``...), or None."""
    if rev.startswith("-"):
        return None
    out = store.git.run(
        "rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}", ok_codes=(0, 1, 128)
    )
    out = out.strip()
    return out if is_sha(out) else None


def is_ancestor(store: MemoryStore, ancestor: str, descendant: str) -> bool:
    """Whether ``ancestor`` is in the history of ``descendant`` (or is it)."""
    status, _out, _err = store.git.execute("merge-base", "--is-ancestor", ancestor, descendant)
    return status == 0


def parsed_at(store: MemoryStore, rev: str, path: str) -> blk.ParsedFile | None:
    """``path`` as it is at ``rev``, parsed with the fields kept beside it then;
    None where it is missing or not markdown."""
    raw = store.git.show(rev, path)
    if raw is None:
        return None
    try:
        return blk.parse(path, decode(raw), beside=fields_at(store, rev, path))
    except SkipFile:
        return None


def fields_at(store: MemoryStore, rev: str, path: str) -> dict[str, Fields]:
    """The fields kept beside ``path``'s memories at ``rev`` (its fields file then)."""
    raw = store.git.show(rev, sidecar_of(path))
    if not raw:
        return {}
    records, _bad = parse_records(raw.decode("utf-8", "replace").splitlines())
    return resolve(records)
