"""Forgetting for real: remove one memory, and what was derived from it, from every commit.

:func:`purge` touches that memory, its derived copies and nothing else:

* **Files**, in every version of every file on every ref: the block whose id
  is the memory's is removed (all its lines, and one separating blank line,
  as ``forget`` does), found by parsing that version - never by searching
  its text, which may be two letters that also sit inside other words.
* **Derived copies**, found by the links every copy records (see
  :mod:`mdmem.store.derived`; no wording decides what is a copy): a fact,
  bug fix or other copy made from the memory is removed like the memory;
  an episode note, session summary or daily-log line made from it and from
  other sources is *regenerated* from what is left (extractively, by
  :mod:`mdmem.memory.consolidation.regenerate`: the same in every version of it, renamed
  when its file name came from the old title); one with no source left is
  removed (an episode note leaves whole). List lines linking a removed
  memory (an episode's ``## Facts``, ``sources:``) go too. A raw tool
  output the memory alone pointed at (``[tout:: key]``) leaves history.
* **Commit messages**: the subject of a commit that changed one of those
  blocks (or names it in a trailer) reads ``<op> <kind>: [PURGED]`` where it
  quoted the text; ``Dropped:`` trailers that quote it read ``[PURGED]``; a
  renamed note's path is renamed in messages too. Other messages, and every
  other memory, note and ``mdmem.toml``, keep their bytes in every commit.
* **Leftovers**: reflogs are expired, stashes rebuilt from their rewritten
  commits, pseudo-refs and ``rr-cache`` removed, unreachable objects pruned;
  the keyword index is rebuilt, the manifest vacuumed and the time-travel
  snapshots dropped.
* **By content** (:mod:`mdmem.git.sweep`): a fact or other copy that
  repeats the text but cites other sources goes as a copy; any other quote
  of the text (its lines in any case, spacing or markdown escaping) - in a
  person's note, any file of any ref, a commit body, a tag message, a git
  note, a stash message - reads ``[PURGED]``: today's files through the
  writer, older versions in the history rewrite. Git notes follow their
  rewritten commits; the embedding cache keeps only vectors a block says.
* **Checked**: afterwards the same search runs over every git object, every
  file of the vault (``.git`` included) and the state dir; any place still
  holding the text is named in a :class:`~mdmem.errors.PurgeIncompleteError`
  (words another memory says are that memory's, ``also_in``, and not searched).

The rewrite streams ``git fast-export | rewrite | git fast-import`` (git
plumbing, always available) and keeps the number of commits. ``git
filter-repo`` is not used: its text replacement works on strings across all
files, which is exactly what a purge must not do. Afterwards the remote no
longer matches: a marker makes ``sync`` refuse to pull until ``force_push``
overwrites it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING

from mdmem.errors import GitError, IndexError_, InvalidInputError, MemoryNotFoundError, Spelled
from mdmem.files.ids import normalize_id
from mdmem.git import timetravel
from mdmem.git.leftovers import check_gone, expire_and_prune, move_notes
from mdmem.git.provenance import clear_blame_cache
from mdmem.git.purge_files import rewrite_file
from mdmem.git.revisions import parsed_at
from mdmem.git.sweep import Sweep, is_copy_of, miscited, read_bytes
from mdmem.index.blocktext import embed_key
from mdmem.index.progress import Progress, silent
from mdmem.models import first_line, one_line
from mdmem.store.commitrecords import drop_records
from mdmem.store.derived import (
    Affected,
    NoteText,
    Provenance,
    Rewrite,
    front_ids,
    is_episode_note,
)
from mdmem.store.writer import memory_trailers

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "PURGED",
    "PurgeResult",
    "clear_stale_marker",
    "marked_rewrite",
    "message_forms",
    "purge",
    "remote_is_stale",
    "rewrite_file",
    "scrub_message",
]

PURGED = "[PURGED]"
# Trailers whose value quotes a memory's text (consolidation's dropped facts);
# every other trailer is metadata and keeps its value.
_QUOTING_TRAILERS = frozenset({"dropped"})


@dataclass(frozen=True)
class PurgeResult:
    memory_id: str
    method: str  # "fast-export"
    commits: int  # commits in the repository (unchanged by a purge)
    commits_rewritten: int
    blobs_rewritten: int | None  # file versions that changed
    messages_rewritten: int | None
    strings: int  # distinct forms of the text looked for in commit messages
    also_in: tuple[str, ...]  # other memories that mention the text: left as they are
    forgotten_now: bool  # the memory was still in the vault and got forgotten first
    seconds: float
    derived: tuple[str, ...] = ()  # copies made from it (facts...), removed with it
    episodes: tuple[str, ...] = ()  # episodes and summaries it was a source of
    regenerated: tuple[str, ...] = ()  # copies written again from their other sources
    renamed: tuple[tuple[str, str], ...] = ()  # notes whose file name came from the text
    # Places the content search found the text in and redacted (notes, messages, refs...).
    cleaned: tuple[str, ...] = ()


@dataclass
class _Target:
    """What one purge removes and regenerates, gathered from the files and every ref."""

    memory_id: str
    graph: Provenance
    affected: Affected
    rewrite: Rewrite
    tool_keys: dict[str, set[str]] = field(default_factory=dict)  # id -> [tout:: key]s seen
    raw_paths: set[str] = field(default_factory=set)  # tool outputs only they pointed at

    @property
    def dropped_paths(self) -> set[str]:
        """Paths of the notes that leave whole (a commit trailer may name them)."""
        return {p for i in self.affected.dropped_notes for p in self.graph.notes.get(i, ())}

    @property
    def removed(self) -> frozenset[str]:
        return self.affected.removed

    @property
    def touched(self) -> frozenset[str]:
        return self.affected.removed | self.affected.regenerated

    def texts(self, ids: Iterable[str]) -> set[str]:
        return {t for i in ids for t in self.graph.texts.get(i, ())}


def purge(
    store: MemoryStore,
    memory_id: str,
    *,
    confirm: bool,
    method: str | None = None,
    progress: Progress | None = None,
) -> PurgeResult:
    """Forget ``memory_id`` and its derived copies, and rewrite ALL history without them.

    Every version of the memory's block (matched by its id) and of the copies
    removed with it leaves every commit of every ref; copies made from it and
    from other sources are regenerated from those (see the module docstring);
    commit subjects of its own commits that quoted it read ``[PURGED]``.
    Nothing else changes, and the number of commits stays the same. Reflogs
    are expired and unreachable objects pruned. Clones and remotes elsewhere
    still hold the text: after a purge, ``sync`` refuses to pull until
    ``force_push=True`` overwrites the remote.

    Raises :class:`~mdmem.errors.PurgeIncompleteError`, naming the places,
    when the removed text is still found anywhere afterwards.

    ``method``: ``"fast-export"`` or None (the same).
    """
    if not confirm:
        raise InvalidInputError.naming(
            "purge rewrites the whole git history of the vault and cannot be undone; other "
            "clones and the remote still hold the text until they are rewritten too; pass ",
            Spelled("confirm=True", "--yes"),
            " to proceed",
        )
    if method not in (None, "fast-export"):
        raise InvalidInputError(
            "method must be 'fast-export' (git filter-repo replaces strings in every file; "
            "a purge removes one block by its id)"
        )
    memory_id = normalize_id(memory_id)
    started = time.perf_counter()
    tell = progress or silent  # steps: find, rewrite history, prune; then the re-index's own
    with store.writer.writing():
        tell("purge", 0, 3)
        target = _gather(store, memory_id)
        sweep = _sweep_of(store, target)
        forgotten_now = _forget_now(store, target, sweep)
        store.refresh()
        forms = message_forms(target.texts(target.touched))
        also_in = _mentioned_in(store, target, message_forms(target.texts(target.removed)))
        own = _own_commits(store, set(target.touched))
        before = set(_all_commits(store))
        old_head = store.git.head()
        stashes = _hold_stashes(store)
        rewriter = _Rewriter(target, forms, own, sweep)
        tell("purge", 1, 3)
        try:
            _rewrite_history(store, rewriter, old_head)
        except GitError:
            # The refs still name the old history: drop only our helper refs.
            for n in range(len(stashes)):
                store.git.run("update-ref", "-d", f"{_HELD_STASH}{n}", ok_codes=(0, 1))
            raise
        tell("purge", 2, 3)
        expire_and_prune(store)
        _restore_stashes(store, stashes, forms, own, sweep)
        after = _all_commits(store)
        store.git.forget_tracked()
        clear_blame_cache()
        store.refresh()
        _mark_remote_stale(store, old_head)
    # Whoosh keeps deleted documents in its segments until rewritten, and
    # SQLite keeps deleted rows in free pages and its WAL; a time-travel
    # snapshot is an index of an old tree.
    tell("purge", 3, 3)
    store.reindex(full=True, progress=progress)
    store.indexer.manifest.scrub()
    shutil.rmtree(store.state_dir / "asof", ignore_errors=True)
    drop_records(store.state_dir)
    timetravel.forget_snapshots(store)
    try:
        dropped, left = _drop_cached_vectors(store), []
    except IndexError_ as exc:
        dropped, left = 0, [f"embedding cache ({exc})"]
    check_gone(store, target.memory_id, sweep, left)
    affected = target.affected
    return PurgeResult(
        memory_id=memory_id,
        method="fast-export",
        commits=len(after),
        commits_rewritten=len(before - set(after)),
        blobs_rewritten=rewriter.blobs,
        messages_rewritten=rewriter.messages,
        strings=len(forms),
        also_in=also_in,
        forgotten_now=forgotten_now,
        seconds=round(time.perf_counter() - started, 3),
        derived=tuple(sorted(affected.removed - {memory_id})),
        episodes=tuple(sorted(_episodes(target))),
        regenerated=tuple(sorted(affected.regenerated)),
        renamed=tuple(sorted(target.rewrite.renames.items())),
        cleaned=(
            *sorted(rewriter.cleaned),
            *([f"embedding cache ({dropped} vectors dropped)"] if dropped else []),
        ),
    )


def _sweep_of(store: MemoryStore, target: _Target) -> Sweep:
    """The purged text to search for: the lines of everything removed, and the lines of
    regenerated copies' old text that repeat it; not what a kept memory still says."""
    removed = target.texts(target.removed)
    old = {
        line
        for text in target.texts(target.affected.regenerated)
        for line in text.splitlines()
        if is_copy_of(line, removed)
    }
    kept = [b.text for b in store.catalog.blocks(memories_only=True) if b.id not in target.touched]
    return Sweep.of([*removed, *old], kept=kept, mark=PURGED)


