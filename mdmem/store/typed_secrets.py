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

from collections.abc import Callable
from dataclasses import dataclass

from mdmem.store.secret_guard import redact_spans, scan

__all__ = ["KeptOut", "keep_out"]


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
