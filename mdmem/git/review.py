"""Consolidation under review: a branch per run, merged or rejected by a person.

With ``[consolidation] review = true`` (or ``consolidate(review=True)``) a
consolidation drafts and decides exactly as a dry run does, and its edits
become ONE commit on ``mdmem/consolidate-<YYYY-MM-DD>`` (``-2``, ``-3``... when
taken), built with git plumbing in a temporary index: the working tree, the
index and the checked-out branch are never touched, and the source entries
stay pending on the main line until the branch is merged.

The branch commit carries the normal consolidation subject and trailers plus
``Entries:`` (every source entry id), ``Dropped:`` (each given fact the
drafts did not carry) and ``Review:`` (the branch). While the branch is open
those entries are held: no other consolidation drafts them again, and new
episode notes avoid the paths it adds.

* :func:`reviews` / :func:`review` - open branches with counts of facts added,
  superseded and dropped, parsed from the blocks of the changed files at the
  merge base and at the branch tip; ``review`` adds ``git diff base...branch``.
* :func:`merge` - ``git merge --no-ff`` with the block-aware driver of
  :mod:`mdmem.git.merge_driver`, so memories written on the main line meanwhile merge
  cleanly; a real conflict aborts the merge, changes nothing and raises
  :class:`~mdmem.errors.ConflictError` naming the files.
* :func:`reject` - deletes the branch; the entries are pending again.
* :func:`undo` - ``git revert`` of a consolidation or a review merge (``-m 1``)
  as one ``Op: revert`` commit; a conflicting revert is aborted and reported.
"""

from __future__ import annotations

import logging
import re
import tempfile
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from mdmem.errors import ConfigError, ConflictError, GitError, InvalidInputError
from mdmem.files.catalog import EXCLUDED_DIRS
from mdmem.files.sidecar import note_of
from mdmem.git.merge_driver import driver_config
from mdmem.git.revisions import is_ancestor, parsed_at, rev_parse
from mdmem.models import FACT_KINDS, Block, first_line
from mdmem.store.gitstore import Identity, format_message

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "BRANCH_PREFIX",
    "CLEANUP_PREFIX",
    "Held",
    "Review",
    "ReviewDecision",
    "UndoResult",
    "create_branch",
    "held",
    "merge",
    "open_branches",
    "reject",
    "review",
    "reviews",
    "undo",
]

log = logging.getLogger("mdmem")

