"""When git first recorded each note: a path -> date map, derived from history.

A note a person wrote carries a date of its own only when its frontmatter
says one (``created``/``date``) or it is a daily note (``2025-03-02.md``).
For the rest, the next best truth is the day git first recorded the file:
the author date of the commit that added it. (A file's mtime is no date: a
clone, checkout or sync sets it to today.) The rule, strongest first:
frontmatter > daily-note name > git's first add > unknown
(:data:`mdmem.files.blocks.UNDATED`), applied by the catalog
(:meth:`mdmem.files.catalog.Catalog.redate`).

The map is built by ONE ``git log --diff-filter=AR`` pass over the history
and kept in the state dir (``gitdates.json``) with the commit it was built up
to. When HEAD moves on (a commit, a pull), only the new commits are read
(``<old>..HEAD``); when it moves anywhere else (a rebase, ``mdmem git
purge``, a reset to an older commit) or the file is gone or unreadable, the
map is built again from scratch. It is derived state: deleting it costs one
pass, never a wrong date.

Choices, each cheap to keep:

* the *author* date: a rebase or cherry-pick keeps it, so rewriting history
  does not make old notes new;
* the first add wins: a file deleted and added again keeps its first date,
  and of two branches adding one path, the older add;
* renames: git's rename detection (``-M``, in the same pass) carries the
  old path's date to the new one; a rename git does not detect as one (the
  note also changed past git's similarity threshold) dates the note by the
  commit that renamed it. No ``--follow``: it is one walk per file;
* a block inside a note takes the note's date: dating each block by the
  commit that introduced its lines is ``git blame``, one process per file;
* the adoption commit (``Op: adopt``, ``mdmem init`` on a folder of notes)
  records files that existed long before it, so it dates nothing: those
  notes stay unknown, and a rename of one later keeps it unknown;
* merge commits add nothing of their own (``git log`` shows no diff for
  them), and in a shallow clone the oldest commit present dates all it holds.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path

from mdmem.errors import GitError
from mdmem.files.textfile import atomic_write
from mdmem.store.gitstore import GitStore

__all__ = ["CACHE_NAME", "GitDates"]

log = logging.getLogger("mdmem")

CACHE_NAME = "gitdates.json"
_VERSION = 1
# A path git recorded in a commit that does not date it (the adoption commit).
_UNDATED = 0
_SEP = "\x01"
_LOG = (
    "log",
    "--reverse",
    "--date-order",
    "--diff-filter=AR",
    "-M",
    "--name-status",
    "-z",
    f"--format={_SEP}%at %(trailers:key=Op,valueonly,separator=%x2C)",
)


class GitDates:
    """The first-added date of every ``.md`` path in the vault's history.

    :meth:`update` brings the map to HEAD (cheap when HEAD has not moved:
    two small file reads) and says which paths' dates changed; :meth:`date_of`
    answers from memory. Thread-safe.
    """

    def __init__(self, git: GitStore, state_dir: Path) -> None:
        self._git = git
        self._path = state_dir / CACHE_NAME
        self._lock = threading.Lock()
        self._dates: dict[str, int] = {}
        self._head: str | None = None
        self._loaded = False

    def date_of(self, path: str) -> datetime | None:
        """When git first recorded ``path`` (UTC); None when it has not, or it is undated."""
        stamp = self._dates.get(path)
        if not stamp:
            return None
        return datetime.fromtimestamp(stamp, tz=UTC)

    def update(self) -> set[str] | None:
        """Bring the map up to HEAD; the paths whose date changed, or None when
        it was built again from scratch (any path's date may have changed)."""
        head = self._git.head()
        if self._loaded and head == self._head:
            return set()
        with self._lock:
            first = not self._loaded
            if first:
                self._load()
                self._loaded = True
            changed: set[str] | None = set()
            if head != self._head:
                try:
                    changed = self._advance(head)
                except (GitError, OSError) as exc:
                    # No git, a broken repository: no history dates this time.
                    # Tried again when HEAD moves, not at every refresh.
                    log.warning("dates from git history unavailable: %s", exc)
                    self._dates, self._head = {}, head
                    return None
                self._save()
            # The first call: nothing says what the caller holds, so it compares all.
            return None if first else changed

    # ------------------------------------------------------------ private --

    def _advance(self, head: str | None) -> set[str] | None:
        if head is None:
            self._dates, self._head = {}, None
            return None
        # Built aside and swapped in: a reader in another thread sees the
        # old map or the new one, never half of one.
        old = self._head
        dates: dict[str, int] = {}
        if old is not None and self._is_ancestor(old, head):
            dates.update(self._dates)
            self._walk(f"{old}..{head}", dates)
            changed = {p for p, d in dates.items() if self._dates.get(p) != d}
            self._dates, self._head = dates, head
            return changed
        self._walk(head, dates)
        self._dates, self._head = dates, head
        return None

    def _is_ancestor(self, old: str, new: str) -> bool:
        status, _out, _err = self._git.execute("merge-base", "--is-ancestor", old, new)
        return status == 0  # 1: not an ancestor; 128: no such commit (history rewritten)

    def _walk(self, revisions: str, dates: dict[str, int]) -> None:
        """Record into ``dates`` the adds and renames of ``.md`` files in ``revisions``."""
        # No pathspec: "*.md" keeps git from skipping unchanged trees and
        # makes the walk twice as slow (bench/gitdates.py); Python filters.
        # (Without one, git simplifies no history either: every side branch counts.)
        out = self._git.run(*_LOG, revisions, strip=False)
        for chunk in out.split(_SEP):
            if not chunk:
                continue
            header, _, body = chunk.partition("\0")
            stamp_text, _, ops = header.partition(" ")
            try:
                stamp = int(stamp_text)
            except ValueError:
                continue
            if "adopt" in ops.split(","):
                stamp = _UNDATED
            fields = body.lstrip("\n").split("\0")
            i = 0
            while i < len(fields):
                status = fields[i]
                if status.startswith("R") and i + 2 < len(fields):
                    old, new = fields[i + 1], fields[i + 2]
                    i += 3
                    if new.endswith(".md"):
                        _first(dates, new, dates.get(old, stamp))
                elif status == "A" and i + 1 < len(fields):
                    if fields[i + 1].endswith(".md"):
                        _first(dates, fields[i + 1], stamp)
                    i += 2
                else:
                    i += 1

    def _load(self) -> None:
        try:
            data = json.loads(self._path.read_bytes())
            if data.get("version") != _VERSION:
                raise ValueError("another version")
            head = data["head"]
            dates = data["dates"]
            if not isinstance(head, str) or not isinstance(dates, dict):
                raise ValueError("not a dates map")
            if not all(isinstance(v, int) for v in dates.values()):
                raise ValueError("not a dates map")
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s unreadable (%s): building it again from git history", self._path, exc)
            return
        self._dates, self._head = dates, head

    def _save(self) -> None:
        if self._head is None:
            self._path.unlink(missing_ok=True)
            return
        data = {"version": _VERSION, "head": self._head, "dates": self._dates}
        try:
            atomic_write(self._path, json.dumps(data, separators=(",", ":")).encode("utf-8"))
        except OSError as exc:  # a cache: the next process builds it again
            log.warning("could not save %s: %s", self._path, exc)


def _first(dates: dict[str, int], path: str, stamp: int) -> None:
    """Record ``stamp`` for ``path`` unless an earlier add stands (an undated
    first add stays undated: an adopted note is older than its commit)."""
    known = dates.get(path)
    if known is None or (known != _UNDATED and stamp != _UNDATED and stamp < known):
        dates[path] = stamp
