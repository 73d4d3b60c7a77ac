"""``vault.reading(...)``: every read verb, for one reader, returning only what it may see.

The visibility rule (:mod:`mdmem.store.visibility`) has one home; this desk is
the one door every front door reads through, so no door can forget to ask it.
A :class:`Reading` carries its reader and answers recall, context, get,
history, changes, list, show, file text, tool outputs, contact profiles,
pending messages and export with *shown* data: blocks (and copies of blocks)
the reader may not see are left out, and a secret a person typed into a file
is redacted, once, here: a door never redacts (or forgets to).

**One composed context.** :meth:`Reading.compose` is what every door that
puts memory before a model calls (the hooks, ``prompt_context``, the CLI,
MCP): the reader's memories and, given the folder the host works in, that
repository's team lines (:mod:`mdmem.team.tier`, a source of this view),
in one budget (:mod:`mdmem.memory.desks.compose`).

* **History** is judged version by version: a memory a person moved out of a
  scope the reader may not see keeps its past there, and the versions (and
  commit subjects) written while it lived there stay hidden.
* **A contact reader** (a conversation with one person) sees the vault root,
  the other shared scopes it is allowed, and its own person's scope; never the
  scope of another person the vault has a profile for, nor anything belonging
  to another contact.
* **Everyone** (:data:`~mdmem.store.visibility.EVERYONE`) is a reader too: a
  door with no restriction reads through ``vault.reading()`` all the same, and
  still gets redacted text.

Built like the other desks, from the store, the recaller and the desks it
reads through; never from the :class:`~mdmem.vault.Vault`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime
from typing import IO, TYPE_CHECKING, Any

from mdmem.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    ScopeDeniedError,
    SecretRefusedError,
)
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, decode, safe_path
from mdmem.git.history import visible_changes
from mdmem.git.seen import changes_since
from mdmem.git.versions import Version, versions
from mdmem.memory.capture.sessions import output_place, read_tool_output
from mdmem.memory.consolidation import reflect as reflection
from mdmem.memory.desks.compose import Composed, Section, compose, recalled_lines
from mdmem.memory.library import browse
from mdmem.memory.library.export import export_jsonl
from mdmem.models import Hit, Memory, Recall
from mdmem.providers.llm import USE_CONFIGURED_LLM, LLMChoice, LLMClient
from mdmem.recall.asdata import render_recalled
from mdmem.recall.controls import RecallControls
from mdmem.recall.search import RecallQuery
from mdmem.store.secret_guard import scrub
from mdmem.store.visibility import Reader
from mdmem.team.tier import TeamContext, team_context

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from mdmem.git.history import Changes
    from mdmem.index.progress import Progress
    from mdmem.memory.capture.pending import PendingBuffer, PendingMessage
    from mdmem.memory.consolidation.reflect import Reflection
    from mdmem.memory.desks.contacts import Contacts, Profile
    from mdmem.memory.library.browse import Shown
    from mdmem.recall.recaller import Recaller
    from mdmem.store.memories import MemoryStore

__all__ = ["Reading", "reader_for"]


def reader_for(
    contacts: Contacts,
    scopes: Iterable[str] | str | None = None,
    contact: str | None = None,
) -> Reader:
    """The reader of a door: ``scopes`` it is allowed (None: all) and the ``contact``
    its conversation is with. A contact's reader sees the vault root and the scope of
    the person that contact is linked to (or, given ``scopes``, those), and never the
    scope of another person the vault has a profile for."""
    reader = Reader.of(scopes, contact)
    if reader.contact is None:
        return reader
    own = contacts.scope_for(reader.contact)
    people = {p.person for p in contacts.list()}
    others = frozenset(people - {own} if own else people)
    allowed = reader.scopes
    if allowed is None:
        allowed = frozenset({"", own} if own else {""})
    return Reader(allowed - others, reader.contact, others)


class Reading:
    """Every read verb for one :class:`Reader` (see the module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        recaller: Recaller,
        contacts: Contacts,
        llm_of: Callable[[LLMChoice], LLMClient | None],
        reader: Reader,
        pending: PendingBuffer | None = None,
    ) -> None:
        self._store = store
        self._recaller = recaller
        self._contacts = contacts
        self._llm_of = llm_of
        self._pending = pending
        self.reader = reader

    def shown(self, text: str) -> str:
        """Text as a door may show it: a secret a person typed into the vault (the
        writer never stores one) redacted. For what a door renders itself (a model's
        answer drawn from recalled memories, a changes listing)."""
        return scrub(text, self._store.settings.secrets)

    def reflect(
        self, query: str, *, k: int = 8, llm: LLMChoice = USE_CONFIGURED_LLM, **filters: Any
    ) -> Reflection:
        """An answer synthesised across the memories this reader may see (recalled
        through this view, so already shown), citing ``path#^id``; the answer is
        shown too."""
        answer = reflection.reflect(self.recall, query, llm=self._llm_of(llm), k=k, **filters)
        return replace(answer, answer=self.shown(answer.answer))

    def _memory(self, memory: Memory) -> Memory:
        return replace(memory, text=self.shown(memory.text), fields=self._fields(memory.fields))

    def _fields(self, fields: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((k, self.shown(v)) for k, v in fields)

    def _hit(self, hit: Hit) -> Hit:
        return replace(
            hit,
            text=self.shown(hit.text),
            heading=self.shown(hit.heading),
            fields=self._fields(hit.fields),
        )

    # ---------------------------------------------------------------- recall --

    def recall(
        self,
        query: str,
        k: int | None = None,
        kinds: Iterable[str] | str | None = None,
        tags: Iterable[str] | str | None = None,
        scope: Iterable[str] | str | None = None,
        since: datetime | date | str | None = None,
        until: datetime | date | str | None = None,
        include_inactive: bool = False,
        *,
        mode: str = "hybrid",
        as_of: str | date | datetime | None = None,
        **controls: Any,
    ) -> Recall:
        """:meth:`Vault.recall <mdmem.vault.Vault.recall>` as this reader may see it."""
        q = RecallQuery.build(
            query,
            self._store.settings.recall.k if k is None else k,
            kinds,
            tags,
            scope,
            since,
            until,
            include_inactive,
            mode,
            RecallControls.build(**controls) if controls else None,
        )
        found = self._recaller.recall(q, as_of=as_of, reader=self.reader)
        # Shown once, here, as the view hands the hits out.
        return replace(found, items=[self._hit(h) for h in found.items])

    def context(self, query: str, max_chars: int = 6000, **filters: Any) -> str:
        """A "## Recalled Memory" block of what this reader may see, fenced as data."""
        return render_recalled(self.recall(query, **filters), max_chars)

    def compose(
        self,
        query: str | None,
        max_chars: int | None = 6000,
        *,
        repo: str | os.PathLike[str] | None = None,
        team_k: int = 3,
        sections: Sequence[Section] | None = None,
        recall: Recall | None = None,
        title: str = "## Recalled Memory",
        **filters: Any,
    ) -> Composed:
        """The context a door puts before a model: this reader's memories and the
        team lines of the repository ``repo`` (a folder the host works in) relevant
        to ``query``, within ``max_chars`` (None: no bound), deduplicated
        (:mod:`mdmem.memory.desks.compose`).

        The person's part is ``sections`` when a door built its own (the hooks'
        profile and changes), else recall's relevant items for ``query`` (``recall``:
        one the door ran already; ``filters`` go to :meth:`recall`). ``query=None``:
        no recall, and the team's most recently accepted lines (a session's start).
        The team's part is read only from a checkout the person trusts; its
        status says otherwise (``untrusted``, ``none``).
        """
        team = TeamContext("none")
        if repo is not None:
            team = team_context(repo, query, self._store.state_dir, k=team_k)
        hits: list[Hit] = []
        if sections is None:
            if recall is None and query:
                recall = self.recall(query, **filters)
            hits = recall.relevant_items if recall is not None else []
            sections = [("", recalled_lines(hits))]
        return compose(title, sections, team, max_chars, hits=hits, recall=recall)

    # ----------------------------------------------------------------- one --

    def get(self, memory_id: str) -> Memory:
        """One memory; ScopeDeniedError (naming nothing of it) when hidden from this reader."""
        memory = self._store.get(memory_id)
        if not self.reader.unrestricted:
            self._store.visibility.require(self.reader, self._store.block(memory.id))
        return self._memory(memory)

    def to_copy(self, memory_id: str) -> Memory:
        """One memory as its line holds it, for a copy made elsewhere (a team
        proposal). SecretRefusedError when its text or fields hold a secret a
        person typed by hand: a copy must neither carry it nor a redaction in
        its place (the person takes it off the line first)."""
        memory = self.get(memory_id)
        original = self._store.get(memory.id)
        if memory != original:
            raise SecretRefusedError(
                f"refused: ^{memory.id} holds a secret typed into its line; "
                "take it off the line, then copy the memory"
            )
        return memory

    def history(self, memory_id: str) -> list[Version]:
        """The versions of a memory this reader may see, oldest first: each judged by
        the file it lived in then, its commit subject with it."""
        found = self._hidden_if_current_denied(memory_id)
        return self._visible_versions(found)

    def show(self, memory_id: str) -> Shown:
        """One memory's row, history and line authors, as this reader may see them."""
        self.get(memory_id)  # refuses a hidden memory before anything of it is read
        shown = browse.show(self._store, memory_id)
        row = {**shown.memory, "text": self.shown(str(shown.memory.get("text", "")))}
        return replace(shown, memory=row, history=self._visible_versions(shown.history))

    def _hidden_if_current_denied(self, memory_id: str) -> list[Version]:
        try:
            self.get(memory_id)
        except MemoryNotFoundError:
            # Forgotten: only its versions can be judged, each by where it lived.
            pass
        return versions(self._store, memory_id)

    def _visible_versions(self, found: list[Version]) -> list[Version]:
        rule = self._store.visibility
        out: list[Version] = []
        last_seen = self.reader.unrestricted
        for version in found:
            if version.path is None:
                visible = last_seen  # forgotten: as visible as where it last lived
            else:
                visible = rule.may_see_file(self.reader, version.path)
                last_seen = visible
            if not visible:
                continue
            text = self.shown(version.text) if version.text else version.text
            out.append(replace(version, text=text, subject=self.shown(version.subject)))
        if found and not out and not self.reader.unrestricted:
            raise ScopeDeniedError(
                "that memory belongs to a scope or contact this reader may not access"
            )
        return out

    # ---------------------------------------------------------------- many --

    def changes(
        self,
        since: str | date | datetime = "last-session",
        *,
        agent: str | None = None,
        session: str | None = None,
    ) -> Changes:
        """What changed since ``since`` that this reader may see, its texts and commit
        subjects shown (a secret a person typed redacted)."""
        store = self._store
        found = changes_since(store, since, agent=agent or store.agent, session=session)
        if not self.reader.unrestricted:
            rule, reader = store.visibility, self.reader
            found = visible_changes(found, lambda i, path: rule.may_see_id(reader, i, path))
        return replace(
            found,
            remembered=tuple(self._change(c) for c in found.remembered),
            resolved=tuple(self._change(c) for c in found.resolved),
            forgotten=tuple(self._change(c) for c in found.forgotten),
            superseded=tuple(
                replace(
                    s,
                    old_text=self.shown(s.old_text) if s.old_text else s.old_text,
                    new_text=self.shown(s.new_text) if s.new_text else s.new_text,
                )
                for s in found.superseded
            ),
            human_edits=tuple(replace(h, subject=self.shown(h.subject)) for h in found.human_edits),
        )

    def _change(self, change: Any) -> Any:
        return replace(change, text=self.shown(change.text)) if change.text else change

    def take_pending(
        self, channel: str = "default", limit: int | None = None
    ) -> builtins.list[PendingMessage]:
        """Hand a task the messages waiting in ``channel`` (each once), shown."""
        if self._pending is None:
            return []
        taken = self._pending.take(channel=channel, limit=limit)
        return [replace(m, text=self.shown(m.text)) for m in taken]

    def list(self, **filters: Any) -> builtins.list[Memory]:
        """Memories matching every filter (:func:`mdmem.memory.library.browse.list_memories`:
        the same filter recall uses) that this reader may see, newest first, shown."""
        rule, reader = self._store.visibility, self.reader
        visible = None if reader.unrestricted else (lambda b: rule.may_see(reader, b))
        found = browse.list_memories(self._store, visible=visible, **filters)
        return [self._memory(m) for m in found]

    def file_text(self, path: str) -> str:
        """A vault file's markdown as this reader may see it ("" for a file not written
        yet): lines of memories it may not see are left out, a secret a person typed
        is redacted. ScopeDeniedError for a file of a scope or contact it may not see."""
        store = self._store
        if not store.visibility.may_see_file(self.reader, path):
            raise ScopeDeniedError(f"{path} is outside the scopes this reader may access")
        try:
            tf = decode(safe_path(store.root, path).read_bytes())
        except FileNotFoundError:
            return ""
        except SkipFile as exc:
            raise InvalidInputError(f"{path} is not a markdown file mdmem reads ({exc})") from None
        hidden: set[int] = set()
        if not self.reader.unrestricted:
            # The blocks of the very bytes read, so no line number can drift.
            blocks = blk.parse(path, tf, beside=store.catalog.fields.view(path)).blocks
            hidden = store.visibility.hidden_lines(self.reader, blocks)
        return self.shown("".join(x for n, x in enumerate(tf.lines, 1) if n not in hidden))

    def export(self, out: IO[str], *, progress: Progress | None = None) -> int:
        """The JSONL export of what this reader may see, shown (everyone's: with the
        vault's files, for ``import_(…, restore=True)``; a narrower reader's: its
        memories only)."""
        rule, reader = self._store.visibility, self.reader
        visible = None if reader.unrestricted else (lambda b: rule.may_see(reader, b))
        return export_jsonl(self._store, out, progress, visible=visible, shown=self.shown)

    # -------------------------------------------------------- side records --

    def tool_output(self, key: str) -> str:
        """A large tool output recorded in a session, when its scope is this reader's."""
        text = read_tool_output(self._store, key)
        if not self.reader.unrestricted:
            where = output_place(self._store, key)
            if where is None or not self._store.visibility.may_see_place(self.reader, *where):
                raise ScopeDeniedError(
                    f"tool output {key.strip()} belongs to a scope this reader may not access"
                )
        return self.shown(text)

    def contact_profile(self, who: str) -> tuple[Profile, builtins.list[str]]:
        """A person's profile and the ids of the facts about them this reader may see.

        Someone whose scope is hidden answers as an unknown id does: platform ids
        are guessable (phone numbers), and "denied" would tell that one is known.
        """
        hidden = MemoryNotFoundError(
            f"no contact profile for {who} in the scopes this reader may read"
        )
        try:
            profile = self._contacts.profile(who)
        except (MemoryNotFoundError, InvalidInputError):
            raise hidden from None
        rule = self._store.visibility
        reader = self.reader
        if not rule.may_see_place(reader, profile.person):
            raise hidden
        facts = [
            i
            for i in profile.facts
            if reader.unrestricted or rule.may_see_id(reader, i, None)
        ]
        return profile, facts
