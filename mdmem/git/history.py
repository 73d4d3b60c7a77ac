"""Git-native views of a vault: what changed, who wrote it, and forgetting for real.

* :func:`changes` — the "what changed since you last ran" summary an agent
  reads at the start of a session, from one ``git log -p -U0`` over the range.
* :func:`blame` / :func:`provenance` — who wrote each line of a memory, from
  ``git blame --porcelain``, cached per (path, blob) so repeated hits are cheap.
* :func:`purge` — remove a memory's text from every commit (blobs and commit
  messages), keeping the number of commits, then expire reflogs and prune.

Every function takes the :class:`~mdmem.vault.Vault` first; the Vault exposes
them as thin methods.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, TypeVar

from mdmem.errors import GitError, InvalidInputError, MemoryNotFoundError
from mdmem.git.versions import parsed_at
from mdmem.git.versions import versions as history_of
from mdmem.store import blocks as blk
from mdmem.store.gitstore import _SAFE_CONFIG, AGENT_EMAIL_DOMAIN
from mdmem.store.ids import ID_PATTERN, normalize_id
from mdmem.store.textfile import safe_path

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore as Vault

__all__ = [
    "PURGED",
    "Change",
    "Changes",
    "HumanEdit",
    "LineAuthor",
    "Provenance",
    "PurgeResult",
    "Superseded",
    "blame",
    "changes",
    "clear_blame_cache",
    "provenance",
    "purge",
]

PURGED = "[PURGED]"
UNCOMMITTED = "0" * 40
_ID_AT_END = re.compile(rf"(?:^|\s)\^({ID_PATTERN})\s*$")
_FIELD_RE = re.compile(r"[\[(](status|by)::[ \t]*([^\])\n]*?)[ \t]*[\])]")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_APPROX_DATE = re.compile(
    r"\b(ago|yesterday|today|now|noon|midnight|last|week|weeks|day|days|hour|hours|month|months)\b"
)


def _is_agent(email: str) -> bool:
    return email.endswith("@" + AGENT_EMAIL_DOMAIN)


# ================================================================ changes ====


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
class _Side:
    path: str
    line: str


@dataclass
class _Commit:
    sha: str
    author: str
    email: str
    date: str
    subject: str
    trailers: list[tuple[str, str]]
    paths: list[str]
    plus: dict[str, _Side]
    minus: dict[str, _Side]
    hunks: dict[str, list[tuple[int, int]]]  # path -> (new start, new count)

    @property
    def is_agent(self) -> bool:
        return _is_agent(self.email)

    @property
    def op(self) -> str:
        ops = [v for k, v in self.trailers if k == "Op"]
        return ops[-1] if ops else ("edit" if not self.is_agent else "unknown")


def changes(vault: Vault, since: str | datetime | date) -> Changes:
    """What happened in the vault after ``since`` (a date/datetime, ISO text or a commit)."""
    base, label = _resolve_since(vault, since)
    head = vault.git.head()
    if head is None:
        return Changes(label, base, None, 0, 0, 0, (), (), (), (), ())
    commits = _log_patches(vault, base)
    return _summarise(vault, label, base, head, commits)


def _resolve_since(vault: Vault, since: str | datetime | date) -> tuple[str | None, str]:
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
            sha = _rev_parse(vault, text)
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
            zone = getattr(vault, "_tz", None)
            moment = moment.replace(tzinfo=zone) if zone else moment.astimezone()
        approx = moment.isoformat()
    assert approx is not None
    if vault.git.head() is None:
        return None, approx
    out = vault.git.run("rev-list", "-1", f"--before={approx}", "HEAD", "--")
    return (out.strip() or None), (since if isinstance(since, str) else approx)


def _rev_parse(vault: Vault, rev: str) -> str | None:
    if rev.startswith("-"):
        return None
    out = vault.git.run(
        "rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}", ok_codes=(0, 1, 128)
    )
    out = out.strip()
    return out if _HEX40.match(out) else None


def _log_patches(vault: Vault, base: str | None) -> list[_Commit]:
    rng = [f"{base}..HEAD"] if base else ["HEAD"]
    fmt = "%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%(trailers:only,unfold)%x1f"
    out = vault.git.run(
        "log",
        "--reverse",
        "--no-merges",
        "-p",
        "-U0",
        "-M",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        f"--format={fmt}",
        *rng,
        "--",
        strip=False,
    )
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
        if line.startswith("+"):
            match = _ID_AT_END.search(line[1:])
            if match and new_path:
                commit.plus[match.group(1)] = _Side(new_path, line[1:])
        elif line.startswith("-"):
            match = _ID_AT_END.search(line[1:])
            if match and old_path:
                commit.minus[match.group(1)] = _Side(old_path, line[1:])
    commit.paths = list(dict.fromkeys(commit.paths))


def _field(line: str, name: str) -> str | None:
    for key, value in _FIELD_RE.findall(line):
        if key == name:
            return value.strip()
    return None


@dataclass
class _Event:
    commit: _Commit
    path: str | None


class _TextAt:
    """Memory texts read from git at a commit, parsed once per (rev, path)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._parsed: dict[tuple[str, str], blk.ParsedFile | None] = {}

    def block(self, rev: str, path: str | None, memory_id: str) -> tuple[str | None, str | None]:
        """(text, kind) of ``memory_id`` in ``path`` at ``rev``."""
        if path is None:
            return None, None
        key = (rev, path)
        if key not in self._parsed:
            self._parsed[key] = parsed_at(self.vault, rev, path)
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
    vault: Vault, label: str, base: str | None, head: str, commits: list[_Commit]
) -> Changes:
    created: dict[str, _Event] = {}
    removed: dict[str, _Event] = {}
    status_events: dict[str, tuple[str, _Event, str | None]] = {}  # id -> (status, event, by)
    human: list[HumanEdit] = []
    texts = _TextAt(vault)
    for commit in commits:
        plus, minus = set(commit.plus), set(commit.minus)
        for memory_id in sorted(plus - minus):
            removed.pop(memory_id, None)
            if memory_id not in created:
                created[memory_id] = _Event(commit, commit.plus[memory_id].path)
        for memory_id in sorted(minus - plus):
            removed[memory_id] = _Event(commit, commit.minus[memory_id].path)
        for memory_id in sorted(plus & minus):
            new_status = _field(commit.plus[memory_id].line, "status") or "active"
            old_status = _field(commit.minus[memory_id].line, "status") or "active"
            if new_status != old_status:
                status_events[memory_id] = (
                    new_status,
                    _Event(commit, commit.plus[memory_id].path),
                    (_field(commit.plus[memory_id].line, "by") or "").lstrip("^") or None,
                )
        if not commit.is_agent:
            human.append(_human_edit(commit, texts))

    vault.refresh()

    def now(memory_id: str) -> tuple[str | None, str | None, str | None, str | None]:
        block = vault.catalog.block(memory_id)
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


