"""Contacts: one profile note per person, and identity links across platforms (OrcBot).

A person is a scope-shaped id (``user:alice``); a platform id is what a host
calls a contact (``telegram:123``, ``whatsapp:+1234567890``). The host links
platform ids to a person (``vault.contacts.link("telegram:123", "user:alice")``)
and from then on:

* a session with that contact and no scope of its own records into the
  person's scope, so turns from several platforms land in one scope (OrcBot's
  ``per-peer`` session scoping, chosen by linking);
* the person's profile note ``contacts/<kind>/<name>.md`` (``contacts/user/alice.md``)
  lists the platform ids, display name, first and last seen, and links to the
  facts about them by id (``[[path#^m-…]]``, no copied text, so a fact is
  recalled once).

A contact that records turns before any link has a profile of its own
(person ``contact:<platform>-<id>``); linking it moves its platform id, first
seen and name to the person and removes the old profile, in one commit.

Scope: a profile note says ``scope: <person>`` in its frontmatter, so it
belongs to the person it describes (a file outside ``scopes/`` takes the
scope its frontmatter declares): an assistant confined to other scopes
neither recalls it nor learns from ``contact_profile`` whether a platform id
(a guessable phone number) is known. A platform id found on two profiles
(a hand edit) resolves to nobody until a person fixes it; ``doctor``
reports that and any profile note broken by hand.

Trust (docs/file-format.md#contacts): links, names and the profile's fields come from the API
caller (the host), never from text: the model tools only read profiles, and
no write verb routes text into ``contacts/``. A person may edit a profile by
hand (the writer commits that as theirs); updates read the note's current
frontmatter, so a hand-set name or link survives.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

import yaml

from mdmem.errors import InvalidInputError, MdmemError, MemoryNotFoundError, VaultFileError
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.maintenance.doctor import Problem
from mdmem.models import FACT_KINDS, Block, one_line
from mdmem.store.editors import Edit, Editor
from mdmem.store.inputs import check_chars
from mdmem.store.memories import MemoryStore
from mdmem.store.secret_guard import refuse_in_metadata

__all__ = ["CHECK", "CONTACTS_DIR", "Contacts", "Profile", "check_profiles"]

log = logging.getLogger("mdmem")

CONTACTS_DIR = "contacts"
_PLATFORM_BAD = re.compile(r"[\[\]()\s]")
_SLUG_BAD = re.compile(r"[^a-z0-9._-]+")
_MAX_NAME = 100
_MAX_FACTS = 200
# The profile's own keys; anything else a person adds to the frontmatter is kept.
_KEYS = ("person", "scope", "display_name", "platform_ids", "first_seen", "last_seen")


@dataclass(frozen=True)
class Profile:
    """One person: who they are on which platform, when seen, what is known about them."""

    person: str
    path: str
    display_name: str | None
    platform_ids: list[str]
    first_seen: str | None
    last_seen: str | None
    facts: list[str] = field(default_factory=list)  # memory ids, oldest first


def check_platform_id(value: object) -> str:
    """A platform id as sessions store it in ``[contact:: …]``: one token, no brackets."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("a platform id is a non-empty string such as telegram:123")
    check_chars(value, "the platform id")
    text = value.strip()
    if _PLATFORM_BAD.search(text) or len(text) > 200:
        raise InvalidInputError(
            f"invalid platform id {value!r}: no spaces, brackets or parentheses, at most 200"
        )
    refuse_in_metadata(text, "the platform id")
    return text


