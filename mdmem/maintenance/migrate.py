"""``mdmem admin migrate``: a vault of an older format, in the line format, by one commit.

Before wave 5 a memory line carried its machine fields inline
(``- Deploys happen on Tuesdays [kind:: decision] [status:: superseded]
[by:: ^m-…] [updated:: …] ^m-…``), retired memories sat between active ones,
and a session turn was a ``## 2026-01-15 14:23:05 · user`` section ending in
``[role:: user] [source:: telegram] … ^m-…``. mdmem reads that format as it
always did; this moves a vault to the line format (docs/file-format.md):

* every field of every memory goes beside its note, in the note's fields
  file (:mod:`mdmem.files.sidecar`): one record per memory holding all it
  knows — its kind, the tags on its line, every field — so no line has to
  carry them again;
* a memory file's line (``MEMORY.md``, ``USER.md``, ``LEARNING.md``,
  ``WORLD.md``, of the root or a scope) keeps its text, tags and id, and
  opens with its kind's word when its kind is not the file's
  (``- Decision: …``); a word that opened the text (``Note: …``) is escaped
  so it stays text; a superseded, resolved or archived one moves to the
  note's archive (``MEMORY.earlier.md``), linked to what replaced it;
* a session file reads as a transcript: ``**Ana** (09:12): …`` under the
  day's heading (a turn whose text needs more than a paragraph keeps a
  heading of its own, ``### Ana (09:12)``);
* every other line with fields (daily logs, the journal, episodes, a
  person's notes with ids) loses only its fields, which go beside it;
* ``.gitattributes`` gains the merge lines of the fields files and archives.

Nothing else changes: ids, text, kind, status, scope, tags and every field
read back as before (the migration checks it, memory by memory, before it
writes, and refuses naming the first difference). A dry run (the default)
returns the diff; ``apply`` writes one commit (``Op: migrate``), revertible
with ``git revert``, and then names that commit in
``.git-blame-ignore-revs`` in a commit of its own, so ``git blame`` looks
past it. ``history`` follows a memory across the migration commit (the
versions before it are read from their inline fields, the ones after from
the fields files). Running it again finds nothing to do.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from mdmem.errors import ConflictError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files import escape as esc
from mdmem.files import render
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.models import Block
from mdmem.store.editors import Edit, Editor, append_item
from mdmem.store.fieldchanges import RETIRED, archive_title, clean_lines, kept_values
from mdmem.store.gitattributes import FIELDS_LINES

if TYPE_CHECKING:
    from mdmem.files.fieldfiles import FieldFiles
    from mdmem.store.memories import MemoryStore

__all__ = ["Migration", "migrate", "needs_migration"]

_IGNORE_REVS = ".git-blame-ignore-revs"
_LEGACY_TURN = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})(?::\d{2})? · (.+)$")


@dataclass
class Migration:
    """What ``migrate`` did (or, in a dry run, would do)."""

    applied: bool
    files: list[str] = field(default_factory=list)  # notes rewritten (archives included)
    memories: int = 0  # memories whose fields went beside them
    archived: int = 0  # retired lines moved to their note's archive
    transcripts: int = 0  # session files written as transcripts
    diff: str = ""
    commit: str | None = None  # the migration commit
    blame_commit: str | None = None  # the commit naming it in .git-blame-ignore-revs

    @property
    def nothing_to_do(self) -> bool:
        return not self.files and not self.memories


@dataclass
class _Plan:
    records: dict[str, list[tuple[str, list[tuple[str, str | None]]]]] = field(
        default_factory=dict
    )  # note -> (id, values) to keep beside it
    rewrites: dict[str, tuple[bytes, list[str]]] = field(default_factory=dict)  # note -> (was, now)
    moved: dict[str, list[list[str]]] = field(default_factory=dict)  # archive -> items to append
    expected: dict[str, Block] = field(default_factory=dict)  # id -> the memory as read now
    archived: int = 0
    transcripts: int = 0


def needs_migration(store: MemoryStore) -> list[str]:
    """The notes holding a memory in an older format (fields on its line, or none
    kept beside it), for ``doctor``."""
    store.refresh()
    fields = store.catalog.fields
    return [
        path
        for path, state in sorted(store.catalog.files.items())
        if any(_older(block, fields) for block in state.parsed.blocks)
    ]


def _older(block: Block, fields: FieldFiles) -> bool:
    """A memory of the older format: fields on its line and none kept beside it.
    A memory with no field but its file's kind (a plain fact, a log entry, an
    ingested chunk) keeps nothing beside it in the line format either."""
    return block.is_memory and bool(block.fields) and fields.fields(block.id) is None


def migrate(store: MemoryStore, *, apply: bool = False) -> Migration:
    """Move the vault to the line format (see the module doc); a dry run unless ``apply``."""
    with store.writer.writing():
        store.refresh()
        plan = _plan(store)
        result = Migration(applied=False, archived=plan.archived, transcripts=plan.transcripts)
        result.memories = sum(len(v) for v in plan.records.values())
        attributes = _attributes(store)
        if not plan.records and not plan.rewrites and not plan.moved and attributes is None:
            return result
        subject = f"migrate: the line format ({result.memories} memories)"
        trailers = [("Op", "migrate")]
        with store.writer.transaction(subject, dry_run=not apply) as tx:
            for note in sorted({*plan.records, *plan.rewrites, *plan.moved}):
                records = plan.records.get(note)
                if records:
                    tx.record_many(note, records, refresh=False)
                if note in plan.rewrites:
                    was, now = plan.rewrites[note]
                    tx.apply(note, _replacer(note, was, now), subject, trailers)
                for item in plan.moved.get(note, []):
                    tx.apply(note, _archive_appender(note, item), subject, trailers)
            if attributes is not None:
                tx.stage_raw_file(".gitattributes", attributes)
            tx.set_message(subject, trailers)
            # Before anything is written: every memory reads as it did, or nothing happens.
            _check(store, plan)
        result.files = sorted({*plan.rewrites, *plan.moved})
        if not apply:
            result.diff = _diff(tx.changes)
            return result
        result.applied = True
        result.commit = store.git.head()
    result.blame_commit = _ignore_in_blame(store, result.commit)
    return result


# -- planning ---------------------------------------------------------------------------


def _plan(store: MemoryStore) -> _Plan:
    plan = _Plan()
    fields = store.catalog.fields
    for path, state in sorted(store.catalog.files.items()):
        memories = [b for b in state.parsed.blocks if b.is_memory]
        legacy = [b for b in memories if _older(b, fields)]
        if not legacy:
            continue
        raw = (store.root / path).read_bytes()
        try:
            tf = decode(raw)
        except SkipFile:
            continue  # doctor names it; nothing of it is read as memories either
        tf.check_writable(path)
        parsed = blk.parse(path, tf, beside=store.catalog.fields.view(path))
        for block in legacy:
            plan.expected[block.id] = block
        if blk.default_kind_for(path) == "chat_message" and _transcript(path, tf, parsed, plan):
            continue
        _rewrite_lines(path, tf, parsed, legacy, plan)
    return plan


def _values(block: Block, old: list[str]) -> list[tuple[str, str | None]]:
    values = dict(kept_values(block, None))
    tags = blk.tags_on(old)
    if tags:
        values["tags"] = " ".join(tags)
    return list(values.items())


def _rewrite_lines(
    path: str, tf: TextFile, parsed: blk.ParsedFile, legacy: list[Block], plan: _Plan
) -> None:
    """A note's memories: fields beside, memory-file items in the line format,
    retired ones to the archive; every other byte as it was."""
    lines = list(tf.lines)  # with their endings, so untouched lines keep their bytes
    memory_file = blk.memory_file_kind(path) is not None and blk.unarchived_path(path) is None
    # Bottom-up, so earlier blocks' line numbers hold.
    for block in sorted(legacy, key=lambda b: -b.line_start):
        start, end = block.line_start - 1, block.line_end
        old = [line.rstrip("\r\n") for line in lines[start:end]]
        values = _values(block, old)
        item = blk.list_marker(old[0]) is not None
        if memory_file and item and block.status in RETIRED:
            target = blk.archive_path(path)
            plan.moved.setdefault(target, []).insert(
                0, clean_lines(block, old, target, dict(values))
            )
            plan.records.setdefault(target, []).append((block.id, values))
            # One separating blank line goes with it, as forget takes it.
            gap = end < len(lines) and not lines[end].strip()
            if gap and (start == 0 or not lines[start - 1].strip()):
                end += 1
            del lines[start:end]
            plan.archived += 1
            continue
        plan.records.setdefault(path, []).append((block.id, values))
        if memory_file and item:
            new = clean_lines(block, old, path, dict(values))
            marker = blk.list_marker(old[0])
            if marker is not None and marker != "- ":
                new = [marker + new[0][2:]] + [" " * len(marker) + n[2:] for n in new[1:]]
        else:
            new = _without_fields(old)
        if new != old:
            lines[start:end] = [line + tf.newline for line in new]
    if lines != tf.lines:
        plan.rewrites[path] = (tf.to_bytes(), lines)


def _without_fields(lines: list[str]) -> list[str]:
    """Lines with the live inline fields taken off (the line carrying the id)."""
    out = list(lines)
    for i in range(len(out) - 1, -1, -1):
        if "::" in out[i] and "^" in out[i]:
            head, ident = out[i].rsplit(" ^", 1) if " ^" in out[i] else (out[i], "")
            text, found = esc.take_fields(head)
            if found:
                out[i] = f"{text.rstrip()} ^{ident}" if ident else text.rstrip()
            break
    return out


def _transcript(path: str, tf: TextFile, parsed: blk.ParsedFile, plan: _Plan) -> bool:
    """A session file of ``## 2026-01-15 14:23:05 · user`` turns, written again as a
    transcript; False (leave it to the line rewrite) when it holds anything else."""
    turns = [b for b in parsed.blocks if b.is_memory]
    others = [b for b in parsed.blocks if not b.is_memory and not b.id.endswith("#frontmatter")]
    if not turns or others or any(b.kind not in ("chat_message", "tool_output") for b in turns):
        return False
    parts = [_LEGACY_TURN.match(b.heading) for b in turns]
    if any(p is None for p in parts):
        return False
    first = turns[0].line_start - 1
    head = [line.rstrip("\r\n") for line in tf.lines[:first]]
    while head and not head[-1].strip():
        head.pop()
    out = [*head]
    day = None
    for block, match in zip(turns, parts, strict=True):
        assert match is not None
        when, clock, label = match.groups()
        old = [line.rstrip("\r\n") for line in tf.lines[block.line_start - 1 : block.line_end]]
        if when != day:
            out += ["", f"## {when}"]
            day = when
        if block.kind == "tool_output":
            name = f"{block.field('tool') or label.removeprefix('tool ').strip()} output"
        else:
            name = block.field("speaker") or block.field("role") or label
        tags = [t for t in blk.tags_on(old[1:]) if f"#{t}" not in block.text.lower()]
        out += ["", *render.render_turn(name, clock, block.text, block.id, tags=tags)]
        plan.records.setdefault(path, []).append((block.id, _values(block, old)))
    now = [line + tf.newline for line in out]
    if now != tf.lines:
        plan.rewrites[path] = (tf.to_bytes(), now)
    plan.transcripts += 1
    return True


def _attributes(store: MemoryStore) -> bytes | None:
    """``.gitattributes`` with the line format's merge lines, or None when it has them."""
    path = store.root / ".gitattributes"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if "**/.fields/*.jsonl" in text and "*.earlier.md" in text:
        return None
    joiner = "" if not text or text.endswith("\n") else "\n"
    return (text + joiner + FIELDS_LINES).encode("utf-8")


