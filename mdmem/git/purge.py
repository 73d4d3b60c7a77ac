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
  repeats the text, or holds one of its fragments, but cites other sources
  goes as a copy; any other quote of the text (its lines in any case of any
  script, spacing or markdown escaping) and any of its **fragments** (its
  secrets, codes and the strings named with ``also``, alone inside other
  sentences: :mod:`mdmem.git.fragments`) - in a person's note, any file of
  any ref, a commit body, a tag message, a git note, a stash message - reads
  ``[PURGED]``: today's files through the writer, older versions in the
  history rewrite. A file, folder or ref whose name holds a fragment is
  renamed (``PURGED``) in every commit. Git notes follow their rewritten
  commits; the embedding cache keeps only vectors a block says.
* **Ambiguous**: a kept memory that holds a fragment in words of its own
  stops the purge before anything changes, named in a
  :class:`~mdmem.errors.PurgeIncompleteError` with every place holding the
  text then (a purge never rewrites another memory).
* **Checked**: afterwards the same search runs over every git object, every
  file of the vault (``.git`` included) and the state dir, contents and
  names; any place still holding the text is named in a
  :class:`~mdmem.errors.PurgeIncompleteError` (words another memory says
  are that memory's, ``also_in``, and not searched).

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
import time
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from mdmem.errors import (
    GitError,
    IndexError_,
    InvalidInputError,
    MemoryNotFoundError,
    PurgeIncompleteError,
    Spelled,
)
from mdmem.files.ids import normalize_id
from mdmem.git import timetravel
from mdmem.git.fragments import Fragments, fragments, named
from mdmem.git.leftovers import check_gone, expire_and_prune, shown_places
from mdmem.git.provenance import clear_blame_cache
from mdmem.git.purge_files import rewrite_file
from mdmem.git.purge_messages import PURGED, message_forms, scrub_message, scrub_quoted_commit
from mdmem.git.purge_stream import Rewriter, rewrite_history
from mdmem.git.revisions import parsed_at
from mdmem.git.sweep import Sweep, holders, is_copy_of, miscited, read_bytes
from mdmem.index.blocktext import embed_key
from mdmem.index.progress import Progress, silent
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
    # Distinct fragments looked for besides its lines (secrets, codes, ``also``), by kind;
    # never the fragments themselves.
    fragments: dict[str, int] = field(default_factory=dict)


@dataclass
class _Target:
    """What one purge removes and regenerates, gathered from the files and every ref."""

    memory_id: str
    graph: Provenance
    affected: Affected
    rewrite: Rewrite
    fragments: Fragments
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
    also: Iterable[str] = (),
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

    Besides its lines, its distinctive fragments (secrets, codes) and the
    strings in ``also`` are looked for and redacted wherever they stand
    (:mod:`mdmem.git.fragments`).

    Raises :class:`~mdmem.errors.PurgeIncompleteError`, naming the places,
    when the removed text is still found anywhere afterwards, or, before
    anything changed (``rewritten`` False), when a kept memory holds one of
    its fragments in words of its own.

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
    extra = named(also, PURGED)
    started = time.perf_counter()
    tell = progress or silent  # steps: find, rewrite history, prune; then the re-index's own
    with store.writer.writing():
        tell("purge", 0, 3)
        target = _gather(store, memory_id, extra)
        sweep = _sweep_of(store, target)
        _stop_if_held(store, target, sweep)
        renames = _renamed_paths(store, target, sweep)
        refs = _renamed_refs(store, sweep)
        forgotten_now = _forget_now(store, target, sweep)
        store.refresh()
        forms = message_forms(target.texts(target.touched))
        also_in = _mentioned_in(store, target, message_forms(target.texts(target.removed)))
        own = _own_commits(store, set(target.touched))
        before = set(_all_commits(store))
        old_head = store.git.head()
        stashes = _hold_stashes(store)
        rewriter = Rewriter(
            target.rewrite,
            sweep,
            forms=forms,
            own=own,
            raw_paths=target.raw_paths,
            dropped_paths=target.dropped_paths,
            renames=renames,
            refs=refs,
        )
        tell("purge", 1, 3)
        try:
            rewrite_history(store, rewriter, old_head)
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
            # The new names only: the old ones hold what was purged.
            *sorted({f"renamed to {new}" for old, new in renames.items()} - _episode_names(target)),
            *sorted(f"ref renamed to {new}" for new in refs.values()),
            *([f"embedding cache ({dropped} vectors dropped)"] if dropped else []),
        ),
        fragments=dict(target.fragments.counts),
    )


