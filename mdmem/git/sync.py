"""``mdmem sync``: fetch, rebase onto the remote, push — without ever losing a side.

Steps, all under the vault lock: commit pending human edits → ``fetch`` →
``rebase`` onto the remote branch → ``push`` (retried if someone pushed in
between) → refresh the catalog; ``changed_paths`` is ``git diff --name-status
-M old..new`` for the indexes.

Merging. The vault template marks append-only files (daily logs, JOURNAL.md,
sessions) ``merge=union``. Git's built-in union driver is not safe for them:
when both sides append entries, its zealous merge factors out lines the two
sides share (a blank line, an identical ``## 10:00 · Note`` heading) and
glues two entries into one section, so one block id is lost. During a sync
mdmem therefore replaces the ``union`` driver, for that one git command, with
a block-aware one (the code between the ``merge driver`` markers below, run
by git as a tiny stdlib-only script). It applies to add/add too (both clones
created today's log). It also takes the default merge for the ledger files
(MEMORY.md, USER.md, WORLD.md, LEARNING.md): a clean line merge is used as is,
and where git's line merge conflicts only because both sides added different
memories, the blocks are merged. Whenever the same block was changed
differently on both sides — or anything else git cannot merge — the sync
stops: the rebase is aborted, the vault is exactly as before, and
:class:`SyncResult` lists each conflicting file with both versions
(``ok`` is False). Nothing is ever resolved by dropping a side.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import ConfigError, ConflictError, GitError
from mdmem.store.gitstore import Identity
from mdmem.store.textfile import atomic_write

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore as Vault

__all__ = ["Conflict", "PathChange", "SyncResult", "merge_texts", "sync"]

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
    vault: Vault,
    remote: str = "origin",
    *,
    push: bool = True,
    force_push: bool = False,
) -> SyncResult:
    """Pull (rebase) from ``remote`` and push; see the module docstring.

    Returns conflicts instead of raising, with the local vault unchanged.
    After :func:`mdmem.git.history.purge` the local history no longer matches
    the remote's: sync then raises ConflictError unless ``force_push`` is
    set, which overwrites the remote branch (``--force-with-lease``).
    """
    from mdmem.git.history import clear_stale_marker, remote_is_stale

    git = vault.git
    if not re.match(r"^[A-Za-z0-9][\w.-]*$", remote):
        raise ConfigError(f"invalid remote name {remote!r}")
    # Checked before taking the lock too: taking it commits pending human edits,
    # which must not land on the detached HEAD of an interrupted rebase.
    _no_rebase_in_progress(vault)
    with vault.writer.writing():
        if not git.config(f"remote.{remote}.url"):
            raise ConfigError(
                f"no git remote {remote!r} in {vault.root}; add one with "
                f"`git -C {shlex.quote(str(vault.root))} remote add {remote} URL`"
            )
        _no_rebase_in_progress(vault)
        branch = git.run("symbolic-ref", "--short", "-q", "HEAD", ok_codes=(0, 1)).strip()
        if not branch:
            raise GitError("the vault is not on a branch (detached HEAD); check out a branch first")
        remote_branch = branch
        if git.config(f"branch.{branch}.remote") == remote:
            merge = git.config(f"branch.{branch}.merge")
            if merge.startswith("refs/heads/"):
                remote_branch = merge[len("refs/heads/") :]
        stale = remote_is_stale(vault)
        if stale and not force_push:
            raise ConflictError(
                "this vault's history was purged and no longer matches the remote; run "
                "`mdmem sync --force-push` to overwrite it (other clones must then re-clone)"
            )
        old_head = git.head()
        tracking = f"refs/remotes/{remote}/{remote_branch}"
        pushed = pulled = 0
        forced = False
        try:
            for attempt in range(_PUSH_ATTEMPTS):
                _fetch(vault, remote, remote_branch, tracking)
                remote_sha = _rev(vault, tracking)
                # Remote commits the vault did not have (push moves the tracking ref later).
                pulled = _count(vault, old_head, remote_sha) if remote_sha else 0
                if force_push:
                    lease = f"--force-with-lease=refs/heads/{remote_branch}:{remote_sha or ''}"
                    pushed = _count(vault, remote_sha, "HEAD")
                    if push and _push(vault, remote, remote_branch, lease):
                        forced = True
                        clear_stale_marker(vault)
                        break
                    if not push:
                        break
                    continue
                if remote_sha and not _is_ancestor(vault, remote_sha, "HEAD"):
                    vault.writer.commit_human_edits()
                    conflicts = _rebase(vault, remote_sha, old_head)
                    if conflicts:
                        return SyncResult(
                            remote, branch, 0, 0, tuple(conflicts), (), old_head, old_head
                        )
                pushed = _count(vault, remote_sha, "HEAD")
                if not push or pushed == 0 or _push(vault, remote, remote_branch, None):
                    break
                if attempt == _PUSH_ATTEMPTS - 1:
                    raise ConflictError(f"{remote} kept moving during sync; try again")
            else:
                raise ConflictError(f"could not push to {remote}; try again")
        except BaseException:
            _restore(vault, old_head)
            raise
        new_head = git.head()
        if forced:
            pulled = 0
        changed = _name_status(vault, old_head, new_head)
        git.forget_tracked()
        vault.refresh()
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


def _no_rebase_in_progress(vault: Vault) -> None:
    git_dir = vault.root / ".git"
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        raise GitError(
            "a git rebase is in progress in the vault (another sync, or an interrupted one); "
            "if no sync is running, finish it or run `git rebase --abort`"
        )


def _fetch(vault: Vault, remote: str, branch: str, tracking: str) -> None:
    status, _out, err = vault.git.execute(
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
        vault.git.run("update-ref", "-d", tracking, ok_codes=(0, 1))
        return
    raise GitError(f"git fetch {remote}: {_first_line(err)}")


def _push(vault: Vault, remote: str, branch: str, lease: str | None) -> bool:
    """True when pushed; False when the remote moved on (fetch and try again)."""
    args = ["push", "--porcelain", "--no-verify"]
    if lease:
        args.append(lease)
    status, out, err = vault.git.execute(*args, remote, f"HEAD:refs/heads/{branch}")
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
    raise GitError(f"git push {remote}: {_first_line(err) or _first_line(out)}")


def _rebase(vault: Vault, onto: str, old_head: str | None) -> list[Conflict]:
    """Rebase HEAD onto ``onto``; on conflict put everything back at ``old_head``
    (the HEAD before the sync) and report each file against that version."""
    git = vault.git
    ident = Identity.agent(vault.agent)
    env = {
        "GIT_COMMITTER_NAME": ident.name,
        "GIT_COMMITTER_EMAIL": ident.email,
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
    }
    config = [
        *_driver_config(vault),
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
    _restore(vault, old_head)
    if not unmerged:
        raise GitError(f"git rebase: {_first_line(err)}")
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


def _restore(vault: Vault, old_head: str | None) -> None:
    """Put HEAD, index and files back where they were before the sync."""
    git = vault.git
    git_dir = vault.root / ".git"
    if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
        git.execute("rebase", "--abort")
    if old_head and git.head() != old_head:
        # --keep refuses to touch files with uncommitted edits instead of discarding them.
        git.execute("reset", "-q", "--keep", old_head)
    git.forget_tracked()
    vault.refresh()


def _rev(vault: Vault, ref: str) -> str | None:
    out = vault.git.run("rev-parse", "--verify", "-q", ref, ok_codes=(0, 1)).strip()
    return out or None


def _is_ancestor(vault: Vault, ancestor: str, descendant: str) -> bool:
    status, _out, _err = vault.git.execute("merge-base", "--is-ancestor", ancestor, descendant)
    return status == 0


def _count(vault: Vault, start: str | None, end: str | None) -> int:
    if end is None:
        return 0
    rng = [f"{start}..{end}"] if start else [end]
    return int(vault.git.run("rev-list", "--count", *rng, "--").strip() or "0")


def _name_status(vault: Vault, old: str | None, new: str | None) -> tuple[PathChange, ...]:
    if not old or not new or old == new:
        return ()
    out = vault.git.run(
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
    return tuple(changes)


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", "replace")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


# --------------------------------------------------------- the driver ----


def _driver_config(vault: Vault) -> list[str]:
    folder, module = _driver_module(vault.state_dir)
    # A module (not a script) so Python caches its bytecode: git starts the
    # driver once per merged file, and compiling it each time doubled that.
    program = (
        f"import sys; sys.path.insert(0, {str(folder)!r}); "
        f"from {module} import _driver_main; sys.exit(_driver_main(sys.argv))"
    )
    command = f"{shlex.quote(sys.executable)} -S -I -c {shlex.quote(program)}"
    return [
        "merge.union.name=mdmem block-aware union",
        f"merge.union.driver={command} union %O %A %B %P",
        "merge.mdmem.name=mdmem ledger merge",
        f"merge.mdmem.driver={command} default %O %A %B %P",
        "merge.default=mdmem",
    ]


def _driver_source() -> str:
    source = Path(__file__).read_text(encoding="utf-8")
    # The markers are split here so that this function does not match itself.
    start = source.index("# >>> merge" + " driver")
    end = source.index("# <<< merge" + " driver")
    return (
        "# Written by mdmem.git.sync: git runs this as the merge driver during `mdmem sync`.\n"
        "from __future__ import annotations\n\nimport os\nimport sys\n\n"
        + source[start:end]
        + '\nif __name__ == "__main__":\n    sys.exit(_driver_main(sys.argv))\n'
    )


def _driver_module(state_dir: Path) -> tuple[Path, str]:
    """(folder, module name) of the driver, written on first use; named by its hash."""
    source = _driver_source()
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()[:12]
    folder = state_dir / "merge-driver"
    module = f"mdmem_merge_{digest}"
    path = folder / f"{module}.py"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, source.encode("utf-8"))
    return folder, module


# >>> merge driver (stdlib only: this section is also git's merge driver script)

# Plain string tests instead of regexes: importing `re` would double the
# start-up time of the driver, which git runs once per merged file.
_LEDGER_NAMES = ("MEMORY.md", "USER.md", "WORLD.md", "LEARNING.md")
_ID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")


def _indent_ok(line: str) -> str | None:
    """The line without up to three leading spaces (None if indented more)."""
    stripped = line.lstrip(" ")
    return stripped if len(line) - len(stripped) <= 3 else None


def _is_heading(line: str) -> bool:
    rest = _indent_ok(line)
    if not rest or rest[0] != "#":
        return False
    level = len(rest) - len(rest.lstrip("#"))
    return level <= 6 and (len(rest) == level or rest[level] in " \t\r\n")


def _fence_of(line: str) -> str:
    rest = _indent_ok(line)
    if not rest or rest[0] not in "`~":
        return ""
    run = len(rest) - len(rest.lstrip(rest[0]))
    return rest[0] * run if run >= 3 else ""


def _is_item(line: str) -> bool:
    if line[:1] in ("-", "*", "+"):
        return len(line) == 1 or line[1] in " \t\r\n"
    digits = len(line) - len(line.lstrip("0123456789"))
    if not 1 <= digits <= 9 or len(line) <= digits or line[digits] not in ".)":
        return False
    return len(line) == digits + 1 or line[digits + 1] in " \t\r\n"


def _block_id(line: str) -> str:
    """The ``m-…`` block id ending the line, or ""."""
    line = line.rstrip()
    at = line.rfind("^m-")
    if at < 0 or (at > 0 and not line[at - 1].isspace()):
        return ""
    ident = line[at + 1 :]
    body = ident[2:]
    if not 6 <= len(body) <= 32 or not set(body) <= _ID_CHARS:
        return ""
    return ident


def _split_chunks(text: str, items: bool) -> list[str]:
    """Cut a markdown file into blocks: heading sections (entries), and in ledger
    files also top-level list items and paragraphs. Code fences are never cut."""
    lines = text.splitlines(keepends=True)
    chunks: list[list[str]] = []
    current: list[str] = []
    fence = ""
    start = 0
    if lines and lines[0].rstrip("\r\n") == "---":  # frontmatter stays in the first chunk
        for idx in range(1, len(lines)):
            if lines[idx].rstrip("\r\n").rstrip() in ("---", "..."):
                current = lines[: idx + 1]
                start = idx + 1
                break
    previous_blank = False
    for line in lines[start:]:
        bare = line.rstrip("\r\n")
        if fence:
            current.append(line)
            if bare.strip().startswith(fence):
                fence = ""
            continue
        blank = not bare.strip()
        cut = _is_heading(bare)
        if items and not cut and not blank:
            cut = _is_item(bare) or (previous_blank and not bare[:1].isspace())
        if cut and current and any(x.strip() for x in current):
            chunks.append(current)
            current = []
        current.append(line)
        fence = _fence_of(bare)
        previous_blank = blank
    if current:
        if chunks and not any(x.strip() for x in current):
            chunks[-1].extend(current)
        else:
            chunks.append(current)
    return ["".join(chunk) for chunk in chunks]


def _chunk_keys(chunks: list[str]) -> list[str]:
    """A stable key per chunk: its first block id, else its text; repeats numbered."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    for n, chunk in enumerate(chunks):
        key = ""
        for line in chunk.splitlines():
            ident = _block_id(line)
            if ident:
                key = "id:" + ident
                break
        if not key:
            first = chunk.lstrip()
            is_preamble = n == 0 and not _is_heading(first) and not first.startswith("-")
            key = "preamble" if is_preamble or first.startswith("---") else "text:" + chunk.strip()
        seen[key] = seen.get(key, 0) + 1
        keys.append(key if seen[key] == 1 else f"{key}#{seen[key]}")
    return keys


