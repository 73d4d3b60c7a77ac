"""Derived copies written again from what is left of their sources.

When purge removes a memory (or retention takes a retired one's text), the
copies made from it (:mod:`mdmem.store.derived` finds them by their links)
that have other sources are not marked up sentence by sentence: they are
made again, by the same extractive code that makes them offline, from the
sources that remain. What the lost source contributed is then nowhere,
however a model had worded it:

* an **episode**: the extractive draft of its remaining entries (and the
  open items of the earlier episode it was given), with its title,
  ``abstract`` and ``overview``, its ``pending`` list and ``entries``
  count; ``model: extractive``, ``extractive: true`` and ``regenerated:
  <time>`` say so (confidence and tone, a model's, go). Its facts and source
  links stay, less those removed. Its file is renamed when its name came
  from the old title (history and links follow);
* a **session summary**: the extractive summary of the turns left in its
  span, ``[summarizer:: extractive]``, its ``turns`` count;
* a **daily-log line**: the consolidation line of its regenerated episode.

Regeneration needs no model and gives the same text in every version of a
file, which is what a history rewrite needs. With no source left to draw
from (retention), a copy reads the mark (``[REDACTED]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from mdmem.memory.capture.sessions import summary_text
from mdmem.memory.consolidation import consolidate
from mdmem.memory.consolidation.episode_text import episode_name, episode_text, log_text
from mdmem.models import Block
from mdmem.store.derived import (
    Affected,
    NoteText,
    Provenance,
    Rewrite,
    front_ids,
    link_ids,
)

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["Regenerator", "regenerate"]

_DAY = 10  # "YYYY-MM-DD" at the start of an episode's file name
_DATED = re.compile(r"\d{4}-\d\d-\d\d-")


class Regenerator:
    """``store.regenerate`` (purge's hook): :func:`regenerate` for one store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def __call__(self, graph: Provenance, affected: Affected, mark: str) -> Rewrite:
        return regenerate(self.store, graph, affected, mark)


@dataclass
class _Episode:
    """A regenerated episode, for its daily-log line."""

    path: str
    entries: int
    contact: str
    summary: str


@dataclass
class _Work:
    store: MemoryStore
    graph: Provenance
    affected: Affected
    mark: str
    rename: bool
    now: str
    texts: dict[str, str] = field(default_factory=dict)
    fields: dict[str, dict[str, str | None]] = field(default_factory=dict)
    notes: dict[str, NoteText] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)
    episodes: dict[str, _Episode] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    @property
    def gone(self) -> frozenset[str]:
        return self.affected.removed

    def alive(self, ids: tuple[str, ...]) -> list[Block]:
        """The blocks of ``ids`` still in the vault and not gone, oldest first."""
        found = [self.store.catalog.block(i) for i in ids if i not in self.gone]
        return sorted((b for b in found if b is not None), key=lambda b: (b.created, b.id))


def regenerate(
    store: MemoryStore, graph: Provenance, affected: Affected, mark: str, *, rename: bool = True
) -> Rewrite:
    """The edits that write ``affected.regenerated`` again without ``affected.removed``.

    ``rename``: a note whose file name came from its old title moves to one
    from its new title (purge: every commit changes anyway); retention, which
    edits today's files only, keeps the name.
    """
    work = _Work(
        store,
        graph,
        affected,
        mark,
        rename,
        datetime.now(UTC).isoformat(timespec="seconds"),
    )
    order = sorted(affected.regenerated)  # ids sort by creation: an episode before its log line
    for piece in order:
        rule = graph.pieces[piece].rule
        if rule == "episode":
            _episode(work, piece)
        elif rule == "summary":
            _summary(work, piece)
    for piece in order:
        if graph.pieces[piece].rule == "log":
            _log(work, piece)
    return Rewrite(
        mark=mark,
        removed=affected.removed,
        texts=work.texts,
        fields=work.fields,
        notes=work.notes,
        dropped=affected.dropped_notes,
        renames=work.renames,
    )


def _front(store: MemoryStore, memory_id: str) -> dict[str, Any]:
    path = store.catalog.path_of(memory_id)
    state = store.catalog.files.get(path) if path is not None else None
    return dict(state.parsed.frontmatter) if state is not None else {}


