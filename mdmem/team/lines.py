"""The team tier's line format: a sentence, a kind's word, who reviewed it, an id.

A team line reads as a note a reviewer understands::

    - Gotcha: Payment tests need PAYMENTS_SANDBOX=1. #payments — accepted by Bob ^m-01jd3k5x7q

It opens with the kind's word (``Gotcha:``, :data:`mdmem.models.KIND_LABELS`),
ends with a short phrase — ``proposed by Ada`` while it is a proposal,
``accepted by Bob`` once a teammate accepted it — and its ``^id``. What else
mdmem knows about the line (its kind, who captured it in the proposer's
vault and when, the proposer's note) lives beside the file, keyed by id, in
an append-only fields file marked ``merge=union``
(``.mdmem/team/.fields/gotchas.md.jsonl``, :mod:`mdmem.files.sidecar`), so two
teammates' proposals merge without a conflict.

**The phrase is the line's say-so, never its provenance.** Anyone can type
``accepted by Bob``. Whether a line counts as accepted comes from git
(:mod:`mdmem.team.provenance`: an acceptance commit by someone other than
its proposer, of the text the line holds now); ``mdmem team check`` names a
line whose phrase git does not bear out. The phrase is for the person
reading the file or a diff.

Files written before this format keep their fields on the line
(``[kind:: gotcha] [proposed_by:: Ada] [accepted_by:: Bob] …``) and read as
they always did; ``accept`` rewrites such a line in the new form.

Fields that tie a memory to a person — a person's or contact's scope,
``contact``, ``speaker`` — keep a memory out of the tier
(:func:`personal_reason`); a memory's bookkeeping (``session``, ``role``,
``host``, ...) is simply never copied.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from mdmem.files import blocks as blk
from mdmem.files.render import render_list_item
from mdmem.models import Block, one_line

__all__ = [
    "ACCEPTED",
    "KEPT_FIELDS",
    "LEGACY_FIELDS",
    "PERSONAL_FIELDS",
    "PERSONAL_SCOPES",
    "PROPOSED",
    "UNREVIEWED",
    "TeamLine",
    "as_block",
    "clean_name",
    "digest",
    "file_for_kind",
    "personal_reason",
    "phrase",
    "render",
    "team_line",
    "today",
    "with_phrase",
]

PROPOSED = "proposed"
ACCEPTED = "accepted"
UNREVIEWED = "unreviewed"
#: Fields kept beside a team line (its fields file), in the order they are written.
KEPT_FIELDS = ("kind", "captured_by", "captured", "note")
#: Fields a line of the older format carries on itself.
LEGACY_FIELDS = (
    "kind",
    "captured_by",
    "captured",
    "proposed_by",
    "proposed",
    "note",
    "status",
    "accepted_by",
    "accepted",
)
#: Fields that tie a memory to a person or a conversation: never in a team file.
PERSONAL_FIELDS = frozenset({"contact", "speaker", "session", "role", "scope", "episode"})
#: Of those, the ones that make a memory itself personal (it is about, or by, someone).
_PERSONAL_MEMORY = frozenset({"contact", "speaker"})
#: Scope kinds that belong to a person (``user:ada``) or a contact.
PERSONAL_SCOPES = ("user:", "person:", "contact:")
_NAME_BAD = re.compile(r"[\[\]()^#`|\\\r\n\t\u2013\u2014]+|-{2,}")
_KIND_FILES = {"decision": "decisions.md", "gotcha": "gotchas.md", "bug_fix": "gotchas.md"}
# "… — accepted by Bob" ending a line's text (the last such phrase: the text
# itself may say "— accepted by …" earlier). An en dash or "--" is read too.
_PHRASE = re.compile(
    r"^(?P<text>.*?)\s*(?:\u2014|\u2013|--)\s*(?P<word>proposed|accepted) by "
    r"(?P<name>(?:(?!--)[^\u2013\u2014\n])+?)\s*$",
    re.DOTALL,
)
_DASH = "\u2014"


@dataclass(frozen=True)
class TeamLine:
    """One memory of the team tier: what its line says, and what git says of it.

    ``says``/``says_by`` are the line's own phrase (or an older line's fields);
    ``status`` and the ``proposed_*``/``accepted_*`` values come from git
    (:func:`mdmem.team.provenance.review`), never from the line. Until git was
    asked, ``status`` is what the line claims of a proposal, else unreviewed.
    """

    id: str
    path: str  # repository-relative
    line: int  # 1-based, first line of the item
    line_end: int
    text: str
    kind: str
    tags: tuple[str, ...]
    says: str  # "proposed" | "accepted" | "" (the line's word for itself)
    says_by: str
    captured_by: str
    captured: str
    note: str
    fields: tuple[tuple[str, str], ...]
    legacy: bool = False  # the older format: fields on the line
    status: str = UNREVIEWED  # from git: "accepted" | "proposed" | "unreviewed"
    proposed_by: str = ""
    proposed_email: str = ""
    proposed: str = ""  # YYYY-MM-DD
    accepted_by: str = ""
    accepted: str = ""
    accept_commit: str = ""
    why: str = ""  # why git does not show it accepted (an unreviewed line)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def digest(self) -> str:
        return digest(self.text)

    @property
    def created(self) -> datetime:
        """When it was accepted (else proposed, else captured): the age a prompt shows."""
        for value in (self.accepted, self.proposed, self.captured):
            when = blk.parse_datetime(value) if value else None
            if when is not None:
                return when
        return datetime.now(UTC)

    def field(self, name: str) -> str | None:
        return dict(self.fields).get(name)

    def reviewed(
        self,
        *,
        status: str,
        why: str = "",
        proposed_by: str = "",
        proposed_email: str = "",
        proposed: str = "",
        accepted_by: str = "",
        accepted: str = "",
        accept_commit: str = "",
    ) -> TeamLine:
        """This line with what git says of it (see :mod:`mdmem.team.provenance`)."""
        return replace(
            self,
            status=status,
            why=why,
            proposed_by=proposed_by,
            proposed_email=proposed_email,
            proposed=proposed,
            accepted_by=accepted_by,
            accepted=accepted,
            accept_commit=accept_commit,
        )


def digest(text: str) -> str:
    """What an acceptance binds to: the line's text, its spacing aside."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def team_line(block: Block) -> TeamLine:
    """The :class:`TeamLine` of a parsed block of a team file (either format;
    parse with ``labels=True`` and the fields kept beside the file)."""
    f = dict(block.fields)
    legacy = any(key in f for key in LEGACY_FIELDS if key != "kind") and not _has_phrase(block.text)
    text, says, says_by = block.text, "", ""
    if legacy:
        if f.get("status", "").strip().lower() == PROPOSED:
            says, says_by = PROPOSED, f.get("proposed_by", "")
        elif f.get("accepted_by"):
            says, says_by = ACCEPTED, f.get("accepted_by", "")
    elif (found := _PHRASE.match(block.text)) is not None:
        text, says, says_by = found["text"], found["word"], found["name"].strip()
    return TeamLine(
        id=block.id,
        path=block.path,
        line=block.line_start,
        line_end=block.line_end,
        text=text,
        kind=block.kind,
        tags=block.tags,
        says=says,
        says_by=says_by,
        captured_by=f.get("captured_by", ""),
        captured=f.get("captured", ""),
        note=f.get("note", ""),
        fields=block.fields,
        legacy=legacy,
        status=PROPOSED if says == PROPOSED else UNREVIEWED,
    )


