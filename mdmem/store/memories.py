"""The memory store: a vault's files, git, catalog, indexes and writer, and the write verbs.

:class:`MemoryStore` is what the features above the store layer
(consolidation, sessions, the git-native features, doctor) work with; the
:class:`~mdmem.vault.Vault` facade composes it with recall and those
features. Every verb here validates its input (:mod:`mdmem.store.inputs`)
and writes through the one :class:`~mdmem.store.writer.Writer`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path

from mdmem.config import Settings, state_dir_for
from mdmem.errors import HumanNoteError, InvalidInputError, MemoryNotFoundError
from mdmem.files import blocks as blk
from mdmem.files.catalog import Catalog
from mdmem.files.ids import normalize_id
from mdmem.files.render import render_entry, render_list_item, render_turn
from mdmem.files.textfile import safe_path
from mdmem.index.embedding import EmbeddingService
from mdmem.index.indexer import Indexer, IndexStats
from mdmem.models import Block, Memory, first_line
from mdmem.store.derived import Affected, Provenance, Rewrite
from mdmem.store.gitdates import GitDates
from mdmem.store.gitstore import GitStore
from mdmem.store.importance import check_importance, check_origin
from mdmem.store.inputs import (
    MASK,
    Clock,
    check_category,
    check_chars,
    check_fields,
    check_kind,
    check_tags,
    check_topic,
    clean_text,
    iso_date,
    refuse_secret_metadata,
)
from mdmem.store.secret_guard import refuse_in_metadata, scrub
from mdmem.store.visibility import Visibility
from mdmem.store.writer import Trailers, Transaction, Writer, memory_trailers

__all__ = ["AutoResolve", "MemoryStore", "memory_file"]

_ROUTES = {"preference": "USER.md", "world": "WORLD.md"}

# Retires what a new memory replaces: (memory, fresh_batch) -> the memory with
# ``superseded`` filled. Handed in by the facade (it lives in mdmem.memory).
AutoResolve = Callable[[Memory, bool], Memory]
# Writes derived copies again from what is left of their sources (purge,
# retention): (links, what is reached, mark) -> the edits. Handed in by the
# facade (mdmem.memory.consolidation.regenerate); without it the copies read the mark.
Regenerate = Callable[[Provenance, Affected, str], Rewrite]


@lru_cache(maxsize=1024)
def memory_file(scope: str, kind: str) -> str:
    """The file a ``remember`` of ``kind`` in ``scope`` goes to."""
    return str(blk.scope_dir(scope) / _ROUTES.get(kind, "MEMORY.md"))


class MemoryStore:
    """Markdown files under git, plus the derived catalog and indexes, written by one writer."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        *,
        agent: str,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.root = root
        self.settings = settings
        self.agent = agent
        self.state_dir = state_dir_for(root, settings)
        self.clock = Clock(settings.timezone)
        self.git = GitStore(root)
        self.catalog = Catalog(root, live=True)
        # A note with no date of its own is dated by git's first add of it.
        self.catalog.dating = GitDates(self.git, self.state_dir)
        # Who may see what (mdmem.store.visibility): every read path asks it.
        self.visibility = Visibility.of_catalog(self.catalog)
        # A secret typed into a note by hand is redacted in the indexes.
        self.embedding = EmbeddingService(self.state_dir, settings)
        self.indexer = Indexer(
            self.state_dir,
            settings,
            self.catalog,
            embedding=self.embedding,
            shown=lambda text: scrub(text, self.settings.secrets),
        )
        self.writer = Writer(
            root, settings, self.state_dir, self.git, self.catalog, self.indexer, self.agent
        )
        self.auto_resolve: AutoResolve | None = None
        self.regenerate: Regenerate | None = None
        self.writer.follow_head()
        self.indexer.boot(progress)

    def close(self) -> None:
        self.writer.close()
        self.indexer.close()
        self.catalog.close()

    # -- reads ---------------------------------------------------------------

    def block(self, memory_id: str) -> Block:
        """The parsed block of a memory, with its inline fields."""
        return self.writer.block(memory_id)

    def get(self, memory_id: str) -> Memory:
        """A memory by id, or a section of a person's note by the ``path.md#Heading``
        id recall gives it (such a section has no ``m-…`` id of its own)."""
        note = self.note_block(memory_id)
        if note is not None:
            return Memory.from_block(note, was_new=False)
        return Memory.from_block(self.writer.sole_block(memory_id), was_new=False)

    def note_block(self, block_id: str) -> Block | None:
        """The section block ``block_id`` names when it is a note id
        (``path.md#Heading``, ``path.md#top``, ``path.md#frontmatter``); None
        when it is a memory id. MemoryNotFoundError when the note has no such section."""
        if not isinstance(block_id, str) or "#" not in block_id:
            return None
        rel, _, anchor = block_id.strip().partition("#")
        if anchor.startswith("^") or not rel.endswith(".md"):
            return None  # a citation of a memory (path#^m-…): normalize_id takes it
        safe_path(self.root, rel)  # PathOutsideVaultError for ../ or a symlink out
        with self.writer.mutex:
            self.writer.refresh_file(rel)
            block = self.catalog.block(block_id.strip())
        if block is None or block.is_memory:
            raise MemoryNotFoundError(f"no note section {block_id.strip()}")
        return block

    def refresh(self) -> list[str]:
        """Notice files changed on disk and index them; returns the changed paths."""
        return self.writer.refresh()

    def memories(self, *, include_inactive: bool = True) -> list[Memory]:
        self.refresh()
        # A listing must hold every memory in the files, whatever the manifest said.
        self.writer.verify_manifest()
        return [
            Memory.from_block(b, was_new=False)
            for b in self.catalog.blocks(memories_only=True)
            if include_inactive or b.status == "active"
        ]

    def reindex(
        self, full: bool = False, *, progress: Callable[[str, int, int], None] | None = None
    ) -> IndexStats:
        """Bring the indexes up to date (incremental), or rebuild both from scratch."""
        with self.writer.mutex:
            if full:
                self.indexer.rebuild(progress)
            else:
                self.refresh()
                self.indexer.catch_up()
                self.indexer.fill_missing_vectors(limit=None)
                self.indexer.checkpoint(force=True)
            return self.indexer.stats()

    # -- writes --------------------------------------------------------------

    @contextmanager
    def batch(self, subject: str | None = "batch import") -> Iterator[Transaction]:
        """Group many writes into one commit (see :meth:`Writer.batch`)."""
        if subject:
            check_chars(subject, "the batch subject")
            refuse_in_metadata(subject, "the batch subject (it goes into the commit message)")
        with self.writer.batch(subject) as tx:
            yield tx

    def clean_text(self, text: object, secrets: str | None = None) -> str:
        """Memory text as it will be stored (stripped, checked, secrets guarded)."""
        return clean_text(text, secrets or self.settings.secrets)

    def remember(
        self,
        text: str,
        kind: str = "fact",
        tags: Iterable[str] = (),
        scope: str | None = None,
        *,
        created: datetime | date | str | None = None,
        fields: Iterable[tuple[str, str]] = (),
        secrets: str | None = None,
        importance: int | None = None,
        origin: str | None = None,
        owner: bool = True,
    ) -> Memory:
        """Store one memory; the same normalised text in the same scope is stored once.

        ``owner=False``: the memory is about someone other than the vault's
        user (a contact's preference, say): it goes to MEMORY.md, never USER.md.

        ``importance`` (1-10) and ``origin`` (planning, investigation,
        implementation, mixed: OAK's session origin type) become
        ``[importance:: N]`` and ``[origin_type:: …]``;
        a planning or investigation origin caps importance at 5 (see
        :mod:`mdmem.store.importance`).
        """
        kind = check_kind(kind)
        scope = blk.validate_scope(scope)
        tag_list = check_tags(tags)
        body = self.clean_text(text, secrets)
        # A learning without a topic goes to MEMORY.md like any other fact.
        rel = memory_file(scope, kind if owner else "fact")
        extra = check_fields(fields)
        if any(key in ("importance", "origin_type") for key, _ in extra):
            # Through fields they would skip the 1-10 check and the origin cap.
            raise InvalidInputError("set importance and origin with importance= and origin=")
        if any(key == "pinned" for key, _ in extra):
            raise InvalidInputError("a pin is a tag the caller gives (pinned), not a field")
        if "pinned" in tag_list:
            # The caller's own pin; a #pinned in the text is a tag only (mdmem.recall.pins).
            extra.append(("pinned", "caller"))
        origin = check_origin(origin)
        level = check_importance(importance, origin)
        if created is not None:
            extra.append(("created", iso_date(created)))
        if level is not None:
            extra.append(("importance", str(level)))
        if origin is not None:
            extra.append(("origin_type", origin))
        # Auto-resolve retires what the new memory replaces in the same commit.
        outer = self.writer.current
        with self.writer.batch(subject=None) as tx:
            fresh_batch = tx.ops == 0
            memory = self._store_item(
                tx, rel, body, tag_list, extra, scope=scope, kind=kind, op="remember"
            )
            if outer is not None and outer.defers_resolve:
                if memory.was_new and self.embedding.embedder is not None:
                    if not outer.to_resolve():
                        # Load the vector index now: loading it at the end would
                        # reconcile the batch's own memories into it, and they
                        # would crowd out the candidates auto-resolve looks for.
                        self.indexer.vectors  # noqa: B018
                    outer.resolve_later(memory.id)
                return memory
            if self.auto_resolve is None:
                return memory
            return self.auto_resolve(memory, fresh_batch)

    def log(
        self,
        text: str,
        category: str = "Note",
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        when: datetime | None = None,
        secrets: str | None = None,
        fields: Iterable[tuple[str, str]] = (),
    ) -> Memory:
        """Append an entry ``## HH:MM · Category`` to today's daily log."""
        scope = blk.validate_scope(scope)
        category = check_category(category)
        body = self.clean_text(text, secrets)
        moment = self.clock.local(when)
        rel = str(blk.scope_dir(scope) / "daily" / f"{moment:%Y-%m-%d}.md")
        return self._store_entry(
            rel,
            f"{moment:%H:%M} · {category}",
            body,
            check_tags(tags),
            scope=scope,
            kind="log",
            op="log",
            title=f"# Daily log {moment:%Y-%m-%d}",
            fields=check_fields(fields),
        )

    def journal(
        self,
        text: str,
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        when: datetime | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Add a dated self-reflection to JOURNAL.md."""
        scope = blk.validate_scope(scope)
        body = self.clean_text(text, secrets)
        moment = self.clock.local(when)
        return self._store_entry(
            str(blk.scope_dir(scope) / "JOURNAL.md"),
            f"{moment:%Y-%m-%d %H:%M}",
            body,
            check_tags(tags),
            scope=scope,
            kind="journal",
            op="journal",
            title="# Journal",
        )

    def learn(
        self,
        topic: str,
        text: str,
        *,
        scope: str | None = None,
        tags: Iterable[str] = (),
        secrets: str | None = None,
        fields: Iterable[tuple[str, str]] = (),
    ) -> Memory:
        """Add an insight under ``## Topic: <topic>`` in LEARNING.md (section made if missing)."""
        scope = blk.validate_scope(scope)
        topic = check_topic(topic)
        body = self.clean_text(text, secrets)
        rel = str(blk.scope_dir(scope) / "LEARNING.md")
        with self.writer.batch(subject=None) as tx:
            return self._store_item(
                tx,
                rel,
                body,
                check_tags(tags),
                check_fields(fields),
                scope=scope,
                kind="learning",
                op="learn",
                topic=topic,
            )

    def append_entry(
        self,
        rel: str,
        heading: str,
        body: str,
        *,
        fields: list[tuple[str, str]],
        scope: str,
        kind: str,
        header: list[str],
        subject: str,
        trailers: Trailers,
        tags: Iterable[str] = (),
        op: str = "record",
        turn: tuple[str, datetime] | None = None,
    ) -> str:
        """Append a ``## heading`` entry, its fields kept beside it (``header``
        starts a new file); ``turn``: (who, when) of a session turn, written as a
        transcript line under its day (:func:`mdmem.files.render.render_turn`).

        ``body`` must already be clean (:meth:`clean_text`); returns the new id.
        """
        kept = _kept(kind, tags, fields)
        day: str | None = None
        if turn is not None:
            moment = self.clock.local(turn[1])
            day, clock = f"{moment:%Y-%m-%d}", f"{moment:%H:%M}"

            def render(text: str, memory_id: str) -> list[str]:
                return render_turn(turn[0], clock, text, memory_id, tags=tags)
        else:

            def render(text: str, memory_id: str) -> list[str]:
                return render_entry(heading, text, memory_id, tags=tags)

        around = [*header, *([f"## {day}"] if day else [])]
        refuse_secret_metadata(rel, [*render(MASK, "m-0"), *_shown(kept)], around)
        with self.writer.batch(subject=None) as tx:
            memory_id = self.writer.new_id()
            tx.add_entry(
                rel,
                render(body, memory_id),
                memory_id,
                header=header,
                subject=subject,
                trailers=memory_trailers(memory_id, kind, scope, op) + trailers,
                fields=_beside(rel, kept),
                day=day,
            )
        return memory_id

    def forget(self, memory_id: str, *, reason: str | None = None) -> Memory:
        """Remove a memory's block from its file; git history keeps it.

        A section of a person's note (``path.md#Heading``) is refused with
        HumanNoteError: mdmem never deletes what a person wrote; they edit it.
        """
        note = self.note_block(memory_id)
        if note is not None:
            raise HumanNoteError(
                f"{note.id} is a note a person wrote; mdmem does not delete human notes: "
                f"edit {note.path} (line {note.line_start}) instead"
            )
        memory_id = normalize_id(memory_id)
        if reason:
            check_chars(reason, "the reason")
            refuse_in_metadata(reason, "the reason (it goes into the commit message)")
        with self.writer.batch(subject=None) as tx:
            block = self.writer.sole_block(memory_id)
            tx.remove_block(
                memory_id,
                subject=f"forget {block.kind}: {first_line(block.text)}",
                trailers=memory_trailers(block.id, block.kind, block.scope, "forget")
                + ([("Reason", reason)] if reason else []),
            )
        return Memory.from_block(block, was_new=False)

    def supersede(
        self,
        memory_id: str,
        text: str,
        *,
        kind: str | None = None,
        tags: Iterable[str] | None = None,
        secrets: str | None = None,
    ) -> Memory:
        """Store ``text`` as the successor of ``memory_id`` and retire the old memory."""
        memory_id = normalize_id(memory_id)
        with self.writer.batch(subject=None) as tx:
            old = self.writer.sole_block(memory_id)
            new = self.remember(
                text,
                kind=kind or old.kind,
                tags=old.tags if tags is None else tags,
                scope=old.scope,
                secrets=secrets,
            )
            if new.id == old.id:
                return new
            tx.set_fields(
                old.id,
                {"status": "superseded", "by": f"^{new.id}", "updated": self.clock.today()},
                op="supersede",
                subject=f"supersede {old.kind}: {first_line(old.text)}",
            )
            tx.set_message(
                f"supersede {old.kind}: {first_line(text)}",
                [
                    *memory_trailers(new.id, new.kind, new.scope, "supersede"),
                    ("Supersedes", old.id),
                ],
            )
        return Memory.from_block(self.block(new.id), was_new=new.was_new, superseded=(old.id,))

    def resolve(self, memory_id: str, *, status: str = "resolved") -> Memory:
        """Mark a memory resolved (or another status); it leaves default recall."""
        memory_id = normalize_id(memory_id)
        if status not in ("resolved", "superseded", "active"):
            raise InvalidInputError(f"invalid status {status!r}")
        with self.writer.batch(subject=None) as tx:
            block = self.writer.sole_block(memory_id)
            today = self.clock.today()
            updates: dict[str, str | None] = {"status": status, "updated": today}
            if status == "active":
                updates = {"status": None, "by": None, "updated": today}
            verb = "resolve" if status != "active" else "reactivate"
            tx.set_fields(
                memory_id,
                updates,
                op=verb,
                subject=f"{verb} {block.kind}: {first_line(block.text)}",
            )
        return self.get(memory_id)

    def archive(self, memory_id: str) -> Memory:
        """Hide an active memory from recall and lists without retiring it (reversible).

        ``[status:: archived]`` on its line, committed with ``Op: archive``;
        recall with ``include_inactive`` or ``status="archived"`` still finds it.
        """
        return self._set_archived(memory_id, archived=True)

    def unarchive(self, memory_id: str) -> Memory:
        """Make an archived memory active again (``Op: unarchive``)."""
        return self._set_archived(memory_id, archived=False)

    def _set_archived(self, memory_id: str, *, archived: bool) -> Memory:
        if self.note_block(memory_id) is not None:
            raise HumanNoteError(
                f"{memory_id} is a note a person wrote: it has no status to change"
            )
        memory_id = normalize_id(memory_id)
        verb = "archive" if archived else "unarchive"
        with self.writer.batch(subject=None) as tx:
            block = self.writer.sole_block(memory_id)
            want = "active" if archived else "archived"
            if block.status != want:
                # Archiving a retired memory and unarchiving it later would
                # bring back what was resolved or superseded: refused.
                raise InvalidInputError(
                    f"{memory_id} is {block.status}; only {want} memories can be {verb}d"
                )
            updates: dict[str, str | None] = {
                "status": "archived" if archived else None,
                "updated": self.clock.today(),
            }
            tx.set_fields(
                memory_id,
                updates,
                op=verb,
                subject=f"{verb} {block.kind}: {first_line(block.text)}",
            )
        return self.get(memory_id)

    def commit_human_edits(self) -> str | None:
        """Commit files a person changed, authored as the human; returns the sha."""
        with self.writer.writing():
            return self.writer.commit_human_edits()

    # -- internals -----------------------------------------------------------

    def _store_item(
        self,
        tx: Transaction,
        rel: str,
        body: str,
        tags: list[str],
        extra: list[tuple[str, str]],
        *,
        scope: str,
        kind: str,
        op: str,
        topic: str | None = None,
    ) -> Memory:
        label = blk.kind_label(kind) if kind != blk.default_kind_for(rel) else None
        kept = _kept(kind, tags, extra)
        beside = _beside(rel, kept)
        refuse_secret_metadata(
            rel,
            [*render_list_item(MASK, "m-0", tags=tags, label=label), *_shown(kept)],
            [f"## Topic: {topic}"] if topic is not None else [],
        )
        digest = blk.content_hash(body)
        self.writer.refresh_file(rel)
        existing = self.catalog.find_active(scope, digest)
        if existing is not None and (topic is None or existing.path == rel):
            return Memory.from_block(existing, was_new=False)
        memory_id = self.writer.new_id()
        tx.add_item(
            rel,
            render_list_item(body, memory_id, tags=tags, label=label),
            subject=f"{op} {kind}: {first_line(body)}",
            trailers=memory_trailers(memory_id, kind, scope, op)
            + ([("Topic", topic)] if topic else []),
            topic=topic,
            hashed=(body, digest),
            fields=(memory_id, beside) if beside else None,
        )
        return Memory.from_block(self.writer.block(memory_id), was_new=True)

    def _store_entry(
        self,
        rel: str,
        heading: str,
        body: str,
        tags: list[str],
        *,
        scope: str,
        kind: str,
        op: str,
        title: str,
        fields: list[tuple[str, str]] | None = None,
    ) -> Memory:
        memory_id = self.append_entry(
            rel,
            heading,
            body,
            fields=fields or [],
            scope=scope,
            kind=kind,
            header=[title],
            subject=f"{op}: {first_line(body)}",
            trailers=[],
            tags=tags,
            op=op,
        )
        return Memory.from_block(self.writer.block(memory_id), was_new=True)


def _kept(
    kind: str, tags: Iterable[str], fields: Iterable[tuple[str, str]]
) -> list[tuple[str, str]]:
    """What a new memory keeps beside its line (mdmem.files.sidecar): its kind,
    the tags it was given (they stay if a person rewrites the line without
    them) and its fields."""
    kept = [("kind", kind)]
    tag_list = list(tags)
    if tag_list:
        kept.append(("tags", " ".join(tag_list)))
    return kept + [(k, v) for k, v in fields if k != "kind"]


def _beside(rel: str, kept: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """What a new memory of ``rel`` keeps beside its line: nothing when all it has
    is the kind its file gives every line (a plain fact in MEMORY.md, a log entry):
    the fields file then stays as small as what it says (a write and a commit
    carry it whole)."""
    if kept == [("kind", blk.default_kind_for(rel))]:
        return None
    return kept


def _shown(fields: Iterable[tuple[str, str]]) -> list[str]:
    """Fields as the secret check reads them (the form a person would type)."""
    return [f"[{key}:: {value}]" for key, value in fields]