def _same(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def merge_blocks(base: str, ours: str, theirs: str, *, items: bool, strict: bool) -> str | None:
    """Three-way merge of markdown blocks; None when both sides changed one block.

    Blocks only one side added are all kept (theirs after ours at the same
    place); a block one side changed and the other left alone takes the change;
    a block one side removed and the other left alone is removed. ``strict``
    (ledger files) also refuses when both sides changed text without a block id.
    """
    parts: dict[str, list[tuple[str, str]]] = {}
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        chunks = _split_chunks(text, items)
        parts[name] = list(zip(_chunk_keys(chunks), chunks, strict=True))
    b_map = dict(parts["base"])
    o_map = dict(parts["ours"])
    t_map = dict(parts["theirs"])
    if strict:

        def free(side: str) -> list[str]:
            return sorted(v.rstrip() for k, v in parts[side] if not k.startswith("id:"))

        fb, fo, ft = free("base"), free("ours"), free("theirs")
        if fo != fb and ft != fb and fo != ft:
            return None
    out: list[tuple[str, str, bool]] = []  # (key, text, inserted from theirs)
    for key, text in parts["ours"]:
        if key in t_map:
            theirs_text = t_map[key]
            if _same(text, theirs_text):
                out.append((key, text, False))
            elif key in b_map and _same(text, b_map[key]):
                out.append((key, _keep_tail(theirs_text, text), False))
            elif key in b_map and _same(theirs_text, b_map[key]):
                out.append((key, text, False))
            else:
                return None  # the same block changed differently on both sides
        elif key in b_map:
            if not _same(text, b_map[key]):
                return None  # theirs removed a block ours changed
            # theirs removed it and ours left it alone: removed
        else:
            out.append((key, text, False))  # added by ours
    for key, text in parts["theirs"]:
        if key in b_map and key not in o_map and not _same(text, b_map[key]):
            return None  # ours removed a block theirs changed
    ours_added = {k for k, _ in parts["ours"] if k not in b_map and k not in t_map}
    position = {item[0]: n for n, item in enumerate(out)}
    inserts: dict[int, list[tuple[str, str, bool]]] = {}  # after out[n] (-1: at the top)
    anchor = -1
    for key, text in parts["theirs"]:
        if key in position:
            anchor = position[key]
            continue
        if key in b_map:
            continue  # ours removed it
        while anchor + 1 < len(out) and out[anchor + 1][0] in ours_added:
            anchor += 1  # theirs' additions go after ours' at the same place
        inserts.setdefault(anchor, []).append((key, text, True))
    merged = list(inserts.get(-1, []))
    for n, item in enumerate(out):
        merged.append(item)
        merged.extend(inserts.get(n, []))
    return _join(merged, newline="\r\n" if "\r\n" in ours else "\n")


def _keep_tail(new: str, old: str) -> str:
    """``new`` with the trailing blank lines ``old`` had (so spacing stays put)."""
    tail = old[len(old.rstrip()) :]
    return new.rstrip() + (tail or "")


def _join(chunks: list[tuple[str, str, bool]], newline: str) -> str:
    """Concatenate chunks; only around inserted ones add the line breaks a
    block needs (a final newline, a blank line before a heading)."""
    out: list[str] = []
    prev_new = False
    for _key, text, inserted in chunks:
        if out and not out[-1].endswith("\n"):
            out[-1] += newline
        heading = _is_heading(text.lstrip("\r\n"))
        if out and (inserted or prev_new) and heading and not out[-1].endswith(newline * 2):
            out[-1] += newline
        out.append(text)
        prev_new = inserted
    if out and (prev_new or len(chunks) > 1) and not out[-1].endswith("\n"):
        out[-1] += newline
    return "".join(out)


def _git_merge_file(base: str, ours: str, theirs: str) -> tuple[int, bytes]:
    """git's own line merge (exit status = number of conflicts)."""
    import subprocess  # imported here: the driver starts once per merged file

    proc = subprocess.run(
        ["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", ours, base, theirs],
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stdout


def _read_texts(*files: str) -> list[str]:
    texts = []
    for file in files:
        with open(file, "rb") as handle:
            texts.append(handle.read().decode("utf-8", "surrogateescape"))
    return texts


def _merge_paths(base: str, ours: str, theirs: str, path: str, mode: str) -> tuple[bytes, bool]:
    """(merged bytes, clean?) for the three files git hands a merge driver.

    Append-only files try the block merge first (no subprocess: the common
    case of both sides appending); ledgers try git's line merge first, and the
    block merge only where it conflicts. Either way a clean git line merge is
    accepted, and anything else is a conflict with git's markers in ``ours``.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    blockwise = mode == "union" or (name in _LEDGER_NAMES and path.endswith(".md"))
    if mode == "union":
        texts = _read_texts(base, ours, theirs)
        result = merge_blocks(texts[0], texts[1], texts[2], items=False, strict=False)
        if result is not None:
            return result.encode("utf-8", "surrogateescape"), True
    status, merged = _git_merge_file(base, ours, theirs)
    if status == 0:
        return merged, True
    if blockwise and mode != "union":
        texts = _read_texts(base, ours, theirs)
        result = merge_blocks(texts[0], texts[1], texts[2], items=True, strict=True)
        if result is not None:
            return result.encode("utf-8", "surrogateescape"), True
    if status < 0 or status > 127:  # binary or unreadable: leave ours in place
        with open(ours, "rb") as handle:
            return handle.read(), False
    return merged, False


def merge_texts(base: str, ours: str, theirs: str, path: str, mode: str = "union") -> str | None:
    """Merge three versions as the driver would; None when they conflict."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mdmem-merge-") as tmp:
        files = []
        for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
            file = os.path.join(tmp, name)
            with open(file, "wb") as handle:
                handle.write(text.encode("utf-8", "surrogateescape"))
            files.append(file)
        merged, clean = _merge_paths(files[0], files[1], files[2], path, mode)
    return merged.decode("utf-8", "surrogateescape") if clean else None


def _driver_main(argv: list[str]) -> int:
    """git merge driver: ``<mode> %O %A %B %P``; writes the result into %A."""
    mode, base, ours, theirs, path = argv[1:6]
    merged, clean = _merge_paths(base, ours, theirs, path, mode)
    with open(ours, "wb") as handle:
        handle.write(merged)
    return 0 if clean else 1


# <<< merge driver
