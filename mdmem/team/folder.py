"""The team folder's verbs: set it up, propose, review, accept, reject, remove.

Every change is one commit in the code repository, authored by the person
running the command (the repository's git identity), touching only team
files (and, at setup or a first proposal, ``.gitattributes``), written
through :class:`mdmem.team.writer.TeamWriter` (the write engine's lock and
compare-and-swap): ``git blame`` on a team line names who proposed it, and
once accepted, who accepted it.

Proposal flow: ``propose`` appends the line (``— proposed by Ada``) in a
commit on the current branch, and keeps what mdmem knows of it (its kind,
who captured it, when, the note) beside the file in its fields file; the
person pushes it (directly, or as a pull request) and a teammate runs
``accept``/``reject`` in their clone, which is again a commit to push.
Accepting your own proposal is refused: acceptance is a second person's
(:mod:`mdmem.team.provenance` would not count it anyway). Proposals never
reach a prompt. Several ids are accepted or rejected in one commit.

Who proposed and who accepted a line is git's answer
(:mod:`mdmem.team.provenance`); the line's phrase only says it for the
person reading the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mdmem.config import state_root
from mdmem.errors import InvalidInputError, MemoryNotFoundError, TeamError
from mdmem.files import blocks as blk
from mdmem.files.ids import normalize_id
from mdmem.files.sidecar import Fields, Record, encode, parse_records, resolve, sidecar_of, stamp
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.git.merge_driver import driver_command
from mdmem.models import Block
from mdmem.store.editors import (
    Edit,
    Editor,
    block_remover,
    blocks_rewriter,
    file_creator,
    item_appender,
    record_appender,
)
from mdmem.store.gitstore import GitStore, Identity
from mdmem.store.secret_guard import guard, refuse_in_metadata
from mdmem.team import provenance
from mdmem.team.lines import (
    ACCEPTED,
    PROPOSED,
    UNREVIEWED,
    TeamLine,
    clean_name,
    file_for_kind,
    personal_reason,
    phrase,
    render,
    team_line,
    today,
    with_phrase,
)
from mdmem.team.repo import (
    FIELDS_DIR,
    TEAM_DIR,
    TEAM_FILES,
    Checkout,
    fields_files,
    require_checkout,
    team_files,
)
from mdmem.team.trust import trust_checkout
from mdmem.team.writer import Parse, TeamWriter

__all__ = [
    "ATTRIBUTES_LINE",
    "DRIVER_NAME",
    "FIELDS_ATTRIBUTES_LINE",
    "Decision",
    "SetUp",
    "Source",
    "TeamFolder",
]

DRIVER_NAME = "mdmem-team"
ATTRIBUTES_LINE = f"{TEAM_DIR}/*.md merge={DRIVER_NAME}"
# Append-only records: git's own union merge keeps both sides' appends, needs no
# driver in .git/config, and travels with every clone (mdmem.files.sidecar).
FIELDS_ATTRIBUTES_LINE = f"{FIELDS_DIR}/*.jsonl merge=union"
_LOCK_TIMEOUT = 120.0  # as the vault's writers: they queue, and failing fast loses a write
README = f"""# Team memory

This folder is the team tier of mdmem: memories the
team agreed on, read by every teammate's coding agent (mdmem's recall and
prompt hooks) once they trust this checkout (`mdmem team trust`).

- `decisions.md` - {TEAM_FILES["decisions.md"].lower()}
- `conventions.md` - {TEAM_FILES["conventions.md"].lower()}
- `gotchas.md` - {TEAM_FILES["gotchas.md"].lower()}

Each memory is one line: its kind, what the team should know, who proposed
or accepted it, and an id (`^m-...`). The way in is a proposal a teammate
accepts; git's history, not the line, is what says who accepted it:

    mdmem team propose <id from your vault> --note "why"   # a commit: push it
    mdmem team review                                      # open proposals
    mdmem team accept <id> / mdmem team reject <id>        # a commit as you

