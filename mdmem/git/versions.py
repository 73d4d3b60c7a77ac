"""Every version of one memory, read from git history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mdmem.errors import MemoryNotFoundError
from mdmem.files.ids import normalize_id
from mdmem.git.journal import Journal
from mdmem.git.revisions import parsed_at
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["Version", "versions"]


@dataclass(frozen=True)
class Version:
    """One version of a memory in git history."""

    commit: str
    author: str
    email: str
    date: str
    subject: str
    path: str | None  # None: the memory did not exist in this commit (forgotten)
    text: str | None
    status: str | None
    is_agent: bool


def versions(store: MemoryStore, memory_id: str) -> list[Version]:
    """Every version of one memory in git, oldest first, following moves."""
    memory_id = normalize_id(memory_id)
    # The commits whose diff adds or removes the id's line, from the history
    # journal (one read of git history, then only the commits made since).
    touched = Journal(store.state_dir).commits_touching(store, memory_id)
    if not touched:
        if store.catalog.has_id(memory_id):
            return []
        raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
    where = dict(touched)
    out: list[Version] = []
    for info in store.git.log("--no-walk=unsorted", *where):
        path = where.get(info.sha)
        found: Block | None = None
        if path is not None:
            parsed = parsed_at(store, info.sha, path)
            found = parsed.by_id(memory_id) if parsed is not None else None
        version = Version(
            commit=info.sha,
            author=info.author,
            email=info.email,
            date=info.date,
            subject=info.subject,
            path=found.path if found else None,
            text=found.text if found else None,
            status=found.status if found else None,
            is_agent=info.is_agent,
        )
        if out and (out[-1].path, out[-1].text, out[-1].status) == (
            version.path,
            version.text,
            version.status,
        ):
            continue
        if not out and found is None:
            continue
        out.append(version)
    return out