# ============================================================ provenance ====


@dataclass(frozen=True)
class LineAuthor:
    line: int
    commit: str  # "000…0" for a line not committed yet
    author: str
    email: str
    date: str
    is_agent: bool
    summary: str = ""


@dataclass(frozen=True)
class Provenance:
    memory_id: str
    path: str
    line_start: int
    line_end: int
    authors: tuple[str, ...]  # distinct, in order of first line written
    last_author: str  # author of the most recent change to the memory's lines
    written_by_human: bool  # at least one line was written (or is being edited) by a person
    human_lines: int
    created_commit: str | None
    created_by: str | None
    created_date: str | None
    lines: tuple[LineAuthor, ...]


_CACHE_SIZE = 256
_MISSING = object()
_T = TypeVar("_T")
_cache_lock = threading.Lock()
_blame_cache: OrderedDict[tuple[str, str, str], dict[int, LineAuthor]] = OrderedDict()
_blob_cache: OrderedDict[tuple[str, str, str], str | None] = OrderedDict()


def clear_blame_cache() -> None:
    with _cache_lock:
        _blame_cache.clear()
        _blob_cache.clear()


def _lru_get(cache: OrderedDict[tuple[str, str, str], _T], key: tuple[str, str, str]) -> object:
    with _cache_lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    return _MISSING