`.fields/` keeps what mdmem knows about each line (its kind, who captured
it, the proposer's note), one record a line, merged by union.

Editing or deleting a line here (a reviewed commit) changes what every
agent sees after the next pull; an edited line needs accepting again.
Nothing personal belongs here: no person's or contact's scopes, speakers
or session links. `mdmem team check` says file:line of anything that
breaks these rules (a secret included).
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

    def __init__(self, checkout: Checkout, state: Path | None = None) -> None:
        self.checkout = checkout
        self.git = GitStore(checkout.root)
        self.state_root = state if state is not None else state_root()
        self.writer = TeamWriter(checkout, self.git, self.state_root, _LOCK_TIMEOUT)

    @classmethod
    def at(cls, path: str | Path | None, state: Path | None = None) -> TeamFolder:
        """The checkout ``path`` is in (TeamError outside a repository); ``state``:
        mdmem's state root (default ``MDMEM_STATE_DIR`` or the user cache)."""
        return cls(require_checkout(path), state)

    @property
    def exists(self) -> bool:
        return self.checkout.team_dir.is_dir()

    def person(self) -> Identity:
        """Who acts: the repository's git identity (``user.name``/``user.email``)."""
        return self.git.human_identity()

    # -- reading ---------------------------------------------------------------

    def lines(self, *, reviewed: bool = True) -> list[TeamLine]:
        """Every memory line of the team files, in file order (unreadable files
        skipped), each with git's review of it unless ``reviewed=False``."""
        beside = self.fields()
        out: list[TeamLine] = []
        for rel, real in team_files(self.checkout):
            try:
                parsed = blk.parse(rel, decode(real.read_bytes()), labels=True, beside=beside)
            except (SkipFile, OSError):
                continue
            out.extend(team_line(b) for b in parsed.memories())
        if not reviewed:
            return out
        return provenance.reviewed_lines(self.git, out, shallow=self.checkout.shallow)

    def fields(self) -> dict[str, Fields]:
        """What is kept beside the team lines, by id, over every fields file (a
        line moved to another team file keeps its fields)."""
        records: list[Record] = []
        for _rel, real in fields_files(self.checkout):
            try:
                text = real.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            records.extend(parse_records(text.splitlines())[0])
        return resolve(records)

    def proposals(self) -> list[TeamLine]:
        """Open proposals, oldest first."""
        return [line for line in self.lines() if line.status == PROPOSED]

    def unreviewed(self) -> list[TeamLine]:
        """Lines git shows no acceptance of (typed by hand, self-accepted, edited
        since): never injected; ``propose`` makes one a proposal."""
        return [line for line in self.lines() if line.status == UNREVIEWED]

    def find(self, memory_id: str) -> TeamLine:
        wanted = normalize_id(memory_id)
        for line in self.lines():
            if line.id == wanted:
                return line
        raise MemoryNotFoundError(f"no team memory ^{wanted} in {TEAM_DIR}")

    def holds(self, memory_id: str) -> bool:
        """Whether a team file has a line with this id (git not asked)."""
        wanted = normalize_id(memory_id)
        return any(line.id == wanted for line in self.lines(reviewed=False))

    # -- setting up ------------------------------------------------------------

    def init(self, state_dir: Path | None = None) -> SetUp:
        """Create the team folder (committed as the person), register the merge
        driver in this checkout's git config and trust the checkout.
        ``state_dir``: where the merge driver's script lives (default: the state root)."""
        folder = self.checkout.team_dir
        created: list[str] = []
        commit = None
        with self.writer.writing():
            self.register_driver(state_dir)
            edits: dict[str, list[Editor]] = {}
            if not (folder / "README.md").exists():
                rel = f"{TEAM_DIR}/README.md"
                edits[rel] = [file_creator(rel, README.splitlines())]
            for name, what in TEAM_FILES.items():
                if not (folder / name).exists():
                    rel = f"{TEAM_DIR}/{name}"
                    title = name[:-3].capitalize()
                    edits[rel] = [file_creator(rel, [f"# {title}", "", f"{what}."])]
            attributes = self._attributes_edit()
            if attributes is not None:
                edits[".gitattributes"] = [attributes]
            if edits:
                created = list(edits)
                commit = self.writer.commit(
                    edits,
                    self.parser(),
                    (
                        "team: set up the team memory folder",
                        "Memories the team agreed on, read by every teammate's agent.",
                        [("Op", "team-init")],
                    ),
                    self.person(),
                )
        trust_checkout(self.checkout)
        return SetUp(
            repo=str(self.checkout.root),
            folder=TEAM_DIR,
            created=tuple(created),
            commit=commit,
            driver=DRIVER_NAME,
            trusted=True,
        )

    def register_driver(self, state_dir: Path | None = None) -> None:
        """Name the block-aware merge driver in this checkout's own git config
        (``.git/config``, which never travels with the repository); only when it
        is missing or names another command (``git config`` takes a lock of its
        own that two processes writing at once collide on)."""
        command = driver_command(state_dir or self.state_root) + " blocks %O %A %B %P"
        key = f"merge.{DRIVER_NAME}"
        if self.git.config(f"{key}.driver") == command:
            return
        self.git.run("config", f"{key}.name", "mdmem team memory merge")
        self.git.run("config", f"{key}.driver", command)

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
        # The text as the vault shows it, with the tags the caller gave it.
        shown = text if all(f"#{t}" in text for t in source.tags) else _with_tags(text, source)
        person = self.person()
        kept = {
            "kind": source.kind,
            "captured_by": clean_name(source.captured_by),
            "captured": today(source.created),
            "note": note or None,
        }
        for key, value in kept.items():
            if value:
                refuse_in_metadata(value, f"the {key} field")
        rendered = render(shown, memory_id, source.kind, phrase(PROPOSED, person.name))
        with self.writer.writing():
            self.register_driver()
            if self.holds(memory_id):
                raise TeamError(f"^{memory_id} is already in {TEAM_DIR} (see mdmem team review)")
            edits: dict[str, list[Editor]] = {
                rel: [item_appender(rel, rendered)],
                sidecar_of(rel): [_records(memory_id, kept)],
            }
            attributes = self._attributes_edit()
            if attributes is not None:
                edits[".gitattributes"] = [attributes]
            commit = self.writer.commit(
                edits,
                self.parser(),
                (
                    f"team: propose ^{memory_id} ({source.kind})",
                    f"Note: {note}" if note else "",
                    [("Memory-Id", memory_id), ("Kind", source.kind), ("Op", "team-propose")],
                ),
                person,
            )
        line = self.find(memory_id)
        return Decision("propose", (memory_id,), (rel,), commit, person.name, (line,))

    def propose_line(self, memory_id: str) -> Decision:
        """Make a line already in the team files, that git shows no proposal of
        (typed by hand), a proposal by the person: a teammate then accepts it."""
        self._require_folder()
        line = self.find(memory_id)
        if line.status != UNREVIEWED or line.proposed_by:
            raise TeamError(
                f"^{line.id} is already {line.status} (proposed by {line.proposed_by}); "
                "see mdmem team review"
            )
        guard(line.text, "refuse")
        person = self.person()
        says = phrase(PROPOSED, person.name)
        return self._decide(
            "propose",
            [line],
            {line.path: [blocks_rewriter([line.id], _rephrased({line.id: line}, says))]},
            person,
            "A line typed into the team files, proposed for review.",
            kept=_legacy_fields([line]),
        )

    # -- deciding --------------------------------------------------------------

    def accept(self, ids: Sequence[str]) -> Decision:
        """Accept proposals (one commit as the person): each line then reads
        ``— accepted by <person>``. Your own proposal is refused; the secret
        guard runs again on each."""
        lines = self._pick(ids, proposed=True)
        person = self.person()
        for line in lines:
            if provenance.same_person(
                (line.proposed_by, line.proposed_email), (person.name, person.email)
            ):
                raise TeamError(
                    f"^{line.id} is your own proposal: a teammate accepts it "
                    "(an acceptance by its proposer would not count)"
                )
            guard(line.text, "refuse")
        says = phrase(ACCEPTED, person.name)
        edits: dict[str, list[Editor]] = {}
        by_path: dict[str, dict[str, TeamLine]] = {}
        for line in lines:
            by_path.setdefault(line.path, {})[line.id] = line
        for rel, mine in by_path.items():
            edits[rel] = [blocks_rewriter(list(mine), _rephrased(mine, says))]
        return self._decide("accept", lines, edits, person, "", kept=_legacy_fields(lines))

    def reject(self, ids: Sequence[str], reason: str | None = None) -> Decision:
        """Reject proposals: their lines go, in one commit as the person."""
        return self._drop("reject", self._pick(ids, proposed=True), reason)

    def remove(self, ids: Sequence[str], reason: str | None = None) -> Decision:
        """Remove team memories that are no proposal (a commit to review and push)."""
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
        *,
        kept: dict[str, dict[str, dict[str, str | None]]] | None = None,
    ) -> Decision:
        ids = tuple(line.id for line in lines)
        shown = ", ".join(f"^{i}" for i in ids[:5]) + (" ..." if len(ids) > 5 else "")
        trailers = [("Memory-Id", i) for i in ids] + [("Op", f"team-{action}")]
        for rel, records in (kept or {}).items():
            edits.setdefault(sidecar_of(rel), []).append(_many_records(records))
        with self.writer.writing():
            self.register_driver()
            # Read again under the lock: another command may have changed them.
            now = {line.id: line for line in self.lines(reviewed=False)}
            missing = [i for i in ids if i not in now]
            if missing:
                raise MemoryNotFoundError(f"no team memory ^{missing[0]} in {TEAM_DIR}")
            if kept:
                attributes = self._attributes_edit()
                if attributes is not None:
                    edits[".gitattributes"] = [attributes]
            commit = self.writer.commit(
                edits,
                self.parser(),
                (f"team: {action} {shown}", body, trailers),
                person,
            )
        gone = action in ("reject", "remove")
        after = tuple(lines) if gone else tuple(self.find(i) for i in ids)
        files = tuple(sorted({line.path for line in lines}))
        return Decision(action, ids, files, commit, person.name, after)

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
                if line.status == ACCEPTED:
                    raise TeamError(f"^{memory_id} is no open proposal (it was accepted already)")
                raise TeamError(
                    f"^{memory_id} is no open proposal ({line.why}); "
                    f"`mdmem team propose {memory_id}` makes it one"
                )
            if not proposed and line.status == PROPOSED:
                raise TeamError(f"^{memory_id} is a proposal: accept or reject it")
            if line not in picked:
                picked.append(line)
        return picked

    # -- helpers ---------------------------------------------------------------

    def parser(self, beside: dict[str, Fields] | None = None) -> Parse:
        """How a team file is parsed: every line may open with a kind's word, with
        the fields kept beside the lines (``beside``, default: read now)."""
        beside = self.fields() if beside is None else beside

        def parse(rel: str, tf: TextFile) -> blk.ParsedFile:
            return blk.parse(rel, tf, labels=True, beside=beside)

        return parse

    def _attributes_edit(self) -> Editor | None:
        """The lines ``.gitattributes`` lacks (the team files' merge driver, the fields
        files' union merge), as an edit; None when it has them."""
        old = (self.writer.read(".gitattributes") or b"").decode("utf-8", "replace")
        lines: list[str] = []
        if ATTRIBUTES_LINE not in old:
            lines += ["# mdmem team memory: merged line by line, by id", ATTRIBUTES_LINE]
        if FIELDS_ATTRIBUTES_LINE not in old:
            lines += ["# ... and the fields beside its lines: append-only", FIELDS_ATTRIBUTES_LINE]
        if not lines:
            return None

        def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
            tf.append_lines(lines)
            return Edit()

        return edit

    def _require_folder(self) -> None:
        if not self.exists:
            raise TeamError(f"no {TEAM_DIR} in {self.checkout.root}; run `mdmem team init` first")