def check_person(value: object) -> str:
    """A person id: scope-shaped (``user:alice``), since the person is also a scope."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError("a person id looks like user:alice")
    return blk.validate_scope(value)


def _check_name(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInputError("a display name is a string")
    check_chars(value, "the display name")
    name = one_line(value)
    if not name or len(name) > _MAX_NAME or name != value.strip():
        raise InvalidInputError(f"a display name is one line of 1-{_MAX_NAME} characters")
    refuse_in_metadata(name, "the display name")
    return name


def profile_path(person: str) -> str:
    kind, name = person.split(":", 1)
    return f"{CONTACTS_DIR}/{kind}/{name}.md"


def _own_person(platform_id: str) -> str:
    """The person of a contact nobody linked yet: ``contact:<platform>-<id>``."""
    slug = _SLUG_BAD.sub("-", platform_id.casefold().replace(":", "-")).strip("-.")[:48]
    lossy = slug != platform_id.casefold().replace(":", "-")
    if lossy or not slug:
        digest = hashlib.sha1(platform_id.encode("utf-8")).hexdigest()[:8]
        slug = f"{slug[:39]}-{digest}" if slug else digest
    return f"contact:{slug[0] if slug[0].isalnum() else 'x'}{slug[1:]}"


def _stamp(when: datetime | None) -> str:
    moment = when if when is not None else datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # Minutes: a chat's every turn would otherwise rewrite the profile.
    return moment.astimezone(UTC).isoformat(timespec="minutes")


class Contacts:
    """The contacts of a vault: ``vault.contacts``. See the module doc."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        # vault path -> ((mtime_ns, size, inode), its frontmatter or None).
        self._parsed: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}

    # -- reads ---------------------------------------------------------------

    def person_of(self, platform_id: str) -> str | None:
        """The person a platform id is linked to; None when nobody (or, after a
        hand edit, more than one person) holds it."""
        platform_id = check_platform_id(platform_id)
        holders = [
            person
            for person, meta in self._profiles().items()
            if platform_id in meta["platform_ids"] and not person.startswith("contact:")
        ]
        if len(holders) > 1:
            # Guessing would file one person's turns in another's scope.
            log.warning(
                "%s is on the profiles of %s: resolved to nobody (mdmem doctor)",
                platform_id,
                " and ".join(holders),
            )
            return None
        return holders[0] if holders else None

    def scope_for(self, platform_id: str | None) -> str | None:
        """The scope a session with this contact records into when the host gave none."""
        if platform_id is None:
            return None
        try:
            return self.person_of(platform_id)
        except InvalidInputError:
            return None  # not a platform id a profile could hold: no link

    def profile(self, who: str) -> Profile:
        """The profile of a person, or of the person a platform id resolves to."""
        person = self._resolve(who)
        meta = self._profiles().get(person)
        if meta is None:
            raise MemoryNotFoundError(f"no contact profile for {who}")
        return self._as_profile(person, meta)

    def list(self) -> builtins.list[Profile]:
        """Every profile, by person id."""
        return [self._as_profile(p, m) for p, m in sorted(self._profiles().items())]

    # -- writes (the host's, never the model's) --------------------------------

    def link(self, platform_id: str, person: str, *, display_name: str | None = None) -> Profile:
        """Link ``platform_id`` to ``person`` (one commit): its turns resolve to that person.

        A platform id linked to someone else moves; a contact's own profile
        (turns recorded before the link) is folded into the person's.
        """
        platform_id = check_platform_id(platform_id)
        person = check_person(person)
        if person.startswith("contact:"):
            raise InvalidInputError(
                "contact:... is the profile of a contact nobody linked yet; link to a person "
                "(user:alice)"
            )
        name = _check_name(display_name) if display_name is not None else None
        with self.store.writer.batch(subject=None) as tx:
            profiles = self._profiles()
            if platform_id in profiles and not platform_id.startswith("contact:"):
                # A person is not another person's handle: linking would make
                # their ids chain (bob -> alice) or loop.
                raise InvalidInputError(f"{platform_id} is a person with a profile of their own")
            moved: dict[str, Any] = {"first_seen": None, "last_seen": None, "name": None}
            for other, meta in profiles.items():
                if other == person or platform_id not in meta["platform_ids"]:
                    continue
                if other.startswith("contact:"):
                    moved = {
                        "first_seen": meta.get("first_seen"),
                        "last_seen": meta.get("last_seen"),
                        "name": meta.get("display_name"),
                    }
                    # No file is deleted by a write: the old note says where it went.
                    tx.apply(
                        profile_path(other),
                        _merged_stub(other, person),
                        f"contact: fold {platform_id} into {person}",
                        [("Op", "contact"), ("Contact", other)],
                    )
                else:
                    self._update(
                        tx, other, lambda m: _drop_id(m, platform_id), f"unlink {platform_id}"
                    )

            def merge(meta: dict[str, Any]) -> dict[str, Any]:
                ids = [str(i) for i in meta.get("platform_ids") or []]
                if platform_id not in ids:
                    ids.append(platform_id)
                meta["platform_ids"] = ids
                if name is not None:
                    meta["display_name"] = name
                elif not meta.get("display_name") and moved["name"]:
                    meta["display_name"] = moved["name"]
                _widen(meta, moved["first_seen"], moved["last_seen"])
                return meta

            self._update(tx, person, merge, f"link {platform_id} → {person}")
        return self.profile(person)

    def unlink(self, platform_id: str) -> Profile:
        """Remove a platform id from its person's profile (one commit)."""
        platform_id = check_platform_id(platform_id)
        person = self.person_of(platform_id)
        if person is None:
            raise MemoryNotFoundError(f"{platform_id} is not linked to anyone")
        with self.store.writer.batch(subject=None) as tx:
            self._update(tx, person, lambda m: _drop_id(m, platform_id), f"unlink {platform_id}")
        return self.profile(person)

    def rename(self, who: str, display_name: str) -> Profile:
        """Set a person's display name (one commit)."""
        person = self._resolve(who)
        name = _check_name(display_name)
        if person not in self._profiles():
            raise MemoryNotFoundError(f"no contact profile for {who}")
        with self.store.writer.batch(subject=None) as tx:
            self._update(tx, person, lambda m: {**m, "display_name": name}, f"rename {person}")
        return self.profile(person)

    def refresh(self, who: str | None = None) -> builtins.list[Profile]:
        """Re-list the facts in one profile (or all) after consolidation; one commit."""
        people = [self._resolve(who)] if who is not None else sorted(self._profiles())
        with self.store.writer.batch(subject=None) as tx:
            for person in people:
                if person in self._profiles():
                    self._update(tx, person, lambda m: m, f"refresh {person}")
        return [self.profile(p) for p in people if p in self._profiles()]

    def seen(self, platform_id: str, when: datetime | None = None) -> str | None:
        """A session recorded a turn with ``platform_id``: update first/last seen.

        Runs inside the session's transaction (the turn and the profile change
        are one commit); returns the person. A contact nobody linked gets a
        profile of its own. Values a profile can't hold are skipped: the turn
        was already accepted under the session's own rules.
        """
        try:
            platform_id = check_platform_id(platform_id)
        except InvalidInputError:
            return None
        stamp = _stamp(when)
        person = self.person_of(platform_id) or _own_person(platform_id)
        meta = self._profiles().get(person)
        if (
            meta is not None
            and platform_id in meta["platform_ids"]
            and stamp >= str(meta.get("first_seen", ""))
            and stamp[:10] <= str(meta.get("last_seen", ""))[:10]
        ):
            # Seen already today: the note is not rewritten on every turn (that
            # doubled a turn's cost); profile() reads the exact last turn from
            # the session entries.
            return person

        def touch(m: dict[str, Any]) -> dict[str, Any]:
            ids = [str(i) for i in m.get("platform_ids") or []]
            if platform_id not in ids:
                ids.append(platform_id)
            m["platform_ids"] = ids
            _widen(m, stamp, stamp)
            return m

        try:
            with self.store.writer.batch(subject=None) as tx:
                self._update(tx, person, touch, f"seen {platform_id}", op=None)
        except VaultFileError as exc:
            # A profile a person broke by hand must not cost the turn: the
            # edit fails before it is applied, and doctor/the person fixes it.
            log.warning("contact profile of %s not updated: %s", person, exc)
        return person

    # -- internals -------------------------------------------------------------

    def _resolve(self, who: str) -> str:
        if not isinstance(who, str) or not who:
            raise InvalidInputError("name a person (user:alice) or a platform id")
        try:
            person = check_person(who)
        except InvalidInputError:
            person = None
        if person is not None and person in self._profiles():
            return person
        linked = self.person_of(who)
        if linked is not None:
            return linked
        own = _own_person(check_platform_id(who))
        return own if own in self._profiles() else (person or own)

    def _update(
        self,
        tx: Any,
        person: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        what: str,
        *,
        op: str | None = "contact",
    ) -> None:
        rel = profile_path(person)
        facts = self._facts_of
        trailers = [("Contact", person)] + ([("Op", op)] if op else [])
        tx.apply(rel, _profile_editor(person, change, facts), f"contact: {what}", trailers)

    def _profiles(self) -> dict[str, dict[str, Any]]:
        """person -> frontmatter of every profile, with the open transaction's edits.

        Each file's parse is cached by its stat, so a chat turn (which asks
        several times) reads only the profiles that changed.
        """
        base = self.store.root / CONTACTS_DIR
        files = sorted(base.glob("*/*.md")) if base.is_dir() else []
        fresh: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}
        for full in files:
            rel = full.relative_to(self.store.root).as_posix()
            try:
                st = full.stat()
            except OSError:
                continue
            # The writer replaces files (a new inode), so a same-size rewrite
            # within one mtime tick still shows.
            sig = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._parsed.get(rel)
            fresh[rel] = (
                cached if cached is not None and cached[0] == sig else (sig, _meta(_read(full)))
            )
        self._parsed = fresh
        metas = {rel: entry[1] for rel, entry in fresh.items()}
        tx = self.store.writer.current
        for rel in list(tx.pending) if tx is not None else []:
            if _person_of_path(rel) is not None:
                metas[rel] = _meta(_pending_text(tx, rel) or "")
        out: dict[str, dict[str, Any]] = {}
        for rel, meta in sorted(metas.items()):
            person = _person_of_path(rel)
            if person is None or not meta or meta.get("merged_into"):
                continue
            out[person] = _normal(dict(meta))
        return out

    def _as_profile(self, person: str, meta: dict[str, Any]) -> Profile:
        name = meta.get("display_name")
        seen = dict(meta)
        # The note is written at most daily per contact; the turns say exactly when.
        ids = set(meta["platform_ids"])
        for b in self.store.catalog.blocks(memories_only=True):
            if b.kind == "chat_message" and b.field("contact") in ids:
                _widen(seen, _stamp(b.created), _stamp(b.created))
        return Profile(
            person=person,
            path=profile_path(person),
            display_name=str(name) if name else None,
            platform_ids=list(meta["platform_ids"]),
            first_seen=str(seen["first_seen"]) if seen.get("first_seen") else None,
            last_seen=str(seen["last_seen"]) if seen.get("last_seen") else None,
            facts=[
                b.id for b in self._facts_of(person, meta["platform_ids"], str(name or "") or None)
            ],
        )

    def _facts_of(
        self, person: str, platform_ids: builtins.list[str], name: str | None = None
    ) -> builtins.list[Block]:
        """Active durable memories about the person: in their scope, or naming them
        (a group chat's ``[speaker:: …]`` may name them by their display name)."""
        names = {person, *platform_ids}
        spoken = (name or "").casefold()
        found = [
            b
            for b in self.store.catalog.blocks(memories_only=True)
            if b.status == "active"
            and b.kind in FACT_KINDS
            and (
                (b.scope == person and not person.startswith("contact:"))
                or any(b.field(k) in names for k in ("contact", "speaker", "person"))
                or (bool(spoken) and (b.field("speaker") or "").casefold() == spoken)
            )
        ]
        found.sort(key=lambda b: (b.created, b.id))
        return found[:_MAX_FACTS]


