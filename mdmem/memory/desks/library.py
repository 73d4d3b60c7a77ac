"""``vault.library``: what goes into the vault in bulk, what comes out, and browsing.

Documents (markdown, text, HTML, PDF) ingested as chunks, chat exports and
JSONL imported as sessions and memories, the JSONL export, and the two
browsing verbs a person uses without an editor: ``list`` (filters over every
memory, newest first) and ``show`` (one memory with its history and authors).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mdmem.errors import InvalidInputError, ScopeDeniedError
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, decode, safe_path
from mdmem.index.progress import Progress
from mdmem.memory.library import browse, export, importer
from mdmem.memory.library import documents as docs
from mdmem.models import Memory
from mdmem.store.secret_guard import scrub
from mdmem.store.vaultdir import template_dir
from mdmem.store.visibility import EVERYONE, Reader

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

    def __init__(self, parts: MemoryParts, sessions: Sessions) -> None:
        self._store = parts.store
        self._sessions = sessions

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

    def export(
        self, out: IO[str], *, progress: Progress | None = None, reader: Reader = EVERYONE
    ) -> int:
        """Write the vault's knowledge to ``out`` (memories with their metadata, then its
        files), one JSON object a line; ``import_(path, restore=True)`` brings it back.
        ``reader``: only the memories it may see (and then no files)."""
        return export.export_jsonl(self._store, out, progress, reader=reader)

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
        paths: Iterable[str] | None = None,
        contact: str | None = None,
        notes: bool = False,
        reader: Reader = EVERYONE,
    ) -> list[Memory]:
        """Memories matching every filter given (any status but archived unless
        ``statuses``), newest first, at most ``limit``. ``scopes``: "" is the vault
        root. ``author``: a git author name or email of any of the memory's lines.
        ``paths``: only these vault files (``notes``: with a person's own sections
        that carry no id). ``contact``: only what belongs to that contact.
        ``reader``: only what it may see."""
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
            paths=paths,
            contact=contact,
            notes=notes,
            reader=reader,
        )

    def file_text(self, path: str, *, reader: Reader = EVERYONE) -> str:
        """A vault file's markdown as ``reader`` may see it ("" for a file not written
        yet): lines of memories it may not see are left out, and a secret a person
        typed is redacted. ScopeDeniedError for a file of a scope or contact it may
        not see."""
        store = self._store
        if not store.visibility.may_see_file(reader, path):
            raise ScopeDeniedError(f"{path} is outside the scopes this reader may access")
        try:
            tf = decode(safe_path(store.root, path).read_bytes())
        except FileNotFoundError:
            return ""
        except SkipFile as exc:
            raise InvalidInputError(f"{path} is not a markdown file mdmem reads ({exc})") from None
        hidden: set[int] = set()
        if not reader.unrestricted:
            # The blocks of the very bytes read, so no line number can drift.
            for block in blk.parse(path, tf).blocks:
                if block.is_memory and not store.visibility.may_see(reader, block):
                    hidden.update(range(block.line_start, block.line_end + 1))
        text = "".join(line for n, line in enumerate(tf.lines, 1) if n not in hidden)
        return scrub(text, store.settings.secrets)

    def show(self, memory_id: str) -> Shown:
        """One memory's text, metadata, git history and line authors together."""
        return browse.show(self._store, memory_id)
