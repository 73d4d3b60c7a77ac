"""What changed in a vault since a date or a commit.

:func:`changes` is the "what changed since you last ran" summary an agent
reads at the start of a session: one ``git log -p -U0`` over the range, parsed
into memories remembered, superseded, resolved and forgotten, and the commits
people made (with the memories their hunks touched).

Who wrote each line is :mod:`mdmem.git.provenance`; removing a memory from all
history is :mod:`mdmem.git.purge`. Every function takes the
:class:`~mdmem.store.memories.MemoryStore` first; the Vault exposes them as
thin methods.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import TYPE_CHECKING

from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.files.ids import ID_PATTERN
from mdmem.files.sidecar import Record, is_sidecar, note_of, parse_records
from mdmem.git.revisions import fields_at, parsed_at, rev_parse
from mdmem.store.commitrecords import CommitRecord, Side, read_records
from mdmem.store.gitstore import is_agent_email

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "Change",
    "Changes",
    "HumanEdit",
    "Superseded",
    "changes",
    "changes_after",
    "changes_within",
    "visible_changes",
]

_ID_AT_END = re.compile(rf"(?:^|\s)\^({ID_PATTERN})\s*$")
_FIELD_RE = re.compile(r"[\[(](status|by)::[ \t]*([^\])\n]*?)[ \t]*[\])]")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_APPROX_DATE = re.compile(
    r"\b(ago|yesterday|today|now|noon|midnight|last|week|weeks|day|days|hour|hours|month|months)\b"
)


@dataclass(frozen=True)
class Change:
    """One memory event in the range: who did it, in which commit, and the text."""

    id: str
    text: str | None  # now if the memory still exists, else as it was at that commit
    path: str | None
    kind: str | None
    status: str | None  # current status (None when the memory is gone)
    commit: str
    author: str
    date: str
    is_agent: bool
    op: str  # the commit's Op trailer ("edit" for a human commit without one)


@dataclass(frozen=True)
class Superseded:
    old_id: str
    new_id: str | None
    old_text: str | None
    new_text: str | None
    commit: str
    author: str
    date: str
    is_agent: bool


@dataclass(frozen=True)
class HumanEdit:
    """A commit by a person (author not ``@agents.mdmem``)."""

    commit: str
    author: str
    email: str
    date: str
    subject: str
    paths: tuple[str, ...]
    memory_ids: tuple[str, ...]  # memories whose lines the commit's hunks touched


@dataclass(frozen=True)
class Changes:
    since: str  # what was asked, as text
    base: str | None  # the last commit before the range (None: from the first commit)
    head: str | None
    commits: int
    agent_commits: int
    human_commits: int
    remembered: tuple[Change, ...]
    superseded: tuple[Superseded, ...]
    resolved: tuple[Change, ...]
    forgotten: tuple[Change, ...]
    human_edits: tuple[HumanEdit, ...]

    @property
    def empty(self) -> bool:
        return self.commits == 0


@dataclass
class _Commit:
    sha: str
    author: str
    email: str
    date: str
    subject: str
    trailers: list[tuple[str, str]]
    paths: list[str]
    plus: dict[str, Side]
    minus: dict[str, Side]
    hunks: dict[str, list[tuple[int, int]]]  # path -> (new start, new count)
    # Records the commit added to fields files (mdmem.files.sidecar): (file, record).
    records: list[tuple[str, Record]] = field(default_factory=list)

    @property
    def is_agent(self) -> bool:
        return is_agent_email(self.email)

    @property
    def op(self) -> str:
        ops = [v for k, v in self.trailers if k == "Op"]
        return ops[-1] if ops else ("edit" if not self.is_agent else "unknown")


def changes(store: MemoryStore, since: str | datetime | date) -> Changes:
    """What happened in the vault after ``since`` (a date/datetime, ISO text or a commit)."""
    base, label = _resolve_since(store, since)
    return changes_after(store, base, label)


def changes_after(
    store: MemoryStore, base: str | None, label: str, *, records: bool = True
) -> Changes:
    """What happened after the commit ``base`` (a sha git knows; None: from the
    first commit), however long the history before it.

    The commits are listed without their patches; those the writer recorded
    (:mod:`mdmem.store.commitrecords`) are read from their records, and only
    the others (a person's edits, pulled commits) are diffed. ``records=False``
    diffs every commit (one ``git log -p`` over the range), as before records.
    """
    head = store.git.head()
    if head is None:
        return Changes(label, base, None, 0, 0, 0, (), (), (), (), ())
    if not records:
        diffed = _log_patches(store, base)
        for commit in diffed:
            _statuses_from_records(store, commit)
        return _summarise(store, label, base, head, diffed)
    commits = _log_commits(store, base)
    assert commits is not None  # a base git knows
    return _summarise(store, label, base, head, _with_patches(store, commits))


def changes_within(store: MemoryStore, base: str | None, label: str, limit: int) -> Changes | None:
    """:func:`changes_after` over the newest ``limit`` commits after ``base`` at
    most (the label says when the cut applies); None when git does not know
    ``base`` (a purge rewrote it away). One ``git log`` lists and bounds them."""
    head = store.git.head()
    if head is None:
        return Changes(label, base, None, 0, 0, 0, (), (), (), (), ())
    commits = _log_commits(store, base, limit + 1)
    if commits is None:
        return None
    if len(commits) > limit:
        base, commits = commits[0].sha, commits[1:]
        label += f" (the last {limit} commits)"
    return _summarise(store, label, base, head, _with_patches(store, commits))


def _with_patches(store: MemoryStore, commits: list[_Commit]) -> list[_Commit]:
    """``commits`` filled from their records, or from their patches where none was kept."""
    kept = read_records(store.state_dir, [c.sha for c in commits])
    for commit in commits:
        record = kept.get(commit.sha)
        if record is not None:
            _fill(commit, record)
    missing = [c for c in commits if c.sha not in kept]
    if missing:
        patched = {c.sha: c for c in _patches_of(store, [c.sha for c in missing])}
        for commit in patched.values():
            _statuses_from_records(store, commit)
        commits = [patched.get(c.sha, c) for c in commits]
    return commits


def _statuses_from_records(store: MemoryStore, commit: _Commit) -> None:
    """A diffed commit's status changes kept beside the lines: each record that
    sets a status or ``by`` is the memory's side after the commit; the fields
    file before the commit says the side before it."""
    before: dict[str, dict[str, tuple[tuple[str, str], ...]]] = {}
    for side_path, record in commit.records:
        values = dict(record.values)
        if "status" not in values and "by" not in values:
            continue
        note = note_of(side_path)
        if note is None:
            continue
        memory_id = record.id
        after = commit.plus.get(memory_id)
        path = after.path if after is not None else note
        was = commit.minus.get(memory_id)
        old_path = was.path if was is not None else path
        if old_path not in before:
            before[old_path] = fields_at(store, f"{commit.sha}^", old_path)
        old = dict(before[old_path].get(memory_id, ()))
        old_status, old_by = old.get("status", "active"), (old.get("by") or "").lstrip("^")
        if was is not None and was.status != "active":  # an older vault's line said it
            old_status, old_by = was.status, was.by or old_by
        status = (values.get("status") or "active") if "status" in values else old_status
        by = (values.get("by") or "").lstrip("^") if "by" in values else old_by
        commit.minus[memory_id] = Side(old_path, old_status, old_by or None)
        commit.plus[memory_id] = Side(path, status, by or None)


def _fill(commit: _Commit, record: CommitRecord) -> None:
    commit.plus.update(record.plus)
    commit.minus.update(record.minus)
    commit.paths.extend(record.paths())


def _resolve_since(store: MemoryStore, since: str | datetime | date) -> tuple[str | None, str]:
    """(base commit or None for "from the start", a label for output)."""
    moment: datetime | None = None
    approx: str | None = None
    if isinstance(since, datetime):
        moment = since
    elif isinstance(since, date):
        moment = datetime(since.year, since.month, since.day)
    elif isinstance(since, str):
        text = since.strip()
        if not text:
            raise InvalidInputError("--since needs a date or a commit")
        if re.match(r"^\d{4}-\d{2}-\d{2}", text):
            try:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise InvalidInputError(f"not a date: {text!r}") from None
        else:
            sha = rev_parse(store, text)
            if sha is not None:
                return sha, text
            if _APPROX_DATE.search(text.lower()):
                approx = text
            else:
                raise InvalidInputError(f"--since {text!r} is neither a date nor a commit")
    else:
        raise InvalidInputError("since must be a date, a datetime or a string")
    if moment is not None:
        if moment.tzinfo is None:
            zone = getattr(store, "_tz", None)
            moment = moment.replace(tzinfo=zone) if zone else moment.astimezone()
        approx = moment.isoformat()
    assert approx is not None
    if store.git.head() is None:
        return None, approx
    out = store.git.run("rev-list", "-1", f"--before={approx}", "HEAD", "--")
    return (out.strip() or None), (since if isinstance(since, str) else approx)


_FORMAT = "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%(trailers:only,unfold)%x1f"
_PATCH = ("-p", "-U0", "-M", "--no-color", "--no-ext-diff", "--no-textconv")


def _log_patches(store: MemoryStore, base: str | None) -> list[_Commit]:
    rng = [f"{base}..HEAD"] if base else ["HEAD"]
    out = store.git.run(
        "log", "--reverse", "--no-merges", *_PATCH, _FORMAT, *rng, "--", strip=False
    )
    return _parse_log(out)


def _log_commits(
    store: MemoryStore, base: str | None, limit: int | None = None
) -> list[_Commit] | None:
    """The (newest ``limit``) commits after ``base``, oldest first, without
    their patches; None when ``base`` is unknown."""
    rng = [f"{base}..HEAD"] if base else ["HEAD"]
    most = [f"--max-count={limit}"] if limit is not None else []
    status, out, _err = store.git.execute(
        "log", "--reverse", "--no-merges", *most, _FORMAT, *rng, "--", strip=False
    )
    return _parse_log(out) if status == 0 else None


def _patches_of(store: MemoryStore, shas: list[str]) -> list[_Commit]:
    """Those commits with their patches: each diffs only the files it touched."""
    out = store.git.run_bytes(
        "log",
        "--stdin",
        "--no-walk=unsorted",
        *_PATCH,
        _FORMAT,
        "--",
        input="".join(f"{sha}\n" for sha in shas).encode(),
    )
    return _parse_log(out.decode("utf-8", "replace"))


def _parse_log(out: str) -> list[_Commit]:
    commits: list[_Commit] = []
    for record in out.split("\x1e"):
        if not record.strip():
            continue
        parts = record.split("\x1f")
        if len(parts) < 7:
            continue
        sha, author, email, when, subject, trailer_text = parts[:6]
        patch = "\x1f".join(parts[6:])
        trailers = []
        for line in trailer_text.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                trailers.append((key.strip(), value.strip()))
        commit = _Commit(sha, author, email, when, subject, trailers, [], {}, {}, {})
        _parse_patch(patch, commit)
        commits.append(commit)
    return commits


def _unquote(path: str) -> str:
    """A path as git prints it (C-quoted when it holds special characters)."""
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "ignore").decode("utf-8", "replace")
    return path


def _strip_prefix(path: str) -> str | None:
    path = _unquote(path.rstrip("\t"))
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def _parse_patch(patch: str, commit: _Commit) -> None:
    old_path: str | None = None
    new_path: str | None = None
    in_hunk = False
    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            in_hunk = False
            old_path = new_path = None
            head = line[len("diff --git ") :]
            idx = head.rfind(" b/")
            commit.paths.append(_unquote(head[idx + 3 :] if idx >= 0 else head))
            continue
        if line.startswith("@@"):
            in_hunk = True
            match = _HUNK.match(line)
            if match and new_path:
                start, count = int(match.group(3)), int(match.group(4) or "1")
                commit.hunks.setdefault(new_path, []).append((start, count))
            continue
        if not in_hunk:
            if line.startswith("--- "):
                old_path = _strip_prefix(line[4:])
            elif line.startswith("+++ "):
                new_path = _strip_prefix(line[4:])
                shown = new_path or old_path
                if shown and commit.paths:
                    commit.paths[-1] = shown
            elif line.startswith("rename to ") and commit.paths:
                commit.paths[-1] = _unquote(line[len("rename to ") :])
            continue
        if line.startswith("+") and new_path and is_sidecar(new_path):
            commit.records.extend((new_path, r) for r in parse_records([line[1:]])[0])
        elif line.startswith("+"):
            match = _ID_AT_END.search(line[1:])
            if match and new_path:
                commit.plus[match.group(1)] = _side(new_path, line[1:])
        elif line.startswith("-"):
            match = _ID_AT_END.search(line[1:])
            if match and old_path:
                commit.minus[match.group(1)] = _side(old_path, line[1:])
    commit.paths = list(dict.fromkeys(commit.paths))


def _field(line: str, name: str) -> str | None:
    for key, value in _FIELD_RE.findall(line):
        if key == name:
            return value.strip()
    return None


def _side(path: str, line: str) -> Side:
    return Side(
        path, _field(line, "status") or "active", (_field(line, "by") or "").lstrip("^") or None
    )


@dataclass
class _Event:
    commit: _Commit
    path: str | None


class _TextAt:
    """Memory texts read from git at a commit, parsed once per (rev, path)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._parsed: dict[tuple[str, str], blk.ParsedFile | None] = {}

    def block(self, rev: str, path: str | None, memory_id: str) -> tuple[str | None, str | None]:
        """(text, kind) of ``memory_id`` in ``path`` at ``rev``."""
        if path is None:
            return None, None
        key = (rev, path)
        if key not in self._parsed:
            self._parsed[key] = parsed_at(self.store, rev, path)
        found = self._parsed[key]
        block = found.by_id(memory_id) if found is not None else None
        return (block.text, block.kind) if block is not None else (None, None)

    def blocks(self, rev: str, path: str) -> list[tuple[int, int, str]]:
        self.block(rev, path, "")
        found = self._parsed.get((rev, path))
        if found is None:
            return []
        return [(b.line_start, b.line_end, b.id) for b in found.blocks if b.is_memory]


def _summarise(
    store: MemoryStore, label: str, base: str | None, head: str, commits: list[_Commit]
) -> Changes:
    created: dict[str, _Event] = {}
    removed: dict[str, _Event] = {}
    status_events: dict[str, tuple[str, _Event, str | None]] = {}  # id -> (status, event, by)
    human: list[HumanEdit] = []
    texts = _TextAt(store)
    for commit in commits:
        plus, minus = set(commit.plus), set(commit.minus)
        for memory_id in sorted(plus - minus):
            removed.pop(memory_id, None)
            if memory_id not in created:
                created[memory_id] = _Event(commit, commit.plus[memory_id].path)
        for memory_id in sorted(minus - plus):
            removed[memory_id] = _Event(commit, commit.minus[memory_id].path)
        for memory_id in sorted(plus & minus):
            after, before = commit.plus[memory_id], commit.minus[memory_id]
            if after.status != before.status:
                status_events[memory_id] = (after.status, _Event(commit, after.path), after.by)
        if not commit.is_agent:
            human.append(_human_edit(commit, texts))

    store.refresh()

    def now(memory_id: str) -> tuple[str | None, str | None, str | None, str | None]:
        block = store.catalog.block(memory_id)
        if block is None:
            return None, None, None, None
        return block.text, block.path, block.kind, block.status

    def change(memory_id: str, event: _Event, *, gone: bool = False) -> Change:
        text, path, kind, status = (None, None, None, None) if gone else now(memory_id)
        if text is None:
            rev = f"{event.commit.sha}^" if gone else event.commit.sha
            text, kind = texts.block(rev, event.path, memory_id)
            path = event.path
        c = event.commit
        return Change(
            memory_id, text, path, kind, status, c.sha, c.author, c.date, c.is_agent, c.op
        )

    remembered = [change(i, e) for i, e in created.items() if i not in removed]
    forgotten = [change(i, e, gone=True) for i, e in removed.items()]
    resolved = [
        change(i, e)
        for i, (status, e, _by) in status_events.items()
        if status == "resolved" and i not in removed
    ]
    superseded: list[Superseded] = []
    for old_id, (status, event, by) in status_events.items():
        if status != "superseded":
            continue
        old = change(old_id, event, gone=old_id in removed)
        new_text = now(by)[0] if by else None
        c = event.commit
        superseded.append(
            Superseded(old_id, by, old.text, new_text, c.sha, c.author, c.date, c.is_agent)
        )

    def order(items: Iterable[Change]) -> tuple[Change, ...]:
        index = {c.sha: n for n, c in enumerate(commits)}
        return tuple(sorted(items, key=lambda ch: (index.get(ch.commit, 0), ch.id)))

    index = {c.sha: n for n, c in enumerate(commits)}
    return Changes(
        since=label,
        base=base,
        head=head,
        commits=len(commits),
        agent_commits=sum(1 for c in commits if c.is_agent),
        human_commits=sum(1 for c in commits if not c.is_agent),
        remembered=order(remembered),
        superseded=tuple(sorted(superseded, key=lambda s: (index.get(s.commit, 0), s.old_id))),
        resolved=order(resolved),
        forgotten=order(forgotten),
        human_edits=tuple(human),
    )


def _human_edit(commit: _Commit, texts: _TextAt) -> HumanEdit:
    ids = dict.fromkeys(sorted({*commit.plus, *commit.minus}))
    md_paths = [p for p in commit.hunks if p.endswith(".md")]
    if len(md_paths) <= 20:  # mapping hunks to blocks costs one `git show` per file
        for path in md_paths:
            spans = texts.blocks(commit.sha, path)
            for start, count in commit.hunks[path]:
                if count == 0:  # a pure deletion after line `start`
                    lo, hi = start, start + 1
                    for first, last, memory_id in spans:
                        if first <= lo and hi <= last:
                            ids.setdefault(memory_id)
                    continue
                lo, hi = start, start + count - 1
                for first, last, memory_id in spans:
                    if first <= hi and lo <= last:
                        ids.setdefault(memory_id)
    return HumanEdit(
        commit.sha,
        commit.author,
        commit.email,
        commit.date,
        commit.subject,
        tuple(commit.paths),
        tuple(ids),
    )


def visible_changes(result: Changes, sees: Callable[[str | None, str | None], bool]) -> Changes:
    """``result`` with only what a reader may see: ``sees(memory id, path)`` is the
    visibility rule (mdmem.store.visibility); a person's edit keeps the files and
    memories it may see, and is left out when none are."""
    edits = []
    for h in result.human_edits:
        paths = tuple(p for p in h.paths if sees(None, p))
        if paths:
            ids = tuple(i for i in h.memory_ids if sees(i, None))
            edits.append(replace(h, paths=paths, memory_ids=ids))
    return replace(
        result,
        remembered=tuple(c for c in result.remembered if sees(c.id, c.path)),
        superseded=tuple(
            s for s in result.superseded if s.new_id is not None and sees(s.new_id, None)
        ),
        resolved=tuple(c for c in result.resolved if sees(c.id, c.path)),
        forgotten=tuple(c for c in result.forgotten if sees(c.id, c.path)),
        human_edits=tuple(edits),
    )