def _lru_put(
    cache: OrderedDict[tuple[str, str, str], _T], key: tuple[str, str, str], value: _T
) -> None:
    with _cache_lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)


def _check_rel(vault: Vault, path: str) -> str:
    safe_path(vault.root, path)
    rel = PurePosixPath(str(path).replace(os.sep, "/")).as_posix()
    if rel.startswith("./"):
        rel = rel[2:]
    return rel


def _commit_of(vault: Vault, rev: str) -> str:
    if rev == "HEAD":
        head = vault.git.head()
        if head is not None:
            return head
    if _HEX40.match(rev):
        return rev
    sha = _rev_parse(vault, rev)
    if sha is None:
        raise InvalidInputError(f"unknown revision {rev!r}")
    return sha


def _blob_at(vault: Vault, commit: str, path: str) -> str | None:
    key = (str(vault.root), commit, path)
    cached = _lru_get(_blob_cache, key)
    if cached is not _MISSING:
        return cached  # type: ignore[return-value]
    out = vault.git.run(
        "rev-parse", "--verify", "-q", f"{commit}:{path}", ok_codes=(0, 1, 128)
    ).strip()
    blob = out if _HEX40.match(out) else None
    _lru_put(_blob_cache, key, blob)
    return blob


def blame(
    vault: Vault, path: str, line_start: int, line_end: int, rev: str = "HEAD"
) -> list[LineAuthor]:
    """Who last wrote each of lines ``line_start..line_end`` (1-based, inclusive) at ``rev``."""
    rel = _check_rel(vault, path)
    if line_start < 1 or line_end < line_start:
        raise InvalidInputError(f"invalid line range {line_start}-{line_end}")
    commit = _commit_of(vault, rev)
    blob = _blob_at(vault, commit, rel)
    if blob is None:
        raise InvalidInputError(f"{rel} does not exist at {rev}")
    key = (str(vault.root), rel, blob)
    return _blame_cached(vault, key, line_start, line_end, [commit, "--", rel])


def _blame_cached(
    vault: Vault, key: tuple[str, str, str], line_start: int, line_end: int, target: list[str]
) -> list[LineAuthor]:
    found = _lru_get(_blame_cache, key)
    lines: dict[int, LineAuthor] = {} if found is _MISSING else found  # type: ignore[assignment]
    missing = [n for n in range(line_start, line_end + 1) if n not in lines]
    if missing:
        status, out, err = vault.git.execute(
            "blame", "--porcelain", "-L", f"{missing[0]},{missing[-1]}", *target, strip=False
        )
        if status != 0:
            message = (err.strip().splitlines() or ["blame failed"])[0]
            if "has only" in message:
                raise InvalidInputError(f"{key[1]}: {message.removeprefix('fatal: ')}")
            raise GitError(f"git blame: {message}")
        merged = dict(lines)
        merged.update(_parse_porcelain(out))
        lines = merged
        _lru_put(_blame_cache, key, lines)
    return [lines[n] for n in range(line_start, line_end + 1) if n in lines]


def _parse_porcelain(out: str) -> dict[int, LineAuthor]:
    info: dict[str, dict[str, str]] = {}
    result: dict[int, LineAuthor] = {}
    current: str | None = None
    final_line = 0
    for line in out.split("\n"):
        if not line:
            continue
        if line.startswith("\t"):
            if current is None:
                continue
            meta = info[current]
            author, email = meta.get("author", ""), meta.get("author-mail", "").strip("<>")
            summary = meta.get("summary", "")
            if current == UNCOMMITTED:
                author, email, summary = "(uncommitted)", "", ""
            result[final_line] = LineAuthor(
                line=final_line,
                commit=current,
                author=author,
                email=email,
                date=_epoch_iso(meta.get("author-time", "0"), meta.get("author-tz", "+0000")),
                is_agent=_is_agent(email),
                summary=summary,
            )
            continue
        first, _, rest = line.partition(" ")
        if _HEX40.match(first):
            current = first
            fields = rest.split()
            final_line = int(fields[1]) if len(fields) > 1 else 0
            info.setdefault(current, {})
        elif current is not None:
            info[current][first] = rest
    return result


