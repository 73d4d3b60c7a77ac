"""What an import did, for the person and for scripts: counts, refusals, notes.

Shared by the plain import (:mod:`mdmem.memory.library.importer`) and the
lossless restore (:mod:`mdmem.memory.library.restore`), which fills the same
report; neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from mdmem.models import one_line

__all__ = ["ImportReport"]

_MAX_REFUSALS = 200  # reasons listed in the report; the count is always exact


@dataclass
class ImportReport:
    format: str
    path: str
    scope: str
    conversations: int = 0
    messages: int = 0  # messages (or memories, or notes, or files) read from the input
    added: int = 0
    duplicates: int = 0  # already in the vault (same source and message id, or same text)
    refused: int = 0
    refusals: list[dict[str, str]] = field(default_factory=list)  # where, reason
    sessions: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # notes copied, files restored
    commits: int = 0
    first: str | None = None  # the earliest original time imported
    last: str | None = None
    # What the file said that an import does not take from a file (key -> rows).
    ignored: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # one line each, for the person
    restored: bool = False  # an export restored with --restore (provenance kept)
    source_vault: str | None = None  # ...and the vault it was exported from
    # ...and the export's mdmem.toml keys this vault sets otherwise (not carried).
    settings_left_behind: list[str] = field(default_factory=list)

    def refuse(self, where: str, reason: str) -> None:
        self.refused += 1
        if len(self.refusals) < _MAX_REFUSALS:
            self.refusals.append({"where": where, "reason": one_line(reason)})

    def ignore(self, key: str) -> None:
        self.ignored[key] = self.ignored.get(key, 0) + 1

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def saw(self, when: datetime | None) -> None:
        if when is None:
            return
        stamp = when.isoformat(timespec="seconds")
        self.first = min(self.first or stamp, stamp)
        self.last = max(self.last or stamp, stamp)