CHECK = "contact profiles"


def check_profiles(store: MemoryStore) -> list[Problem]:
    """``doctor``'s check of ``contacts/``: what a hand edit broke, one problem each.

    A profile note whose frontmatter doesn't parse, names another person than
    its path, lacks its scope, holds a platform id mdmem would refuse or a
    seen time that is not a time, and a platform id on two people's profiles.
    Nothing is fixed automatically: each needs a person's decision (or
    ``mdmem contacts refresh`` for a missing scope). Other notes a person
    keeps in ``contacts/`` are theirs and not looked at.
    """
    base = store.root / CONTACTS_DIR
    problems: list[Problem] = []
    holders: dict[str, list[str]] = {}

    def bad(rel: str, what: str) -> None:
        problems.append(Problem(CHECK, f"{rel}: {what}", False))

    for full in sorted(base.glob("*/*.md")) if base.is_dir() else []:
        rel = full.relative_to(store.root).as_posix()
        person = _person_of_path(rel)
        if person is None:
            continue  # not at a profile's place: a person's own note
        text = _read(full)
        try:
            meta = _strict_meta(text)
        except ValueError as exc:
            bad(rel, f"the frontmatter can't be read ({one_line(str(exc), 120)})")
            continue
        if meta.get("person") != person:
            bad(rel, f"says person {meta.get('person')!r} but its place is {person}'s")
        if meta.get("merged_into"):
            continue
        if meta.get("scope") != person:
            bad(
                rel,
                f"is not in {person}'s scope (scope: {meta.get('scope')!r}); "
                "mdmem contacts refresh sets it",
            )
        ids = meta.get("platform_ids") or []
        if not isinstance(ids, list):
            bad(rel, "platform_ids is not a list")
            ids = []
        for raw in ids:
            try:
                holders.setdefault(check_platform_id(str(raw)), []).append(person)
            except MdmemError as exc:
                bad(rel, f"platform id {str(raw)!r} is not valid ({one_line(str(exc), 80)})")
        for key in ("first_seen", "last_seen"):
            value = meta.get(key)
            stamp_ok = isinstance(value, datetime) or blk.parse_datetime(str(value)) is not None
            if value is not None and not stamp_ok:
                bad(rel, f"{key} {value!r} is not a date and time")
    for platform_id, people in sorted(holders.items()):
        linked = sorted({p for p in people if not p.startswith("contact:")})
        if len(linked) > 1:
            problems.append(
                Problem(
                    CHECK,
                    f"{platform_id} is on the profiles of {' and '.join(linked)}: its turns "
                    "resolve to nobody until one profile drops it",
                    False,
                )
            )
    return problems


