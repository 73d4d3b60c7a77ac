"""``mdmem git sync``: fetch, rebase onto the remote, push — without ever losing a side.

Steps, all under the vault lock: commit pending human edits → ``fetch`` →
``rebase`` onto the remote branch → ``push`` (retried if someone pushed in
between) → refresh the catalog; ``changed_paths`` is ``git diff --name-status
-M old..new`` for the indexes.

Merging. The rebase runs with mdmem's block-aware merge driver
(:mod:`mdmem.git.merge_driver`) in place of git's ``union`` driver and default
merge, so two clones appending to the same daily log or ledger keep both
sides' blocks. Whenever the same block was changed differently on both sides
— or anything else git cannot merge — the sync stops: the rebase is aborted,
the vault is exactly as before, and :class:`SyncResult` lists each
conflicting file with both versions (``ok`` is False). Nothing is ever
resolved by dropping a side.

Transports. Like every mdmem git call, sync runs with only the file, ssh and
https transports allowed (:mod:`mdmem.store.gitconfig`): an ``ext::`` remote
or a remote helper, which run programs, is refused with a GitError.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mdmem.errors import ConfigError, ConflictError, GitError
from mdmem.files.sidecar import note_of
from mdmem.git.merge_driver import driver_config
from mdmem.git.purge import clear_stale_marker, remote_is_stale
from mdmem.git.revisions import is_ancestor
from mdmem.index.progress import Progress, silent
from mdmem.models import first_line
from mdmem.store.gitconfig import ALLOWED_PROTOCOLS
from mdmem.store.gitstore import Identity

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["Conflict", "PathChange", "SyncResult", "sync"]

_PUSH_ATTEMPTS = 3


@dataclass(frozen=True)
class Conflict:
    """A file both sides changed in ways that cannot be merged block by block.

    ``ours`` is the file in the local vault (as it still is), ``theirs`` the
    remote's version, ``base`` their common ancestor's; None where the file
    does not exist on that side.
    """

    path: str
    ours: str | None
    theirs: str | None
    base: str | None


@dataclass(frozen=True)
class PathChange:
    status: str  # A, M, D, R (renamed: old_path is set), T, C
    path: str
    old_path: str | None = None


@dataclass(frozen=True)
class SyncResult:
    remote: str
    branch: str
    pulled: int  # remote commits brought in
    pushed: int  # local commits sent
    conflicts: tuple[Conflict, ...]  # non-empty: nothing was changed locally
    changed_paths: tuple[PathChange, ...]  # old_head..new_head, for the indexes
    old_head: str | None
    new_head: str | None
    forced: bool = False  # the remote branch was overwritten (after a purge)

    @property
    def ok(self) -> bool:
        return not self.conflicts


def sync(
    store: MemoryStore,
    remote: str = "origin",
    *,
    push: bool = True,
    force_push: bool = False,
    progress: Progress | None = None,
) -> SyncResult:
    """Pull (rebase) from ``remote`` and push; see the module docstring.

    Returns conflicts instead of raising, with the local vault unchanged.
    After :func:`mdmem.git.purge.purge` the local history no longer matches
    the remote's: sync then raises ConflictError unless ``force_push`` is
    set, which overwrites the remote branch (``--force-with-lease``).
    """
    git = store.git
    tell = progress or silent  # steps: fetch, rebase, push, re-index
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", remote):  # fullmatch: "$" passes "origin\n"
        raise ConfigError(f"invalid remote name {remote!r}")
    # Checked before taking the lock too: taking it commits pending human edits,
    # which must not land on the detached HEAD of an interrupted rebase.
    _no_rebase_in_progress(store)
    with store.writer.writing():
        if not git.config(f"remote.{remote}.url"):
            raise ConfigError(
                f"no git remote {remote!r} in {store.root}; add one with "
                f"`git -C {shlex.quote(str(store.root))} remote add {remote} URL`"
            )
        _no_rebase_in_progress(store)
        branch = git.run("symbolic-ref", "--short", "-q", "HEAD", ok_codes=(0, 1)).strip()
        if not branch:
            raise GitError("the vault is not on a branch (detached HEAD); check out a branch first")
        remote_branch = branch
        if git.config(f"branch.{branch}.remote") == remote:
            merge = git.config(f"branch.{branch}.merge")
            if merge.startswith("refs/heads/"):
                remote_branch = merge[len("refs/heads/") :]
        stale = remote_is_stale(store)
        if stale and not force_push:
            raise ConflictError(
                "this vault's history was purged and no longer matches the remote; run "
                "`mdmem git sync --force-push` to overwrite it (other clones must then re-clone)"
            )
        old_head = git.head()
        tracking = f"refs/remotes/{remote}/{remote_branch}"
        pushed = pulled = 0
        forced = False
        try:
            for attempt in range(_PUSH_ATTEMPTS):
                tell("sync", 0, 4)
                _fetch(store, remote, remote_branch, tracking)
                tell("sync", 1, 4)
                remote_sha = _rev(store, tracking)
                # Remote commits the vault did not have (push moves the tracking ref later).
                pulled = _count(store, old_head, remote_sha) if remote_sha else 0
                if force_push:
                    lease = f"--force-with-lease=refs/heads/{remote_branch}:{remote_sha or ''}"
                    pushed = _count(store, remote_sha, "HEAD")
                    if push and _push(store, remote, remote_branch, lease):
                        forced = True
                        clear_stale_marker(store)
                        break
                    if not push:
                        break
                    continue
                if remote_sha and not is_ancestor(store, remote_sha, "HEAD"):
                    store.writer.commit_human_edits()
                    _refuse_kept_secrets(store)
                    conflicts = _rebase(store, remote_sha, old_head)
                    if conflicts:
                        return SyncResult(
                            remote, branch, 0, 0, tuple(conflicts), (), old_head, old_head
                        )
                pushed = _count(store, remote_sha, "HEAD")
                tell("sync", 2, 4)
                if not push or pushed == 0 or _push(store, remote, remote_branch, None):
                    break
                if attempt == _PUSH_ATTEMPTS - 1:
                    raise ConflictError(f"{remote} kept moving during sync; try again")
            else:
                raise ConflictError(f"could not push to {remote}; try again")
        except BaseException:
            _restore(store, old_head)
            raise
        new_head = git.head()
        if forced:
            pulled = 0
        changed = _name_status(store, old_head, new_head)
        tell("sync", 3, 4)
        git.forget_tracked()
        store.refresh()
        tell("sync", 4, 4)
    return SyncResult(
        remote=remote,
        branch=branch,
        pulled=pulled,
        pushed=pushed if push else 0,
        conflicts=(),
        changed_paths=changed,
        old_head=old_head,
        new_head=new_head,
        forced=forced,
    )


# --------------------------------------------------------------- steps ----


def _no_rebase_in_progress(store: MemoryStore) -> None:
    git_dir = store.root / ".git"
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        raise GitError(
            "a git rebase is in progress in the vault (another sync, or an interrupted one); "
            "if no sync is running, finish it or run `git rebase --abort`"
        )


def _fetch(store: MemoryStore, remote: str, branch: str, tracking: str) -> None:
    status, _out, err = store.git.execute(
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"+refs/heads/{branch}:{tracking}",
    )
    if status == 0:
        return
    if "couldn't find remote ref" in err:
        # The remote does not have the branch yet (first push): drop a stale tracking ref.
        store.git.run("update-ref", "-d", tracking, ok_codes=(0, 1))
        return
    _refused_transport(remote, err)
    raise GitError(f"git fetch {remote}: {first_line(err)}")


def _refused_transport(remote: str, err: str) -> None:
    """A clear GitError when git refused the remote's transport (see mdmem.store.gitconfig)."""
    match = re.search(r"transport '([^']*)' not allowed", err)
    if match:
        raise GitError(
            f"remote {remote!r} uses the {match.group(1)!r} transport, which mdmem does not "
            f"allow (only {', '.join(ALLOWED_PROTOCOLS)}: others can run programs); "
            f"see `mdmem doctor`"
        )


