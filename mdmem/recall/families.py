"""One hit per piece of knowledge: a turn, the facts and episode made from it.

Consolidation (:mod:`mdmem.memory.consolidation.consolidate`) writes what it learned from a
conversation several times over, and links every copy (see
:mod:`mdmem.store.derived`): source turns get ``[consolidated:: ^E]``, facts
``[episode:: ^E]``, the episode note holds the summary block ``^E`` and its
``## Facts`` / ``## Open items`` / ``## Sources`` sections, and one daily-log
line (category ``Consolidation``) announces it. Ranked as they are, one fact
fills the top five five times.

:func:`collapse` walks a ranked list and keeps one representative per piece
of knowledge, the others hanging off it as ``sources`` (what it came from)
and ``derived`` (what was made from it):

* a fact and the turn it was copied from are one piece: the turns its
  ``[sources:: …]`` names (:mod:`mdmem.store.derived`), or, for a fact
  written before facts named their sources, a turn sharing at least
  :data:`~mdmem.store.derived.COPY_SHARE` of its content words; the better
  placed one represents it, and a fact or turn always represents its piece
  before an episode-level copy does;
* the episode's summary and sections belong to the best-placed piece of their
  episode; alone, the summary stands for the episode;
* bookkeeping (the consolidation's daily-log line, ``## Sources`` link lists)
  never is a hit: it hangs off a representative of its episode or is dropped.

Everything is read from the links consolidation wrote (fields, the episode's
``kind``, the log category a caller gave), never guessed from wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mdmem.models import Block
from mdmem.store.derived import COPY_SHARE, SOURCES, linked_ids, words

__all__ = ["Member", "collapse", "episode_of", "is_bookkeeping"]

T = TypeVar("T")
_REF = re.compile(r"\[\[[^\]|#]*#\^(m-[0-9a-z]+)")
_EPISODE_PARTS = ("Facts", "Open items")
_TURN_KINDS = ("chat_message", "tool_output")


@dataclass
class Member(Generic[T]):
    """A kept item with the ids collapsed into it."""

    item: T
    block: Block
    sources: list[str] = field(default_factory=list)
    derived: list[str] = field(default_factory=list)


def _ref(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    return value[1:] if value.startswith("^") else value


def _episode_block(path: str, blocks_in: Callable[[str], Sequence[Block]]) -> str | None:
    for b in blocks_in(path):
        if b.is_memory and b.kind == "episode":
            return b.id
    return None


def episode_of(block: Block, blocks_in: Callable[[str], Sequence[Block]]) -> tuple[str, str] | None:
    """``(episode id, role)`` of a block tied to an episode, else None.

    Roles: ``source`` (a consolidated turn), ``fact``, ``summary``, ``part``
    (the episode's Facts / Open items section), ``bookkeeping`` (its Sources
    list, the daily-log announcement).
    """
    if block.is_memory:
        consolidated = _ref(block.field("consolidated"))
        if consolidated:
            return consolidated, "source"
        episode = _ref(block.field("episode"))
        if episode:
            return episode, "fact"
        if block.kind == "episode":
            return block.id, "summary"
        if block.kind == "log" and block.heading.endswith("Consolidation"):
            m = _REF.search(block.text)
            if m:
                return m.group(1), "bookkeeping"
        return None
    heading = block.heading.strip()
    if not heading or block.id.endswith("#frontmatter"):
        return None
    episode_id = _episode_block(block.path, blocks_in)
    if episode_id is None:
        return None
    if heading == "Sources":
        return episode_id, "bookkeeping"
    return episode_id, "part" if heading in _EPISODE_PARTS else "summary"


def is_bookkeeping(block: Block, blocks_in: Callable[[str], Sequence[Block]]) -> bool:
    """A line that records that consolidation happened, not what was learned."""
    tie = episode_of(block, blocks_in)
    return tie is not None and tie[1] == "bookkeeping"


def _copies(a: Block, b: Block) -> bool:
    for fact, turn in ((a, b), (b, a)):
        named = linked_ids(fact.field(SOURCES))
        if named and turn.kind in _TURN_KINDS:  # the fact says which turns it came from
            return turn.id in named
    # A fact written before facts named their sources: by the words they share.
    wa, wb = words(a.text), words(b.text)
    if not wa or not wb:
        return False
    shared = len(wa & wb)
    return shared >= COPY_SHARE * min(len(wa), len(wb))


def collapse(
    ranked: Sequence[tuple[T, Block]],
    blocks_in: Callable[[str], Sequence[Block]],
    limit: int,
    strength: Callable[[T], float] | None = None,
) -> list[Member[T]]:
    """The first ``limit`` pieces of knowledge of ``ranked`` (best first).

    A piece sits at the place of its best-ranked copy; it is represented by
    its fact or turn of the greatest ``strength`` (the query relevance: a
    copy made later must not win on recency alone, and the turn often says
    more than the fact taken from it).
    """
    strength = strength or (lambda _item: 0.0)
    kept: list[Member[T]] = []
    # episode id -> kept members tied to it (pieces of that episode)
    by_episode: dict[str, list[Member[T]]] = {}
    # episode id -> the member standing for the episode itself (summary or part)
    episode_slot: dict[str, Member[T]] = {}
    waiting: dict[str, list[str]] = {}  # bookkeeping seen before its episode's piece
    for item, block in ranked:
        tie = episode_of(block, blocks_in)
        if tie is None:
            if len(kept) < limit:
                kept.append(Member(item, block))
            continue
        episode, role = tie
        pieces = by_episode.setdefault(episode, [])
        if role == "bookkeeping":
            if pieces:
                pieces[0].derived.append(block.id)
            else:
                waiting.setdefault(episode, []).append(block.id)
            continue
        if role in ("summary", "part"):
            if pieces:
                pieces[0].derived.append(block.id)
                continue
            if len(kept) >= limit:
                continue
            member = Member(item, block, derived=waiting.pop(episode, []))
            kept.append(member)
            pieces.append(member)
            episode_slot[episode] = member
            continue
        # A fact or a source turn: one piece with a copy of itself, if kept.
        twin = next(
            (
                m
                for m in pieces
                if m is not episode_slot.get(episode)
                and m.block.id != block.id
                and _copies(m.block, block)
                and {role, _role(m.block, blocks_in)} == {"fact", "source"}
            ),
            None,
        )
        if twin is not None:
            if strength(item) > strength(twin.item):
                # The stronger copy represents the piece at the twin's place.
                old = twin.block
                twin.item, twin.block = item, block
                (twin.derived if role == "source" else twin.sources).append(old.id)
            else:
                (twin.sources if role == "source" else twin.derived).append(block.id)
            continue
        slot = episode_slot.get(episode)
        if slot is not None and _copies(slot.block, block):
            del episode_slot[episode]
            # The episode stood for this piece until its fact or turn came:
            # the fact or turn takes the episode's place.
            index = next(i for i, m in enumerate(kept) if m is slot)
            member = Member(item, block, derived=[slot.block.id, *slot.derived])
            kept[index] = member
            pieces[pieces.index(slot)] = member
            continue
        if len(kept) >= limit:
            continue
        member = Member(item, block, derived=waiting.pop(episode, []))
        kept.append(member)
        pieces.append(member)
    return kept


def _role(block: Block, blocks_in: Callable[[str], Sequence[Block]]) -> str | None:
    tie = episode_of(block, blocks_in)
    return tie[1] if tie is not None else None
