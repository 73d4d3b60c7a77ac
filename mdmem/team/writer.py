"""Writing the team files: the vault writer's discipline, in a code repository.

Every team verb (``init``, ``propose``, ``accept``, ``reject``, ``remove``)
changes a few files and commits exactly those, as the person. It does so
with the write engine's own mechanisms, not copies of them:

* **the lock** (:class:`mdmem.store.vaultlock.VaultLock`): a fair,
  cross-process lock on the checkout's top folder, its queue in mdmem's state
  folder (keyed by the checkout's real path, never in the repository). Eight
  ``team propose`` at once take turns; before, the second found the first's
  file written but not yet committed and refused it as "uncommitted changes";
* **the checks before a write**: no merge or rebase under way, and no team
  file with a person's own uncommitted edits (a command never sweeps them
  into its commit);
* **compare-and-swap** (:func:`mdmem.store.swap.swap`): each file is staged
  beside itself, compared with what was read and renamed over it; a person's
  editor saving in between makes the write stop and put back what it already
  replaced (:func:`mdmem.store.swap.undo_all`), so nothing half-done is left
  and nothing of theirs is lost or committed as ours;
* **one commit** of exactly the changed paths (:meth:`GitStore.commit`); a
  failed commit puts the files back too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from mdmem.errors import GitError, InvalidInputError, PathOutsideVaultError, TeamError
from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, TextFile, decode, safe_path
from mdmem.store.editors import Editor, Pending
from mdmem.store.gitstore import GitStore, Identity, format_message
from mdmem.store.secret_guard import scan
from mdmem.store.swap import Orphans, Swapped, swap, undo_all
from mdmem.store.vaultlock import VaultLock
from mdmem.team.repo import Checkout

__all__ = ["Parse", "TeamWriter", "team_state_dir"]

#: How a markdown file of the team folder is parsed (with the fields beside it).
Parse = Callable[[str, TextFile], blk.ParsedFile]
_BUSY = (
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("REVERT_HEAD", "revert"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
)


def team_state_dir(checkout: Checkout, state_root: Path) -> Path:
    """mdmem's folder for one checkout's team tier (its write lock), outside the
    repository, keyed by the checkout's real path."""
    key = hashlib.sha256(str(checkout.root).encode()).hexdigest()[:16]
    return state_root / "team" / f"{checkout.root.name[:40]}-{key}"


class TeamWriter:
    """Locked, compare-and-swap writes and one commit per verb, for one checkout."""

    def __init__(self, checkout: Checkout, git: GitStore, state_root: Path, timeout: float) -> None:
        self.checkout = checkout
        self.git = git
        self.state_dir = team_state_dir(checkout, state_root)
        self.timeout = timeout
        self._lock = VaultLock(checkout.root, self.state_dir)
        self._orphans = Orphans()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The checkout's team lock, once no merge or rebase is under way."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with self._lock.hold(self.timeout):
            busy = self.operation_in_progress()
            if busy:
                raise TeamError(
                    f"a {busy} is in progress in {self.checkout.root}; finish it first"
                )
            try:
                yield
            finally:
                self._orphans.expire_all()
                self._orphans.rescue()

    def operation_in_progress(self) -> str | None:
        """A merge, rebase, revert or cherry-pick left unfinished (this worktree's)."""
        for marker, name in _BUSY:
            if (self.checkout.git_dir / marker).exists():
                return name
        return None

    def refuse_dirty(self, paths: Iterable[str]) -> None:
        """A TeamError when any of ``paths`` holds a person's uncommitted edits."""
        paths = list(paths)
        if not paths:
            return
        out = self.git.run("status", "--porcelain", "-z", "--", *paths, strip=False)
        dirty = sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})
        if dirty:
            raise TeamError(
                f"{', '.join(dirty)} has uncommitted changes; commit or stash them first"
            )

    def read(self, rel: str) -> bytes | None:
        """A file of the checkout as it is now (None: there is none); never outside it."""
        try:
            full = safe_path(self.checkout.root, rel)
        except PathOutsideVaultError as exc:
            raise TeamError(f"{rel}: {exc}") from None
        try:
            return full.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise TeamError(f"cannot read {rel}: {exc}") from None

    def commit(
        self,
        edits: dict[str, list[Editor]],
        parse: Parse,
        message: tuple[str, str, Iterable[tuple[str, str]]],
        person: Identity,
    ) -> str | None:
        """Apply ``edits`` to the files as they are now and commit exactly those
        paths as ``person``; ``message``: (subject, body, trailers). Call it
        inside :meth:`writing`."""
        self.refuse_dirty(edits)
        pending: dict[str, tuple[Path, Pending]] = {}
        for rel, editors in edits.items():
            pending[rel] = self._apply(rel, editors, parse)
        installed: dict[str, Swapped] = {}
        for rel, (full, staged) in pending.items():
            done = swap(full, staged, self._orphans)
            if done is None:
                # A person's editor saved it between our read and our rename.
                undo_all(self.checkout.root, installed, TeamError("stopped"))
                raise TeamError(
                    f"{rel} changed while mdmem was writing it; nothing was committed "
                    "(commit your edit, then run the command again)"
                )
            installed[rel] = done
        subject, body, trailers = message
        try:
            return self.git.commit(format_message(subject, body, trailers), person, paths=pending)
        except (GitError, OSError) as exc:
            raise undo_all(self.checkout.root, installed, exc) from exc

    def _apply(self, rel: str, editors: list[Editor], parse: Parse) -> tuple[Path, Pending]:
        try:
            full = safe_path(self.checkout.root, rel)
        except PathOutsideVaultError as exc:
            raise TeamError(f"{rel}: {exc}") from None
        original = self.read(rel)
        markdown = rel.endswith(".md")
        try:
            tf = decode(original) if original is not None else TextFile.empty()
            parsed = parse(rel, tf) if markdown else None
            for edit in editors:
                edit(tf, parsed)
                parsed = parse(rel, tf) if markdown else None
        except SkipFile as why:
            raise TeamError(f"{rel} cannot be read ({why}); fix it first") from None
        data = tf.to_bytes()
        found = scan(data.decode("utf-8"))
        if found:  # a secret a person left in the file: never committed by us
            raise InvalidInputError(f"refused: {rel} would hold a secret ({found[0].kind})")
        # Never merge a concurrent append into our write: any change since the
        # read is a person's, and stops it (see the module doc).
        return full, Pending(original=original, tf=tf, parsed=parsed, only_appends=False)