def _drop_cached_vectors(store: MemoryStore) -> int:
    """Vectors of texts no block says any more leave the embedding cache, keys and all:
    a cached key is the hash of a text, so it would confirm a guessed purged text."""
    live = {embed_key(b) for b in store.catalog.blocks()}
    return store.embedding.cache.keep_only(live)


def _episodes(target: _Target) -> set[str]:
    graph = target.graph
    return {
        i
        for i in target.touched - {target.memory_id}
        if (d := graph.pieces.get(i)) is not None and d.rule in ("episode", "summary")
    }


# ------------------------------------------------------------------ gather --


def _gather(store: MemoryStore, memory_id: str) -> _Target:
    """The memory, what was derived from it (any version, any ref), and the edits."""
    graph = Provenance.of(state.parsed for state in list(store.catalog.files.values()))
    tool_keys: dict[str, set[str]] = {}
    roots = {memory_id}
    known = {memory_id}
    frontier = {memory_id}
    while frontier:
        # Every version naming these ids: their own blocks, and the copies
        # that link them (an episode's sources, a fact's episode...).
        _versions(store, frontier, graph, tool_keys)
        _summaries_over(store, frontier, graph, tool_keys)
        if memory_id not in graph.texts:
            raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
        reached = graph.affected(roots, remove=True)
        frontier = set(reached.removed | reached.regenerated) - known
        known |= frontier
        if not frontier:
            # Copies that repeat the text but cite other sources go with it too
            # (compared with what the links reach: one such copy is no new source).
            linked = graph.affected({memory_id}, remove=True).removed
            purged = {t for i in linked for t in graph.texts.get(i, ())}
            touched = reached.removed | reached.regenerated
            wrong = miscited(graph, store.catalog.blocks(memories_only=True), purged, touched)
            roots |= wrong
            frontier = wrong - known
            known |= frontier
    affected = graph.affected(roots, remove=True)
    rewrite = (store.regenerate or marked_rewrite)(graph, affected, PURGED)
    target = _Target(memory_id, graph, affected, rewrite, tool_keys)
    target.raw_paths = _raw_outputs(store, target)
    return target