def _epoch_iso(seconds: str, tz: str) -> str:
    try:
        sign = -1 if tz.startswith("-") else 1
        offset = timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * sign
        return datetime.fromtimestamp(int(seconds), timezone(offset)).isoformat()
    except (ValueError, IndexError):
        return ""


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def provenance(vault: Vault, memory_id: str) -> Provenance:
    """Who wrote the current lines of one memory, and which commit created it.

    Lines a person changed but did not commit yet count as human-written
    (author ``(uncommitted)``): only people leave edits uncommitted.
    """
    memory_id = normalize_id(memory_id)
    block = vault.block(memory_id)
    rel = block.path
    full = safe_path(vault.root, rel)
    data = full.read_bytes()
    working = _git_blob_sha(data)
    head = vault.git.head()
    committed = _blob_at(vault, head, rel) if head else None
    if committed == working and head is not None:
        lines = blame(vault, rel, block.line_start, block.line_end, rev=head)
    elif committed is None:
        lines = [
            LineAuthor(n, UNCOMMITTED, "(uncommitted)", "", "", False)
            for n in range(block.line_start, block.line_end + 1)
        ]
    else:
        # Blame the exact bytes we hashed: a temp copy, so a concurrent editor
        # cannot make the cache entry describe other content.
        vault.state_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=vault.state_dir, prefix="blame-", delete=False) as tmp:
            tmp.write(data)
        try:
            key = (str(vault.root), rel, f"{working}@{head}")
            lines = _blame_cached(
                vault, key, block.line_start, block.line_end, ["--contents", tmp.name, "--", rel]
            )
        finally:
            os.unlink(tmp.name)
    authors = tuple(dict.fromkeys(line.author for line in lines))
    latest = max(lines, key=lambda la: (la.commit == UNCOMMITTED, la.date), default=None)
    created = _created(vault, memory_id)
    return Provenance(
        memory_id=memory_id,
        path=rel,
        line_start=block.line_start,
        line_end=block.line_end,
        authors=authors,
        last_author=latest.author if latest else "",
        written_by_human=any(not la.is_agent for la in lines),
        human_lines=sum(1 for la in lines if not la.is_agent),
        created_commit=created[0] if created else None,
        created_by=created[1] if created else None,
        created_date=created[2] if created else None,
        lines=tuple(lines),
    )


def _created(vault: Vault, memory_id: str) -> tuple[str, str, str] | None:
    """The commit that introduced ``^memory_id`` (trailers first; pickaxe as fallback)."""
    fmt = "--format=%H%x1f%an%x1f%aI"
    out = vault.git.run(
        "log", "--reverse", fmt, "-F", f"--grep=Memory-Id: {memory_id}", "HEAD", "--"
    )
    first = out.splitlines()[0] if out.strip() else ""
    if first:
        sha = first.split("\x1f")[0]
        before = vault.git.execute("grep", "-q", "-F", f"^{memory_id}", f"{sha}^", "--", "*.md")[0]
        if before != 0:  # absent in the parent (or no parent): this commit created it
            parts = first.split("\x1f")
            return parts[0], parts[1], parts[2]
    out = vault.git.run("log", "--reverse", fmt, "-F", "-S", f"^{memory_id}", "HEAD", "--")
    if not out.strip():
        return None
    parts = out.splitlines()[0].split("\x1f")
    return parts[0], parts[1], parts[2]


# ================================================================= purge ====


@dataclass(frozen=True)
class PurgeResult:
    memory_id: str
    method: str  # "filter-repo" or "fast-export"
    commits: int  # commits in the repository (unchanged by a purge)
    commits_rewritten: int
    blobs_rewritten: int | None  # None when filter-repo did the work
    messages_rewritten: int | None
    strings: int  # distinct strings replaced by [PURGED]
    also_in: tuple[str, ...]  # other current memories that contained the text and were scrubbed too
    forgotten_now: bool  # the memory was still in the vault and got forgotten first
    seconds: float