def _push(store: MemoryStore, remote: str, branch: str, lease: str | None) -> bool:
    """True when pushed; False when the remote moved on (fetch and try again)."""
    args = ["push", "--porcelain", "--no-verify"]
    if lease:
        args.append(lease)
    status, out, err = store.git.execute(*args, remote, f"HEAD:refs/heads/{branch}")
    if status == 0:
        return True
    text = out + "\n" + err
    if (
        "[rejected]" in text
        or "stale info" in text
        or "fetch first" in text
        or "non-fast-forward" in text
    ):
        return False
    _refused_transport(remote, err)
    raise GitError(f"git push {remote}: {first_line(err) or first_line(out)}")


def _refuse_kept_secrets(store: MemoryStore) -> None:
    """A file holding a secret typed by hand differs from git (which has it
    redacted: see mdmem.store.typed_secrets), and a rebase needs a clean tree."""
    kept = store.writer.secrets_kept_out()
    if kept:
        where = "; ".join(
            f"{rel} line {', '.join(map(str, out.lines))} ({', '.join(dict.fromkeys(out.kinds))})"
            for rel, out in sorted(kept.items())
        )
        raise ConflictError(
            f"a secret typed by hand is in {where}; git has it redacted and the file "
            "keeps it: remove it from the file, then sync"
        )