def marked_rewrite(graph: Provenance, affected: Affected, mark: str) -> Rewrite:
    """The edits without a regenerator: removed copies leave, the others read ``mark``."""
    texts = {i: mark for i in affected.regenerated}
    notes = {
        i: _marked_note(mark)
        for i in affected.regenerated
        if (d := graph.pieces.get(i)) is not None and d.rule == "episode"
    }
    return Rewrite(
        mark=mark,
        removed=affected.removed,
        texts=texts,
        notes=notes,
        dropped=affected.dropped_notes,
    )


def _marked_note(mark: str) -> NoteText:
    front = {"title": mark, "abstract": mark, "overview": mark, "pending": []}
    return NoteText(title=mark, pending=(), front=front)


def _versions(
    store: MemoryStore, ids: set[str], graph: Provenance, tool_keys: dict[str, set[str]]
) -> None:
    """Parse every file, at every commit on any ref, where a line naming ``ids`` changed."""
    markers = sorted(f"^{i}" for i in ids)
    pattern = "\\^(" + "|".join(ids) + ")"
    shas = store.git.run("log", "--all", "--format=%H", "-G", pattern).split()
    grep = [arg for i in sorted(ids) for arg in ("--grep", i)]
    shas += store.git.run("log", "--all", "--format=%H", "-F", *grep).split()
    _parse_versions(store, dict.fromkeys(shas), markers, graph, tool_keys)