_MIN_LINE = 4  # shorter lines of a multi-line memory stay (too likely to occur elsewhere)
_MIN_PREFIX = 12  # a truncated commit subject must keep this much of the text to be matched


def purge(
    vault: Vault,
    memory_id: str,
    *,
    confirm: bool,
    method: str | None = None,
) -> PurgeResult:
    """Forget ``memory_id`` and rewrite ALL history so its text is in no commit.

    Every blob and commit message holding the memory's text (any version of it,
    and each of its lines for a multi-line memory) gets ``[PURGED]`` instead;
    the number of commits stays the same. Reflogs are expired and unreachable
    objects pruned. Clones and remotes elsewhere still hold the text: after a
    purge, ``sync`` refuses to pull until ``force_push=True`` overwrites the remote.

    ``method``: ``"filter-repo"`` (needs ``git filter-repo`` on PATH),
    ``"fast-export"`` (git plumbing, always available) or None (filter-repo
    when installed).
    """
    import time

    if not confirm:
        raise InvalidInputError(
            "purge rewrites the whole git history of the vault and cannot be undone; other "
            "clones and the remote still hold the text until they are rewritten too; "
            "pass confirm=True (--yes) to proceed"
        )
    if method not in (None, "filter-repo", "fast-export"):
        raise InvalidInputError("method must be 'filter-repo' or 'fast-export'")
    memory_id = normalize_id(memory_id)
    started = time.perf_counter()
    with vault.writer.writing():
        texts: list[str] = []
        forgotten_now = False
        try:
            texts.append(vault.block(memory_id).text)
        except MemoryNotFoundError:
            pass
        try:
            versions = history_of(vault, memory_id)
        except MemoryNotFoundError:
            versions = []
        texts += [v.text for v in versions if v.text]
        if not texts:
            raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
        if vault.catalog.has_id(memory_id):
            vault.forget(memory_id, reason="purge")
            forgotten_now = True
        strings = _purge_strings(texts)
        vault.refresh()
        also_in = tuple(
            sorted(
                b.id
                for b in vault.catalog.blocks(memories_only=True)
                if b.id != memory_id and any(s in b.text for s in strings)
            )
        )
        before = set(_all_commits(vault))
        old_head = vault.git.head()
        if method is None:
            method = "filter-repo" if shutil.which("git-filter-repo") else "fast-export"
        blobs: int | None = None
        messages: int | None = None
        if method == "filter-repo":
            if not shutil.which("git-filter-repo"):
                raise InvalidInputError(
                    "git filter-repo is not installed (pip install git-filter-repo); "
                    "use method='fast-export'"
                )
            _purge_filter_repo(vault, strings)
        else:
            blobs, messages = _purge_fast_export(vault, strings, old_head)
        _expire_and_prune(vault)
        after = _all_commits(vault)
        vault.git.forget_tracked()
        clear_blame_cache()
        vault.refresh()
        _mark_remote_stale(vault, old_head)
    reindex = getattr(vault, "reindex", None)
    if callable(reindex):  # whoosh keeps deleted documents in its segments until rewritten
        reindex(full=True)
    return PurgeResult(
        memory_id=memory_id,
        method=method,
        commits=len(after),
        commits_rewritten=len(before - set(after)),
        blobs_rewritten=blobs,
        messages_rewritten=messages,
        strings=len(strings),
        also_in=also_in,
        forgotten_now=forgotten_now,
        seconds=round(time.perf_counter() - started, 3),
    )


def _purge_strings(texts: Iterable[str]) -> list[str]:
    found: dict[str, None] = {}
    for text in texts:
        text = text.strip()
        if not text:
            continue
        found.setdefault(text)
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= _MIN_LINE and any(ch.isalnum() for ch in line):
                found.setdefault(line)
                collapsed = " ".join(line.split())
                found.setdefault(collapsed)
    return sorted(found, key=len, reverse=True)