def _episode(work: _Work, episode_id: str) -> None:
    store, d = work.store, work.graph.pieces[episode_id]
    block = store.catalog.block(episode_id)
    meta = _front(store, episode_id)
    entries = work.alive(d.named)
    contact = str(meta.get("contact") or "")
    scope = block.scope if block is not None else ""
    path = store.catalog.path_of(episode_id) or next(iter(sorted(work.graph.notes[episode_id])))
    name = PurePosixPath(path).name
    first = entries[0].created.date().isoformat() if entries else ""
    day = name[:_DAY] if _DATED.match(name) else first
    items = _given_items(work, d.given)
    group = consolidate.Group(scope, contact, day, entries)
    draft = consolidate.draft_extractive(group, items) if entries else None
    summary = draft.summary if draft is not None and draft.summary else work.mark
    facts = [b.text for b in work.alive(tuple(front_ids(meta, "facts")))]
    text = episode_text(summary, entries, facts)
    title = text.title if entries else work.mark
    front: dict[str, Any] = {
        "title": title,
        "abstract": text.abstract if entries else work.mark,
        "overview": text.overview or None,
        "entries": len(entries),
        "model": "extractive",
        "extractive": True,
        "confidence": None,
        "tone": None,
        "pending": list(items),
        "regenerated": work.now,
    }
    work.texts[episode_id] = summary
    work.notes[episode_id] = NoteText(title=title, pending=tuple(items), front=front)
    new_path = _renamed(work, path, day, title) if entries else path
    if new_path != path:
        for old in sorted(work.graph.notes.get(episode_id, {path})):
            if PurePosixPath(old).name == PurePosixPath(path).name:
                work.renames[old] = str(PurePosixPath(old).parent / PurePosixPath(new_path).name)
    work.episodes[episode_id] = _Episode(new_path, len(entries), contact, summary)


def _given_items(work: _Work, given: tuple[str, ...]) -> list[str]:
    """The open items of the latest earlier episode a draft was given (as it reads now)."""
    for memory_id in sorted(given, reverse=True):
        if memory_id in work.gone:
            continue
        regenerated = work.notes.get(memory_id)
        if regenerated is not None:
            return list(regenerated.pending)
        piece = work.graph.pieces.get(memory_id)
        if piece is not None and piece.rule == "episode":
            items = _front(work.store, memory_id).get("pending") or []
            return [str(i) for i in items if str(i).strip()] if isinstance(items, list) else []
    return []


def _renamed(work: _Work, path: str, day: str, title: str) -> str:
    """The note's path for its new title (unless the old one was not made from a title)."""
    if not work.rename or not _DATED.match(PurePosixPath(path).name):
        return path  # a name a person gave it
    folder = PurePosixPath(path).parent
    if not work.taken:
        work.taken = _every_path(work.store)
    for n in range(1, 1000):
        candidate = str(folder / episode_name(day, title, n))
        if candidate == path:
            return path
        if candidate not in work.taken:
            work.taken.add(candidate)
            return candidate
    return path


def _every_path(store: MemoryStore) -> set[str]:
    """Every path any commit on any ref has held, and today's files."""
    listing = store.git.run("log", "--all", "--format=", "--name-only", "-z", strip=False)
    paths = {p.strip("\n") for p in listing.split("\0") if p.strip("\n")}
    return paths | set(store.catalog.files)


def _summary(work: _Work, summary_id: str) -> None:
    store, d = work.store, work.graph.pieces[summary_id]
    block = store.catalog.block(summary_id)
    if block is None or d.span is None:
        work.texts[summary_id] = work.mark
        return
    path, first, last = d.span
    turns = [
        b
        for b in store.catalog.blocks_in(path)
        if b.is_memory and first <= b.id <= last and b.id not in work.gone
    ]
    session = block.field("session") or PurePosixPath(path).stem
    body = "" if turns else work.mark
    work.texts[summary_id] = summary_text(session, turns, body)
    work.fields[summary_id] = {
        "turns": str(len(turns)),
        "summarizer": "extractive",
        "regenerated": work.now[:_DAY],
    }


def _log(work: _Work, log_id: str) -> None:
    store, d = work.store, work.graph.pieces[log_id]
    episode_id = d.named[0] if d.named else ""
    episode = work.episodes.get(episode_id)
    if episode is None:
        # The episode itself is gone (retention: its own text redacted).
        meta = _front(store, episode_id)
        path = store.catalog.path_of(episode_id) or ""
        entries = meta.get("entries")
        episode = _Episode(
            path,
            entries if isinstance(entries, int) else 0,
            str(meta.get("contact") or ""),
            work.mark,
        )
        model = str(meta.get("model") or "extractive")
    else:
        model = "extractive"
    work.texts[log_id] = log_text(
        episode.entries, episode.contact, episode.path, episode_id, model, episode.summary
    )
    work.fields[log_id] = {"sources": link_ids([episode_id])}