def _summaries_over(
    store: MemoryStore, ids: set[str], graph: Provenance, tool_keys: dict[str, set[str]]
) -> None:
    """Every version of the session summaries of the sessions ``ids`` are turns of.

    A summary names its span by its first and last turn, not each turn in it.
    """
    sessions = {
        PurePosixPath(path).stem for path, turns in graph.session_turns.items() if turns & ids
    }
    if not sessions:
        return
    markers = sorted(f"[session:: {s}]" for s in sessions)
    pattern = "\\[session:: (" + "|".join(re.escape(s) for s in sorted(sessions)) + ")\\]"
    shas = store.git.run("log", "--all", "--format=%H", "-G", pattern).split()
    _parse_versions(store, dict.fromkeys(shas), markers, graph, tool_keys)


def _parse_versions(
    store: MemoryStore,
    shas: Iterable[str],
    markers: list[str],
    graph: Provenance,
    tool_keys: dict[str, set[str]],
) -> None:
    seen: set[tuple[str, str]] = set()
    for sha in shas:
        listing = store.git.run(
            "grep",
            "-l",
            "-z",
            "-F",
            *[arg for m in markers for arg in ("-e", m)],
            sha,
            "--",
            "*.md",
            ok_codes=(0, 1),
            strip=False,
        )
        for entry in listing.split("\0"):
            _, _, path = entry.partition(":")
            if not path:
                continue
            parsed = parsed_at(store, sha, path)
            if parsed is None:
                continue
            key = (path, "".join(b.content_hash + b.id for b in parsed.blocks))
            if key in seen:
                continue
            seen.add(key)
            graph.add_file(parsed)
            for block in parsed.blocks:
                keys = [v for k, v in block.fields if k == "tout"]
                if keys:
                    tool_keys.setdefault(block.id, set()).update(keys)


def _raw_outputs(store: MemoryStore, target: _Target) -> set[str]:
    """Paths of raw tool outputs (``[tout:: key]``) that only the removed memories pointed at."""
    keys = {k for i in target.removed for k in target.tool_keys.get(i, ())}
    if not keys:
        return set()
    for block in store.catalog.blocks(memories_only=True):
        if block.id not in target.removed:
            keys -= {v for k, v in block.fields if k == "tout"}
    names = {f"{key}.md" for key in keys}
    listing = store.git.run("log", "--all", "--format=", "--name-only", "-z", strip=False)
    paths = {p.strip("\n") for p in listing.split("\0")}
    return {p for p in paths if PurePosixPath(p).name in names}


def _forget_now(store: MemoryStore, target: _Target, sweep: Sweep) -> bool:
    """One commit: today's files as the rewritten history will hold them.

    Removed blocks leave, copies read their regenerated text. (A note that
    leaves whole, a renamed note and a raw tool output follow with the
    history rewrite, which changes every commit and so the working tree.)
    """
    rewrite = target.rewrite
    files = {
        p
        for i in target.touched
        for p in [store.catalog.path_of(i), *sorted(target.graph.notes.get(i, ()))]
        if p is not None and p in store.catalog.files
    }
    for path, state in list(store.catalog.files.items()):
        meta = state.parsed.frontmatter
        if is_episode_note(meta) and any(
            i in target.removed
            for key in ("sources", "facts", "given")
            for i in front_ids(meta, key)
        ):
            files.add(path)
    # A person's note (or any file) quoting the text: the quote reads [PURGED].
    holding = {p for p in store.catalog.files if sweep.found_in(read_bytes(store.root / p))}
    files |= holding
    if not files:
        return False
    memory_id = target.memory_id
    present = [i for i in sorted(target.removed) if store.catalog.has_id(i)]
    current = store.catalog.block(memory_id)
    kind = target.graph.kinds.get(memory_id, "memory")
    subject = f"purge {kind}: {PURGED}"
    trailers = [
        *memory_trailers(memory_id, kind, current.scope if current else "", "purge"),
        *[("Memory-Id", i) for i in present if i != memory_id],
    ]
    with store.writer.transaction(subject) as tx:
        # The same edit as the history rewrite, so this commit's files match
        # what the rewritten history holds.
        for path in sorted(files):
            tx.apply(path, rewrite.editor(), subject, [])
            if path in holding:
                tx.apply(path, sweep.editor(), subject, [])
            ids = [b.id for b in store.catalog.blocks_in(path) if b.is_memory]
            tx.record_many(path, rewrite.record_updates(ids))
        tx.set_message(subject, trailers)
    return memory_id in present


