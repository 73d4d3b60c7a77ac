"""Purge by content: the purged text looked for, and redacted, wherever it is written.

Following the links copies record (:mod:`mdmem.store.derived`) finds what
mdmem derived from a memory; it cannot find what a person pasted into a
note, a commit body, a tag message, a git note or a stash, nor a copy whose
consolidator cited the wrong source. :class:`Sweep` is the purged text as
something to search for:

* **Needles**: every line (at least :data:`MIN_CHARS` long, so two letters
  never match inside other words) of the purged memory and of the copies
  removed with it, plus the lines of regenerated copies' old text that
  repeat the purged words. Lines another kept memory still says are not
  needles: those words are that memory's own (``also_in``).
* **Normalised forms**: matched whatever the case (ASCII), with any run of
  whitespace (line breaks included) between words, and with markdown's
  backslash escapes (``7741\\-Quorn``) or without.
* **Redaction**: a match is replaced by ``[PURGED]``; the rest of the line,
  and every other byte, stays.

:func:`holders` searches every git object (commits and tag messages,
blobs of every ref - branches, tags, notes, held stashes), every file of the
working tree and of ``.git`` (reflogs, packed refs) and the state dir, and
names each place that still holds a needle.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.store.derived import COPY_SHARE, words
from mdmem.store.editors import Edit, Editor

if TYPE_CHECKING:
    from mdmem.files import blocks as blk
    from mdmem.files.textfile import TextFile
    from mdmem.models import Block
    from mdmem.store.derived import Provenance
    from mdmem.store.memories import MemoryStore

__all__ = ["MIN_CHARS", "Sweep", "holders", "is_copy_of", "miscited", "read_bytes"]

# A line shorter than this is not searched for: "ok" sits inside other words
# everywhere, and the memory's own block was removed by its id anyway.
MIN_CHARS = 12
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Sweep:
    """The needles of one purge, compiled for bytes (git, files) and text (the writer)."""

    needles: tuple[str, ...]
    mark: str

    @classmethod
    def of(cls, texts: Iterable[str], *, kept: Iterable[str] = (), mark: str) -> Sweep:
        """Needles from ``texts``' lines, leaving out those any of ``kept`` says."""
        lines = {
            " ".join(line.split())
            for text in texts
            for line in text.splitlines()
            if len(line.strip()) >= MIN_CHARS
        }
        kept = list(kept)
        needles = []
        for line in sorted(lines, key=lambda s: (-len(s), s)):
            pattern = re.compile(_pattern(line), re.IGNORECASE)
            if not any(pattern.search(k) for k in kept):
                needles.append(line)
        return cls(tuple(needles), mark)

    def __bool__(self) -> bool:
        return bool(self.needles)

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], re.Pattern[bytes], tuple[bytes, ...]]:
        joined = "|".join(f"(?:{_pattern(n)})" for n in self.needles) or r"(?!)"
        # The longest run of letters and digits of each needle: escapes and
        # spacing never split one, so its lower-case bytes must be there.
        anchors = tuple(
            max(_ALNUM_RUN.findall(n) or [n], key=len).lower().encode("utf-8")
            for n in self.needles
        )
        return (
            re.compile(joined, re.IGNORECASE),
            re.compile(joined.encode("utf-8"), re.IGNORECASE),
            anchors,
        )

    def found_in(self, data: bytes) -> bool:
        """Whether ``data`` holds a needle in any of its forms."""
        if not self.needles:
            return False
        _, bytes_re, anchors = self._compiled
        lower = data.lower()
        if not any(a in lower for a in anchors):
            return False  # the cheap test first: most objects share no word with it
        return bytes_re.search(data) is not None

    def redact(self, data: bytes) -> bytes:
        """``data`` with every match replaced by the mark (unchanged, the same object, if none)."""
        if not self.found_in(data):
            return data
        return self._compiled[1].sub(self.mark.encode(), data)

    def redact_text(self, text: str) -> str:
        if not self.needles:
            return text
        return self._compiled[0].sub(self.mark, text)

    def editor(self) -> Editor:
        """:meth:`redact_text` as an editor for the writer's transaction (today's files)."""

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
            text = tf.text
            new = self.redact_text(text)
            if new != text:
                tf.lines = new.splitlines(keepends=True)
            return Edit()

        return edit