# -- editors ----------------------------------------------------------------------------


def _replacer(note: str, was: bytes, now: list[str]) -> Editor:
    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if tf.to_bytes() != was:
            raise ConflictError(f"{note} changed while it was migrated; run the migration again")
        tf.lines[:] = now
        return Edit()

    return edit


def _archive_appender(target: str, item: list[str]) -> Editor:
    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if not tf.lines:
            tf.append_lines([*archive_title(target), ""])
        append_item(tf, item)
        return Edit()

    return edit


# -- checks -----------------------------------------------------------------------------


def _same(before: Block, after: Block | None) -> str | None:
    """What differs between a memory before and after the migration (None: nothing)."""
    if after is None:
        return "it is gone"
    for name in ("text", "kind", "scope", "created"):
        if getattr(before, name) != getattr(after, name):
            return f"its {name} would read {getattr(after, name)!r}, not {getattr(before, name)!r}"
    if before.status != after.status:
        return f"its status would read {after.status}, not {before.status}"
    if set(before.tags) - set(after.tags):
        return f"it would lose the tags {sorted(set(before.tags) - set(after.tags))}"
    if dict(before.fields) != {k: v for k, v in after.fields if k in dict(before.fields)}:
        return "its fields would read otherwise"
    return None


def _check(store: MemoryStore, plan: _Plan) -> None:
    """Inside the migration's transaction (the catalog reads its pending files):
    every memory reads as it did (see :func:`_same`), or the transaction ends unwritten."""
    for memory_id, before in plan.expected.items():
        why = _same(before, store.catalog.block(memory_id))
        if why is not None:
            raise MdmemError(f"migrate refused: ^{memory_id} ({before.path}): {why}")


def _ignore_in_blame(store: MemoryStore, commit: str | None) -> str | None:
    """Name the migration commit in ``.git-blame-ignore-revs`` (a commit of its own)."""
    if commit is None:
        return None
    path = store.root / _IGNORE_REVS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    if commit in text:
        return None
    line = f"# mdmem admin migrate ({datetime.now().date().isoformat()}): the line format\n"
    joiner = "" if not text or text.endswith("\n") else "\n"
    data = (text + joiner + line + commit + "\n").encode("utf-8")
    with store.writer.transaction("migrate: git blame looks past the migration") as tx:
        tx.stage_raw_file(_IGNORE_REVS, data)
        tx.set_message(
            "migrate: git blame looks past the migration",
            [("Op", "migrate"), ("Ignores", commit)],
        )
    return store.git.head()


def _diff(changes: list[tuple[str, bytes | None, bytes]]) -> str:
    out: list[str] = []
    for rel, before, after in sorted(changes):
        old = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new = after.decode("utf-8", "replace").splitlines(keepends=True)
        out += difflib.unified_diff(
            old, new, fromfile=f"a/{rel}" if before is not None else "/dev/null", tofile=f"b/{rel}"
        )
    return "".join(out)