def _mentioned_in(store: MemoryStore, target: _Target, forms: Collection[str]) -> tuple[str, ...]:
    """Other memories whose text mentions the purged text (as words): reported, not touched."""
    patterns = [
        re.compile(rf"(?<!\w){re.escape(f)}(?!\w)", re.IGNORECASE) for f in forms if f.strip()
    ]
    found = set()
    for block in store.catalog.blocks(memories_only=True):
        if block.id in target.touched:
            continue
        flat = " ".join(block.text.split())
        if any(p.search(flat) for p in patterns):
            found.add(block.id)
    return tuple(sorted(found))


def _own_commits(store: MemoryStore, ids: set[str]) -> set[str]:
    """Commits on any ref that changed a line naming one of ``ids``, or name it in a trailer."""
    pattern = "\\^(" + "|".join(ids) + ")"
    shas = set(store.git.run("log", "--all", "--format=%H", "-G", pattern).split())
    grep = [arg for i in sorted(ids) for arg in ("--grep", i)]
    shas |= set(store.git.run("log", "--all", "--format=%H", "-F", *grep).split())
    return shas


def _all_commits(store: MemoryStore) -> list[str]:
    return store.git.run("rev-list", "--all").split()


# ------------------------------------------------------------ the messages --


def message_forms(texts: Iterable[str]) -> set[str]:
    """The ways a commit message quotes a text: whole or first line, with or without its tags."""
    forms: set[str] = set()
    for text in texts:
        for variant in (text, _untagged(text)):
            for form in (one_line(variant), one_line(first_line(variant))):
                if form:
                    forms.add(form)
    return forms


def _untagged(text: str) -> str:
    # Tags mdmem appends after the text ("ok #tag") are not in the caller's subject.
    return re.sub(r"(?:\s+#[A-Za-z_][\w/-]*)+\s*$", "", text)


def _quotes(fragment: str, forms: Collection[str]) -> bool:
    """Whether ``fragment`` is one of ``forms``, or one cut short with "…"."""
    flat = one_line(fragment)
    if not flat:
        return False
    if flat in forms:
        return True
    if flat.endswith("…"):
        prefix = flat[:-1].rstrip()
        return bool(prefix) and any(f.startswith(prefix) and len(f) > len(prefix) for f in forms)
    return False


_MORE = re.compile(r" \(\+(?:\d+ more\)|[^)]*…)$")  # "(+3 more)", or it cut short
_REVERT = re.compile(r'^(Revert ")(.*)(")$')
# git's own messages that quote another commit's subject after its short sha:
# a stash ("WIP on main: 1a2b3c4 <subject>", "index on …", "untracked files on …").
_QUOTES_COMMIT = re.compile(
    r"^((?:WIP on|On|index on|untracked files on) [^:\n]*: )([0-9a-f]{7,40}) (.*)$"
)


def _scrub_subject(subject: str, forms: Collection[str]) -> str:
    """A subject of one of the memory's own commits, its quote of the text replaced."""
    revert = _REVERT.match(subject)
    if revert is not None:
        inner = _scrub_subject(revert.group(2), forms)
        return revert.group(1) + inner + revert.group(3)
    if _quotes(subject, forms):
        return PURGED
    head, sep, rest = subject.partition(": ")
    if not sep:
        return subject
    more = _MORE.search(rest)
    tail = ""
    if more is not None:
        rest, tail = rest[: more.start()], rest[more.start() :]
    return f"{head}{sep}{PURGED}{tail}" if _quotes(rest, forms) else subject


