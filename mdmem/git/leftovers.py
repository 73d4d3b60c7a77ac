"""What a history rewrite leaves behind, and checking that nothing is left.

:func:`expire_and_prune` drops what still names the old commits (reflogs,
pseudo-refs, ``rr-cache``, unreachable objects, shared index files of the
old trees); :func:`check_gone` then
looks for the removed text in every git object, every file of the vault
(``.git`` included) and the state dir, and raises
:class:`~mdmem.errors.PurgeIncompleteError` naming each place that holds it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from mdmem.errors import PurgeIncompleteError
from mdmem.git.sweep import Sweep, holders

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["check_gone", "expire_and_prune", "move_notes", "shown_places"]


def expire_and_prune(store: MemoryStore) -> None:
    git_dir = store.root / ".git"
    # Pseudo-refs may point at old commits; COMMIT_EDITMSG holds the last message
    # verbatim; rr-cache keeps the text of resolved conflicts.
    names = ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")
    for name in (*names, "COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG"):
        try:
            (git_dir / name).unlink()
        except FileNotFoundError:
            pass
    shutil.rmtree(git_dir / "rr-cache", ignore_errors=True)
    store.git.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    store.git.run("gc", "--prune=now", "--quiet")
    # The index is split (mdmem.store.gitstore): older shared index files keep
    # the paths of their time (a note named after the purged text) for two
    # weeks. Writing a new shared index with expiry "now" removes them.
    store.git.run("update-index", "--split-index", config=("splitIndex.sharedIndexExpire=now",))


def move_notes(store: MemoryStore, moved: Mapping[str, str]) -> None:
    """Git notes of rewritten commits follow them to their new shas.

    A notes ref is a tree named by the commits it annotates; a history
    rewrite gives those commits new names, so their notes would annotate
    nothing (and vanish from ``git log``).
    """
    refs = store.git.run("for-each-ref", "--format=%(refname)", "refs/notes/").split()
    for ref in refs:
        listing = store.git.run("notes", f"--ref={ref}", "list", ok_codes=(0, 1))
        for line in listing.splitlines():
            blob, _, target = line.partition(" ")
            new = moved.get(target)
            if new is None:
                continue
            store.git.run("notes", f"--ref={ref}", "add", "-f", "-C", blob, new)
            store.git.run("notes", f"--ref={ref}", "remove", target)


def check_gone(
    store: MemoryStore, memory_id: str, sweep: Sweep, left: Iterable[str] = ()
) -> None:
    """Look for the purged text where it could still hide; raise naming each place.

    ``sweep`` holds its lines long enough to be told apart that no kept
    memory says (another memory may say the same words: those are reported
    as ``also_in`` and left alone). Files of the working tree count too: an
    untracked export holding it is named. ``left``: places the purge already
    knows it could not clean.
    """
    places = [*left, *holders(store, sweep)]
    if places:
        error = PurgeIncompleteError(
            f"purge of {memory_id} rewrote history, but its text is still in: "
            f"{shown_places(places)}"
        )
        error.places = tuple(places)
        raise error


def shown_places(places: list[str], limit: int = 8) -> str:
    """The first few places for a one-line message (``.places`` keeps them all): files
    and refs a person can open first, then how many git objects."""
    named = [p for p in places if not p.startswith("git object ")]
    objects = len(places) - len(named)
    more = len(named) - limit
    shown = ", ".join(named[:limit]) + (f" and {more} more" if more > 0 else "")
    if objects:
        shown += f"{'; ' if named else ''}{objects} git object{'s' if objects > 1 else ''}"
    return shown