def _strict_meta(text: str) -> dict[str, Any]:
    """A profile's frontmatter; ValueError saying what is wrong with it."""
    if not text.startswith("---"):
        raise ValueError("no frontmatter")
    end = re.search(r"^---[ \t]*$", text[3:], re.MULTILINE)
    if end is None:
        raise ValueError("the frontmatter is not closed")
    try:
        meta = yaml.safe_load(text[3 : 3 + end.start()])
    except yaml.YAMLError as exc:
        raise ValueError(str(exc).split("\n", 1)[0]) from None
    if not isinstance(meta, dict):
        raise ValueError("the frontmatter is not a map of keys")
    return meta


def _person_of_path(rel: str) -> str | None:
    parts = PurePosixPath(rel).parts
    if len(parts) != 3 or parts[0] != CONTACTS_DIR or not parts[2].endswith(".md"):
        return None
    try:
        return blk.validate_scope(f"{parts[1]}:{parts[2][:-3]}")
    except InvalidInputError:
        return None


def _pending_text(tx: Any, rel: str) -> str | None:
    if tx is None or rel not in tx.pending:
        return None
    return "".join(tx.pending[rel].tf.lines)


def _read(full: Any) -> str:
    try:
        return decode(full.read_bytes()).text
    except (OSError, SkipFile):
        return ""