def _scrub_quoted_commit(subject: str, forms: Collection[str], own_commits: Collection[str]) -> str:
    """A stash message quoting one of the memory's own commits, by its short sha."""
    match = _QUOTES_COMMIT.match(subject)
    if match is None or not any(c.startswith(match.group(2)) for c in own_commits):
        return subject
    quoted = _scrub_subject(match.group(3), forms)
    return f"{match.group(1)}{match.group(2)} {quoted}"


def scrub_message(
    message: str,
    forms: Collection[str],
    *,
    own: bool = True,
    own_commits: Collection[str] = (),
) -> str:
    """The commit message with its quotes of ``forms`` replaced by ``[PURGED]``.

    ``own``: the commit changed the memory's block (or names it), so its
    subject is read as ``<op> <kind>: <quote>``. A stash commit's subject
    quoting one of ``own_commits`` (by short sha) is read the same way. In
    any commit, a ``Dropped:`` trailer quoting the text is replaced. Nothing
    else is searched: a short text inside other words is not a quote.
    """
    lines = message.split("\n")
    if lines:
        if own:
            lines[0] = _scrub_subject(lines[0], forms)
        lines[0] = _scrub_quoted_commit(lines[0], forms, own_commits)
    for i, line in enumerate(lines[1:], start=1):
        key, sep, value = line.partition(": ")
        if sep and key.strip().lower() in _QUOTING_TRAILERS and _quotes(value, forms):
            lines[i] = f"{key}{sep}{PURGED}"
    return "\n".join(lines)


def _unquote_path(raw: bytes) -> str:
    """A path as fast-export writes it: plain, or C-quoted with escapes."""
    if not raw.startswith(b'"'):
        return raw.decode("utf-8", "surrogateescape")
    body, out, i = raw[1:-1], bytearray(), 0
    simple = {b"n": 10, b"t": 9, b"r": 13, b"a": 7, b"b": 8, b"f": 12, b"v": 11}
    while i < len(body):
        ch = body[i : i + 1]
        if ch != b"\\":
            out += ch
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt.isdigit():
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            out += nxt
            i += 2
    return bytes(out).decode("utf-8", "surrogateescape")


# ------------------------------------------------------------ the rewrite --


