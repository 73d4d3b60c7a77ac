"""Every version of one memory, read from git history."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mdmem.errors import MemoryNotFoundError
from mdmem.files.ids import normalize_id
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
    marker = f"^{memory_id}"
    shas: set[str] = set()
    for info in store.git.log("-G", "\\" + marker):
        shas.add(info.sha)
    for info in store.git.log("-F", f"--grep=Memory-Id: {memory_id}"):
        shas.add(info.sha)
    if not shas:
        if store.catalog.has_id(memory_id):
            return []
        raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
    out: list[Version] = []
    for info in reversed(store.git.log()):
        if info.sha not in shas:
            continue
        listing = store.git.run("grep", "-l", "-F", marker, info.sha, "--", "*.md", ok_codes=(0, 1))
        paths = [line.split(":", 1)[1] for line in listing.splitlines() if ":" in line]
        found: Block | None = None
        for path in paths:
            parsed = parsed_at(store, info.sha, path)
            found = parsed.by_id(memory_id) if parsed is not None else None
            if found is not None:
                break
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
