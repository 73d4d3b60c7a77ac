"""Derived copies of a memory: what consolidation wrote from it, found by its links.

Consolidation (:mod:`mdmem.memory.consolidate`) links everything it writes:

* each source entry S (a session turn) gets ``[consolidated:: ^E]``, where E
  is the id of the episode's summary block;
* the episode note (frontmatter ``kind: episode``) names its sources
  (frontmatter ``sources: ['[[path#^S]]', …]``) and holds the summary block
  ``… ^E``, a ``## Facts`` list of ``- text ([[path#^F]])`` lines and a
  ``## Open items`` list (repeated in the frontmatter as ``pending:``);
* each fact F it extracted (a memory of its own) carries ``[episode:: ^E]``;
* one daily-log entry says ``Consolidated N session entries … into
  [[episodes/…#^E]] (model): <first sentence of the summary>``.

**A derived copy**, precisely:

* of a source entry S of episode E: a *piece* of E's output - a sentence of
  the summary block, an open item (list line or ``pending:`` value), the
  daily-log quote, or a fact F of E - whose content words (case-folded,
  plural ``-s`` folded, stop words left out) are at least :data:`COPY_SHARE`
  found in some version of S, and found in no other source of E more
  (a tie counts as a copy: the text came from S at least as much as from
  anything else);
* of a fact F of E: its own line in E's ``## Facts`` list;
* of the episode E itself (its summary block): the daily-log quote;
* of a session turn S: a sentence of a ``session_summary`` whose span
  (``[from:: ^a] [to:: ^b]`` of ``[session:: …]``) holds S, by the same
  share rule against the span's other turns.

Nothing else is a copy. The same words elsewhere in the vault - another
memory, a person's note, ``mdmem.toml`` - belong to that text, not to this
memory. The episode's title, ``abstract`` and ``overview`` (phrases of its
summary) are pieces like the summary's sentences: a copy when their words
came from S. Its file name (the title's first words as a slug) is not
rewritten, and the id links (``[[…#^S]]``) carry no text.

:class:`CopyPlan` finds and replaces copies line by line, so every other byte
of a file stays as it was. Purge (:mod:`mdmem.git.purge`) removes the memory
and the facts that are copies of it from every commit and marks the other
pieces ``[PURGED]``; retention (:mod:`mdmem.memory.lifecycle`) marks the
pieces ``[REDACTED]``; resolve-session retires an episode and its daily-log
entry once every source it names is retired.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

import yaml

from mdmem.files import blocks as blk
from mdmem.files.ids import ID_PATTERN
from mdmem.files.textfile import TextFile
from mdmem.models import Block
from mdmem.store.editors import Edit, Editor

__all__ = ["COPY_SHARE", "CopyPlan", "Links", "linked_ids", "sentences", "words"]

COPY_SHARE = 0.6

_ID_REF = re.compile(rf"\^({ID_PATTERN})")
_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# "- text ([[path#^F]])" in the "## Facts" list of an episode note.
_FACT_LINE = re.compile(
    rf"^(?P<lead>\s*[-*+]\s+)(?P<text>.*?)(?P<link>\s*\(\[\[[^\]]*#\^(?P<id>{ID_PATTERN})"
    r"(?:\|[^\]]*)?\]\]\)\s*)$"
)
_ITEM_LINE = re.compile(r"^(?P<lead>\s*[-*+]\s+)(?P<text>.*?\S)\s*$")
_FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
_FRONT_SCALAR = re.compile(r"^([A-Za-z_][\w-]*):[ \t]+(\S.*?)\s*$")
# Frontmatter values consolidation derives from the summary's own words.
_COPIED_SCALARS = frozenset({"title", "abstract", "overview"})
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")
# The daily-log entry of a consolidation: "... into [[episodes/x#^E]] (model): quote".
_LOG_QUOTE = re.compile(
    rf"\[\[[^\]]*#\^(?P<id>{ID_PATTERN})(?:\|[^\]]*)?\]\]\s*\([^)\n]*\):[ \t]*(?P<quote>.+)$",
    re.DOTALL,
)
# Function words that say nothing about where a piece of text came from.
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


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (each line split after ``.``, ``!``, ``?`` or ``…``)."""
    out = []
    for line in text.splitlines():
        out += [part.strip() for part in _SENTENCE_END.split(line) if part.strip()]
    return out


