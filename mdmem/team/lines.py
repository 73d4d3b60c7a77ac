"""The team tier's line format: a memory line with its provenance, nothing personal.

A team line is an ordinary mdmem list item (:mod:`mdmem.files.blocks`)::

    - The payments service needs PAYMENTS_SANDBOX=1 in tests. #payments [kind:: gotcha]
      [captured_by:: orc-1 (agent)] [captured:: 2026-11-20] [proposed_by:: Ada]
      [proposed:: 2026-11-28] [accepted_by:: Bob] [accepted:: 2026-11-29] ^m-01jd3k5x7q

(one line in the file). A proposal carries ``[status:: proposed]``;
accepting it removes that field and adds ``accepted_by``/``accepted``, so
``git blame`` names the person who accepted it on that line. Fields that tie
a memory to a person — a person's or contact's scope, ``contact``,
``speaker``, ``session``, ``role`` — never appear here (:func:`personal_reason`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from mdmem.files import blocks as blk
from mdmem.models import Block, one_line

__all__ = [
    "PERSONAL_FIELDS",
    "PERSONAL_SCOPES",
    "PROPOSED",
    "TEAM_FIELDS",
    "TeamLine",
    "clean_name",
    "file_for_kind",
    "personal_reason",
    "team_line",
    "today",
]

PROPOSED = "proposed"
#: Fields a team line may carry, in the order they are written.
TEAM_FIELDS = (
    "kind",
    "captured_by",
    "captured",
    "proposed_by",
    "proposed",
    "note",
    "status",
    "accepted_by",
    "accepted",
)
#: Fields that tie a memory to a person or a conversation.
PERSONAL_FIELDS = frozenset({"contact", "speaker", "session", "role", "scope", "episode"})
#: Scope kinds that belong to a person (``user:ada``) or a contact.
PERSONAL_SCOPES = ("user:", "person:", "contact:")
_NAME_BAD = re.compile(r"[\[\]()^#`|\\\r\n\t]+")
_KIND_FILES = {"decision": "decisions.md", "gotcha": "gotchas.md", "bug_fix": "gotchas.md"}


@dataclass(frozen=True)
class TeamLine:
    """One memory of the team tier, as its line says."""

    id: str
    path: str  # repository-relative
    line: int  # 1-based, first line of the item
    line_end: int
    text: str
    kind: str
    tags: tuple[str, ...]
    status: str  # "proposed" | "accepted"
    captured_by: str
    captured: str
    proposed_by: str
    proposed: str
    accepted_by: str
    accepted: str
    note: str
    fields: tuple[tuple[str, str], ...]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def created(self) -> datetime:
        """When it was accepted (else proposed, else captured): the age a prompt shows."""
        for value in (self.accepted, self.proposed, self.captured):
            when = blk.parse_datetime(value) if value else None
            if when is not None:
                return when
        return datetime.now(UTC)

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)


def team_line(block: Block) -> TeamLine:
    """The :class:`TeamLine` of a parsed block of a team file."""
    f = dict(block.fields)
    status = PROPOSED if f.get("status", "").strip().lower() == PROPOSED else "accepted"
    return TeamLine(
        id=block.id,
        path=block.path,
        line=block.line_start,
        line_end=block.line_end,
        text=block.text,
        kind=block.kind,
        tags=block.tags,
        status=status,
        captured_by=f.get("captured_by", ""),
        captured=f.get("captured", ""),
        proposed_by=f.get("proposed_by", ""),
        proposed=f.get("proposed", ""),
        accepted_by=f.get("accepted_by", ""),
        accepted=f.get("accepted", ""),
        note=f.get("note", ""),
        fields=block.fields,
    )


def personal_reason(scope: str, fields: tuple[tuple[str, str], ...]) -> str | None:
    """Why a memory is personal (a person's or contact's scope, a personal field), or None."""
    if scope.startswith(PERSONAL_SCOPES):
        return f"it is in the personal scope {scope}"
    for key, _value in fields:
        if key in PERSONAL_FIELDS and key != "scope":
            return f"it carries the personal field [{key}::]"
        if key == "scope" and _value.strip().startswith(PERSONAL_SCOPES):
            return f"it is in the personal scope {_value.strip()}"
    return None


def clean_name(name: str) -> str:
    """A person's or agent's name as a field value: one line, no markdown structure."""
    return one_line(_NAME_BAD.sub(" ", name)).strip()[:80] or "unknown"


def today(now: datetime | None = None) -> str:
    return f"{(now or datetime.now(UTC)):%Y-%m-%d}"


def file_for_kind(kind: str) -> str:
    """The team file a memory of ``kind`` goes to by default."""
    return _KIND_FILES.get(kind, "conventions.md")