def _meta(text: str) -> dict[str, Any] | None:
    """A note's frontmatter, or None when it has none (not a profile)."""
    if not text.startswith("---"):
        return None
    try:
        meta = blk.parse(
            f"{CONTACTS_DIR}/x/y.md", TextFile(lines=text.splitlines(True))
        ).frontmatter
    except SkipFile:
        return None
    return dict(meta) if isinstance(meta, dict) else None


def _normal(meta: dict[str, Any]) -> dict[str, Any]:
    """Platform ids as strings, and seen times as stamps (YAML may have read a
    hand-typed time as a datetime)."""
    meta["platform_ids"] = [str(i) for i in meta.get("platform_ids") or []]
    for key in ("first_seen", "last_seen"):
        value = meta.get(key)
        if isinstance(value, datetime):
            meta[key] = _stamp(value)
        elif value is not None:
            meta[key] = str(value)
    return meta


def _drop_id(meta: dict[str, Any], platform_id: str) -> dict[str, Any]:
    meta["platform_ids"] = [str(i) for i in meta.get("platform_ids") or [] if str(i) != platform_id]
    return meta


def _widen(meta: dict[str, Any], first: str | None, last: str | None) -> None:
    if first and (not meta.get("first_seen") or str(meta["first_seen"]) > first):
        meta["first_seen"] = first
    if last and (not meta.get("last_seen") or str(meta["last_seen"]) < last):
        meta["last_seen"] = last


def _merged_stub(person: str, into: str) -> Editor:
    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        front = yaml.safe_dump(
            {"person": person, "scope": person, "merged_into": into}, sort_keys=False
        )
        tf.lines[:] = []
        tf.append_lines(
            [
                "---",
                *front.rstrip("\n").split("\n"),
                "---",
                f"# {person}",
                "",
                f"Merged into [[{profile_path(into).removesuffix('.md')}]].",
            ]
        )
        return Edit()

    return edit


def _profile_editor(
    person: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    facts: Callable[[str, list[str], str | None], list[Block]],
) -> Editor:
    """Re-render a profile from its current frontmatter (a person's edits kept)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        current = _meta("".join(tf.lines)) or {}
        meta = change(dict(current))
        ids = [str(i) for i in meta.get("platform_ids") or []]
        ordered: dict[str, Any] = {
            "person": person,
            # The note belongs to its person's scope (see the module doc).
            "scope": person,
            "display_name": meta.get("display_name"),
            "platform_ids": ids,
            "first_seen": meta.get("first_seen"),
            "last_seen": meta.get("last_seen"),
        }
        ordered = {k: v for k, v in ordered.items() if v not in (None, "")}
        ordered.update({k: v for k, v in meta.items() if k not in _KEYS})
        front = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=10_000)
        name = str(meta.get("display_name") or person)
        title = one_line(name.replace("[", "(").replace("]", ")").replace("^", "").strip("#"))
        lines = ["---", *front.rstrip("\n").split("\n"), "---", f"# {title or person}", ""]
        lines.append("Platform ids: " + (", ".join(f"`{i}`" for i in ids) or "none"))
        known = facts(person, ids, str(meta.get("display_name") or "") or None)
        lines += ["", "## Facts", ""]
        lines += [f"- {b.kind} [[{b.path.removesuffix('.md')}#^{b.id}]]" for b in known] or [
            "- none yet"
        ]
        tf.lines[:] = []
        tf.append_lines(lines)
        return Edit()

    return edit
