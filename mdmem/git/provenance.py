"""Who wrote a memory: ``git blame`` per line, agent or human, and the creating commit.

:func:`blame` reads ``git blame --porcelain``, cached per (path, blob) so
repeated hits are cheap; :func:`provenance` adds uncommitted edits (a person's,
by definition) and the commit that introduced the memory's id.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, TypeVar

from mdmem.errors import GitError, InvalidInputError, MdmemError
from mdmem.files.ids import normalize_id
from mdmem.files.textfile import safe_path
from mdmem.git.revisions import is_sha, rev_parse
from mdmem.models import Block
from mdmem.store.gitstore import is_agent_email

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "UNCOMMITTED",
    "LineAuthor",
    "Provenance",
    "blame",
    "clear_blame_cache",
    "provenance",
    "written_by_human",
]

UNCOMMITTED = "0" * 40  # the commit git blame gives a line not committed yet


@dataclass(frozen=True)
class LineAuthor:
    line: int
    commit: str  # "000…0" for a line not committed yet
    author: str
    email: str
    date: str
    is_agent: bool
    summary: str = ""


@dataclass(frozen=True)
class Provenance:
    memory_id: str
    path: str
    line_start: int
    line_end: int
    authors: tuple[str, ...]  # distinct, in order of first line written
    last_author: str  # author of the most recent change to the memory's lines
    written_by_human: bool  # at least one line was written (or is being edited) by a person
    human_lines: int
    created_commit: str | None
    created_by: str | None
    created_date: str | None
    lines: tuple[LineAuthor, ...]


_CACHE_SIZE = 256
_MISSING = object()
_T = TypeVar("_T")
_cache_lock = threading.Lock()
_blame_cache: OrderedDict[tuple[str, str, str], dict[int, LineAuthor]] = OrderedDict()
_blob_cache: OrderedDict[tuple[str, str, str], str | None] = OrderedDict()


def clear_blame_cache() -> None:
    with _cache_lock:
        _blame_cache.clear()
        _blob_cache.clear()


def _lru_get(cache: OrderedDict[tuple[str, str, str], _T], key: tuple[str, str, str]) -> object:
    with _cache_lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    return _MISSING


def _lru_put(
    cache: OrderedDict[tuple[str, str, str], _T], key: tuple[str, str, str], value: _T
) -> None:
    with _cache_lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def _check_rel(store: MemoryStore, path: str) -> str:
    safe_path(store.root, path)
    rel = PurePosixPath(str(path).replace(os.sep, "/")).as_posix()
    if rel.startswith("./"):
        rel = rel[2:]
    return rel


def _commit_of(store: MemoryStore, rev: str) -> str:
    if rev == "HEAD":
        head = store.git.head()
        if head is not None:
            return head
    if is_sha(rev):
        return rev
    sha = rev_parse(store, rev)
    if sha is None:
        raise InvalidInputError(f"unknown revision {rev!r}")
    return sha


def _blob_at(store: MemoryStore, commit: str, path: str) -> str | None:
    key = (str(store.root), commit, path)
    cached = _lru_get(_blob_cache, key)
    if cached is not _MISSING:
        return cached  # type: ignore[return-value]
    out = store.git.run(
        "rev-parse", "--verify", "-q", f"{commit}:{path}", ok_codes=(0, 1, 128)
    ).strip()
    blob = out if is_sha(out) else None
    _lru_put(_blob_cache, key, blob)
    return blob


def blame(
    store: MemoryStore, path: str, line_start: int, line_end: int, rev: str = "HEAD"
) -> list[LineAuthor]:
    """Who last wrote each of lines ``line_start..line_end`` (1-based, inclusive) at ``rev``."""
    rel = _check_rel(store, path)
    if line_start < 1 or line_end < line_start:
        raise InvalidInputError(f"invalid line range {line_start}-{line_end}")
    commit = _commit_of(store, rev)
    blob = _blob_at(store, commit, rel)
    if blob is None:
        raise InvalidInputError(f"{rel} does not exist at {rev}")
    key = (str(store.root), rel, blob)
    return _blame_cached(store, key, line_start, line_end, [commit, "--", rel])


def _blame_cached(
    store: MemoryStore, key: tuple[str, str, str], line_start: int, line_end: int, target: list[str]
) -> list[LineAuthor]:
    found = _lru_get(_blame_cache, key)
    lines: dict[int, LineAuthor] = {} if found is _MISSING else found  # type: ignore[assignment]
    missing = [n for n in range(line_start, line_end + 1) if n not in lines]
    if missing:
        status, out, err = store.git.execute(
            "blame", "--porcelain", "-L", f"{missing[0]},{missing[-1]}", *target, strip=False
        )
        if status != 0:
            message = (err.strip().splitlines() or ["blame failed"])[0]
            if "has only" in message:
                raise InvalidInputError(f"{key[1]}: {message.removeprefix('fatal: ')}")
            raise GitError(f"git blame: {message}")
        merged = dict(lines)
        merged.update(_parse_porcelain(out))
        lines = merged
        _lru_put(_blame_cache, key, lines)
    return [lines[n] for n in range(line_start, line_end + 1) if n in lines]


def _parse_porcelain(out: str) -> dict[int, LineAuthor]:
    info: dict[str, dict[str, str]] = {}
    result: dict[int, LineAuthor] = {}
    current: str | None = None
    final_line = 0
    for line in out.split("\n"):
        if not line:
            continue
        if line.startswith("\t"):
            if current is None:
                continue
            meta = info[current]
            author, email = meta.get("author", ""), meta.get("author-mail", "").strip("<>")
            summary = meta.get("summary", "")
            if current == UNCOMMITTED:
                author, email, summary = "(uncommitted)", "", ""
            result[final_line] = LineAuthor(
                line=final_line,
                commit=current,
                author=author,
                email=email,
                date=_epoch_iso(meta.get("author-time", "0"), meta.get("author-tz", "+0000")),
                is_agent=is_agent_email(email),
                summary=summary,
            )
            continue
        first, _, rest = line.partition(" ")
        if is_sha(first):
            current = first
            fields = rest.split()
            final_line = int(fields[1]) if len(fields) > 1 else 0
            info.setdefault(current, {})
        elif current is not None:
            info[current][first] = rest
    return result


def _epoch_iso(seconds: str, tz: str) -> str:
    try:
        sign = -1 if tz.startswith("-") else 1
        offset = timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * sign
        return datetime.fromtimestamp(int(seconds), timezone(offset)).isoformat()
    except (ValueError, IndexError):
        return ""


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def provenance(store: MemoryStore, memory_id: str) -> Provenance:
    """Who wrote the current lines of one memory, and which commit created it.

    Lines a person changed but did not commit yet count as human-written
    (author ``(uncommitted)``): only people leave edits uncommitted.
    """
    memory_id = normalize_id(memory_id)
    block = store.block(memory_id)
    rel = block.path
    full = safe_path(store.root, rel)
    data = full.read_bytes()
    working = _git_blob_sha(data)
    head = store.git.head()
    committed = _blob_at(store, head, rel) if head else None
    if committed == working and head is not None:
        lines = blame(store, rel, block.line_start, block.line_end, rev=head)
    elif committed is None:
        lines = [
            LineAuthor(n, UNCOMMITTED, "(uncommitted)", "", "", False)
            for n in range(block.line_start, block.line_end + 1)
        ]
    else:
        # Blame the exact bytes we hashed: a temp copy, so a concurrent editor
        # cannot make the cache entry describe other content.
        store.state_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=store.state_dir, prefix="blame-", delete=False) as tmp:
            tmp.write(data)
        try:
            key = (str(store.root), rel, f"{working}@{head}")
            lines = _blame_cached(
                store, key, block.line_start, block.line_end, ["--contents", tmp.name, "--", rel]
            )
        finally:
            os.unlink(tmp.name)
    authors = tuple(dict.fromkeys(line.author for line in lines))
    latest = max(lines, key=lambda la: (la.commit == UNCOMMITTED, la.date), default=None)
    created = _created(store, memory_id)
    return Provenance(
        memory_id=memory_id,
        path=rel,
        line_start=block.line_start,
        line_end=block.line_end,
        authors=authors,
        last_author=latest.author if latest else "",
        written_by_human=any(not la.is_agent for la in lines),
        human_lines=sum(1 for la in lines if not la.is_agent),
        created_commit=created[0] if created else None,
        created_by=created[1] if created else None,
        created_date=created[2] if created else None,
        lines=tuple(lines),
    )


def written_by_human(store: MemoryStore, block: Block) -> bool:
    """Whether a person wrote any line of the block (git blame, cached per file
    version); notes without ids are a person's own writing."""
    if not block.is_memory:
        return True
    try:
        return provenance(store, block.id).written_by_human
    except MdmemError:
        return False


def _created(store: MemoryStore, memory_id: str) -> tuple[str, str, str] | None:
    """The commit that introduced ``^memory_id`` (trailers first; pickaxe as fallback)."""
    fmt = "--format=%H%x1f%an%x1f%aI"
    out = store.git.run(
        "log", "--reverse", fmt, "-F", f"--grep=Memory-Id: {memory_id}", "HEAD", "--"
    )
    first = out.splitlines()[0] if out.strip() else ""
    if first:
        sha = first.split("\x1f")[0]
        before = store.git.execute("grep", "-q", "-F", f"^{memory_id}", f"{sha}^", "--", "*.md")[0]
        if before != 0:  # absent in the parent (or no parent): this commit created it
            parts = first.split("\x1f")
            return parts[0], parts[1], parts[2]
    out = store.git.run("log", "--reverse", fmt, "-F", "-S", f"^{memory_id}", "HEAD", "--")
    if not out.strip():
        return None
    parts = out.splitlines()[0].split("\x1f")
    return parts[0], parts[1], parts[2]