def _pattern(line: str) -> str:
    """A needle's regex: any whitespace between words, markdown escapes optional."""
    parts = []
    for word in line.split():
        chars = []
        for ch in word:
            if ch.isalnum():
                chars.append(re.escape(ch))
            else:
                chars.append(r"\\?" + re.escape(ch))
        parts.append("".join(chars))
    return r"\s+".join(parts)


def is_copy_of(text: str, purged: Iterable[str]) -> bool:
    """Whether ``text`` repeats a purged text's content words, as recall's families
    tell copies apart (:data:`~mdmem.store.derived.COPY_SHARE` of the smaller set)."""
    mine = words(text)
    if len(mine) < 2:
        return False
    for other in purged:
        theirs = words(other)
        shared = len(mine & theirs)
        if shared >= 2 and shared >= COPY_SHARE * min(len(mine), len(theirs)):
            return True
    return False


def miscited(
    graph: Provenance, blocks: Iterable[Block], purged: Collection[str], touched: Collection[str]
) -> set[str]:
    """Copies that repeat a purged text while naming other sources: they go with it.

    A language model may cite the wrong entry for a fact it drew from the
    purged one. A fact, bug fix or other copy counts as the purged text's
    copy when it holds one of its lines, or when it came from a consolidation
    the purged text was part of (its episode is touched) and repeats its
    content words (:func:`is_copy_of`) more than it repeats any source it cites.
    """
    raw = Sweep.of(purged, mark="")
    found = set()
    for block in blocks:
        piece = graph.pieces.get(block.id)
        if block.id in touched or piece is None or piece.rule not in _COPY_RULES:
            continue
        if raw.found_in(block.text.encode("utf-8", "surrogateescape")):
            found.add(block.id)
        elif piece.episode in touched and is_copy_of(block.text, purged):
            # Only when its own sources explain it less than the purged text
            # does: a fact drawn from a turn that says much the same stays.
            cited = [t for i in graph.sources(block.id) for t in graph.texts.get(i, ())]
            if _shared(block.text, purged) > _shared(block.text, cited):
                found.add(block.id)
    return found


def _shared(text: str, others: Iterable[str]) -> int:
    mine = words(text)
    return max((len(mine & words(o)) for o in others), default=0)


_COPY_RULES = frozenset({"fact", "fix", "copy"})


# ------------------------------------------------------------ the search --


def holders(store: MemoryStore, sweep: Sweep) -> list[str]:
    """Every place that still holds a needle: git objects, files of the vault, the state dir."""
    if not sweep:
        return []
    git_dir = store.root / ".git"
    places = list(_objects_holding(store, sweep))
    for base in (store.root, store.state_dir):
        for path in _files_under(base, skip=git_dir / "objects"):
            if sweep.found_in(read_bytes(path)):
                places.append(_shown(store, path))
    return places


def _shown(store: MemoryStore, path: Path) -> str:
    try:
        return str(path.relative_to(store.root))
    except ValueError:
        return str(path)


def _files_under(base: Path, *, skip: Path) -> Iterator[Path]:
    if not base.is_dir():
        return
    for path in sorted(base.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        if path.is_file() and not path.is_symlink():
            yield path


def read_bytes(path: Path) -> bytes:
    """The file's bytes; none when it can't be read (gone meanwhile, a socket)."""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _objects_holding(store: MemoryStore, sweep: Sweep) -> Iterator[str]:
    """``git object <sha> (<type>)`` for each object (loose or packed) holding a needle."""
    proc = store.git.popen("cat-file", "--batch-all-objects", "--batch", stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        while True:
            header = proc.stdout.readline()
            if not header:
                break
            sha, kind, size = header.split()
            body = proc.stdout.read(int(size))
            proc.stdout.read(1)  # the LF after each object
            if sweep.found_in(body):
                yield f"git object {sha.decode()} ({kind.decode()})"
    finally:
        proc.stdout.close()
        proc.wait()
