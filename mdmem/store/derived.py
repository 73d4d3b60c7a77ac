"""Derived copies and their sources: every copy names what it was made from.

A *derived copy* is text mdmem wrote from other memories: an episode note,
a fact consolidation extracted, a session summary, the daily-log line that
announces an episode. Each records its sources in the markdown itself, as
links a person can read and follow in Obsidian, set by code and never read
from the text:

=====================  ==========================================================
copy                   what it says it was made from
=====================  ==========================================================
episode note           frontmatter ``sources:`` (the session entries,
                       ``'[[sessions/x.md#^S]]'``) and ``given:`` (the known facts
                       and the earlier episode whose open items the drafter was
                       shown). It covers everything in the note: ``title``,
                       ``abstract``, ``overview``, ``pending``, the heading, the
                       summary block ``^E`` and its ``## Facts`` / ``## Open
                       items`` / ``## Sources`` sections. Each source entry gets
                       ``[consolidated:: ^E]`` (the way back, not a source).
fact of an episode     ``[episode:: ^E] [sources:: ^S1 ^S2]``: the entries it was
                       drawn from (``[speaker:: …]`` says who said them). A fact
                       without ``sources`` (written before the links, or from a
                       model that could not say) counts as made from all of its
                       episode's sources and givens.
session summary        ``[session:: s] [from:: ^a] [to:: ^b]``: every turn of
                       ``sessions/s.md`` (same scope) from ``a`` to ``b``.
daily-log line         ``[sources:: ^E]`` beside its ``[[episodes/…#^E]]`` link
                       (older lines: the link in a ``Consolidation`` entry).
bug fix                ``[fixes:: ^G]``: it quotes the gotcha's error.
anything else          ``[sources:: ^a ^b]`` on the block.
=====================  ==========================================================

Tiers live with what they shorten (an episode's ``abstract``/``overview`` in
its note, a tool output's ``[abstract:: …]`` on its entry, whose full text
sits in ``tool-outputs/<key>.md``, named by ``[tout:: key]``), so they go
where it goes.

:func:`sources_of` answers "what was this block made from" for one block
against the catalog (or a :class:`Lookup` over a past commit);
:func:`origins_of` follows the answer down to memories nobody derived, and
:func:`derived_from` gives every block on the way, for the visibility rule
(:mod:`mdmem.store.visibility`), so who may see a copy and what purge
removes follow the same links. :class:`Provenance` is the same reading over many parsed files
(today's and every version in history), for purge and retention, and
:meth:`Provenance.affected` decides which copies a change reaches: copies
that can be written again from what is left (episodes, session summaries,
daily-log lines) are *regenerated*, the others (facts, bug fixes, any other
``[sources::]`` copy) are *removed* with their source. Nothing here compares
wording: a copy is what names its source.

:class:`Rewrite` is the result as edits of any version of any file: blocks
removed, blocks given new text, episode notes rewritten or dropped (and
renamed when their file name came from the old title), list lines that link
a removed memory dropped. :meth:`Rewrite.apply` changes only those lines, so
every other byte of a file stays.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

import yaml

from mdmem.files import blocks as blk
from mdmem.files import render
from mdmem.files.ids import ID_PATTERN
from mdmem.files.textfile import SkipFile, TextFile
from mdmem.models import Block
from mdmem.store.editors import Edit, Editor

if TYPE_CHECKING:
    from mdmem.files.catalog import Catalog

__all__ = [
    "COPY_SHARE",
    "SOURCES",
    "Affected",
    "Derivation",
    "Lookup",
    "NoteText",
    "Provenance",
    "Rewrite",
    "derivation",
    "derived_from",
    "front_ids",
    "is_episode_note",
    "link_ids",
    "linked_ids",
    "origins_of",
    "source_field",
    "sources_of",
    "updated_fields",
    "words",
]

SOURCES = "sources"

# Recall's families (mdmem.recall.families) still group a turn with a fact
# written before facts named their sources by how many words they share;
# nothing here uses it.
COPY_SHARE = 0.6

Rule = Literal["episode", "fact", "summary", "log", "fix", "copy"]

_ID_REF = re.compile(rf"\^({ID_PATTERN})")
_WORD = re.compile(r"\w+")
# The daily-log entry of a consolidation: "... into [[episodes/x#^E]] (model): quote".
_LOG_QUOTE = re.compile(
    rf"\[\[[^\]]*#\^(?P<id>{ID_PATTERN})(?:\|[^\]]*)?\]\]\s*\([^)\n]*\):[ \t]*(?P<quote>.+)$",
    re.DOTALL,
)
_LOG_CATEGORY = "· Consolidation"
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FACT_LINE = re.compile(
    rf"^(?P<lead>\s*[-*+]\s+)(?P<text>.*?)(?P<link>\s*\(\[\[[^\]]*#\^(?P<id>{ID_PATTERN})"
    r"(?:\|[^\]]*)?\]\]\)\s*)$"
)
_FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
# Frontmatter lists of links: an item naming a removed memory leaves.
_LINK_LISTS = frozenset({"sources", "facts", "given"})
# The note's sections whose lines link one memory each.
_LINK_SECTIONS = frozenset({"facts", "sources"})
# Function words that say nothing about a text (recall's families, see COPY_SHARE).
_STOP = frozenset(
    re.findall(
        r"\S+",
        """a an the i you he she it we they me him her us them my your his its our their
        mine yours is are was were be been being am do does did to of in on at for from by
        with and or but as that this these those so if then than there here it's i'm i'll
        i've i'd you're we're they're will would shall should can could may might must
        about into over up out just also very""",
    )
)


# -------------------------------------------------------------- the links --


def linked_ids(value: str | None) -> list[str]:
    """Memory ids a field value or link text points at (``^m-…``, ``[[x#^m-…]]``)."""
    return _ID_REF.findall(value or "")


def link_ids(ids: Iterable[str]) -> str:
    """The value of a ``sources`` field (or any id list): ``^m-a ^m-b``."""
    return " ".join(f"^{i}" for i in dict.fromkeys(ids))


def source_field(ids: Iterable[str]) -> tuple[str, str]:
    """``("sources", "^m-a ^m-b")``: the field a derived block names its sources by."""
    return (SOURCES, link_ids(ids))


def is_episode_note(frontmatter: Mapping[str, Any]) -> bool:
    return str(frontmatter.get("kind", "")) == "episode"


def front_ids(frontmatter: Mapping[str, Any], key: str) -> list[str]:
    """Memory ids a frontmatter list (or value) of links names (``sources:``, ``facts:``)."""
    value = frontmatter.get(key)
    items = value if isinstance(value, list) else ([value] if isinstance(value, str) else [])
    return [i for item in items for i in linked_ids(str(item))]


@dataclass(frozen=True)
class Derivation:
    """What one derived block says it was made from (see the module's table)."""

    piece: str
    rule: Rule
    named: tuple[str, ...] = ()  # the sources it names itself
    given: tuple[str, ...] = ()  # an episode's givens (known facts, an earlier episode)
    episode: str = ""  # a fact's episode: its sources stand in when it names none
    span: tuple[str, str, str] | None = None  # a summary's (session path, first, last)

    def merged(self, other: Derivation) -> Derivation:
        """Both versions' links (history may hold several): a source of either counts."""
        return Derivation(
            self.piece,
            self.rule,
            tuple(dict.fromkeys(self.named + other.named)),
            tuple(dict.fromkeys(self.given + other.given)),
            self.episode or other.episode,
            self.span or other.span,
        )


def derivation(block: Block, frontmatter: Mapping[str, Any]) -> Derivation | None:
    """How ``block`` (in a file with ``frontmatter``) links its sources; None if it is no copy."""
    if not block.is_memory:
        if is_episode_note(frontmatter):
            # A section or the frontmatter of an episode note (recall can return
            # either) is part of the note: made from what the note was made from.
            return Derivation(
                block.id,
                "episode",
                tuple(front_ids(frontmatter, "sources")),
                tuple(front_ids(frontmatter, "given")),
            )
        return None
    named = tuple(linked_ids(block.field(SOURCES)))
    if block.kind == "episode" and is_episode_note(frontmatter):
        entries = tuple(dict.fromkeys(front_ids(frontmatter, "sources") + list(named)))
        return Derivation(block.id, "episode", entries, tuple(front_ids(frontmatter, "given")))
    if block.kind == "session_summary":
        session, first, last = (block.field(k) for k in ("session", "from", "to"))
        if session and first and last:
            path = str(blk.scope_dir(block.scope) / "sessions" / f"{session}.md")
            span = (path, first.lstrip("^"), last.lstrip("^"))
            return Derivation(block.id, "summary", named, span=span)
    episodes = linked_ids(block.field("episode"))
    if episodes and block.kind != "episode":
        return Derivation(block.id, "fact", named, episode=episodes[0])
    quote = _LOG_QUOTE.search(block.text) if block.kind == "log" else None
    if quote is not None and (named or block.heading.endswith(_LOG_CATEGORY)):
        return Derivation(block.id, "log", named or (quote.group("id"),))
    fixes = tuple(linked_ids(block.field("fixes")))
    if fixes:
        return Derivation(block.id, "fix", tuple(dict.fromkeys(fixes + named)))
    return Derivation(block.id, "copy", named) if named else None


class _View:
    """What resolving a derivation needs to look up: other pieces, a session's turns."""

    def piece(self, memory_id: str) -> Derivation | None:
        raise NotImplementedError

    def turns(self, path: str) -> Iterable[str]:
        raise NotImplementedError


def _resolve(d: Derivation, view: _View) -> tuple[str, ...]:
    if d.rule == "summary" and d.span is not None:
        path, first, last = d.span
        inside = sorted(t for t in view.turns(path) if first <= t <= last)  # ids sort by time
        return tuple(dict.fromkeys(d.named + tuple(inside)))
    if d.rule == "fact" and not d.named:
        episode = view.piece(d.episode)
        if episode is None or episode.rule != "episode":
            return (d.episode,)
        return tuple(dict.fromkeys(episode.named + episode.given))
    return tuple(dict.fromkeys(d.named + d.given))


class Lookup(_View):
    """One state of a vault to read links against: the live catalog's, or a
    snapshot's at a past commit (:mod:`mdmem.git.timetravel`)."""

    def __init__(
        self,
        block_of: Callable[[str], Block | None],
        blocks_in: Callable[[str], Sequence[Block]],
        frontmatter_of: Callable[[str], Mapping[str, Any]],
    ) -> None:
        self.block = block_of
        self.blocks_in = blocks_in
        self.frontmatter = frontmatter_of

    @classmethod
    def of_catalog(cls, catalog: Catalog) -> Lookup:
        def frontmatter(path: str) -> Mapping[str, Any]:
            state = catalog.files.get(path)
            return state.parsed.frontmatter if state is not None else {}

        return cls(catalog.block, catalog.blocks_in, frontmatter)

    def piece(self, memory_id: str) -> Derivation | None:
        block = self.block(memory_id)
        return None if block is None else derivation(block, self.frontmatter(block.path))

    def turns(self, path: str) -> Iterable[str]:
        return (b.id for b in self.blocks_in(path) if b.is_memory)


def _lookup(where: Catalog | Lookup) -> Lookup:
    return where if isinstance(where, Lookup) else Lookup.of_catalog(where)


def sources_of(block: Block, where: Catalog | Lookup) -> tuple[str, ...]:
    """The ids of the memories ``block`` was derived from, in the order it names them.

    ``()`` for a block nobody derived (a person's note, a remembered fact, a
    session turn). The answer comes from the links in the files (the
    module's table), read against ``where`` (a catalog, or a :class:`Lookup`
    over a past commit) for what a link leaves implicit (a session summary's
    turns, the sources of a fact's episode); ids may name memories no longer
    in the vault. One level: a daily-log line's source is its episode;
    :func:`origins_of` goes all the way down.
    """
    look = _lookup(where)
    found = derivation(block, look.frontmatter(block.path))
    return () if found is None else _resolve(found, look)


def origins_of(block: Block, where: Catalog | Lookup) -> tuple[str, ...]:
    """The memories at the bottom of ``block``'s derivation: sources that are no copies.

    Ids no longer in the vault are kept (a caller can't be shown what they were).
    """
    return tuple(i for i, _, deeper in _walk(block, _lookup(where)) if not deeper)


def derived_from(block: Block, where: Catalog | Lookup) -> list[Block]:
    """Every block still in the vault that ``block`` was derived from, all the way
    down: the copies in between (a log line's episode) and the origins.

    The visibility rule asks "may this reader see every one of these".
    """
    return [source for _, source, _ in _walk(block, _lookup(where)) if source is not None]


def _walk(block: Block, look: Lookup) -> Iterator[tuple[str, Block | None, tuple[str, ...]]]:
    """(id, its block or None, its own sources) for each source of ``block``, breadth first."""
    seen = {block.id}
    todo = list(sources_of(block, look))
    while todo:
        memory_id = todo.pop(0)
        if memory_id in seen:
            continue
        seen.add(memory_id)
        source = look.block(memory_id)
        deeper = sources_of(source, look) if source is not None else ()
        todo.extend(deeper)
        yield memory_id, source, deeper


# ------------------------------------------------------------- the graph --


@dataclass(frozen=True)
class Affected:
    """What a change to some memories reaches: copies removed and copies to write again."""

    removed: frozenset[str]  # the memories themselves, and copies that go with them
    regenerated: frozenset[str]  # episodes, summaries, log lines written again
    dropped_notes: frozenset[str]  # episodes (in ``removed``) whose whole note goes

    def __bool__(self) -> bool:
        return bool(self.removed or self.regenerated)


class Provenance(_View):
    """The derivation links of many parsed files: today's, and versions from history.

    A piece seen in several versions keeps the union of their links. Which
    files were read decides what is known: purge reads every version that
    names a memory concerned, retention today's files.
    """

    def __init__(self) -> None:
        self.pieces: dict[str, Derivation] = {}
        self.session_turns: dict[str, set[str]] = {}
        self.notes: dict[str, set[str]] = {}  # episode id -> paths of its note
        self.texts: dict[str, set[str]] = {}  # every text seen per memory
        self.kinds: dict[str, str] = {}
        self._by_episode: dict[str, set[str]] = {}  # episode -> its facts, log lines

    @classmethod
    def of(cls, files: Iterable[blk.ParsedFile]) -> Provenance:
        graph = cls()
        for parsed in files:
            graph.add_file(parsed)
        return graph

    def add_file(self, parsed: blk.ParsedFile) -> None:
        note = is_episode_note(parsed.frontmatter)
        session = _is_session_file(parsed.path)
        for block in parsed.blocks:
            if not block.is_memory:
                continue
            self.texts.setdefault(block.id, set()).add(block.text)
            self.kinds.setdefault(block.id, block.kind)
            if session:
                self.session_turns.setdefault(parsed.path, set()).add(block.id)
            found = derivation(block, parsed.frontmatter)
            if found is None:
                continue
            if note and found.rule == "episode":
                self.notes.setdefault(block.id, set()).add(parsed.path)
            old = self.pieces.get(block.id)
            self.pieces[block.id] = found if old is None else old.merged(found)
            if found.rule in ("fact", "log"):
                key = found.episode or (found.named[0] if found.named else "")
                self._by_episode.setdefault(key, set()).add(block.id)

    def piece(self, memory_id: str) -> Derivation | None:
        return self.pieces.get(memory_id)

    def _rule(self, memory_id: str) -> str:
        found = self.pieces.get(memory_id)
        return found.rule if found is not None else ""

    def turns(self, path: str) -> Iterable[str]:
        return self.session_turns.get(path, ())

    def sources(self, memory_id: str) -> tuple[str, ...]:
        found = self.pieces.get(memory_id)
        return () if found is None else _resolve(found, self)

    def episodes_of(self, memory_id: str) -> set[str]:
        """Episodes (and session summaries) that ``memory_id`` is a source of."""
        return {
            p
            for p, d in self.pieces.items()
            if d.rule in ("episode", "summary") and memory_id in self.sources(p)
        }

    def logs_of(self, episode: str) -> set[str]:
        return {p for p in self._by_episode.get(episode, ()) if self.pieces[p].rule == "log"}

    def affected(self, changed: Collection[str], *, remove: bool) -> Affected:
        """What a change to ``changed`` reaches, following the links to a fixed point.

        ``remove`` (purge): ``changed`` leave the vault; a fact, bug fix or
        other copy of a removed memory leaves with it; an episode or summary
        with no source left leaves, and its daily-log line with it; the
        others are regenerated, and so is what was given a regenerated
        episode. Without ``remove`` (retention: the sources stay, their text
        goes), nothing leaves: episodes, summaries and log lines reached are
        regenerated, facts keep their text.
        """
        removed = set(changed)
        regenerated: set[str] = set()
        # An episode purged itself takes its note: title, tiers, open items are its copies.
        dropped = {i for i in changed if remove and self._rule(i) == "episode"}
        grew = True
        while grew:
            grew = False
            for piece in sorted(self.pieces):  # ids sort by creation: sources come first
                if piece in removed or piece in regenerated:
                    continue
                d = self.pieces[piece]
                sources = set(self.sources(piece))
                if not sources & (removed | regenerated):
                    continue
                if d.rule in ("fact", "fix", "copy"):
                    if not remove:
                        continue  # retention: a fact keeps its text until retired itself
                    removed.add(piece)
                elif d.rule == "log":
                    (removed if remove and sources & removed else regenerated).add(piece)
                elif remove and not set(d.named if d.rule == "episode" else sources) - removed:
                    removed.add(piece)  # nothing left to summarise
                    if d.rule == "episode":
                        dropped.add(piece)
                else:
                    regenerated.add(piece)
                grew = True
        return Affected(frozenset(removed), frozenset(regenerated), frozenset(dropped))


def _is_session_file(path: str) -> bool:
    parts = PurePosixPath(blk.scope_of_path(path)[1]).parts
    return len(parts) == 2 and parts[0] == "sessions" and parts[1].endswith(".md")


# ------------------------------------------------------------ the rewrite --


@dataclass(frozen=True)
class NoteText:
    """An episode note's derived parts, regenerated: the same in every version of it."""

    title: str
    pending: tuple[str, ...]
    front: Mapping[str, Any]  # frontmatter keys set (a None value removes the key)


@dataclass(frozen=True)
class Rewrite:
    """The edits a purge (or retention) makes to any version of any file.

    ``removed`` blocks leave (their lines, and a separating blank line);
    ``texts`` blocks read their new text (fields and id kept, ``fields``
    updated); ``notes`` episode notes get their regenerated parts;
    ``dropped`` episode notes leave whole; ``renames`` move notes whose file
    name came from the old title. In every episode note, list lines linking
    a ``removed`` memory leave too, and (retention) lines of ``marked``
    facts read ``mark``.
    """

    mark: str
    removed: frozenset[str] = frozenset()
    texts: Mapping[str, str] = field(default_factory=dict)
    fields: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    notes: Mapping[str, NoteText] = field(default_factory=dict)
    dropped: frozenset[str] = frozenset()
    renames: Mapping[str, str] = field(default_factory=dict)
    marked: frozenset[str] = frozenset()

    @property
    def touched(self) -> frozenset[str]:
        """Every id whose lines this rewrite may change (a file naming none is left alone)."""
        return frozenset(self.removed | set(self.texts) | set(self.notes) | self.dropped) | (
            self.marked
        )

    def apply(self, tf: TextFile, parsed: blk.ParsedFile) -> bool | None:
        """Edit one version of one file in place; whether it changed, None if it goes whole."""
        note = _note_id(parsed)
        if note is not None and note in self.dropped:
            return None
        changed = _remove_blocks(tf, parsed, self.removed)
        if changed:
            try:
                parsed = blk.parse(parsed.path, tf, beside=blk.EVERY_LINE)
            except SkipFile:
                return True
        for block in sorted(parsed.blocks, key=lambda b: -b.line_start):
            if not block.is_memory or block.id not in self.texts:
                continue
            fields = updated_fields(block.fields, self.fields.get(block.id))
            edited = replace(block, fields=fields)
            # Fields written on the line (an older vault's) take the update there;
            # those kept beside it, in its fields file (record_updates).
            lines = render.replace_text(
                edited, tf, self.texts[block.id], updates=self.fields.get(block.id)
            )
            old = [line.rstrip("\r\n") for line in tf.lines[block.line_start - 1 : block.line_end]]
            if lines != old:
                tf.replace_lines(block.line_start - 1, block.line_end, lines)
                changed = True
        if is_episode_note(parsed.frontmatter):
            regenerated = self.notes.get(note) if note is not None else None
            changed |= _edit_note(tf, parsed.frontmatter_lines, self, regenerated)
        return changed

    def record_updates(self, ids: Iterable[str]) -> list[tuple[str, list[tuple[str, str | None]]]]:
        """The field changes of regenerated copies among ``ids``, as records to
        keep beside their lines (today's files; history is rewritten whole)."""
        return [(i, list(self.fields[i].items())) for i in ids if self.fields.get(i)]

    def editor(self) -> Editor:
        """:meth:`apply` as an editor for a writer's transaction (today's files).

        A note to drop is left as it is here: the history rewrite takes it out.
        """

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
            if parsed is not None:
                self.apply(tf, parsed)
            return Edit()

        return edit


def _note_id(parsed: blk.ParsedFile) -> str | None:
    if not is_episode_note(parsed.frontmatter):
        return None
    return next((b.id for b in parsed.blocks if b.is_memory and b.kind == "episode"), None)


def updated_fields(
    fields: tuple[tuple[str, str], ...], updates: Mapping[str, str | None] | None
) -> tuple[tuple[str, str], ...]:
    """``fields`` with ``updates`` set in place (None removes), new keys at the end."""
    if not updates:
        return fields
    out = [(k, updates.get(k, v)) for k, v in fields]
    had = {k for k, _ in fields}
    out += [(k, v) for k, v in updates.items() if k not in had]
    return tuple((k, v) for k, v in out if v is not None)


def _remove_blocks(tf: TextFile, parsed: blk.ParsedFile, ids: Collection[str]) -> bool:
    changed = False
    for _ in range(len(parsed.blocks) + 1):
        doomed = [b for b in parsed.blocks if b.is_memory and b.id in ids]
        if not doomed:
            break
        remove_lines(tf, doomed[-1].line_start - 1, doomed[-1].line_end)
        changed = True
        try:
            parsed = blk.parse(parsed.path, tf, beside=blk.EVERY_LINE)
        except SkipFile:
            break
    return changed


def remove_lines(tf: TextFile, start: int, end: int) -> None:
    """Drop lines [start, end) and the blank line that was written to separate them.

    The gap after the block goes when one stays before it (as ``forget``
    does); a block that ends the file takes the gap before it instead, so a
    file reads as it did before the block was appended.
    """
    lines = tf.lines

    def blank(i: int) -> bool:
        return not lines[i].strip()

    if end < len(lines) and blank(end) and (start == 0 or blank(start - 1)):
        end += 1
    elif end >= len(lines) and start > 0 and blank(start - 1):
        start -= 1
    tf.replace_lines(start, end, [])


def _edit_note(tf: TextFile, front_lines: int, rewrite: Rewrite, new: NoteText | None) -> bool:
    """An episode note's frontmatter, heading and sections, line by line."""
    before = list(tf.lines)
    body = _edit_body(tf.lines[front_lines:], rewrite, new)
    front = _edit_front(tf.lines[:front_lines], rewrite, new)
    tf.lines = front + body
    if tf.lines == before:
        return False
    tf.fence_clean = 0
    return True


def _ending(raw: str) -> str:
    return raw[len(raw.rstrip("\r\n")) :] or "\n"


def _edit_body(lines: list[str], rewrite: Rewrite, new: NoteText | None) -> list[str]:
    mark = rewrite.mark
    out: list[str] = []
    section = ""
    fence: str | None = None
    titled = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        opened = _FENCE.match(line)
        if opened is not None:
            marker = opened.group(1)
            fence = None if fence and marker.startswith(fence) else (fence or marker)
        if fence is not None or opened is not None:
            if section != "open items" or new is None:
                out.append(raw)
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            section = heading.group(2).strip().lower()
            if new is not None and heading.group(1) == "#" and not titled:
                titled = True
                out.append(f"# {new.title}{_ending(raw)}")
                continue
            if new is not None and section == "open items":
                if new.pending:
                    eol = _ending(raw)
                    out += [raw, eol, *(f"- {p}{eol}" for p in new.pending), eol]
                continue
            out.append(raw)
            continue
        if section == "open items" and new is not None:
            continue  # replaced above (or gone with its heading)
        fact = _FACT_LINE.match(line)
        if section in _LINK_SECTIONS and any(i in rewrite.removed for i in linked_ids(line)):
            continue
        marked = fact is not None and fact.group("id") in rewrite.marked
        if section == "facts" and fact is not None and marked and fact.group("text") != mark:
            raw = f"{fact.group('lead')}{rewrite.mark}{fact.group('link')}{_ending(raw)}"
        out.append(raw)
    if (
        new is not None
        and new.pending
        and not any(
            (h := _HEADING.match(x.rstrip("\r\n"))) is not None
            and h.group(2).lower() == "open items"
            for x in out
        )
    ):
        out = _insert_open_items(out, new.pending)
    return _squeeze_blank(out)


def _insert_open_items(lines: list[str], pending: tuple[str, ...]) -> list[str]:
    """Open items a regenerated note gained go before its ``## Sources`` (or at the end)."""
    eol = _ending(lines[0]) if lines else "\n"
    section = ["## Open items" + eol, eol, *(f"- {p}{eol}" for p in pending), eol]
    for i, raw in enumerate(lines):
        heading = _HEADING.match(raw.rstrip("\r\n"))
        if heading is not None and heading.group(2).strip().lower() == "sources":
            return lines[:i] + section + lines[i:]
    return [*lines, *section]


def _squeeze_blank(lines: list[str]) -> list[str]:
    """No two blank lines in a row where a removal left them (the note is ours)."""
    out: list[str] = []
    for raw in lines:
        if not raw.strip() and out and not out[-1].strip():
            continue
        out.append(raw)
    return out


def _edit_front(lines: list[str], rewrite: Rewrite, new: NoteText | None) -> list[str]:
    if len(lines) < 2:
        return lines
    eol = _ending(lines[0])
    keys: list[tuple[str, list[str]]] = []  # (key, its raw lines), in order
    for line in lines[1:-1]:
        top = _FRONT_KEY.match(line)
        if top is not None and not line[:1].isspace():
            keys.append((top.group(1), [line]))
        elif keys:
            keys[-1][1].append(line)
        else:
            keys.append(("", [line]))
    updates = dict(new.front) if new is not None else {}
    out = [lines[0]]
    for key, raw in keys:
        if key in updates:
            value = updates.pop(key)
            if value is not None:
                out += _dump(key, value, eol)
            continue
        if key in _LINK_LISTS and rewrite.removed:
            kept = [r for r in raw[1:] if not any(i in rewrite.removed for i in linked_ids(r))]
            if len(kept) != len(raw) - 1:
                raw = [raw[0], *kept] if kept else [f"{key}: []{eol}"]
        out += raw
    for key, value in updates.items():
        if value is not None:
            out += _dump(key, value, eol)
    out.append(lines[-1])
    return out


def _dump(key: str, value: Any, eol: str) -> list[str]:
    text = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=1000)
    return [line + eol for line in text.splitlines()]


# ------------------------------------------------- words (recall families) --


def words(text: str) -> frozenset[str]:
    """The content words of ``text``: case-folded, plural ``-s`` folded, no stop words."""
    return _words(text)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    out = set()
    for word in _WORD.findall(text.casefold()):
        if word in _STOP or (len(word) == 1 and word.isalpha()):  # "it's" -> "it", "s"
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)
