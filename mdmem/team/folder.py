"""The team folder's verbs: set it up, propose, review, accept, reject, remove.

Every change is one commit in the code repository, authored by the person
running the command (the repository's git identity), touching only team
files (and, at setup, ``.gitattributes``): ``git blame`` on a team line names
who proposed it, and once accepted, who accepted it.

Proposal flow (the choice this module makes): ``propose`` appends the line
marked ``[status:: proposed]`` in a commit on the current branch; the person
pushes it (directly, or as a pull request) and a teammate runs
``accept``/``reject`` in their clone, which is again a commit to push.
Proposed lines never reach a prompt. Several ids are accepted or rejected
in one commit.

Edits reuse the writer's editors (:mod:`mdmem.store.editors`) on the parsed
file, so a line is found by its id and only its own bytes change; the file
is replaced atomically and committed with exactly those paths. A team file
with uncommitted edits is refused rather than swept into the commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mdmem.errors import InvalidInputError, MemoryNotFoundError, TeamError
from mdmem.files import blocks as blk
from mdmem.files.ids import normalize_id
from mdmem.files.textfile import SkipFile, TextFile, atomic_write, decode
from mdmem.git.merge_driver import driver_command
from mdmem.store.editors import Editor, block_remover, field_setter, item_appender
from mdmem.store.gitstore import GitStore, Identity, format_message
from mdmem.store.secret_guard import guard, refuse_in_metadata, scan
from mdmem.team.lines import (
    PROPOSED,
    TEAM_FIELDS,
    TeamLine,
    clean_name,
    file_for_kind,
    personal_reason,
    team_line,
    today,
)
from mdmem.team.repo import TEAM_DIR, TEAM_FILES, Checkout, require_checkout, team_files
from mdmem.team.trust import trust_checkout

__all__ = [
    "ATTRIBUTES_LINE",
    "DRIVER_NAME",
    "Decision",
    "SetUp",
    "Source",
    "TeamFolder",
]

DRIVER_NAME = "mdmem-team"
ATTRIBUTES_LINE = f"{TEAM_DIR}/*.md merge={DRIVER_NAME}"
README = f"""# Team memory

This folder is the team tier of mdmem: memories the
team agreed on, read by every teammate's coding agent (mdmem's recall and
prompt hooks) once they trust this checkout (`mdmem team trust`).

- `decisions.md` - {TEAM_FILES["decisions.md"].lower()}
- `conventions.md` - {TEAM_FILES["conventions.md"].lower()}
- `gotchas.md` - {TEAM_FILES["gotchas.md"].lower()}

Each memory is one line ending in an id (`^m-...`), with who captured it,
who proposed it and who accepted it. The way in is a proposal:

    mdmem team propose <id from your vault> --note "why"   # a commit: push it
    mdmem team review                                      # open proposals
    mdmem team accept <id> / mdmem team reject <id>        # a commit as you

Editing or deleting a line here (a reviewed commit) changes what every
agent sees after the next pull. Nothing personal belongs here: no person's
or contact's scopes, speakers or session links. `mdmem team check` says
file:line of anything that breaks these rules (a secret included).
"""


@dataclass(frozen=True)
class Source:
    """A memory of a person's vault, as the caller read it, to be proposed."""

    id: str
    text: str
    kind: str
    tags: tuple[str, ...]
    scope: str
    fields: tuple[tuple[str, str], ...]
    created: datetime
    captured_by: str  # e.g. "agent orc-1" or "person Ada"


@dataclass(frozen=True)
class SetUp:
    """What ``init`` did."""

    repo: str
    folder: str
    created: tuple[str, ...]  # files it added ("" when the folder was there)
    commit: str | None
    driver: str  # the merge driver's name, registered in the checkout's git config
    trusted: bool


@dataclass(frozen=True)
class Decision:
    """What ``propose``/``accept``/``reject``/``remove`` did."""

    action: str
    ids: tuple[str, ...]
    files: tuple[str, ...]
    commit: str | None
    by: str
    lines: tuple[TeamLine, ...] = ()


