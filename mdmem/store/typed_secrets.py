"""Secrets a person types into a vault file: the file keeps them, git doesn't get them.

mdmem commits a person's edits as theirs (before an agent's write, by
``doctor --fix``, when a vault is adopted). A secret in what they added since
the last commit is redacted in the bytes git is given, so it never enters
history; the working file keeps what they typed, and stays different from
the commit until they take the secret out. What was already committed is
left as it is (a person who committed it themselves decided that; ``doctor``
says how to erase it).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from mdmem.errors import PathOutsideVaultError
from mdmem.files.textfile import safe_path
from mdmem.store.gitstore import GitStore, Identity, format_message, paths_shown
from mdmem.store.secret_guard import Finding, redact_spans, scan

__all__ = [
    "KeptOut",
    "commit_kept",
    "commit_written",
    "committed_version",
    "keep_out",
    "kept_in_files",
]

_TEXT_LIMIT = 8 * 1024 * 1024  # larger files are attachments, not text a person types
# A PEM block of a 4096-bit key is about 50 lines: a window this wide around a
# changed line holds any such block that line belongs to.
_CONTEXT_LINES = 64


@dataclass(frozen=True)
class KeptOut:
    """What git gets instead of a person's file, and what was left out of it."""

    data: bytes  # the file with the new secrets redacted
    kinds: tuple[str, ...]  # what was redacted, in order
    lines: tuple[int, ...]  # where (1-based line of each)


def keep_out(new: bytes, committed: Callable[[], bytes | None], mode: str) -> KeptOut | None:
    """``new`` with the secrets that are not in ``committed()`` (the file as
    git has it) redacted; None when there are none (or the guard is off, or
    the file is not text).

    Only the lines git lacks are scanned, each with ``_CONTEXT_LINES`` around
    it, so a person typing into a long file while agents write costs each
    write the lines typed since, not the whole file; a secret that spans lines
    (a PEM block) is still seen whole around a changed line of it.
    """
    if mode == "off":
        return None
    try:
        text = new.decode("utf-8")
    except UnicodeDecodeError:
        return None  # an attachment: not text the guard reads
    lines = text.split("\n")
    before = committed()
    if before is None:
        changed = list(range(len(lines)))
    else:
        old_lines = set(before.decode("utf-8", "replace").split("\n"))
        changed = [i for i, line in enumerate(lines) if line not in old_lines]
    if not changed:
        return None
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    is_changed = set(changed)
    fresh: list[Finding] = []
    for lo, hi in _windows(changed, len(lines)):
        offset = starts[lo]
        for found in scan("\n".join(lines[lo:hi])):
            start, end = found.start + offset, found.end + offset
            first = bisect_right(starts, start) - 1
            last = bisect_right(starts, max(start, end - 1)) - 1
            if any(i in is_changed for i in range(first, last + 1)):
                fresh.append(replace(found, start=start, end=end))
    if not fresh:
        return None
    return KeptOut(
        redact_spans(text, fresh).encode("utf-8"),
        tuple(f.kind for f in fresh),
        tuple(bisect_right(starts, f.start) for f in fresh),
    )


def _windows(changed: list[int], count: int) -> Iterator[tuple[int, int]]:
    """Line ranges [lo, hi) covering each changed line with its context, merged."""
    lo, hi = -1, -1
    for i in changed:
        start, end = max(0, i - _CONTEXT_LINES), min(count, i + _CONTEXT_LINES + 1)
        if start > hi:
            if hi > lo:
                yield lo, hi
            lo = start
        hi = end
    if hi > lo:
        yield lo, hi


def committed_version(git: GitStore, rel: str) -> Callable[[], bytes | None]:
    """The file as HEAD has it, read when asked (a git process)."""
    return lambda: git.show("HEAD", rel) if git.head() else None


def kept_in_files(root: Path, git: GitStore, paths: Iterable[str], mode: str) -> dict[str, KeptOut]:
    """Of ``paths`` (files a person changed), those holding a secret git
    doesn't have, each with what git gets instead."""
    out: dict[str, KeptOut] = {}
    if mode == "off":
        return out
    for rel in paths:
        try:
            full = safe_path(root, rel)
            if full.is_symlink() or not full.is_file() or full.stat().st_size > _TEXT_LIMIT:
                continue
            data = full.read_bytes()
        except (OSError, PathOutsideVaultError):
            continue
        kept = keep_out(data, committed_version(git, rel), mode)
        if kept is not None:
            out[rel] = kept
    return out


def commit_written(
    git: GitStore,
    message: str,
    agent: Identity,
    written: Mapping[str, bytes],
    kept: set[str],
    mode: str,
) -> str | None:
    """An agent's commit of ``written`` (path -> the bytes it wrote); the files
    in ``kept`` (holding a person's secret git lacks) go in without it."""
    if not kept:
        return git.commit(message, agent, paths=list(written))
    contents: dict[str, bytes | None] = {}
    for rel, data in written.items():
        found = keep_out(data, committed_version(git, rel), mode) if rel in kept else None
        contents[rel] = data if found is None else found.data
    return git.commit_contents(message, agent, contents)


def commit_kept(git: GitStore, person: Identity, kept: Mapping[str, KeptOut]) -> str | None:
    """Commit a person's files that hold a secret, as theirs, without it."""
    kinds = ", ".join(dict.fromkeys(k for out in kept.values() for k in out.kinds))
    message = format_message(
        f"edit: {paths_shown(kept)}",
        "A secret typed into it is redacted here; the file keeps it.",
        trailers=[("Op", "edit"), ("Redacted", kinds)],
    )
    return git.commit_contents(message, person, {rel: out.data for rel, out in kept.items()})