def _rebase(store: MemoryStore, onto: str, old_head: str | None) -> list[Conflict]:
    """Rebase HEAD onto ``onto``; on conflict put everything back at ``old_head``
    (the HEAD before the sync) and report each file against that version."""
    git = store.git
    ident = Identity.agent(store.agent)
    env = {
        "GIT_COMMITTER_NAME": ident.name,
        "GIT_COMMITTER_EMAIL": ident.email,
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
    }
    config = [
        *driver_config(store),
        "rebase.autoStash=false",
        "rebase.autoSquash=false",
        "rebase.updateRefs=false",
        "rerere.enabled=false",
    ]
    status, _out, err = git.execute("rebase", "--no-autostash", onto, env=env, config=config)
    git.forget_tracked()
    if status == 0:
        return []
    unmerged = [
        p
        for p in git.run("diff", "--name-only", "--diff-filter=U", "-z", strip=False).split("\0")
        if p
    ]
    _restore(store, old_head)
    if not unmerged:
        raise GitError(f"git rebase: {first_line(err)}")
    base = git.run("merge-base", old_head or "HEAD", onto, ok_codes=(0, 1)).strip() or None
    conflicts = []
    for path in sorted(set(unmerged)):
        conflicts.append(
            Conflict(
                path=path,
                ours=_text(git.show(old_head, path)) if old_head else None,
                theirs=_text(git.show(onto, path)),
                base=_text(git.show(base, path)) if base else None,
            )
        )
    return conflicts


def _restore(store: MemoryStore, old_head: str | None) -> None:
    """Put HEAD, index and files back where they were before the sync."""
    git = store.git
    git_dir = store.root / ".git"
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        git.execute("rebase", "--abort")
    if old_head and git.head() != old_head:
        # --keep refuses to touch files with uncommitted edits instead of discarding them.
        git.execute("reset", "-q", "--keep", old_head)
    git.forget_tracked()
    store.refresh()


def _rev(store: MemoryStore, ref: str) -> str | None:
    out = store.git.run("rev-parse", "--verify", "-q", ref, ok_codes=(0, 1)).strip()
    return out or None


def _count(store: MemoryStore, start: str | None, end: str | None) -> int:
    if end is None:
        return 0
    rng = [f"{start}..{end}"] if start else [end]
    return int(store.git.run("rev-list", "--count", *rng, "--").strip() or "0")


def _name_status(store: MemoryStore, old: str | None, new: str | None) -> tuple[PathChange, ...]:
    if not old or not new or old == new:
        return ()
    out = store.git.run(
        "diff", "--name-status", "-M", "-z", "--no-ext-diff", old, new, "--", strip=False
    )
    items = [p for p in out.split("\0")]
    changes: list[PathChange] = []
    i = 0
    while i < len(items):
        code = items[i]
        if not code:
            i += 1
            continue
        if code[0] in "RC" and i + 2 < len(items):
            changes.append(PathChange(code[0], items[i + 2], items[i + 1]))
            i += 3
        elif i + 1 < len(items):
            changes.append(PathChange(code[0], items[i + 1]))
            i += 2
        else:
            break
    # A fields file is part of its note: a pulled status change reads as the
    # note's change (the catalog reads both again either way).
    notes = {c.path for c in changes}
    folded: list[PathChange] = []
    for change in changes:
        note = note_of(change.path)
        if note is None:
            folded.append(change)
        elif note not in notes:
            notes.add(note)
            folded.append(PathChange("M", note))
    return tuple(folded)


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")