class TeamFolder:
    """The team tier of one checkout: ``TeamFolder.at(path)``."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self.git = GitStore(checkout.root)

    @classmethod
    def at(cls, path: str | Path | None) -> TeamFolder:
        """The checkout ``path`` is in (TeamError outside a repository)."""
        return cls(require_checkout(path))

    @property
    def exists(self) -> bool:
        return self.checkout.team_dir.is_dir()

    def person(self) -> Identity:
        """Who acts: the repository's git identity (``user.name``/``user.email``)."""
        return self.git.human_identity()

    # -- reading ---------------------------------------------------------------

    def lines(self) -> list[TeamLine]:
        """Every memory line of the team files, in file order (unreadable files skipped)."""
        out: list[TeamLine] = []
        for rel, _real in team_files(self.checkout):
            try:
                parsed = self._parse(rel, self._read(rel))
            except SkipFile:
                continue
            out.extend(team_line(b) for b in parsed.memories())
        return out

    def proposals(self) -> list[TeamLine]:
        """Open proposals, oldest first."""
        return [line for line in self.lines() if line.status == PROPOSED]

    def find(self, memory_id: str) -> TeamLine:
        wanted = normalize_id(memory_id)
        for line in self.lines():
            if line.id == wanted:
                return line
        raise MemoryNotFoundError(f"no team memory ^{wanted} in {TEAM_DIR}")

    # -- setting up ------------------------------------------------------------

    def init(self, state_dir: Path) -> SetUp:
        """Create the team folder (committed as the person), register the merge
        driver in this checkout's git config and trust the checkout."""
        self._require_repo_state()
        folder = self.checkout.team_dir
        created: list[str] = []
        contents: dict[str, bytes] = {}
        if not (folder / "README.md").exists():
            contents[f"{TEAM_DIR}/README.md"] = README.encode()
        for name, what in TEAM_FILES.items():
            if not (folder / name).exists():
                title = name[:-3].capitalize()
                contents[f"{TEAM_DIR}/{name}"] = f"# {title}\n\n{what}.\n".encode()
        attributes = self.checkout.root / ".gitattributes"
        old = attributes.read_bytes() if attributes.exists() else b""
        if ATTRIBUTES_LINE.encode() not in old:
            sep = b"" if not old or old.endswith(b"\n") else b"\n"
            note = b"# mdmem team memory: merged line by line, by id (mdmem team init)\n"
            contents[".gitattributes"] = old + sep + note + ATTRIBUTES_LINE.encode() + b"\n"
        self._refuse_dirty(list(contents))
        for rel, data in contents.items():
            target = self.checkout.root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data)
            created.append(rel)
        commit = None
        if contents:
            message = format_message(
                "team: set up the team memory folder",
                "Memories the team agreed on, read by every teammate's agent.",
                [("Op", "team-init")],
            )
            commit = self.git.commit(message, self.person(), paths=list(contents))
        self.register_driver(state_dir)
        trust_checkout(self.checkout)
        return SetUp(
            repo=str(self.checkout.root),
            folder=TEAM_DIR,
            created=tuple(created),
            commit=commit,
            driver=DRIVER_NAME,
            trusted=True,
        )

    def register_driver(self, state_dir: Path) -> None:
        """Name the block-aware merge driver in this checkout's own git config
        (``.git/config``, which never travels with the repository)."""
        command = driver_command(state_dir) + " blocks %O %A %B %P"
        self.git.run("config", f"merge.{DRIVER_NAME}.name", "mdmem team memory merge")
        self.git.run("config", f"merge.{DRIVER_NAME}.driver", command)

    # -- proposing -------------------------------------------------------------

    def propose(
        self,
        source: Source,
        *,
        note: str | None = None,
        allow_personal: bool = False,
        to: str | None = None,
    ) -> Decision:
        """Append ``source`` as a proposal (one commit as the person); see the module doc."""
        self._require_folder()
        why = personal_reason(source.scope, source.fields)
        if why is not None and not allow_personal:
            raise TeamError(
                f"refused: ^{source.id} is personal ({why}); "
                "pass --allow-personal if the team should have it"
            )
        # The guard at proposal: the text, the note and every name on the line.
        text = guard(source.text, "refuse")
        if note is not None:
            note = guard(" ".join(note.split()), "refuse")
        for tag in source.tags:
            refuse_in_metadata(tag, "tags")
        name = to or file_for_kind(source.kind)
        name = name if name.endswith(".md") else f"{name}.md"
        if name not in TEAM_FILES:
            raise InvalidInputError(f"--to must be one of {', '.join(sorted(TEAM_FILES))}")
        rel = f"{TEAM_DIR}/{name}"
        memory_id = normalize_id(source.id)
        if any(line.id == memory_id for line in self.lines()):
            raise TeamError(f"^{memory_id} is already in {TEAM_DIR} (see mdmem team review)")
        person = self.person()
        values = {
            "kind": source.kind,
            "captured_by": clean_name(source.captured_by),
            "captured": today(source.created),
            "proposed_by": clean_name(person.name),
            "proposed": today(),
            "note": note or None,
            "status": PROPOSED,
        }
        fields = [(k, v) for k in TEAM_FIELDS if (v := values.get(k))]
        for key, value in fields:
            refuse_in_metadata(value, f"the [{key}::] field")
        rendered = blk.render_list_item(text, memory_id, tags=source.tags, fields=fields)
        self._write(
            {rel: [item_appender(rel, rendered)]},
            f"team: propose ^{memory_id} ({source.kind})",
            [("Memory-Id", memory_id), ("Kind", source.kind), ("Op", "team-propose")],
            person,
            body=f"Note: {note}" if note else "",
        )
        line = self.find(memory_id)
        return Decision("propose", (memory_id,), (rel,), self.git.head(), person.name, (line,))

    # -- deciding --------------------------------------------------------------

    def accept(self, ids: Sequence[str]) -> Decision:
        """Accept proposals (one commit as the person): ``accepted_by``/``accepted``
        replace ``[status:: proposed]``. The secret guard runs again on each."""
        lines = self._pick(ids, proposed=True)
        person = self.person()
        for line in lines:
            guard(line.text, "refuse")
        updates = {"status": None, "accepted_by": clean_name(person.name), "accepted": today()}
        edits: dict[str, list[Editor]] = {}
        for line in lines:
            edits.setdefault(line.path, []).append(field_setter(line.id, dict(updates)))
        return self._decide("accept", lines, edits, person, "")

    def reject(self, ids: Sequence[str], reason: str | None = None) -> Decision:
        """Reject proposals: their lines go, in one commit as the person."""
        return self._drop("reject", self._pick(ids, proposed=True), reason)

    def remove(self, ids: Sequence[str], reason: str | None = None) -> Decision:
        """Remove accepted team memories (a commit to review and push like any other)."""
        return self._drop("remove", self._pick(ids, proposed=False), reason)

    def _drop(self, action: str, lines: list[TeamLine], reason: str | None) -> Decision:
        person = self.person()
        body = f"Reason: {guard(' '.join(reason.split()), 'refuse')}" if reason else ""
        edits: dict[str, list[Editor]] = {}
        for line in lines:
            edits.setdefault(line.path, []).append(block_remover(line.id))
        return self._decide(action, lines, edits, person, body)

    def _decide(
        self,
        action: str,
        lines: list[TeamLine],
        edits: dict[str, list[Editor]],
        person: Identity,
        body: str,
    ) -> Decision:
        ids = tuple(line.id for line in lines)
        shown = ", ".join(f"^{i}" for i in ids[:5]) + (" ..." if len(ids) > 5 else "")
        trailers = [("Memory-Id", i) for i in ids] + [("Op", f"team-{action}")]
        self._write(edits, f"team: {action} {shown}", trailers, person, body=body)
        after = tuple(self.find(i) for i in ids) if action == "accept" else tuple(lines)
        return Decision(action, ids, tuple(edits), self.git.head(), person.name, after)

    def _pick(self, ids: Sequence[str], *, proposed: bool) -> list[TeamLine]:
        if not ids:
            raise InvalidInputError("name at least one id")
        by_id = {line.id: line for line in self.lines()}
        picked: list[TeamLine] = []
        for raw in ids:
            memory_id = normalize_id(raw)
            line = by_id.get(memory_id)
            if line is None:
                raise MemoryNotFoundError(f"no team memory ^{memory_id} in {TEAM_DIR}")
            if proposed and line.status != PROPOSED:
                raise TeamError(f"^{memory_id} is no open proposal (it was accepted already)")
            if not proposed and line.status == PROPOSED:
                raise TeamError(f"^{memory_id} is a proposal: accept or reject it")
            if line not in picked:
                picked.append(line)
        return picked

    # -- the write -------------------------------------------------------------

    def _write(
        self,
        edits: dict[str, list[Editor]],
        subject: str,
        trailers: Iterable[tuple[str, str]],
        person: Identity,
        *,
        body: str = "",
    ) -> None:
        self._require_repo_state()
        self._refuse_dirty(list(edits))
        staged: dict[str, bytes] = {}
        for rel, editors in edits.items():
            tf = self._read(rel)
            for edit in editors:
                parsed = self._parse(rel, tf)
                edit(tf, parsed)
            data = tf.to_bytes()
            self._parse(rel, decode(data))  # what is written must parse again
            found = scan(data.decode("utf-8"))
            if found:  # a secret a person left in the file: never committed by us
                raise InvalidInputError(f"refused: {rel} would hold a secret ({found[0].kind})")
            staged[rel] = data
        for rel, data in staged.items():
            atomic_write(self.checkout.root / rel, data)
        self.git.commit(format_message(subject, body, trailers), person, paths=list(staged))

    def _read(self, rel: str) -> TextFile:
        path = self.checkout.root / rel
        try:
            real = path.resolve()
        except OSError as exc:
            raise TeamError(f"cannot read {rel}: {exc}") from None
        if self.checkout.root not in real.parents:
            raise TeamError(f"{rel} leads outside the repository; refusing to use it")
        try:
            return decode(real.read_bytes()) if real.exists() else TextFile.empty()
        except SkipFile as why:
            raise TeamError(f"{rel} cannot be read ({why}); fix it first") from None

    @staticmethod
    def _parse(rel: str, tf: TextFile) -> blk.ParsedFile:
        try:
            return blk.parse(rel, tf)
        except SkipFile as why:
            raise TeamError(f"{rel} cannot be read ({why}); fix it first") from None

    def _require_folder(self) -> None:
        if not self.exists:
            raise TeamError(f"no {TEAM_DIR} in {self.checkout.root}; run `mdmem team init` first")

    def _require_repo_state(self) -> None:
        busy = self.git.operation_in_progress()
        if busy:
            raise TeamError(f"a {busy} is in progress in {self.checkout.root}; finish it first")

    def _refuse_dirty(self, paths: list[str]) -> None:
        if not paths:
            return
        out = self.git.run("status", "--porcelain", "-z", "--", *paths, strip=False)
        dirty = sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})
        if dirty:
            raise TeamError(
                f"{', '.join(dirty)} has uncommitted changes; commit or stash them first"
            )