def linked_ids(value: str | None) -> list[str]:
    """Memory ids a field value or link text points at (``^m-…``, ``[[x#^m-…]]``)."""
    return _ID_REF.findall(value or "")


def _share(piece: frozenset[str], source: frozenset[str]) -> float:
    return len(piece & source) / len(piece) if piece else 0.0


@dataclass
class Links:
    """What consolidation linked, gathered from parsed files (current or historical).

    ``sources[E][S]`` and ``facts[E][F]`` hold every text seen for that
    memory; ``notes[E]`` the paths of the episode note; ``logs[E]`` the ids
    of the daily-log entries linking it.
    """

    sources: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    facts: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    notes: dict[str, set[str]] = field(default_factory=dict)
    logs: dict[str, set[str]] = field(default_factory=dict)
    # A session summary (memory.summaries) names a span of one session's
    # turns, ``[session:: s] [from:: ^a] [to:: ^b]``: each turn in it is a
    # source of the summary, as an episode's entries are of the episode.
    # By session file: (summary id, first, last) and the turns seen.
    spans: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    turns: dict[str, dict[str, set[str]]] = field(default_factory=dict)

    def add_file(self, parsed: blk.ParsedFile) -> None:
        note = str(parsed.frontmatter.get("kind", "")) == "episode"
        in_session = _is_session_file(parsed.path)
        for block in parsed.blocks:
            if not block.is_memory:
                continue
            if block.kind == "session_summary":
                self._add_span(block)
            elif in_session and block.kind in _TURN_KINDS:
                self._add_turn(parsed.path, block)
            for episode in linked_ids(block.field("consolidated")):
                self.sources.setdefault(episode, {}).setdefault(block.id, set()).add(block.text)
            for episode in linked_ids(block.field("episode")):
                self.facts.setdefault(episode, {}).setdefault(block.id, set()).add(block.text)
            if note and block.kind == "episode":
                self.notes.setdefault(block.id, set()).add(parsed.path)
                listed = parsed.frontmatter.get("sources")
                for link in listed if isinstance(listed, list) else ():
                    for source in linked_ids(str(link)):
                        self.sources.setdefault(block.id, {}).setdefault(source, set())
            quote = _LOG_QUOTE.search(block.text)
            if quote is not None and not note:
                self.logs.setdefault(quote.group("id"), set()).add(block.id)

    def _add_span(self, summary: Block) -> None:
        session, first, last = (summary.field(k) for k in ("session", "from", "to"))
        if not (session and first and last):
            return
        path = str(blk.scope_dir(summary.scope) / "sessions" / f"{session}.md")
        first, last = first.lstrip("^"), last.lstrip("^")
        self.spans.setdefault(path, set()).add((summary.id, first, last))
        for turn, texts in self.turns.get(path, {}).items():
            if first <= turn <= last:  # ids sort by creation time
                self.sources.setdefault(summary.id, {}).setdefault(turn, set()).update(texts)

    def _add_turn(self, path: str, turn: Block) -> None:
        self.turns.setdefault(path, {}).setdefault(turn.id, set()).add(turn.text)
        for summary, first, last in self.spans.get(path, ()):
            if first <= turn.id <= last:
                self.sources.setdefault(summary, {}).setdefault(turn.id, set()).add(turn.text)

    def add_texts(self, memory_id: str, texts: Iterable[str]) -> None:
        """More versions of a memory's text (from history), wherever it is linked."""
        found = set(texts)
        for table in (self.sources, self.facts):
            for members in table.values():
                if memory_id in members:
                    members[memory_id] |= found

    def fill_from(self, known: Mapping[str, Block]) -> None:
        """Texts for sources named only by an episode's frontmatter."""
        for members in self.sources.values():
            for source, texts in members.items():
                if not texts and source in known:
                    texts.add(known[source].text)

    def episodes_of(self, memory_id: str) -> set[str]:
        """Episodes that name ``memory_id`` as a source."""
        return {e for e, members in self.sources.items() if memory_id in members}

    def episodes_with_fact(self, memory_id: str) -> set[str]:
        return {e for e, members in self.facts.items() if memory_id in members}


