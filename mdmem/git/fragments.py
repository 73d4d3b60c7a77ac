"""What a purge looks for besides the purged lines: the text's distinctive fragments.

Purging "The storeroom combination is QUOKKA-7731-ZEBRA." removed that
sentence everywhere, but the combination inside another sentence (a person's
note, a commit body, a tag message, a branch) stayed: a secret travels
alone, its sentence does not. So a purge also looks for the text's
**fragments**:

* **secrets**: what the secret guard finds in it
  (:func:`mdmem.store.secret_guard.scan`: keys, tokens, passwords in
  assignments, card numbers);
* **codes**: tokens of at least :data:`CODE_CHARS` characters with at least
  two letters and two digits (``QUOKKA-7731-ZEBRA``, ``7741-Quorn``,
  ``bob1985@example.com``): combinations, passwords, booking and licence
  numbers are written so, prose is not. Memory ids, links and tags name
  other things: they are no codes;
* **named**: the strings the person adds (``purge --also``).

Each is looked for alone, as a whole token, in any case and script
(:class:`~mdmem.git.sweep.Sweep`), and redacted wherever purge rewrites:
every file and file name of every version on every ref, commit and tag
messages, git notes, stashes, ref names.

**Kept memories decide what is ambiguous.** A purge never rewrites another
memory. A kept memory (an original: not a copy made from other memories)
that quotes the purged text whole keeps it: those words are its own
(``also_in``), and the secrets and codes it holds are not looked for (a
named string still is). A kept memory
that holds a fragment in a sentence of its own stops the purge before
anything changes, and is named: the same secret kept on purpose, or a leak?
The person decides (edit that line or forget that memory, then purge).

**Rare words** (content words of :data:`RARE_CHARS` letters or more that no
kept memory uses) are not redacted on their own: "storeroom" in a shopping
list is not the secret, and no rule tells it from "swordfish" in a password
hint (name such a word with ``--also``). They tell which derived copies
repeat the purged text (:func:`mdmem.git.sweep.miscited`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.files.ids import ID_PATTERN
from mdmem.git.sweep import Sweep, quotes
from mdmem.store.derived import words
from mdmem.store.secret_guard import scan

if TYPE_CHECKING:
    from mdmem.models import Block

__all__ = ["CODE_CHARS", "RARE_CHARS", "Fragments", "codes", "fragments", "named"]

CODE_CHARS = 6
RARE_CHARS = 5
# A named string shorter than this sits inside ordinary words everywhere.
_NAMED_CHARS = 4
# Letters and digits joined by the punctuation codes are written with.
_TOKEN = re.compile(r"[^\W_]+(?:[-_.+@][^\W_]+)*")
# What names another thing, not a secret: [[links]], (targets), ^ids, #tags.
_NOT_TEXT = re.compile(
    rf"\[\[[^\]\n]*\]\]|\]\([^)\s]*\)|\^?{ID_PATTERN}|(?<![\w&])#[\w/-]+", re.IGNORECASE
)


@dataclass(frozen=True)
class Fragments:
    """The fragments of one purge, and the kept memories standing in its way."""

    strings: tuple[str, ...]  # secrets, codes and named strings: looked for everywhere
    rare: frozenset[str]  # content words no kept memory uses: they judge copies
    blockers: tuple[Block, ...]  # kept memories holding a fragment in words of their own
    # Kinds found, for the report (never the strings themselves: they are the secret).
    counts: tuple[tuple[str, int], ...] = ()


def fragments(
    purged: Collection[str], kept: Iterable[Block], named: Iterable[str] = ()
) -> Fragments:
    """The fragments of the ``purged`` texts (every version of the memory), judged
    against the ``kept`` memories (originals only), plus the ``named`` strings."""
    found: dict[str, str] = {}
    for text in purged:
        for f in scan(text):
            secret = text[f.start : f.end].strip()
            # A card's security code is a finding too, but three digits are everywhere.
            if len(secret) >= CODE_CHARS:
                found.setdefault(secret, "secret")
        for token in codes(text):
            found.setdefault(token, "code")
    for string in named:
        found.setdefault(string, "named")
    found = {s: kind for s, kind in found.items() if s}
    kept = list(kept)
    held: list[tuple[Block, set[str]]] = []
    if found:
        every = Sweep((), "", tuple(found))
        for block in kept:
            said = f"{block.heading}\n{block.text}"
            if every.found_in_text(said):
                held.append((block, {s for s in found if Sweep((), "", (s,)).found_in_text(said)}))
    # A memory quoting the whole text owns what it says; the rest is ambiguous. What
    # the person named is looked for whoever says it.
    for block, strings in held:
        if _says_whole(block.text, purged):
            for s in strings:
                if found.get(s) != "named":
                    found.pop(s, None)
    blockers = tuple(b for b, strings in held if strings & found.keys())
    vocabulary = {w for b in kept for w in words(f"{b.heading}\n{b.text}")}
    rare = {
        w
        for text in purged
        for w in words(text)
        if len(w) >= RARE_CHARS and w.isalpha() and w not in vocabulary
    }
    kinds = ("secret", "code", "named")
    counts = tuple((k, n) for k in kinds if (n := sum(v == k for v in found.values())))
    return Fragments(tuple(found), frozenset(rare), blockers, counts)


def codes(text: str) -> list[str]:
    """The code-shaped tokens of ``text``, in order (see the module docstring)."""
    out = []
    for token in _TOKEN.findall(_NOT_TEXT.sub(" ", text)):
        letters = sum(ch.isalpha() for ch in token)
        digits = sum(ch.isdigit() for ch in token)
        if len(token) >= CODE_CHARS and letters >= 2 and digits >= 2 and token not in out:
            out.append(token)
    return out


def named(strings: Iterable[str], mark: str) -> tuple[str, ...]:
    """The strings a person adds to a purge (``--also``), checked: each is redacted
    wherever it stands, so a short or empty one would eat ordinary words."""
    out = []
    for raw in strings:
        string = " ".join(raw.split())
        if len(string) < _NAMED_CHARS or not any(ch.isalnum() for ch in string):
            raise InvalidInputError(
                f"--also needs {_NAMED_CHARS} characters or more, with a letter or digit: "
                "a shorter string sits inside ordinary words"
            )
        if string.casefold() in mark.casefold():
            raise InvalidInputError(f"--also cannot name the purge's own mark {mark}")
        out.append(string)
    return tuple(dict.fromkeys(out))


def _says_whole(text: str, purged: Iterable[str]) -> bool:
    """Whether ``text`` holds every line of one of the purged texts."""
    return any(
        all(quotes(text, line) for line in version.splitlines() if line.strip())
        for version in purged
        if version.strip()
    )