def _all_commits(vault: Vault) -> list[str]:
    return vault.git.run("rev-list", "--all").split()


def _git_env(vault: Vault) -> dict[str, str]:
    # Children of git (filter-repo's own git calls) inherit these, so hooks stay off there too.
    return {
        **os.environ,
        **vault.git._env,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.hooksPath",
        "GIT_CONFIG_VALUE_0": os.devnull,
    }


def _purge_fast_export(vault: Vault, strings: list[str], old_head: str | None) -> tuple[int, int]:
    """fast-export | rewrite each ``data`` block | fast-import --force; then update files."""
    scrubber = _Scrubber(strings)
    env = _git_env(vault)
    base = ["git", *_SAFE_CONFIG]
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryFile(dir=vault.state_dir) as err_out,
        tempfile.TemporaryFile(dir=vault.state_dir) as err_in,
    ):
        exporter = subprocess.Popen(
            [
                *base,
                "fast-export",
                "--all",
                "--signed-tags=strip",
                "--tag-of-filtered-object=rewrite",
                "--reencode=yes",
            ],
            cwd=vault.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err_out,
            stdin=subprocess.DEVNULL,
        )
        importer = subprocess.Popen(
            [*base, "fast-import", "--force", "--quiet"],
            cwd=vault.root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err_in,
        )
        assert exporter.stdout is not None and importer.stdin is not None
        try:
            scrubber.stream(exporter.stdout, importer.stdin)
        finally:
            importer.stdin.close()
            exporter.stdout.close()
        export_rc, import_rc = exporter.wait(), importer.wait()
        if export_rc != 0 or import_rc != 0:
            err_out.seek(0)
            err_in.seek(0)
            message = (
                (err_out.read() + err_in.read()).decode("utf-8", "replace").strip().splitlines()
            )
            raise GitError(f"history rewrite failed: {message[0] if message else 'exit status'}")
    new_head = vault.git.run("rev-parse", "--verify", "HEAD")
    if old_head and new_head != old_head:
        # Move index and files from the old tree to the rewritten one (a two-way
        # checkout: it refuses rather than overwrite a file someone is editing).
        vault.git.run("read-tree", "-m", "-u", old_head, new_head)
    vault.git.run("update-index", "-q", "--refresh", ok_codes=(0, 1))
    return scrubber.blobs, scrubber.messages


class _Scrubber:
    """Rewrites the ``data <n>`` blocks of a fast-export stream."""

    def __init__(self, strings: list[str]) -> None:
        self.strings = strings
        self.byte_strings = [s.encode("utf-8") for s in strings]
        self.blobs = 0
        self.messages = 0

    def stream(self, src: IO[bytes], dst: IO[bytes]) -> None:
        kind = b""
        while True:
            line = src.readline()
            if not line:
                break
            if line.startswith(b"data "):
                size_text = line[5:].strip()
                if size_text.startswith(b"<<"):
                    raise GitError("unexpected delimited data in fast-export stream")
                payload = _read_exact(src, int(size_text))
                if kind == b"blob":
                    new = self.scrub_blob(payload)
                    self.blobs += new != payload
                else:
                    new = self.scrub_message(payload)
                    self.messages += new != payload
                dst.write(b"data %d\n" % len(new))
                dst.write(new)
                continue
            if line[:1] not in (b" ", b"\n") and not line.startswith((b"mark ", b"original-oid ")):
                kind = line.split(b" ", 1)[0].strip()
            dst.write(line)

    def scrub_blob(self, data: bytes) -> bytes:
        for s in self.byte_strings:
            if s in data:
                data = data.replace(s, PURGED.encode())
        return data

    def scrub_message(self, data: bytes) -> bytes:
        text = data.decode("utf-8", "surrogateescape")
        return scrub_message(text, self.strings).encode("utf-8", "surrogateescape")


