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
* **Fragments**: the purged text's distinctive pieces (its secrets, codes
  and what the person named: :mod:`mdmem.git.fragments`), found alone,
  inside any sentence, as whole tokens (``7731`` is not found in ``77310``).
* **Normalised forms**: matched whatever the case in any script (Unicode
  case folding, :meth:`str.casefold`: ``ZÈBRA`` is ``zèbra``, ``STRASSE`` is
  ``straße``), with any run of whitespace (line breaks included) between
  words, and with markdown's backslash escapes (``7741\\-Quorn``) or without.
* **Redaction**: a match is replaced by ``[PURGED]``; the rest of the line,
  and every other byte, stays. In a file or folder name a fragment reads
  ``PURGED`` (brackets would break Obsidian's links), the extension stays.

:func:`holders` searches every git object (commits and tag messages,
blobs and trees of every ref - branches, tags, notes, held stashes), every
file of the working tree and of ``.git`` (reflogs, packed refs, ref names)
and the state dir, their contents and their names, and names each place
that still holds a needle or a fragment.
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

__all__ = [
    "MIN_CHARS",
    "NAME_MARK",
    "Sweep",
    "fold",
    "holders",
    "is_copy_of",
    "miscited",
    "quotes",
    "read_bytes",
]

# A line shorter than this is not searched for: "ok" sits inside other words
# everywhere, and the memory's own block was removed by its id anyway.
MIN_CHARS = 12
# What a fragment in a file, folder or ref name becomes: "[" is no character
# of a ref name, and Obsidian's [[links]] cannot hold one either.
NAME_MARK = "PURGED"
_ALNUM_RUN = re.compile(r"[^\W_]+")
# The extension of a file name stays: a note and its fields file
# (``x.md``, ``.fields/x.md.jsonl``, ``x.earlier.md``) keep one stem.
_TAIL = re.compile(r"(?:(?:\.earlier)?\.md(?:\.jsonl)?|\.[A-Za-z0-9]{1,8})$")


def fold(text: str) -> tuple[str, list[int] | None]:
    """``text`` case-folded, and where each folded character came from (None: the same
    place, the usual case: folding changed no character's length)."""
    folded = text.casefold()
    if len(folded) == len(text):
        # Folding never shortens a character, so equal lengths mean one for one.
        return folded, None
    origin: list[int] = []
    for i, ch in enumerate(text):
        origin.extend([i] * len(ch.casefold()))
    return folded, origin


def quotes(text: str, line: str) -> bool:
    """Whether ``text`` holds ``line`` in any case, spacing or markdown escaping."""
    if not line.strip():
        return True
    return re.search(_pattern(line.casefold()), text.casefold()) is not None


@dataclass(frozen=True)
class Sweep:
    """The needles and fragments of one purge, compiled for files, git objects and text."""

    needles: tuple[str, ...]
    mark: str
    fragments: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        texts: Iterable[str],
        *,
        kept: Iterable[str] = (),
        mark: str,
        fragments: Iterable[str] = (),
    ) -> Sweep:
        """Needles from ``texts``' lines, leaving out those any of ``kept`` says."""
        lines = {
            " ".join(line.split())
            for text in texts
            for line in text.splitlines()
            if len(line.strip()) >= MIN_CHARS
        }
        kept = [k.casefold() for k in kept]
        needles = []
        for line in sorted(lines, key=lambda s: (-len(s), s)):
            pattern = re.compile(_pattern(line.casefold()))
            if not any(pattern.search(k) for k in kept):
                needles.append(line)
        pieces = sorted({f for f in fragments if f.strip()}, key=lambda s: (-len(s), s))
        return cls(tuple(needles), mark, tuple(pieces))

    def __bool__(self) -> bool:
        return bool(self.needles or self.fragments)

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], re.Pattern[str], tuple[str, ...]]:
        """The regex over folded text (needles first: the longer quote wins), the
        fragments' own (for names), and a piece of each that any match must hold."""
        needles = [_pattern(n.casefold()) for n in self.needles]
        pieces = [_bounded(f.casefold()) for f in self.fragments]
        every = "|".join(f"(?:{p})" for p in (*needles, *pieces)) or r"(?!)"
        names = "|".join(f"(?:{p})" for p in pieces) or r"(?!)"
        # The longest run of letters and digits of each: escapes and spacing
        # never split one, so its folded form is in whatever matches.
        anchors = tuple(
            max(_ALNUM_RUN.findall(s.casefold()) or [s.casefold()], key=len)
            for s in (*self.needles, *self.fragments)
        )
        return re.compile(every), re.compile(names), anchors

    @cached_property
    def _ascii_anchors(self) -> tuple[bytes, ...]:
        # Text without a byte above 127 folds as ASCII lower-casing does; an
        # anchor that folds to anything else can't be in it.
        return tuple(a.encode() for a in self._compiled[2] if a.isascii())

    def _may_hold(self, data: bytes) -> bool:
        """The cheap test first: most objects share no word with the purged text."""
        if data.isascii():
            lower = data.lower()
            return any(a in lower for a in self._ascii_anchors)
        folded = data.decode("utf-8", "surrogateescape").casefold()
        return any(a in folded for a in self._compiled[2])

    def found_in(self, data: bytes) -> bool:
        """Whether ``data`` holds a needle or a fragment in any of its forms."""
        if not self or not self._may_hold(data):
            return False
        return self.found_in_text(data.decode("utf-8", "surrogateescape"))

    def found_in_text(self, text: str) -> bool:
        if not self:
            return False
        return self._compiled[0].search(fold(text)[0]) is not None

    def redact(self, data: bytes) -> bytes:
        """``data`` with every match replaced by the mark (unchanged, the same object, if none)."""
        if not self.found_in(data):
            return data
        text = data.decode("utf-8", "surrogateescape")
        return _replace(text, self._compiled[0], self.mark).encode("utf-8", "surrogateescape")

    def redact_text(self, text: str) -> str:
        if not self:
            return text
        return _replace(text, self._compiled[0], self.mark)

    def redact_name(self, path: str, *, extension: bool = True) -> str:
        """A path (or a ref's name) with its fragments read :data:`NAME_MARK`, folder by
        folder; a file's ``extension`` stays. (A needle is a sentence: it names no file.)"""
        if not self.fragments:
            return path
        parts = path.split("/")
        for i, part in enumerate(parts):
            tail = _TAIL.search(part) if extension and i == len(parts) - 1 else None
            stem, end = (part[: tail.start()], tail.group()) if tail else (part, "")
            parts[i] = _replace(stem, self._compiled[1], NAME_MARK) + end
        return "/".join(parts)

    def names_a_fragment(self, path: str) -> bool:
        """Whether a file, folder or ref name holds a fragment (see :meth:`redact_name`)."""
        return bool(self.fragments) and self._compiled[1].search(fold(path)[0]) is not None

    def editor(self) -> Editor:
        """:meth:`redact_text` as an editor for the writer's transaction (today's files)."""

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
            text = tf.text
            new = self.redact_text(text)
            if new != text:
                tf.lines = new.splitlines(keepends=True)
            return Edit()

        return edit


