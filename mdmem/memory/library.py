"""``vault.library``: what goes into the vault in bulk, what comes out, and browsing.

Documents (markdown, text, HTML, PDF) ingested as chunks, chat exports and
JSONL imported as sessions and memories, the JSONL export, and the two
browsing verbs a person uses without an editor: ``list`` (filters over every
memory, newest first) and ``show`` (one memory with its history and authors).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mdmem.index.progress import Progress
from mdmem.memory import browse, export, importer
from mdmem.memory import documents as docs
from mdmem.models import Memory

if TYPE_CHECKING:
    from mdmem.memory.browse import Shown
    from mdmem.memory.documents import IngestResult
    from mdmem.memory.importer import ImportReport
    from mdmem.memory.parts import MemoryParts
    from mdmem.memory.session_desk import Sessions

__all__ = ["Library"]

PathLike = str | os.PathLike[str]


class Library:
    """Bulk input, output and browsing of one vault (see the module docstring)."""

    def __init__(self, parts: MemoryParts, sessions: Sessions) -> None:
        self._store = parts.store
        self._sessions = sessions

    def ingest(
        self,
        paths: PathLike | Iterable[PathLike],
        *,
        scope: str | None = None,
        force: bool = False,
    ) -> list[IngestResult]:
        """Copy/convert markdown, text, HTML or PDF files (or folders of them) into
        ``documents/`` as chunks, one commit per file; symlinks, hidden entries and
        vaults inside folders are skipped. Re-ingesting an unchanged file does nothing."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        return docs.ingest_many(self._store, [Path(p) for p in paths], scope=scope, force=force)

    def import_(
        self,
        path: PathLike,
        *,
        format: str | None = None,
        scope: str | None = None,
        secrets: str | None = None,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import a ChatGPT/Claude export, a JSONL of messages or markdown notes (idempotent)."""

        def open_session(
            session_id: str, source: str | None, contact: str | None, scope: str | None
        ) -> importer.Session:
            # As a live session has it (a linked contact's scope and profile),
            # without consolidating halfway through the file.
            return self._sessions.open(
                session_id, source, contact, scope=scope, auto_consolidate=False
            )

        return importer.import_path(
            self._store,
            path,
            format=format,
            scope=scope,
            secrets=secrets,
            progress=progress,
            open_session=open_session,
        )

    def export(self, out: IO[str], *, progress: Progress | None = None) -> int:
        """Write every memory with its metadata to ``out``, one JSON object a line."""
        return export.export_jsonl(self._store, out, progress)

    def list(
        self,
        *,
        kinds: Iterable[str] | str | None = None,
        scopes: Iterable[str] | str | None = None,
        statuses: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        since: datetime | date | str | None = None,
        until: datetime | date | str | None = None,
        author: str | None = None,
        limit: int | None = None,
        oldest_first: bool = False,
    ) -> list[Memory]:
        """Memories matching every filter given (any status unless ``statuses``),
        newest first, at most ``limit``. ``scopes``: "" is the vault root.
        ``author``: a git author name or email of any of the memory's lines."""
        return browse.list_memories(
            self._store,
            kinds=kinds,
            scopes=scopes,
            statuses=statuses,
            tags=tags,
            since=since,
            until=until,
            author=author,
            limit=limit,
            oldest_first=oldest_first,
        )

    def show(self, memory_id: str) -> Shown:
        """One memory's text, metadata, git history and line authors together."""
        return browse.show(self._store, memory_id)