def scrub_message(text: str, strings: list[str]) -> str:
    """Replace ``strings`` in a commit message, and their prefixes cut off by "…"."""
    for s in strings:
        if s in text:
            text = text.replace(s, PURGED)
    idx = text.find("…")
    while idx != -1:
        cut = 0
        for s in strings:
            k = min(len(s), idx)
            while k >= min(_MIN_PREFIX, len(s)) and k > 0:
                if text[idx - k : idx] == s[:k]:
                    cut = max(cut, k)
                    break
                k -= 1
        if cut:
            text = text[: idx - cut] + PURGED + text[idx + 1 :]
            idx = text.find("…", idx - cut + len(PURGED))
        else:
            idx = text.find("…", idx + 1)
    return text


def _read_exact(src: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = src.read(remaining)
        if not chunk:
            raise GitError("fast-export stream ended early")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _purge_filter_repo(vault: Vault, strings: list[str]) -> None:
    remotes = _remote_config(vault)
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "wb", dir=vault.state_dir, prefix="purge-", delete=False
    ) as tmp:
        for s in strings:
            if "\n" not in s:
                tmp.write(b"literal:" + s.encode("utf-8") + b"==>" + PURGED.encode() + b"\n")
        for s in strings:
            if "\n" in s or len(s) < _MIN_PREFIX:
                continue
            tmp.write(
                b"regex:" + _prefix_regex(s).encode("utf-8") + b"==>" + PURGED.encode() + b"\n"
            )
    try:
        proc = subprocess.run(
            [
                "git",
                *_SAFE_CONFIG,
                "filter-repo",
                "--force",
                "--quiet",
                "--prune-empty",
                "never",
                "--prune-degenerate",
                "never",
                "--replace-text",
                tmp.name,
                "--replace-message",
                tmp.name,
            ],
            cwd=vault.root,
            env=_git_env(vault),
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.unlink(tmp.name)
    if proc.returncode != 0:
        lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git filter-repo: {lines[-1] if lines else proc.returncode}")
    # filter-repo drops the remotes so a rewrite is not pushed by accident;
    # sync guards against that instead (see _mark_remote_stale).
    for name, url in remotes:
        if not vault.git.run("config", "--get", f"remote.{name}.url", ok_codes=(0, 1)):
            vault.git.run("remote", "add", name, url)


def _prefix_regex(s: str) -> str:
    """Any prefix of ``s`` of at least _MIN_PREFIX characters, followed by "…"."""
    head = re.escape(s[:_MIN_PREFIX])
    tail = ""
    for ch in reversed(s[_MIN_PREFIX:]):
        tail = f"(?:{re.escape(ch)}{tail})?"
    return head + tail + "…"


def _remote_config(vault: Vault) -> list[tuple[str, str]]:
    out = vault.git.run("config", "--get-regexp", r"^remote\..*\.url$", ok_codes=(0, 1))
    remotes = []
    for line in out.splitlines():
        key, _, url = line.partition(" ")
        remotes.append((key[len("remote.") : -len(".url")], url))
    return remotes


def _expire_and_prune(vault: Vault) -> None:
    git_dir = vault.root / ".git"
    # Pseudo-refs may point at old commits; COMMIT_EDITMSG holds the last message verbatim.
    names = ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")
    for name in (*names, "COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG"):
        try:
            (git_dir / name).unlink()
        except FileNotFoundError:
            pass
    vault.git.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    vault.git.run("gc", "--prune=now", "--quiet")


# Purged history diverges from every clone: the next sync must overwrite the
# remote (never rebase the old history back in on top of the purge).
def _stale_marker(vault: Vault) -> Path:
    return vault.state_dir / "purged-history.json"


def _mark_remote_stale(vault: Vault, old_head: str | None) -> None:
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    marker = _stale_marker(vault)
    data = {"old_head": old_head, "when": datetime.now(UTC).isoformat(timespec="seconds")}
    marker.write_text(json.dumps(data) + "\n", encoding="utf-8")


def remote_is_stale(vault: Vault) -> bool:
    return _stale_marker(vault).is_file()


def clear_stale_marker(vault: Vault) -> None:
    try:
        _stale_marker(vault).unlink()
    except FileNotFoundError:
        pass