def _with_tags(text: str, source: Source) -> str:
    """``text`` with the tags the caller gave the memory that it does not hold."""
    missing = [
        t for t in source.tags if not re.search(rf"(?<!\S)#{re.escape(t)}(?![\w/-])", text)
    ]
    return " ".join([text, *(f"#{t}" for t in missing)]) if missing else text


def _records(memory_id: str, kept: dict[str, str | None]) -> Editor:
    values = tuple((k, v) for k, v in kept.items() if v)
    return record_appender([encode(Record(memory_id, stamp(), values))])


def _many_records(records: dict[str, dict[str, str | None]]) -> Editor:
    lines = [
        encode(Record(memory_id, stamp(), tuple((k, v) for k, v in kept.items() if v)))
        for memory_id, kept in records.items()
    ]
    return record_appender(lines)


def _legacy_fields(lines: list[TeamLine]) -> dict[str, dict[str, dict[str, str | None]]]:
    """What an older line kept on itself (kind, captured by, when, the note), for
    its fields file: the line is written in the current form by the same commit."""
    out: dict[str, dict[str, dict[str, str | None]]] = {}
    for line in lines:
        if line.legacy:
            out.setdefault(line.path, {})[line.id] = {
                "kind": line.kind,
                "captured_by": line.captured_by or None,
                "captured": line.captured or None,
                "note": line.note or None,
            }
    return out


def _rephrased(
    lines: dict[str, TeamLine], says: str
) -> Callable[[Block, TextFile], list[str]]:
    """A block rewrite giving each line the phrase ``says``: only the phrase
    changes on a current line; an older line is written in the current form."""

    def make(block: Block, tf: TextFile) -> list[str]:
        line = lines[block.id]
        if line.legacy:
            return render(line.text, line.id, line.kind, says)
        raw = [x.rstrip() for x in tf.lines[block.line_start - 1 : block.line_end]]
        return with_phrase(raw, block.id, says, replace=bool(line.says))

    return make