class _Rewriter:
    """Rewrites a ``git fast-export`` stream for one purge.

    A blob that mentions a memory concerned is held back; each commit that
    uses it gets that file's rewritten version inline (``M <mode> inline
    <path>``), since a block is found by parsing the file as the markdown its
    path says it is. A version that leaves becomes ``D <path>``; a renamed
    note changes its path in every commit.
    """

    def __init__(
        self, target: _Target, forms: Collection[str], own: set[str], sweep: Sweep
    ) -> None:
        self.rewrite = target.rewrite
        self.sweep = sweep
        # What the content search redacted: blobs (by mark) until a commit
        # names their path, then "<ref>:<path>"; messages of commits and tags.
        self.redacted: set[bytes] = set()
        self.cleaned: set[str] = set()
        self.ref = ""
        self.commits: dict[str, str] = {}  # a commit's mark -> its sha before the rewrite
        self.forms = forms
        self.own = own
        # A block names its id after a caret; an export row quotes it.
        self.markers = [
            marker.encode() for i in sorted(self.rewrite.touched) for marker in (f"^{i}", f'"{i}"')
        ]
        self.raw_paths = set(target.raw_paths)
        self.renames = {
            old.encode("utf-8", "surrogateescape"): new.encode("utf-8", "surrogateescape")
            for old, new in self.rewrite.renames.items()
        }
        # A path named in a message: renamed with its note, or gone with it.
        self.paths = {
            **dict.fromkeys(sorted(target.dropped_paths), PURGED),
            **target.rewrite.renames,
        }
        self.held: dict[bytes, bytes] = {}
        self.done: dict[tuple[bytes, str], bytes | None] = {}
        self.spans: dict[tuple[str, bytes], int | None] = {}
        self.blobs = 0
        self.messages = 0

    def stream(self, src: IO[bytes], dst: IO[bytes]) -> None:
        command, sha, name, commit_mark = b"", "", "", ""
        blob: list[bytes] | None = None
        mark = b""
        back: bytes | None = None
        while True:
            line, back = (back, None) if back is not None else (src.readline(), None)
            if not line:
                break
            if line == b"blob\n":
                command, blob, mark = b"blob", [line], b""
                continue
            if line.startswith(b"data "):
                payload = _read_data(src, line)
                if blob is not None:
                    if mark and any(m in payload for m in self.markers):
                        self.held[mark] = payload
                        # Its optional LF goes with it: a stray one is no command.
                        after = src.readline()
                        back = None if after == b"\n" else after
                    else:
                        redacted = self.sweep.redact(payload)
                        if redacted is not payload:
                            self.redacted.add(mark)
                            self.blobs += 1
                        dst.write(b"".join(blob))
                        _write_data(dst, redacted)
                    blob = None
                    continue
                if command == b"commit":
                    payload = self.message(payload, sha)
                elif command == b"tag":
                    redacted = self.sweep.redact(payload)
                    if redacted is not payload:
                        self.cleaned.add(f"message of tag {name}")
                        self.messages += 1
                    payload = redacted
                _write_data(dst, payload)
                continue
            if blob is not None:
                blob.append(line)
                if line.startswith(b"mark "):
                    mark = line[5:].strip()
                continue
            if line.startswith(b"original-oid "):
                sha = line[13:].strip().decode("ascii")
                if command == b"commit" and commit_mark:
                    self.commits[commit_mark] = sha
            elif command == b"commit" and line.startswith(b"mark "):
                commit_mark = line[5:].strip().decode("ascii")
            elif line[:1].isalpha() and line.split(b" ", 1)[0].strip() in _COMMANDS:
                command, sha = line.split(b" ", 1)[0].strip(), ""
                name = line.partition(b" ")[2].strip().decode("utf-8", "surrogateescape")
                if command == b"commit":
                    self.ref, commit_mark = name, ""
            if command == b"commit" and self.file_change(line, dst):
                continue
            if command == b"tag" and line.startswith(b"from ") and line[5:].strip() in self.held:
                raise GitError("a tag points at a file version that holds the memory; delete it")
            dst.write(line)

    def file_change(self, line: bytes, dst: IO[bytes]) -> bool:
        """Handle one ``M``/``D``/``N`` line of a commit; False to copy it as it is."""
        if line.startswith(b"D "):
            path = line[2:-1]
            if _unquote_path(path) in self.raw_paths:
                return True
            if path in self.renames:
                dst.write(b"D " + self.renames[path] + b"\n")
                return True
            return False
        if line.startswith(b"N "):
            ref, _, commitish = line[2:-1].partition(b" ")
            if ref not in self.held:
                return False
            dst.write(b"N inline " + commitish + b"\n")
            _write_data(dst, self.rewritten(ref, "notes.md") or b"", lf=True)
            return True
        if not line.startswith(b"M "):
            return False
        mode, ref, path = line[2:-1].split(b" ", 2)
        name = _unquote_path(path)
        if name in self.raw_paths:
            return True  # the raw output never existed
        if ref in self.redacted:
            self.cleaned.add(f"{self.ref}:{name}")
        moved = self.renames.get(path, path)
        if ref not in self.held:
            if moved == path:
                return False
            dst.write(b"M " + mode + b" " + ref + b" " + moved + b"\n")
            return True
        new = self.rewritten(ref, name)
        if new is None:
            dst.write(b"D " + moved + b"\n")
            return True
        dst.write(b"M " + mode + b" inline " + moved + b"\n")
        _write_data(dst, new, lf=True)
        return True

    def rewritten(self, ref: bytes, path: str) -> bytes | None:
        key = (ref, path)
        if key not in self.done:
            data = self.held[ref]
            new = rewrite_file(path, data, self.rewrite, self.spans, self.raw_paths)
            if new is not None:
                swept = self.sweep.redact(new)
                if swept is not new:
                    self.cleaned.add(f"{self.ref}:{path}")
                new = swept
            self.blobs += new != data
            self.done[key] = new
        return self.done[key]

    def message(self, payload: bytes, sha: str) -> bytes:
        text = payload.decode("utf-8", "surrogateescape")
        new = scrub_message(text, self.forms, own=sha in self.own, own_commits=self.own)
        for old, moved in self.paths.items():
            new = new.replace(old, moved)
        swept = self.sweep.redact_text(new)
        if swept != new:
            self.cleaned.add(f"message of commit {sha[:12]} ({self.ref})")
        new = swept
        self.messages += new != text
        return new.encode("utf-8", "surrogateescape")


_COMMANDS = frozenset({b"commit", b"tag", b"reset", b"feature", b"progress", b"done", b"option"})


