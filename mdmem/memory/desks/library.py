"""``vault.library``: what goes into the vault in bulk, what comes out, and browsing.

Documents (markdown, text, HTML, PDF) ingested as chunks, chat exports and
JSONL imported as sessions and memories, the JSONL export, and the two
browsing verbs a person uses without an editor: ``list`` (filters over every
memory, newest first) and ``show`` (one memory with its history and authors).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mdmem.index.progress import Progress
from mdmem.memory.library import documents as docs
from mdmem.memory.library import importer
from mdmem.models import Memory
from mdmem.store.vaultdir import template_dir

if TYPE_CHECKING:
    from mdmem.memory.desks.parts import MemoryParts
    from mdmem.memory.desks.sessions import Sessions
    from mdmem.memory.library.browse import Shown
    from mdmem.memory.library.documents import IngestResult
    from mdmem.memory.library.report import ImportReport

__all__ = ["Library"]

PathLike = str | os.PathLike[str]


class Library:
    """Bulk input, output and browsing of one vault (see the module docstring)."""

    def __init__(self, parts: MemoryParts, sessions: Sessions, view: Callable[[], Any]) -> None:
        self._store = parts.store
        self._sessions = sessions
        # The reading view, for everyone: what this desk hands out, it hands out
        # through the view (one rule, one redaction).
        self._view = view

    def ingest(
        self,
        paths: PathLike | Iterable[PathLike],
        *,
        scope: str | None = None,
        force: bool = False,
        on_skip: Callable[[str, str], object] | None = None,
    ) -> list[IngestResult]:
        """Copy/convert markdown, text, HTML or PDF files (or folders of them) into
        ``documents/`` as chunks, one commit per file; symlinks, hidden entries, FIFOs
        and vaults inside folders are skipped, and a file that can't be ingested has
        its ``error`` while the rest go in. Re-ingesting an unchanged file does nothing."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        return docs.ingest_many(
            self._store, [Path(p) for p in paths], scope=scope, force=force, on_skip=on_skip
        )

    def import_(
        self,
        path: PathLike,
        *,
        format: str | None = None,
        scope: str | None = None,
        secrets: str | None = None,
        progress: Progress | None = None,
        restore: bool = False,
    ) -> ImportReport:
        """Import a ChatGPT/Claude export, a JSONL of messages or markdown notes (idempotent).

        A file is untrusted: it can't choose its scope or set provenance.
        ``restore=True``: ``path`` is an :meth:`export` the caller made and
        vouches for; it comes back whole, provenance and links included.
        """

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
            restore=restore,
            template=template_dir(),
        )

    def export(self, out: IO[str], *, progress: Progress | None = None) -> int:
        """Write the vault's knowledge to ``out`` (memories with their metadata, then its
        files), one JSON object a line; ``import_(path, restore=True)`` brings it back.
        Through the reading view (``vault.reading(reader).export`` for one reader's)."""
        count: int = self._view().export(out, progress=progress)
        return count

    def list(self, **filters: Any) -> list[Memory]:
        """Memories matching every filter given (any status but archived unless
        ``statuses``), newest first: ``kinds`` (``-kind`` leaves one out), ``scopes``
        ("" is the vault root), ``statuses``, ``tags`` (a tag matches its children),
        ``since``/``until``, ``author`` (a git author name or email of any of the
        memory's lines), ``limit``, ``oldest_first``, ``paths`` (only these files;
        ``notes``: with a person's own sections that carry no id), ``contact`` (only
        what belongs to that contact). The same filter as recall's; through the
        reading view (``vault.reading(reader).list`` for one reader's)."""
        found: list[Memory] = self._view().list(**filters)
        return found

    def file_text(self, path: str) -> str:
        """A vault file's markdown ("" for a file not written yet), a secret a person
        typed redacted; ``vault.reading(reader).file_text`` for one reader's."""
        text: str = self._view().file_text(path)
        return text

    def show(self, memory_id: str) -> Shown:
        """One memory's text, metadata, git history and line authors together."""
        shown: Shown = self._view().show(memory_id)
        return shown
