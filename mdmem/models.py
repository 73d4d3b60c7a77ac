"""Result and record types shared across mdmem: small frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

__all__ = [
    "FACT_KINDS",
    "KINDS",
    "KIND_LABELS",
    "STATUSES",
    "Block",
    "Hit",
    "Memory",
    "Recall",
    "first_line",
    "one_line",
    "to_jsonable",
]

# Memory kinds from the seeds (docs/file-format.md#kinds). "note" is the kind of any markdown a
# human wrote without a block id; "section" blocks of such files get it too.
KINDS: tuple[str, ...] = (
    "fact",
    "preference",
    "learning",
    "world",
    "journal",
    "log",
    "episode",
    "decision",
    "gotcha",
    "bug_fix",
    "discovery",
    "trade_off",
    "session_summary",
    "chat_message",
    "tool_output",
    "document_chunk",  # a heading section of an ingested document (documents/)
    "note",
)
# The word a memory line starts with when its kind is not its file's own
# (``- Decision: Deploys go out on Tuesdays. ^m-…``): what a person would write,
# and what a person may type to set a line's kind. Kinds that have a file or
# folder of their own (logs, episodes, chat turns, documents, notes) have none.
KIND_LABELS: dict[str, str] = {
    "fact": "Fact",
    "preference": "Preference",
    "learning": "Learning",
    "world": "World",
    "decision": "Decision",
    "gotcha": "Gotcha",
    "bug_fix": "Bug fix",
    "discovery": "Discovery",
    "trade_off": "Trade-off",
    "session_summary": "Session summary",
}
# "archived" (OAK) hides a memory from recall and lists without retiring it:
# unarchive makes it active again; retention never redacts it.
STATUSES: tuple[str, ...] = ("active", "resolved", "superseded", "archived")
# Durable knowledge (as opposed to logs, entries and episodes): what consolidation
# and the compaction flush may extract, and what a review counts as facts.
FACT_KINDS: frozenset[str] = frozenset(
    {"fact", "preference", "decision", "learning", "world", "gotcha", "discovery"}
)


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters with "…"."""
    flat = " ".join(str(text).split())
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + "…"


@dataclass(frozen=True)
class Block:
    """One addressable unit of a vault file, as parsed from the markdown.

    ``id`` is the Obsidian block id without the caret (``m-…``) for memory
    blocks, or ``path#heading`` for heading sections without an id, or
    ``path#frontmatter`` for the frontmatter. Lines are 1-based, inclusive,
    counted in the file as it is on disk (frontmatter included).
    """

    id: str
    path: str  # vault-relative, posix separators
    line_start: int
    line_end: int
    heading: str  # nearest enclosing heading text ("" at top of file)
    text: str  # clean text: no bullet, no block id, no inline fields
    kind: str
    tags: tuple[str, ...]
    scope: str  # "" for the vault root, else e.g. "project:marketing"
    status: str
    created: datetime  # timezone-aware UTC
    updated: datetime | None
    content_hash: str  # sha256 of the normalised text: dedupe and embedding-cache key
    fields: tuple[tuple[str, str], ...] = ()  # Dataview inline fields, in order
    is_memory: bool = True  # False for heading sections and frontmatter

    def field(self, name: str) -> str | None:
        for key, value in self.fields:
            if key == name:
                return value
        return None


@dataclass(frozen=True)
class Memory:
    """What a write returns: where the memory now lives."""

    id: str
    path: str
    line: int
    line_end: int
    text: str
    kind: str
    tags: tuple[str, ...]
    scope: str
    status: str
    created: datetime
    was_new: bool = True
    superseded: tuple[str, ...] = ()  # ids this write retired
    commit: str | None = None
    # The entry's inline fields as written (role, speaker, contact, ...): the
    # caller's metadata, so a host can read back what it recorded.
    fields: tuple[tuple[str, str], ...] = ()

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)

    @classmethod
    def from_block(
        cls,
        block: Block,
        *,
        was_new: bool = True,
        superseded: tuple[str, ...] = (),
        commit: str | None = None,
    ) -> Memory:
        return cls(
            id=block.id,
            path=block.path,
            line=block.line_start,
            line_end=block.line_end,
            text=block.text,
            kind=block.kind,
            tags=block.tags,
            scope=block.scope,
            status=block.status,
            created=block.created,
            was_new=was_new,
            superseded=superseded,
            commit=commit,
            fields=block.fields,
        )


@dataclass(frozen=True)
class Hit:
    """One recalled memory with its citation and the signals that ranked it."""

    id: str
    path: str
    line_start: int
    line_end: int
    heading: str
    text: str
    kind: str
    tags: tuple[str, ...]
    status: str
    created: datetime
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    scope: str = ""
    commit: str | None = None  # set by time-travel recall (as_of)
    # Inline fields of the block (speaker, contact, role, ...), for hosts that
    # show who said a recalled chat turn.
    fields: tuple[tuple[str, str], ...] = ()
    # The same piece of knowledge elsewhere (mdmem.recall.families): what this
    # hit was made from, and the copies consolidation made of it.
    sources: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)
    # What ``text`` holds: 2 the full text, 1 an overview, 0 a one-line abstract
    # (recall's ``tier``; the id opens the full text).
    tier: int = 2

    @property
    def citation(self) -> str:
        anchor = f"^{self.id}" if self.id.startswith("m-") else self.heading
        return f"{self.path}#{anchor}" if anchor else self.path


@dataclass(frozen=True)
class Relevance:
    """The relevance gate's verdict on one recall (mdmem.recall.gate)."""

    confidence: float  # the gate's probability that some hit is relevant
    keep: int  # how many leading items are worth putting in front of a model (0: none)
    features: dict[str, float] = field(default_factory=dict)
    # Of the kept items, the leading ones holding an identifier the query names:
    # kept by rule whatever the gate's confidence (mdmem.recall.identifiers).
    named: int = 0


@dataclass(frozen=True)
class Recall:
    """The answer to a recall: ranked hits plus how they were produced."""

    query: str
    items: list[Hit]
    degraded: bool = False  # a part was missing (vectors, keyword index, unindexed files)
    reranked: bool = False
    took_ms: float = 0.0
    # Why the recall was degraded, one clause per missing part (None when it was not).
    degraded_reason: str | None = None
    # The gate found nothing in the vault relevant to the query: ``items`` are
    # the closest matches only, and hooks and prompt_context inject none of them.
    nothing_relevant: bool = False
    relevance: Relevance | None = None  # the gate's verdict (None: the gate did not run)

    @property
    def relevant_items(self) -> list[Hit]:
        """The leading items the gate says are worth reading: none when nothing is relevant."""
        if self.nothing_relevant:
            return []
        if self.relevance is None:
            return list(self.items)
        return list(self.items[: self.relevance.keep])

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, datetimes and tuples to plain JSON types (the --json shape)."""
    if hasattr(value, "__dataclass_fields__"):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, Hit):
            out["citation"] = value.citation
        return out
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def first_line(text: str, limit: int | None = None) -> str:
    """The first non-blank line of ``text``, stripped ("" if none); cut to ``limit`` characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if limit is None else line[:limit]
    return ""