_TURN_KINDS = ("chat_message", "tool_output")


def _is_session_file(path: str) -> bool:
    parts = PurePosixPath(blk.scope_of_path(path)[1]).parts
    return len(parts) == 2 and parts[0] == "sessions" and parts[1].endswith(".md")


@dataclass(frozen=True)
class CopyPlan:
    """Which copies to mark: those of ``targets`` (sources) and the lines of ``facts``.

    ``sources`` maps each episode concerned to its sources and their texts
    (the targets' included), against which each piece is attributed.
    """

    mark: str
    targets: frozenset[str]
    facts: frozenset[str]
    sources: Mapping[str, Mapping[str, frozenset[str]]]

    @classmethod
    def build(
        cls,
        links: Links,
        *,
        mark: str,
        targets: Iterable[str],
        facts: Iterable[str] = (),
    ) -> CopyPlan:
        target_set, fact_set = frozenset(targets), frozenset(facts)
        episodes = {e for t in target_set for e in links.episodes_of(t)}
        episodes |= {e for f in fact_set for e in links.episodes_with_fact(f)}
        # An episode's own summary is quoted by its daily-log entry.
        episodes |= {t for t in target_set if t in links.notes}
        sources = {
            e: {s: frozenset(texts) for s, texts in links.sources.get(e, {}).items()}
            for e in episodes
        }
        return cls(mark=mark, targets=target_set, facts=fact_set, sources=sources)

    @property
    def episodes(self) -> frozenset[str]:
        return frozenset(self.sources)

    def __bool__(self) -> bool:
        return bool(self.sources)

    def copied_from(self, piece: str, episode: str) -> str | None:
        """The target ``piece`` (text written for ``episode``) is a copy of, or None."""
        members = self.sources.get(episode)
        piece_words = words(piece)
        if not members or not piece_words:
            return None
        scores = {
            s: max((_share(piece_words, words(t)) for t in texts), default=0.0)
            for s, texts in members.items()
        }
        best = max(scores.values())
        for target in sorted(self.targets & scores.keys()):
            if scores[target] >= COPY_SHARE and scores[target] >= best:
                return target
        return None

    def copies_among(self, candidates: Mapping[str, Mapping[str, Iterable[str]]]) -> set[str]:
        """Ids among ``candidates[E][id] = texts`` (e.g. facts of E) that copy a target."""
        found = set()
        for episode, members in candidates.items():
            if episode not in self.sources:
                continue
            for memory_id, texts in members.items():
                if any(self.copied_from(t, episode) for t in texts):
                    found.add(memory_id)
        return found

    # -- marking ---------------------------------------------------------------

    def redact(self, tf: TextFile, parsed: blk.ParsedFile) -> bool:
        """Mark the copies in one file (as parsed from ``tf``); whether anything changed.

        Only the text of a piece is replaced: the list marker, the links, the
        fields and the block id stay, and every other line keeps its bytes.
        """
        if not self.sources:
            return False
        changed = False
        note = next(
            (
                b.id
                for b in parsed.blocks
                if b.is_memory and b.id in self.sources and b.kind == "episode"
            ),
            None,
        )
        if note is not None and str(parsed.frontmatter.get("kind", "")) == "episode":
            # Line for line, so the blocks' line numbers stay valid below.
            changed |= self._redact_note_lines(tf, parsed, note)
        for block in sorted(parsed.blocks, key=lambda b: -b.line_start):
            if not block.is_memory:
                continue
            if block.id in self.sources:
                pieces = sentences(block.text)
                changed |= self._redact_block(tf, block, block.id, pieces)
                continue
            quote = _LOG_QUOTE.search(block.text)
            if quote is not None and quote.group("id") in self.sources:
                changed |= self._redact_block(
                    tf, block, quote.group("id"), [quote.group("quote").strip()], whole=True
                )
        return changed

    def editor(self) -> Editor:
        """:meth:`redact` as an editor for a writer's transaction."""

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
            if parsed is not None:
                self.redact(tf, parsed)
            return Edit()

        return edit

    def _redact_block(
        self, tf: TextFile, block: Block, episode: str, pieces: list[str], *, whole: bool = False
    ) -> bool:
        """Mark the pieces of one block that are copies. ``whole``: the pieces quote
        the episode's summary (a daily-log entry), a copy of it if it is a target."""
        start, end = block.line_start - 1, block.line_end
        raw = "".join(tf.lines[start:end])
        new = raw
        for piece in pieces:
            own = whole and episode in self.targets
            if not own and self.copied_from(piece, episode) is None:
                continue
            # The clean text joined what the file may wrap: match any whitespace.
            pattern = r"\s+".join(re.escape(w) for w in piece.split())
            new = re.sub(pattern, lambda _m: self.mark, new, count=1)
        if new == raw:
            return False
        mark = re.escape(self.mark)
        new = re.sub(rf"{mark}(?:[ \t]+{mark})+", lambda _m: self.mark, new)
        tf.lines[start:end] = new.splitlines(keepends=True)
        tf.fence_clean = min(tf.fence_clean, start)
        return True

    def _redact_note_lines(self, tf: TextFile, parsed: blk.ParsedFile, episode: str) -> bool:
        changed = False
        key = ""
        section = ""
        fence: str | None = None
        for i, raw in enumerate(tf.lines):
            line = raw.rstrip("\r\n")
            ending = raw[len(line) :]
            new = line
            if i < parsed.frontmatter_lines:
                top = _FRONT_KEY.match(line)
                if top is not None:
                    key = top.group(1)
                item = _ITEM_LINE.match(line)
                if (
                    key == "pending"
                    and item is not None
                    and self.copied_from(_scalar(item.group("text")), episode)
                ):
                    new = f"{item.group('lead')}'{self.mark}'"
                scalar = _FRONT_SCALAR.match(line)
                if scalar is not None and scalar.group(1) in _COPIED_SCALARS:
                    # The title, abstract and overview are phrases of the summary:
                    # each of their sentences is a piece, as the summary's are.
                    value = _scalar(scalar.group(2))
                    parts = _SENTENCE_SPLIT.split(value)
                    kept = [
                        self.mark if p != self.mark and self.copied_from(p, episode) else p
                        for p in parts
                    ]
                    if kept != parts:
                        joined = re.sub(
                            rf"{re.escape(self.mark)}(?: {re.escape(self.mark)})+",
                            lambda _m: self.mark,
                            " ".join(kept),
                        )
                        quoted = joined.replace("'", "''")
                        new = f"{scalar.group(1)}: '{quoted}'"
            else:
                opened = _FENCE.match(line)
                if opened is not None:
                    marker = opened.group(1)
                    fence = None if fence and marker.startswith(fence) else (fence or marker)
                    continue
                if fence is not None:
                    continue
                heading = _HEADING.match(line)
                if heading is not None:
                    section = heading.group(1).strip().lower()
                    title = heading.group(1).strip()
                    if (
                        line.startswith("# ")
                        and title != self.mark
                        and self.copied_from(title, episode)
                    ):
                        new = f"# {self.mark}"
                    if new != line:
                        tf.lines[i] = new + ending
                        tf.fence_clean = min(tf.fence_clean, i)
                        changed = True
                    continue
                fact = _FACT_LINE.match(line)
                item = _ITEM_LINE.match(line)
                if section == "facts" and fact is not None:
                    if fact.group("id") in self.facts and fact.group("text") != self.mark:
                        new = f"{fact.group('lead')}{self.mark}{fact.group('link')}"
                elif (
                    section == "open items"
                    and item is not None
                    and self.copied_from(item.group("text"), episode)
                ):
                    new = f"{item.group('lead')}{self.mark}"
            if new != line:
                tf.lines[i] = new + ending
                tf.fence_clean = min(tf.fence_clean, i)
                changed = True
        return changed


def _scalar(text: str) -> str:
    """A YAML list value as its string (``'it''s'`` -> ``it's``); the raw text if unparsable."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, str) else text