def _replace(text: str, pattern: re.Pattern[str], mark: str) -> str:
    """``text`` with each match of ``pattern`` (over its folded form) replaced by ``mark``."""
    folded, origin = fold(text)
    spans = [m.span() for m in pattern.finditer(folded) if m.end() > m.start()]
    if not spans:
        return text
    out, at = [], 0
    for start, end in spans:
        if origin is not None:
            start, end = origin[start], origin[end - 1] + 1
        if start < at:
            continue  # two folded matches inside one original character
        out.append(text[at:start])
        out.append(mark)
        at = end
    out.append(text[at:])
    return "".join(out)


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


def _bounded(fragment: str) -> str:
    """A fragment's regex: a whole token, never the inside of a longer word or number."""
    pattern = _pattern(fragment)
    if _ALNUM_RUN.match(fragment):
        pattern = r"(?<![^\W_])" + pattern
    if fragment[-1:].isalnum():
        pattern += r"(?![^\W_])"
    return pattern


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
    graph: Provenance,
    blocks: Iterable[Block],
    purged: Collection[str],
    touched: Collection[str],
    *,
    fragments: Iterable[str] = (),
    rare: Collection[str] = (),
) -> set[str]:
    """Copies that repeat a purged text while naming other sources: they go with it.

    A language model may cite the wrong entry for a fact it drew from the
    purged one, so a copy is judged by what it says. A fact, bug fix or other
    copy counts as the purged text's copy when it holds one of its lines or
    one of its ``fragments`` (a secret, a code: :mod:`mdmem.git.fragments`);
    or when it repeats its content words (:func:`is_copy_of`) more than it
    repeats any source it cites, and either came from a consolidation the
    purged text was part of (its episode is touched) or shares two of the
    ``rare`` words only the purged text had among the kept memories.
    """
    raw = Sweep.of(purged, mark="", fragments=fragments)
    found = set()
    for block in blocks:
        piece = graph.pieces.get(block.id)
        if block.id in touched or piece is None or piece.rule not in _COPY_RULES:
            continue
        if raw.found_in_text(block.text):
            found.add(block.id)
        elif is_copy_of(block.text, purged) and (
            piece.episode in touched or len(words(block.text) & set(rare)) >= 2
        ):
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
    """Every place that still holds a needle or fragment: git objects, files of the
    vault and of the state dir (their bytes, or their names)."""
    if not sweep:
        return []
    git_dir = store.root / ".git"
    places = list(_objects_holding(store, sweep))
    for base in (store.root, store.state_dir):
        for path in _files_under(base, skip=git_dir / "objects"):
            shown = _shown(store, path)
            if path.is_file() and sweep.found_in(read_bytes(path)):
                places.append(shown)
            elif sweep.names_a_fragment(str(path.relative_to(base))):
                places.append(f"the name {shown}")
    return places


def _shown(store: MemoryStore, path: Path) -> str:
    try:
        return str(path.relative_to(store.root))
    except ValueError:
        return str(path)


def _files_under(base: Path, *, skip: Path) -> Iterator[Path]:
    """Every file and folder under ``base`` (symlinks are not followed)."""
    if not base.is_dir():
        return
    for path in sorted(base.rglob("*")):
        if path == skip or skip in path.parents or path.is_symlink():
            continue
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
