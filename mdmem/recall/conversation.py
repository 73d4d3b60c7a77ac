"""Conversations in recall: people named in a query, and replies that follow a hit.

A vault holds conversations as consecutive blocks of one file: session
entries (``[role:: user]``), or dialog turns a host stored with a
``[speaker:: Caroline]`` field. Two things about them help recall:

* **People.** A query that names a person ("What did Caroline paint?") is
  about that person's memories; in a sentence embedding the name dominates
  and pulls in everything that person ever said. So names of people the vault
  knows (``speaker`` and ``contact`` fields) count as labels, like tags (the
  tag boost applies to them), and are left out of the query text that is
  embedded. Measured on LoCoMo dev (``bench/locomo.py``): vector-only R@5
  0.46 -> 0.52.
* **Threads.** The turn that answers a question is often worded nothing like
  the query ("Super good! Rich and creamy"), while the question before it
  matches well. A turn therefore inherits a share of the relevance of the
  question right before it, and a smaller share of the same speaker's
  previous turn (the topic they were on). Turns count as one thread only
  within the same file, in order, and within six hours.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from datetime import timedelta
from typing import Protocol

from mdmem.files.people import PEOPLE_FIELDS, TOKEN, name_tokens, people_of
from mdmem.models import Block

__all__ = [
    "PEOPLE_FIELDS",
    "FileOrder",
    "Threads",
    "name_tokens",
    "people_of",
    "strip_people",
    "thread_bonus",
    "voice_of",
]

_THREAD_GAP = timedelta(hours=6)
_CLOCK_SKEW = timedelta(minutes=1)
_LOOKAHEAD = 2  # a speaker's next turn is at most two turns later in a two-party chat


def voice_of(block: Block) -> str | None:
    """Who says this turn (``speaker``, else the session ``role``); None if not a turn."""
    speaker = block.field("speaker") or block.field("role")
    return speaker.strip().casefold() if speaker and speaker.strip() else None


def strip_people(query: str, people: Collection[str]) -> str:
    """``query`` without words naming known people; unchanged if nothing else is left."""
    if not people:
        return query
    kept = []
    for word in query.split():
        core = word.casefold().strip("?!.,;:\"'()[]")
        core = re.sub(r"['’]s$", "", core)
        if core not in people:
            kept.append(word)
    if len(kept) == len(query.split()) or not any(TOKEN.search(w) for w in kept):
        return query
    return " ".join(kept)


class Threads(Protocol):
    """What thread scoring needs to know about a vault (live or at a commit)."""

    def people(self) -> Collection[str]: ...
    def following(self, block: Block) -> Sequence[Block]: ...
    def neighbours(self, block: Block) -> Sequence[Block]: ...
    def blocks_in(self, path: str) -> Sequence[Block]: ...


class FileOrder:
    """Conversational order of blocks, for any vault view that can list a file.

    ``blocks_of(path)`` returns the blocks of one file (any order); the
    sorted memory blocks are cached per file until that list changes.
    """

    def __init__(
        self,
        blocks_of: Callable[[str], Sequence[Block]],
        people: Callable[[], Collection[str]],
    ) -> None:
        self._blocks_of = blocks_of
        self._people = people
        # path -> (the file's block list as seen, its length, sorted memories, positions)
        self._order: dict[str, tuple[Sequence[Block], int, list[Block], dict[str, int]]] = {}

    def people(self) -> Collection[str]:
        return self._people()

    def blocks_in(self, path: str) -> Sequence[Block]:
        """Every block of one file, as parsed."""
        return self._blocks_of(path)

    def following(self, block: Block) -> Sequence[Block]:
        memories, at = self._place(block)
        if at is None:
            return ()
        return memories[at + 1 : at + 1 + _LOOKAHEAD]

    def neighbours(self, block: Block) -> Sequence[Block]:
        """The turns right before and after ``block`` in its conversation
        (same file, each within the thread gap of it); none for a block
        that is not a turn."""
        if voice_of(block) is None:
            return ()
        memories, at = self._place(block)
        if at is None:
            return ()
        around = memories[max(0, at - 1) : at] + memories[at + 1 : at + 2]
        return [
            turn
            for turn in around
            if voice_of(turn) is not None and abs(turn.created - block.created) <= _THREAD_GAP
        ]

    def _place(self, block: Block) -> tuple[list[Block], int | None]:
        """The file's memories in order, and ``block``'s position among them."""
        blocks = self._blocks_of(block.path)
        cached = self._order.get(block.path)
        # A reparse replaces the list; an append extends it in place.
        if cached is None or cached[0] is not blocks or cached[1] != len(blocks):
            memories = sorted((b for b in blocks if b.is_memory), key=lambda b: b.line_start)
            cached = (blocks, len(blocks), memories, {b.id: i for i, b in enumerate(memories)})
            self._order[block.path] = cached
        _, _, memories, position = cached
        return memories, position.get(block.id)


def thread_bonus(
    relevance: dict[str, float],
    block_of: Callable[[str], Block | None],
    threads: Threads,
    *,
    reply_weight: float,
    continuation_weight: float,
) -> dict[str, float]:
    """Relevance each turn inherits, by block id.

    ``relevance`` holds the fused relevance of the candidates that passed the
    floor. The reply to a question gets ``reply_weight`` of the question's
    relevance; the speaker's next turn gets ``continuation_weight``. Shares
    from several sources add up; they are taken from the sources' own
    relevance, never from what those inherited.
    """
    out: dict[str, float] = {}
    if reply_weight <= 0 and continuation_weight <= 0:
        return out

    voices: dict[str, str | None] = {}

    def voice(block: Block) -> str | None:
        if block.id not in voices:
            voices[block.id] = voice_of(block)
        return voices[block.id]

    for source_id, score in relevance.items():
        source = block_of(source_id)
        if source is None or score <= 0:
            continue
        speaker = voice(source)
        if speaker is None:
            continue
        after = threads.following(source)
        if after and "?" in source.text and _same_thread(source, after[0], voice(after[0])):
            out[after[0].id] = out.get(after[0].id, 0.0) + reply_weight * score
        for turn in after:
            turn_voice = voice(turn)
            if turn_voice == speaker and _same_thread(source, turn, turn_voice):
                out[turn.id] = out.get(turn.id, 0.0) + continuation_weight * score
                break
    return out


def _same_thread(source: Block, turn: Block, turn_voice: str | None) -> bool:
    if turn_voice is None:
        return False
    delta = turn.created - source.created
    return -_CLOCK_SKEW <= delta <= _THREAD_GAP
