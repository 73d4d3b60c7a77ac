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
import subprocess
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import PurgeIncompleteError

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["check_gone", "expire_and_prune"]

# A removed text shorter than this is not looked for afterwards: "ok" is in
# other words everywhere, and the block was removed by its id anyway.
_CHECK_CHARS = 12


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


def check_gone(store: MemoryStore, memory_id: str, texts: Iterable[str]) -> None:
    """Look for every removed text where it could still hide; raise naming each place.

    A text is looked for when it is long enough to be told apart and no
    memory or note of the vault says it any more (another memory may say the
    same words: those are reported as ``also_in`` and left alone). Files of
    the working tree count too: an untracked export holding it is named.
    """
    lines = {
        line.strip()
        for text in texts
        for line in text.splitlines()
        if len(line.strip()) >= _CHECK_CHARS
    }
    if not lines:
        return
    # Words another memory or note still says are theirs (reported as also_in).
    kept = [b.text for b in store.catalog.blocks()]
    needles = {
        line.encode("utf-8", "surrogateescape")
        for line in lines
        if not any(line in text for text in kept)
    }
    if not needles:
        return
    git_dir = store.root / ".git"
    places = _objects_holding(store, needles)
    for base in (store.root, store.state_dir):
        for path in _files_under(base, skip=git_dir / "objects"):
            if any(n in _read(path) for n in needles):
                places.append(str(path))
    if places:
        shown = ", ".join(places[:8]) + (f" and {len(places) - 8} more" if len(places) > 8 else "")
        raise PurgeIncompleteError(
            f"purge of {memory_id} rewrote history, but its text is still in: {shown}"
        )


def _files_under(base: Path, *, skip: Path) -> Iterable[Path]:
    if not base.is_dir():
        return
    for path in sorted(base.rglob("*")):
        if path == skip or skip in path.parents:
            continue
        if path.is_file() and not path.is_symlink():
            yield path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _objects_holding(store: MemoryStore, needles: Collection[bytes]) -> list[str]:
    """``git object <sha> (<type>)`` for each object (loose or packed) holding a needle."""
    proc = store.git.popen("cat-file", "--batch-all-objects", "--batch", stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    found: list[str] = []
    try:
        while True:
            header = proc.stdout.readline()
            if not header:
                break
            sha, kind, size = header.split()
            body = proc.stdout.read(int(size))
            proc.stdout.read(1)  # the LF after each object
            if any(n in body for n in needles):
                found.append(f"git object {sha.decode()} ({kind.decode()})")
    finally:
        proc.stdout.close()
        proc.wait()
    return found