def _episode_names(target: _Target) -> set[str]:
    # Already reported under ``renamed`` (their old names came from a title, not a fragment).
    return {f"renamed to {new}" for new in target.rewrite.renames.values()}


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
    return Sweep.of([*removed, *old], kept=kept, mark=PURGED, fragments=target.fragments.strings)


def _stop_if_held(store: MemoryStore, target: _Target, sweep: Sweep) -> None:
    """Before anything changes: a kept memory holding a fragment in words of its own
    stops the purge (see :mod:`mdmem.git.fragments`), naming it and every place that
    holds the text now, so the person sees all of it at once."""
    held = target.fragments.blockers
    if not held:
        return
    memories = [f"{b.id} ({b.path})" for b in held]
    places = holders(store, sweep)
    error = PurgeIncompleteError(
        f"purge of {target.memory_id} changed nothing: kept memories hold a secret, code or "
        f"--also string of it in words of their own: {shown_places(memories)}; edit those lines "
        f"or forget those memories, then purge again (the text is now in: "
        f"{shown_places(places)})"
    )
    error.places = (*memories, *places)
    error.rewritten = False
    raise error


def _renamed_paths(store: MemoryStore, target: _Target, sweep: Sweep) -> dict[str, str]:
    """Every path, in any commit of any ref, that changes name: a note named after a
    regenerated title, and a file or folder whose name holds a fragment."""
    # --reflog: older stashes live there (held as refs only later); -m: a stash is a merge.
    listing = store.git.run(
        "log",
        "--all",
        "--reflog",
        "--format=",
        "--name-only",
        "--no-renames",
        "-m",
        "-z",
        strip=False,
    )
    paths = {p.strip("\n") for p in listing.split("\0")} - {""}
    paths |= set(store.git.run("ls-files", "-z", strip=False).split("\0")) - {""}
    renames: dict[str, str] = {}
    for path in sorted(paths | set(target.rewrite.renames)):
        new = sweep.redact_name(target.rewrite.renames.get(path, path))
        if new != path:
            renames[path] = new
    taken = Counter(renames.values())
    clash = sorted(n for n, c in taken.items() if c > 1 or (n in paths and n not in renames))
    if clash:
        raise GitError(
            f"purge changed nothing: renaming files whose names hold the purged text would "
            f"give names already taken ({', '.join(clash[:3])}); rename those first"
        )
    return renames


def _renamed_refs(store: MemoryStore, sweep: Sweep) -> dict[str, str]:
    """Branches, tags and other refs whose name holds a fragment, and their new names."""
    refs = store.git.run("for-each-ref", "--format=%(refname)").split()
    renamed: dict[str, str] = {}
    for ref in refs:
        base = "refs/" + sweep.redact_name(ref.removeprefix("refs/"), extension=False)
        new, n = base, 1
        while new != ref and (new in refs or new in renamed.values()):
            n += 1
            new = f"{base}-{n}"
        if new != ref:
            renamed[ref] = new
    return renamed


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


def _gather(store: MemoryStore, memory_id: str, also: Collection[str] = ()) -> _Target:
    """The memory, what was derived from it (any version, any ref), and the edits."""
    graph = Provenance.of(state.parsed for state in list(store.catalog.files.values()))
    found: Fragments | None = None
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
            if found is None:
                found = _fragments_of(store, graph, memory_id, also)
            wrong = miscited(
                graph,
                store.catalog.blocks(memories_only=True),
                purged,
                touched,
                fragments=found.strings,
                rare=found.rare,
            )
            roots |= wrong
            frontier = wrong - known
            known |= frontier
    affected = graph.affected(roots, remove=True)
    rewrite = (store.regenerate or marked_rewrite)(graph, affected, PURGED)
    if found is None:  # (the loop always ends through the branch that sets it)
        found = _fragments_of(store, graph, memory_id, also)
    target = _Target(memory_id, graph, affected, rewrite, found, tool_keys)
    target.raw_paths = _raw_outputs(store, target)
    return target


def _fragments_of(
    store: MemoryStore, graph: Provenance, memory_id: str, also: Collection[str]
) -> Fragments:
    """The fragments of every version of the memory, judged against the kept originals:
    memories made from no other (a copy's words are its sources')."""
    kept = [
        b
        for b in store.catalog.blocks(memories_only=True)
        if b.id != memory_id and b.id not in graph.pieces
    ]
    return fragments(graph.texts.get(memory_id, set()), kept, also)


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
        message = sweep.redact_text(scrub_quoted_commit(message, forms, own))
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
