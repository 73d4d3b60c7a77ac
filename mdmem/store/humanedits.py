"""A person's edits, committed as theirs: what git is known to have, and what it lacks.

A person edits the vault in their editor while agents write to it. Before
every agent write (under the vault lock) what the person changed is
committed in a commit of its own, authored by the person's git identity
(``edit: <files>``), so ``git blame`` and ``mdmem history`` name them for
their lines and the agent's commit holds only the agent's bytes. The lines
they typed into a memory file get ids right after, diffed out of that very
commit (:mod:`mdmem.store.humanlines`): no ``git blame`` on the write path.

:class:`HumanEdits` keeps what is known to be committed (HEAD, and each
file's stat as it was when git had it), so a write asks git only when a
file may have changed; the writer (:mod:`mdmem.store.writer`) asks it
before its compare-and-swap and after its commit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.config import Settings
from mdmem.files.textfile import FileStat, file_stat, safe_path
from mdmem.store import typed_secrets as typed
from mdmem.store.gitstore import GitStore, Identity, format_message, paths_shown

if TYPE_CHECKING:
    from mdmem.store.swap import Swapped

__all__ = ["HumanEdits"]

log = logging.getLogger("mdmem")

# A file's ctime comes from a coarse clock that may lag time.time() by a tick (1-10 ms): a
# file counts as unchanged since a moment only if its ctime is this much older.
_CTIME_SLACK_NS = 20_000_000


class HumanEdits:
    """What git has of each file, and the person's edits committed as theirs."""

    def __init__(self, root: Path, settings: Settings, git: GitStore) -> None:
        self.root = root
        self.settings = settings
        self.git = git
        self._person: Identity | None = None
        # At HEAD ``_clean_head``, a file equals its committed version if its
        # stat is the one recorded in ``_clean_stats`` or its ctime is before
        # ``_clean_before_ns`` (when a git status found every older change
        # committed). Whatever isn't known is committed as the person's edit
        # before the agent's change to that file.
        self._clean_head: str | None = None
        self._clean_before_ns = 0
        self._clean_stats: dict[str, FileStat] = {}
        # Files holding a typed secret git has redacted: never "known committed".
        self.kept_out: set[str] = set()
        # Whether everything a person changed is committed (until the next
        # change a scan sees; see the writer's sync before a write).
        self.known_clean = False

    def person(self) -> Identity:
        """Whom a person's edits are authored as (``[git] human_name``, else git's identity)."""
        if self._person is None:
            self._person = self.git.human_identity(
                self.settings.git.human_name, self.settings.git.human_email
            )
        return self._person

    def commit(self, paths: list[str] | None = None) -> tuple[str | None, list[str]]:
        """Commit what a person changed (every dirty file, or ``paths``) as theirs;
        (the commit's sha or None, the files it took as they are)."""
        if not self.settings.git.enabled:
            return None, []
        # Taken before git looks: any file older than this, git has now.
        checked = time.time_ns() - _CTIME_SLACK_NS
        before = self.git.head()
        dirty = self.git.dirty_paths() if paths is None else paths
        sha = None
        plain: list[str] = []
        kept = self.secrets_kept_out(dirty) if dirty else {}
        if dirty:
            plain = [rel for rel in dirty if rel not in kept]
            if plain:
                message = format_message(f"edit: {paths_shown(plain)}", trailers=[("Op", "edit")])
                sha = self.git.commit(message, self.person(), paths=plain)
            if kept:
                sha = typed.commit_kept(self.git, self.person(), kept) or sha
            self.head_moved(before, dirty)
        if paths is None:
            self.kept_out = set(kept)
            self._clean_head, self._clean_before_ns = self.git.head(), checked
            self._clean_stats.clear()
        else:
            self.kept_out = (self.kept_out - set(paths)) | set(kept)
        return sha, plain if sha is not None else []

    def secrets_kept_out(self, paths: Iterable[str] | None = None) -> dict[str, typed.KeptOut]:
        """Uncommitted files (or ``paths``) with a typed secret git lacks: see typed_secrets."""
        if not self.settings.git.enabled:
            return {}
        dirty = self.git.dirty_paths() if paths is None else paths
        return typed.kept_in_files(self.root, self.git, dirty, self.settings.secrets)

    # -- what git has ----------------------------------------------------------

    def known_committed(self, rel: str, seen: FileStat | None) -> bool:
        """Whether the file as it was when stat said ``seen`` is what HEAD has."""
        if not self.settings.git.enabled:
            return True
        if rel in self.kept_out:
            return False  # git has it without the secret the file holds
        if seen is None or self._clean_head is None or self.git.head() != self._clean_head:
            return False
        return self._clean_stats.get(rel) == seen or seen[3] < self._clean_before_ns

    def head_moved(self, before: str | None, paths: Iterable[str]) -> None:
        """Keep what is known after our own commit of ``paths`` moved HEAD."""
        for rel in paths:
            self._clean_stats.pop(rel, None)
        if before is not None and before == self._clean_head:
            self._clean_head = self.git.head()  # other files are as they were
        else:
            self._clean_head = None  # HEAD moved under us before: know nothing

    def note_clean(self, rel: str, stat: FileStat) -> None:
        """Record that ``rel`` with ``stat`` is what HEAD has now."""
        head = self.git.head()
        if head != self._clean_head:
            self._clean_head, self._clean_before_ns, self._clean_stats = head, 0, {}
        self._clean_stats[rel] = stat

    def commit_theirs(self, rel: str, data: bytes | None) -> None:
        """Commit exactly ``data`` for ``rel`` as the person, before the agent's change.

        ``data`` is the file as the agent's rename replaced it: what a person
        saved since git last had it (after the vault lock committed human
        edits, or appended while the swap merged) is theirs. A no-op when
        git already has exactly these bytes.
        """
        before = self.git.head()
        message = format_message(f"edit: {rel}", trailers=[("Op", "edit")])
        if data is not None:
            kept = typed.keep_out(
                data, typed.committed_version(self.git, rel), self.settings.secrets
            )
            if kept is not None:
                data = kept.data
                self.kept_out.add(rel)
        self.git.commit_contents(message, self.person(), {rel: data})
        self.head_moved(before, [rel])

    def check_commit(
        self,
        before: str | None,
        message: str,
        agent: Identity,
        installed: dict[str, Swapped],
    ) -> None:
        """Make sure the agent's commit holds exactly what the agent wrote.

        ``git commit -- path`` reads the file when it runs; a person who saved between our
        rename and that read would see their lines committed as the agent's. A file whose stat
        is the same after the commit as right after our rename was not touched meanwhile; if
        any other was, the commit is replaced by one with exactly our bytes for it (their
        lines stay in the file, to be committed as theirs).
        """
        self.head_moved(before, installed)
        touched: dict[str, bytes] = {}
        for rel, done in installed.items():
            if rel in self.kept_out:
                continue  # committed from exact bytes, not read from the file
            now = file_stat(safe_path(self.root, rel))
            if done.stat is not None and now == done.stat:
                self.note_clean(rel, now)
            else:
                touched[rel] = done.ours
        if touched and self.git.head() != before:
            log.info("%s changed while git read it; their lines stay theirs", ", ".join(touched))
            head = self.git.head()
            self.git.commit_contents(message, agent, touched, amend=True)
            self.head_moved(head, touched)