def _has_phrase(text: str) -> bool:
    return _PHRASE.match(text) is not None


def phrase(word: str, name: str) -> str:
    """``proposed by Ada`` / ``accepted by Bob``."""
    return f"{word} by {clean_name(name)}"


def render(text: str, memory_id: str, kind: str, says: str) -> list[str]:
    """A team line: the kind's word, the text (its tags in it), the phrase, the id."""
    lines = render_list_item(text, memory_id, label=blk.kind_label(kind))
    return with_phrase(lines, memory_id, says, replace=False)


def with_phrase(lines: list[str], memory_id: str, says: str, *, replace: bool = True) -> list[str]:
    """``lines`` of an item with ``— says`` before the id; ``replace``: instead of
    the phrase its last line ends with (a text that itself ends in such words
    keeps them: only the last phrase is the line's)."""
    last = lines[-1]
    tail = f" ^{memory_id}"
    body = last[: -len(tail)] if last.endswith(tail) else last
    found = _PHRASE.match(body) if replace else None
    if found is not None:
        body = found["text"]
    return [*lines[:-1], f"{body.rstrip()} {_DASH} {says}{tail}"]


def as_block(line: TeamLine) -> Block:
    """The line as a block the recall pipeline's rules can rank."""
    return Block(
        id=line.id,
        path=line.path,
        line_start=line.line,
        line_end=line.line_end,
        heading="",
        text=line.text,
        kind=line.kind,
        tags=line.tags,
        scope="",
        status="active",
        created=line.created,
        updated=None,
        content_hash=line.digest,
        fields=(),
        is_memory=True,
    )


def personal_reason(scope: str, fields: tuple[tuple[str, str], ...]) -> str | None:
    """Why a memory may not be proposed (a person's or contact's scope, or it is
    about or by someone: a ``contact`` or ``speaker``), or None. A hook's
    capture carries its session: that is bookkeeping the team line never
    copies, not a reason to refuse."""
    if scope.startswith(PERSONAL_SCOPES):
        return f"it is in the personal scope {scope}"
    for key, value in fields:
        if key in _PERSONAL_MEMORY and value.strip():
            return f"it carries the personal field [{key}::]"
        if key == "scope" and value.strip().startswith(PERSONAL_SCOPES):
            return f"it is in the personal scope {value.strip()}"
    return None


def clean_name(name: str) -> str:
    """A person's or agent's name as the line and its fields hold it: one line, no
    markdown structure, no dash that would end the phrase early."""
    return one_line(_NAME_BAD.sub(" ", name)).strip()[:80] or "unknown"


def today(now: datetime | None = None) -> str:
    return f"{(now or datetime.now(UTC)):%Y-%m-%d}"


def file_for_kind(kind: str) -> str:
    """The team file a memory of ``kind`` goes to by default."""
    return _KIND_FILES.get(kind, "conventions.md")