BRANCH_PREFIX = "mdmem/consolidate-"
# The whole-store cleanup pass (mdmem.memory.consolidation.cleanup) reviews on its own
# branches, so a person sees which pass wrote what; merge/reject/undo treat
# both alike, and only consolidation branches hold session entries.
CLEANUP_PREFIX = "mdmem/cleanup-"
_PREFIXES = (BRANCH_PREFIX, CLEANUP_PREFIX)
_BRANCH = re.compile(r"mdmem/(?:consolidate|cleanup)-(\d{4}-\d\d-\d\d)(?:-(\d{1,4}))?")  # fullmatch
_HELD: weakref.WeakKeyDictionary[MemoryStore, tuple[tuple[tuple[str, str], ...], Held]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class Held:
    """What open review branches hold: source entry ids and the episode paths they add."""

    entries: frozenset[str] = frozenset()
    episodes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Review:
    """A consolidation waiting on a review branch.

    Counts compare the blocks of the changed files at ``base`` (the merge base
    with the current branch) and at ``commit`` (the branch tip): ``added`` are
    new facts, preferences, learnings and world notes; ``superseded`` blocks
    whose status became superseded; ``dropped`` the given facts the drafts did
    not carry (``Dropped:`` trailers) plus every memory block the branch
    removes; ``episodes`` new episode notes; ``entries`` session entries
    marked consolidated. ``diff`` is ``git diff base...branch`` (empty in
    :func:`reviews`).
    """

    branch: str
    commit: str
    base: str
    title: str
    date: str
    added: int
    superseded: int
    dropped: int
    episodes: int
    entries: int
    dropped_facts: list[str] = field(default_factory=list)
    diff: str = ""
    facts: list[str] = field(default_factory=list)  # ids of the facts it adds


@dataclass(frozen=True)
class ReviewDecision:
    """A review merged (``commit`` is the merge) or rejected (the branch is gone)."""

    branch: str
    action: Literal["merged", "rejected"]
    commit: str | None
    review: Review


@dataclass(frozen=True)
class UndoResult:
    reverted: str  # the commit undone
    subject: str  # its subject
    commit: str  # the revert commit
    merge: bool  # it was a merge (reverted against its first parent)
    paths: list[str]  # files the revert changed


# ------------------------------------------------------------- branches ----


def held(store: MemoryStore) -> Held:
    """Entries and episode paths of review commits the current branch does not have yet.

    Asked on every automatic-consolidation check (each session write), so it
    answers from the ref files while the review branches stay as they are:
    git is asked again only when one is made, moved or deleted. HEAD moving
    does not matter, save when a person merges a branch by hand - and then
    its entries carry their ``consolidated`` field and are not pending anyway.
    """
    refs = store.git.refs_under(f"refs/heads/{BRANCH_PREFIX}")
    if refs == {}:
        return Held()
    key = tuple(sorted(refs.items())) if refs is not None else None
    cached = _HELD.get(store)
    if key is not None and cached is not None and cached[0] == key:
        return cached[1]
    out = store.git.run(
        "log",
        "-z",
        "--format=%(trailers:only,unfold)",
        f"--branches={BRANCH_PREFIX}*",
        "--not",
        "HEAD",
        "--",
        strip=False,
    )
    entries: set[str] = set()
    episodes: set[str] = set()
    for trailer, value in _trailers(out):
        if trailer == "Entries":
            entries.update(value.split())
        elif trailer == "Episode":
            episodes.add(value)
    found = Held(frozenset(entries), frozenset(episodes))
    if key is not None:
        _HELD[store] = (key, found)
    return found


def create_branch(
    store: MemoryStore,
    changes: Iterable[tuple[str, bytes | None, bytes]],
    title: str,
    trailers: list[tuple[str, str]],
    entries: list[str],
    *,
    prefix: str = BRANCH_PREFIX,
) -> tuple[str, str]:
    """Commit ``changes`` on top of HEAD to a new review branch; (branch, commit).

    Call it under the vault lock, with ``changes`` read from files that match
    HEAD: the commit replaces those files' HEAD content with the new bytes.
    ``prefix``: the branch name before the date (:data:`BRANCH_PREFIX` for a
    consolidation, :data:`CLEANUP_PREFIX` for a cleanup).
    """
    if prefix not in _PREFIXES:
        raise InvalidInputError(f"a review branch starts with one of {', '.join(_PREFIXES)}")
    git = store.git
    edits = sorted((rel, old, new) for rel, old, new in changes if old != new)
    if not edits:
        raise InvalidInputError("the consolidation changed no file; no review branch was made")
    with tempfile.TemporaryDirectory(prefix="review-", dir=store.state_dir) as tmp:
        scratch = Path(tmp)
        head = _settle(store, edits, scratch)
        index_env = {"GIT_INDEX_FILE": str(scratch / "index")}
        git.run("read-tree", head, env=index_env)
        modes = _modes(store, head, [rel for rel, _old, _new in edits])
        cacheinfo: list[str] = []
        for rel, _old, new in edits:
            sha = _hash(store, scratch, rel, new, write=True)
            cacheinfo += ["--cacheinfo", f"{modes.get(rel, '100644')},{sha},{rel}"]
        git.run("update-index", "--add", *cacheinfo, env=index_env)
        tree = git.run("write-tree", env=index_env).strip()
        day = store.clock.today()
        ops = [t for t in trailers if t[0] == "Op"] or [("Op", "consolidate")]
        rest = [t for t in trailers if t[0] != "Op"]
        message_file = scratch / "message"
        agent = Identity.agent(store.agent)
        for n in range(1, 1000):
            name = f"{prefix}{day}" + ("" if n == 1 else f"-{n}")
            if _ref_sha(store, name) is not None:
                continue
            extra = [("Entries", " ".join(entries)), ("Review", name)]
            message_file.write_text(
                format_message(title, trailers=[*rest, *extra, *ops]), encoding="utf-8"
            )
            commit = git.run(
                "commit-tree", tree, "-p", head, "-F", str(message_file), env=agent.env()
            ).strip()
            # The empty old value makes update-ref refuse a name taken meanwhile.
            status, _out, _err = git.execute(
                "update-ref", "-m", "mdmem: review", f"refs/heads/{name}", commit, ""
            )
            if status == 0:
                log.info("consolidation committed for review on %s (%s)", name, commit[:10])
                return name, commit
    raise GitError(f"no free review branch name for {day}")


def _settle(store: MemoryStore, edits: list[tuple[str, bytes | None, bytes]], scratch: Path) -> str:
    """HEAD, after checking each file's old bytes are what HEAD holds.

    The vault lock committed human edits before the files were read; a save
    that slipped in since is committed (as the human) once, and if the files
    still disagree with HEAD the consolidation stops instead of folding
    someone's unreviewed edit into the review commit.
    """
    for attempt in range(2):
        head = store.git.head()
        if head is None:
            raise GitError("the vault has no commit yet")
        blobs = _blobs(store, head, [rel for rel, _old, _new in edits])
        stale = [
            rel
            for rel, old, _new in edits
            if blobs.get(rel) != (None if old is None else _hash(store, scratch, rel, old))
        ]
        if not stale:
            return head
        if attempt == 0:
            store.writer.commit_human_edits(stale)
    raise ConflictError(
        f"{', '.join(stale)} changed while the consolidation ran; nothing was written, run it again"
    )


def _hash(store: MemoryStore, scratch: Path, rel: str, data: bytes, *, write: bool = False) -> str:
    # --path applies the same .gitattributes filters `git add` would.
    blob = scratch / "blob"
    blob.write_bytes(data)
    args = ["hash-object", *(["-w"] if write else []), f"--path={rel}", str(blob)]
    return store.git.run(*args).strip()


def _ls_tree(store: MemoryStore, rev: str, paths: list[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob sha) at ``rev`` for those of ``paths`` that exist there."""
    out = store.git.run("ls-tree", "-z", "--full-tree", rev, "--", *paths, strip=False)
    found: dict[str, tuple[str, str]] = {}
    for row in out.split("\0"):
        meta, _tab, path = row.partition("\t")
        parts = meta.split()
        if path and len(parts) == 3:
            found[path] = (parts[0], parts[2])
    return found


def _blobs(store: MemoryStore, rev: str, paths: list[str]) -> dict[str, str]:
    return {p: sha for p, (_mode, sha) in _ls_tree(store, rev, paths).items()}


def _modes(store: MemoryStore, rev: str, paths: list[str]) -> dict[str, str]:
    return {p: mode for p, (mode, _sha) in _ls_tree(store, rev, paths).items()}


# -------------------------------------------------------------- reading ----


def reviews(store: MemoryStore) -> list[Review]:
    """Open review branches (commits the current branch lacks), oldest first; no diffs."""
    out = []
    for name, sha in _branches(store):
        if _is_open(store, sha):
            out.append(_read(store, name, sha, with_diff=False))
    return out


def review(store: MemoryStore, branch: str | None = None) -> Review:
    """One open review with its counts and ``git diff base...branch``."""
    name, sha = _pick(store, branch)
    return _read(store, name, sha, with_diff=True)


def _branches(store: MemoryStore) -> list[tuple[str, str]]:
    """(name, sha) of every review branch, by date then suffix."""
    if all(store.git.refs_under(f"refs/heads/{p}") == {} for p in _PREFIXES):
        return []
    out = store.git.run("for-each-ref", "--format=%(refname)%00%(objectname)", "refs/heads/mdmem/")
    found: list[tuple[tuple[str, int], str, str]] = []
    for line in out.splitlines():
        ref, _sep, sha = line.partition("\0")
        name = ref.removeprefix("refs/heads/")
        match = _BRANCH.fullmatch(name)
        if match:
            found.append(((match.group(1), int(match.group(2) or 1)), name, sha))
    return [(name, sha) for _key, name, sha in sorted(found)]


def open_branches(store: MemoryStore) -> list[str]:
    """Names of the review branches not merged yet (no counts: cheap enough for status)."""
    return [name for name, sha in _branches(store) if _is_open(store, sha)]


def _branch_name(branch: str) -> str:
    name = branch.strip().removeprefix("refs/heads/")
    if not name.startswith("mdmem/"):
        name = f"mdmem/{name}"
    if not _BRANCH.fullmatch(name):
        raise InvalidInputError(
            f"{branch!r} is not a review branch (they are named "
            f"{BRANCH_PREFIX}YYYY-MM-DD[-N] or {CLEANUP_PREFIX}YYYY-MM-DD[-N])"
        )
    return name


def _ref_sha(store: MemoryStore, name: str) -> str | None:
    out = store.git.run(
        "rev-parse", "--verify", "-q", f"refs/heads/{name}^{{commit}}", ok_codes=(0, 1, 128)
    ).strip()
    return out or None


def _is_open(store: MemoryStore, sha: str) -> bool:
    return not is_ancestor(store, sha, "HEAD")


def _pick(store: MemoryStore, branch: str | None) -> tuple[str, str]:
    """(name, sha) of the named open review, or of the only one."""
    if branch is None:
        open_ = [(n, s) for n, s in _branches(store) if _is_open(store, s)]
        if not open_:
            raise InvalidInputError("no consolidation is waiting for review")
        if len(open_) > 1:
            names = ", ".join(n for n, _s in open_)
            raise InvalidInputError(f"{len(open_)} reviews are open ({names}); name one")
        return open_[0]
    name = _branch_name(branch)
    sha = _ref_sha(store, name)
    if sha is None:
        raise InvalidInputError(f"no review branch {name}")
    if not _is_open(store, sha):
        raise InvalidInputError(
            f"{name} is already merged into the current branch; delete it with "
            f"`git branch -d {name}`"
        )
    return name, sha


def _read(store: MemoryStore, name: str, sha: str, *, with_diff: bool) -> Review:
    git = store.git
    base = git.run("merge-base", "HEAD", sha, ok_codes=(0, 1)).strip()
    if not base:
        raise GitError(f"{name} shares no history with the current branch")
    title, _sep, date = git.run("log", "-1", "--format=%s%x00%aI", sha).partition("\0")
    messages = git.run("log", "-z", "--format=%(trailers:only,unfold)", f"{base}..{sha}", "--")
    given_dropped = [value for key, value in _trailers(messages) if key == "Dropped"]
    listing = git.run("diff", "--name-only", "-z", "--no-renames", base, sha, "--", strip=False)
    # A field changed beside a note (an entry marked consolidated) changes the note's memories.
    named = [note_of(p) or p for p in listing.split("\0")]
    paths = list(dict.fromkeys(p for p in named if p.endswith(".md") and _indexed(p)))
    before, after = _memories_at(store, base, paths), _memories_at(store, sha, paths)
    new = [b for i, b in after.items() if i not in before]
    removed = [b for i, b in before.items() if i not in after]
    superseded = entries = 0
    for block_id, now in after.items():
        was = before.get(block_id)
        if was is not None:
            superseded += now.status == "superseded" and was.status != "superseded"
            entries += bool(now.field("consolidated")) and not was.field("consolidated")
    diff = ""
    if with_diff:
        diff = git.run("diff", "--no-color", "--no-ext-diff", f"{base}...{sha}", "--", strip=False)
    return Review(
        branch=name,
        commit=sha,
        base=base,
        title=title,
        date=date.strip(),
        added=sum(1 for b in new if b.kind in FACT_KINDS),
        superseded=superseded,
        dropped=len(given_dropped) + len(removed),
        episodes=sum(1 for b in new if b.kind == "episode"),
        entries=entries,
        dropped_facts=[*given_dropped, *(b.text for b in removed)],
        diff=diff,
        facts=[b.id for b in new if b.kind in FACT_KINDS],
    )


def _indexed(path: str) -> bool:
    return not any(part in EXCLUDED_DIRS for part in PurePosixPath(path).parts[:-1])


def _memories_at(store: MemoryStore, rev: str, paths: list[str]) -> dict[str, Block]:
    """Memory blocks (by id) of ``paths`` as they are at ``rev``."""
    found: dict[str, Block] = {}
    for path in paths:
        parsed = parsed_at(store, rev, path)
        if parsed is not None:
            found.update((b.id, b) for b in parsed.blocks if b.is_memory)
    return found


def _trailers(log_output: str) -> list[tuple[str, str]]:
    out = []
    for line in log_output.replace("\0", "\n").splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            out.append((key, value.strip()))
    return out


# ------------------------------------------------------------ decisions ----


def merge(store: MemoryStore, branch: str | None = None) -> ReviewDecision:
    """Merge an open review into the current branch (``--no-ff``), then drop the branch."""
    git = store.git
    with store.writer.writing():
        _check_repo(store)
        name, sha = _pick(store, branch)
        current = _current_branch(store)
        found = _read(store, name, sha, with_diff=False)
        stale = _sources_changed(store, found.base, sha)
        if stale:
            # The mark that an entry was consolidated sits beside its line now, so git
            # would merge cleanly; but the review drew its facts from the old words.
            raise ConflictError(
                f"{name} conflicts with {current} in {', '.join(stale)} (entries it "
                "consolidated changed since it was drafted); nothing was merged: reject the "
                "review and consolidate again, or merge it by hand with git"
            )
        message = format_message(
            f"review-merge: {name} into {current}",
            f"{found.title}\n\n{found.added} facts added, {found.superseded} superseded, "
            f"{found.dropped} dropped; {found.episodes} episodes from {found.entries} entries.",
            trailers=[("Review", name), ("Review-Commit", sha), ("Op", "review-merge")],
        )
        old_head = git.head()
        with tempfile.TemporaryDirectory(prefix="review-", dir=store.state_dir) as tmp:
            message_file = Path(tmp) / "message"
            message_file.write_text(message, encoding="utf-8")
            status, out, err = git.execute(
                "merge", "--no-ff", "--no-edit", "--no-verify", "--no-autostash", "-q",
                "-F", str(message_file), sha,
                env={**Identity.agent(store.agent).env(), "GIT_MERGE_AUTOEDIT": "no"},
                config=[*driver_config(store), "rerere.enabled=false"],
            )  # fmt: skip
        if status != 0:
            unmerged = _unmerged(store)
            if (store.root / ".git" / "MERGE_HEAD").exists():
                git.execute("merge", "--abort")
            if old_head and git.head() != old_head:
                git.execute("reset", "-q", "--keep", old_head)
            _follow(store)
            if unmerged:
                raise ConflictError(
                    f"{name} conflicts with {current} in {', '.join(unmerged)} (the same "
                    "memories changed on both sides); nothing was merged: reject the review, "
                    "or merge it by hand with git"
                )
            raise GitError(f"git merge: {first_line(err) or first_line(out)}")
        commit = git.head()
        status, _out, err = git.execute("update-ref", "-d", f"refs/heads/{name}", sha)
        if status != 0:  # someone moved the branch meanwhile: the merge stands, the branch stays
            log.warning("merged %s but could not delete it: %s", name, first_line(err))
        _follow(store)
    log.info("merged review %s into %s (%s)", name, current, (commit or "")[:10])
    _retire_duplicates(store, found.facts, f"the merge of {name}")
    return ReviewDecision(branch=name, action="merged", commit=commit, review=found)


def _sources_changed(store: MemoryStore, base: str, sha: str) -> list[str]:
    """Files of the entries a review consolidated whose text changed on the
    current branch since the review's base (HEAD's words differ from the base's)."""
    head = store.git.head()
    if head is None or head == base:
        return []
    listing = store.git.run(
        "diff", "--name-only", "-z", "--no-renames", base, sha, "--", strip=False
    )
    notes = list(dict.fromkeys(n for p in listing.split("\0") if (n := note_of(p))))
    stale: list[str] = []
    for note in notes:
        before, after = parsed_at(store, base, note), parsed_at(store, sha, note)
        if before is None or after is None:
            continue
        marked = {
            b.id
            for b in after.memories()
            if b.field("consolidated") and (was := before.by_id(b.id)) is not None
            and not was.field("consolidated")
        }
        now = parsed_at(store, head, note)
        if marked and (now is None or any(
            (b := now.by_id(i)) is None or b.text != before.by_id(i).text  # type: ignore[union-attr]
            for i in marked
        )):
            stale.append(note)
    return stale


def _retire_duplicates(store: MemoryStore, fact_ids: Iterable[str], why: str) -> list[str]:
    """Supersede copies of the same fact a merge brought together (the oldest stays), one commit.

    Deduplication at ``remember`` sees only the line it writes to: two open
    reviews, or a review and the main line, can each add the same fact.
    """
    pairs: dict[str, str] = {}
    for fact_id in fact_ids:
        block = store.catalog.block(fact_id)
        if block is None:
            continue
        same = store.catalog.active_with(block.scope, block.content_hash)
        for copy in same[1:]:
            pairs[copy.id] = same[0].id
    if not pairs:
        return []
    with store.batch(f"dedupe: {len(pairs)} facts repeated by {why}") as tx:
        for copy_id, kept_id in pairs.items():
            tx.set_fields(
                copy_id,
                {"status": "superseded", "by": f"^{kept_id}", "updated": store.clock.today()},
                op="dedupe",
                subject=f"dedupe: {copy_id} repeats {kept_id}",
                extra_trailers=[("Supersedes", copy_id)],
            )
    log.info("retired %d duplicate facts after %s", len(pairs), why)
    return list(pairs)


def reject(store: MemoryStore, branch: str | None = None) -> ReviewDecision:
    """Delete an open review branch; its entries are pending again (noted in the daily log)."""
    with store.writer.writing():
        _check_repo(store)
        name, sha = _pick(store, branch)
        found = _read(store, name, sha, with_diff=False)
        store.git.run("update-ref", "-d", f"refs/heads/{name}", sha)
        # The branch was the only record of what was proposed: the daily log
        # says what was turned down and which commit held it.
        store.log(
            f"Rejected the consolidation under review {name} ({sha[:10]}: {found.title}); "
            f"its {found.entries} session entries are pending again.",
            category="Consolidation",
        )
        commit = store.git.head()
    log.info("rejected review %s (%s)", name, sha[:10])
    return ReviewDecision(branch=name, action="rejected", commit=commit, review=found)


def undo(store: MemoryStore, commit: str) -> UndoResult:
    """Revert one commit of the current branch (a merge against its first parent)."""
    git = store.git
    with store.writer.writing():
        _check_repo(store)
        sha = rev_parse(store, commit)
        if sha is None:
            raise InvalidInputError(f"no commit {commit!r} in the vault")
        if not is_ancestor(store, sha, "HEAD"):
            raise InvalidInputError(f"{commit} is not in the history of the current branch")
        parents = git.run("rev-list", "--parents", "-n", "1", sha).split()[1:]
        if not parents:
            raise InvalidInputError("the first commit of the vault cannot be undone")
        subject = git.run("log", "-1", "--format=%s", sha)
        old_head = git.head()
        args = ["revert", "--no-commit", *(["-m", "1"] if len(parents) > 1 else []), sha]
        status, out, err = git.execute(
            *args,
            env=Identity.agent(store.agent).env(),
            config=[*driver_config(store), "rerere.enabled=false"],
        )
        if status != 0:
            unmerged = _unmerged(store)
            _abort_revert(store, old_head)
            if unmerged:
                raise ConflictError(
                    f"undoing {sha[:10]} conflicts in {', '.join(unmerged)} (later commits "
                    "changed the same memories); nothing was changed"
                )
            raise GitError(f"git revert: {first_line(err) or first_line(out)}")
        changed = git.run("diff", "--cached", "--name-only", "-z", "HEAD", strip=False)
        paths = [p for p in changed.split("\0") if p]
        if not paths:
            _abort_revert(store, old_head)
            raise InvalidInputError(f"{sha[:10]} is already undone (reverting it changes nothing)")
        message = format_message(
            f"revert: {subject}",
            f"This reverts commit {sha}.",
            trailers=[("Reverts", sha), ("Op", "revert")],
        )
        new = git.commit(message, Identity.agent(store.agent))
        _follow(store)
    if new is None:  # pragma: no cover - the staged check above makes this unreachable
        raise GitError("git revert staged nothing")
    log.info("undid %s (%s) in %s", sha[:10], subject, new[:10])
    merged = len(parents) > 1
    return UndoResult(reverted=sha, subject=subject, commit=new, merge=merged, paths=paths)


def _check_repo(store: MemoryStore) -> None:
    if not store.settings.git.enabled:
        raise ConfigError("reviews and undo need git ([git] enabled = true)")
    busy = store.git.operation_in_progress()
    if busy:
        raise GitError(
            f"a git {busy} is in progress in the vault; finish it or abort it "
            f"(`git {busy} --abort`) first"
        )


def _current_branch(store: MemoryStore) -> str:
    branch = store.git.run("symbolic-ref", "--short", "-q", "HEAD", ok_codes=(0, 1)).strip()
    if not branch:
        raise GitError("the vault is not on a branch (detached HEAD); check out a branch first")
    return branch


def _unmerged(store: MemoryStore) -> list[str]:
    out = store.git.run("diff", "--name-only", "--diff-filter=U", "-z", strip=False)
    return sorted({p for p in out.split("\0") if p})


def _abort_revert(store: MemoryStore, old_head: str | None) -> None:
    store.git.execute("revert", "--abort")
    if old_head and store.git.head() != old_head:
        store.git.execute("reset", "-q", "--keep", old_head)


def _follow(store: MemoryStore) -> None:
    """Catalog and indexes catch up with the files git just changed."""
    store.git.forget_tracked()
    store.refresh()
