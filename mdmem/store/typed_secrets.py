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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import PathOutsideVaultError
from mdmem.files.textfile import safe_path
from mdmem.store.gitstore import GitStore, Identity, format_message, paths_shown
from mdmem.store.secret_guard import redact_spans, scan

__all__ = [
    "KeptOut",
    "commit_kept",
    "commit_written",
    "committed_version",
    "keep_out",
    "kept_in_files",
]

_TEXT_LIMIT = 8 * 1024 * 1024  # larger files are attachments, not text a person types


@dataclass(frozen=True)
class KeptOut:
    """What git gets instead of a person's file, and what was left out of it."""

    data: bytes  # the file with the new secrets redacted
    kinds: tuple[str, ...]  # what was redacted, in order
    lines: tuple[int, ...]  # where (1-based line of each)


def keep_out(new: bytes, committed: Callable[[], bytes | None], mode: str) -> KeptOut | None:
    """``new`` with the secrets that are not in ``committed()`` (the file as
    git has it, asked for only when ``new`` holds a secret) redacted; None
    when there are none (or the guard is off, or the file is not text)."""
    if mode == "off":
        return None
    try:
        text = new.decode("utf-8")
    except UnicodeDecodeError:
        return None  # an attachment: not text the guard reads
    findings = scan(text)
    if not findings:
        return None
    before = committed()
    old_lines = set(before.decode("utf-8", "replace").splitlines()) if before else set()
    fresh = []
    for finding in findings:
        first = text.rfind("\n", 0, finding.start) + 1
        last = text.find("\n", finding.end)
        lines = text[first : len(text) if last == -1 else last].splitlines()
        if not all(line in old_lines for line in lines):
            fresh.append(finding)
    if not fresh:
        return None
    return KeptOut(
        redact_spans(text, fresh).encode("utf-8"),
        tuple(f.kind for f in fresh),
        tuple(text.count("\n", 0, f.start) + 1 for f in fresh),
    )


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
