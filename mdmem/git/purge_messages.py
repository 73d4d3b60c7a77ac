"""Commit messages in a purge: where a message quotes the purged text, and what it reads after.

mdmem's own commits quote a memory in their subject (``<op> <kind>: <text>``,
cut short with "…", ``(+N more)``); a revert quotes that subject; a stash
quotes the subject of the commit it was made on, after its short sha;
consolidation's ``Dropped:`` trailers quote dropped facts. Those quotes read
``[PURGED]``. Nothing else in a message is searched here: a short text
inside other words is not a quote (the content search,
:mod:`mdmem.git.sweep`, finds the purged lines and fragments anywhere).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from mdmem.models import first_line, one_line

__all__ = ["PURGED", "message_forms", "scrub_message", "scrub_quoted_commit"]

PURGED = "[PURGED]"
# Trailers whose value quotes a memory's text (consolidation's dropped facts);
# every other trailer is metadata and keeps its value.
_QUOTING_TRAILERS = frozenset({"dropped"})


def message_forms(texts: Iterable[str]) -> set[str]:
    """The ways a commit message quotes a text: whole or first line, with or without its tags."""
    forms: set[str] = set()
    for text in texts:
        for variant in (text, _untagged(text)):
            for form in (one_line(variant), one_line(first_line(variant))):
                if form:
                    forms.add(form)
    return forms


def _untagged(text: str) -> str:
    # Tags mdmem appends after the text ("ok #tag") are not in the caller's subject.
    return re.sub(r"(?:\s+#[A-Za-z_][\w/-]*)+\s*$", "", text)


def _quotes(fragment: str, forms: Collection[str]) -> bool:
    """Whether ``fragment`` is one of ``forms``, or one cut short with "…"."""
    flat = one_line(fragment)
    if not flat:
        return False
    if flat in forms:
        return True
    if flat.endswith("…"):
        prefix = flat[:-1].rstrip()
        return bool(prefix) and any(f.startswith(prefix) and len(f) > len(prefix) for f in forms)
    return False


_MORE = re.compile(r" \(\+(?:\d+ more\)|[^)]*…)$")  # "(+3 more)", or it cut short
_REVERT = re.compile(r'^(Revert ")(.*)(")$')
# git's own messages that quote another commit's subject after its short sha:
# a stash ("WIP on main: 1a2b3c4 <subject>", "index on …", "untracked files on …").
_QUOTES_COMMIT = re.compile(
    r"^((?:WIP on|On|index on|untracked files on) [^:\n]*: )([0-9a-f]{7,40}) (.*)$"
)


def _scrub_subject(subject: str, forms: Collection[str]) -> str:
    """A subject of one of the memory's own commits, its quote of the text replaced."""
    revert = _REVERT.match(subject)
    if revert is not None:
        inner = _scrub_subject(revert.group(2), forms)
        return revert.group(1) + inner + revert.group(3)
    if _quotes(subject, forms):
        return PURGED
    head, sep, rest = subject.partition(": ")
    if not sep:
        return subject
    more = _MORE.search(rest)
    tail = ""
    if more is not None:
        rest, tail = rest[: more.start()], rest[more.start() :]
    return f"{head}{sep}{PURGED}{tail}" if _quotes(rest, forms) else subject


def scrub_quoted_commit(subject: str, forms: Collection[str], own_commits: Collection[str]) -> str:
    """A stash message quoting one of the memory's own commits, by its short sha."""
    match = _QUOTES_COMMIT.match(subject)
    if match is None or not any(c.startswith(match.group(2)) for c in own_commits):
        return subject
    quoted = _scrub_subject(match.group(3), forms)
    return f"{match.group(1)}{match.group(2)} {quoted}"


def scrub_message(
    message: str,
    forms: Collection[str],
    *,
    own: bool = True,
    own_commits: Collection[str] = (),
) -> str:
    """The commit message with its quotes of ``forms`` replaced by ``[PURGED]``.

    ``own``: the commit changed the memory's block (or names it), so its
    subject is read as ``<op> <kind>: <quote>``. A stash commit's subject
    quoting one of ``own_commits`` (by short sha) is read the same way. In
    any commit, a ``Dropped:`` trailer quoting the text is replaced. Nothing
    else is searched: a short text inside other words is not a quote.
    """
    lines = message.split("\n")
    if lines:
        if own:
            lines[0] = _scrub_subject(lines[0], forms)
        lines[0] = scrub_quoted_commit(lines[0], forms, own_commits)
    for i, line in enumerate(lines[1:], start=1):
        key, sep, value = line.partition(": ")
        if sep and key.strip().lower() in _QUOTING_TRAILERS and _quotes(value, forms):
            lines[i] = f"{key}{sep}{PURGED}"
    return "\n".join(lines)