def _read_data(src: IO[bytes], header: bytes) -> bytes:
    size_text = header[5:].strip()
    if size_text.startswith(b"<<"):
        raise GitError("unexpected delimited data in fast-export stream")
    chunks: list[bytes] = []
    remaining = int(size_text)
    while remaining:
        chunk = src.read(remaining)
        if not chunk:
            raise GitError("fast-export stream ended early")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _write_data(dst: IO[bytes], payload: bytes, *, lf: bool = False) -> None:
    # The stream's own optional LF after a copied payload follows as a line.
    dst.write(b"data %d\n" % len(payload))
    dst.write(payload)
    if lf:
        dst.write(b"\n")


def _rewrite_history(store: MemoryStore, rewriter: _Rewriter, old_head: str | None) -> None:
    """fast-export | rewriter | fast-import --force; then move the files to the new tree."""
    store.state_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(dir=store.state_dir) as marks_dir,
        tempfile.TemporaryFile(dir=store.state_dir) as err_out,
        tempfile.TemporaryFile(dir=store.state_dir) as err_in,
    ):
        exporter = store.git.popen(
            "fast-export",
            "--all",
            "--show-original-ids",
            "--signed-tags=strip",
            "--tag-of-filtered-object=rewrite",
            "--reencode=yes",
            stdout=subprocess.PIPE,
            stderr=err_out,
        )
        importer = store.git.popen(
            "fast-import",
            "--force",
            "--quiet",
            f"--export-marks={Path(marks_dir) / 'marks'}",
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err_in,
        )
        assert exporter.stdout is not None and importer.stdin is not None
        try:
            rewriter.stream(exporter.stdout, importer.stdin)
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
        marks = (Path(marks_dir) / "marks").read_text(encoding="ascii").split()
    moved = {
        rewriter.commits[mark]: new
        for mark, new in zip(marks[::2], marks[1::2], strict=True)
        if mark in rewriter.commits and rewriter.commits[mark] != new
    }
    move_notes(store, moved)
    new_head = store.git.run("rev-parse", "--verify", "HEAD")
    if old_head and new_head != old_head:
        # Move index and files from the old tree to the rewritten one (a two-way
        # checkout: it refuses rather than overwrite a file someone is editing).
        store.git.run("read-tree", "-m", "-u", old_head, new_head)
    store.git.run("update-index", "-q", "--refresh", ok_codes=(0, 1))


# --------------------------------------------------- stashes and leftovers --

_STASH_REF = "refs/stash"
_HELD_STASH = "refs/mdmem-purge/stash-"


def _hold_stashes(store: MemoryStore) -> list[str]:
    """Give every stash entry a ref of its own, so the rewrite reaches all of them.

    Only the newest stash is a ref; older ones live in the reflog, which the
    purge expires. Returns their messages, oldest first.
    """
    if not store.git.run("rev-parse", "--verify", "-q", _STASH_REF, ok_codes=(0, 1)):
        return []
    out = store.git.run("reflog", "show", "--format=%H%x00%gs", _STASH_REF, ok_codes=(0, 128))
    entries = [line.split("\0", 1) for line in out.splitlines() if "\0" in line]
    entries.reverse()
    for n, (sha, _message) in enumerate(entries):
        store.git.run("update-ref", f"{_HELD_STASH}{n}", sha)
    return [message for _sha, message in entries]


def _restore_stashes(
    store: MemoryStore, messages: list[str], forms: Collection[str], own: set[str], sweep: Sweep
) -> None:
    if not messages:
        return
    store.git.run("update-ref", "-d", _STASH_REF, ok_codes=(0, 1))
    for n, message in enumerate(messages):
        ref = f"{_HELD_STASH}{n}"
        sha = store.git.run("rev-parse", "--verify", ref)
        message = sweep.redact_text(_scrub_quoted_commit(message, forms, own))
        store.git.run("stash", "store", "-m", message, sha)
        store.git.run("update-ref", "-d", ref)


# Purged history diverges from every clone: the next sync must overwrite the
# remote (never rebase the old history back in on top of the purge).
def _stale_marker(store: MemoryStore) -> Path:
    return store.state_dir / "purged-history.json"


def _mark_remote_stale(store: MemoryStore, old_head: str | None) -> None:
    store.state_dir.mkdir(parents=True, exist_ok=True)
    marker = _stale_marker(store)
    data = {"old_head": old_head, "when": datetime.now(UTC).isoformat(timespec="seconds")}
    marker.write_text(json.dumps(data) + "\n", encoding="utf-8")


def remote_is_stale(store: MemoryStore) -> bool:
    return _stale_marker(store).is_file()


def clear_stale_marker(store: MemoryStore) -> None:
    try:
        _stale_marker(store).unlink()
    except FileNotFoundError:
        pass
