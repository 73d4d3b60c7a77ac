"""Git as the audit trail: commits with clear authors, trailers and no hooks.

:class:`GitStore` is the one place that starts git. Every command gets the
settings the design asks for: repository hooks and fsmonitor never run (a
vault is user data, and a hook in it must not execute on an agent's write),
objects and refs are fsynced (``core.fsync=committed``), and no pager, prompt
or GPG signing can stall a write. git hands ``-c`` settings down to the git
commands it starts itself (``GIT_CONFIG_PARAMETERS``), so ``filter-repo``'s
own git calls and the merge driver's ``git merge-file`` run with them too.
No program the vault's own ``.git/config`` names runs either: every command
gets the overrides of :meth:`GitStore.config_guard` (see
:mod:`mdmem.store.gitconfig`), which reads that config again only when one
of its files changed.

* :meth:`GitStore.run` / :meth:`GitStore.execute` - text out, the usual case;
  one-shot processes through GitPython's ``Git.execute``: no persistent
  ``cat-file`` helpers are left running, so a long-lived server does not leak
  git children.
* :meth:`GitStore.execute_bytes` / :meth:`GitStore.run_bytes` - bytes in and
  out (``cat-file --batch``, ``show``).
* :meth:`GitStore.popen` - a running process whose pipes the caller streams
  (``fast-export | fast-import``).
"""

from __future__ import annotations

import getpass
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from git.cmd import Git
from git.exc import GitCommandError, GitCommandNotFound

from mdmem.errors import GitError
from mdmem.models import first_line
from mdmem.store.gitconfig import (
    FIXED_CONFIG,
    ConfigEntry,
    ConfigGuard,
    ProgramSetting,
    fixed_env,
    guard_for,
    include_targets,
    parse_config_list,
)
from mdmem.store.gitlocks import WRITE_GRACE, held_lock_in, remove_if_stale

__all__ = [
    "AGENT_EMAIL_DOMAIN",
    "CommitInfo",
    "GitStore",
    "Identity",
    "format_message",
    "is_agent_email",
    "paths_shown",
]

AGENT_EMAIL_DOMAIN = "agents.mdmem"

_SAFE_CONFIG = (
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "core.fsmonitor=false",
    "-c", "core.fsync=committed",
    "-c", "core.quotepath=off",
    "-c", "commit.gpgsign=false",
    "-c", "tag.gpgsign=false",
    "-c", "core.pager=cat",
    "-c", "color.ui=false",
    "-c", "advice.detachedHead=false",
    # Auto-gc would sometimes stall a write for seconds; GitStore starts a
    # detached `git maintenance run --auto` itself every few hundred commits.
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    # A vault of years holds tens of thousands of files: the index in version
    # 4 (paths prefix-compressed) and split (a commit rewrites a small delta,
    # not the whole index), the untracked cache for status, and the commit
    # graph (with changed-path filters) that maintenance keeps for log and
    # rev-list. Given on every call: the vault's own config cannot turn
    # them off.
    "-c", "index.version=4",
    "-c", "core.splitIndex=true",
    "-c", "core.untrackedCache=true",
    "-c", "core.commitGraph=true",
    "-c", "fetch.writeCommitGraph=false",
)  # fmt: skip
# See mdmem.store.gitconfig: programs the vault's own git config names never run.
_FIXED_CONFIG = tuple(arg for item in FIXED_CONFIG for arg in ("-c", item))
_NO_GUARD = ConfigGuard()
# Variables that change the config git reads (GIT_CONFIG_NOSYSTEM is always set).
_CONFIG_ENV = (
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)
_TRUE = frozenset({"true", "yes", "on", "1"})
#: Commits between two maintenance runs (counted in .git, across processes).
MAINTAIN_EVERY = 256
_MAINTENANCE_FILE = "mdmem-maintenance"
# Each task decides by its own threshold (--auto) whether it has work.
_MAINTENANCE = (
    "maintenance", "run", "--auto", "--quiet",
    "--task=commit-graph", "--task=loose-objects", "--task=gc",
)  # fmt: skip
_FIRST_GRAPH = (
    "commit-graph",
    "write",
    "--reachable",
    "--split",
    "--changed-paths",
    "--no-progress",
)
# How long a git write waits for a lock file a live git holds, then fails.
_LOCK_WAIT = 10.0
_MESSAGE_CHARS = 300  # of git's output quoted in a GitError

log = logging.getLogger("mdmem")
T = TypeVar("T", str, bytes)

# A stream git reads or writes: PIPE / DEVNULL, a file descriptor or a file.
Stream = int | IO[bytes] | None


def is_agent_email(email: str) -> bool:
    """Whether a commit author's email is an agent's (``…@agents.mdmem``)."""
    return email.endswith("@" + AGENT_EMAIL_DOMAIN)


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    @classmethod
    def agent(cls, name: str) -> Identity:
        slug = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name) or "agent"
        return cls(name, f"{slug}@{AGENT_EMAIL_DOMAIN}")

    @property
    def is_agent(self) -> bool:
        return is_agent_email(self.email)

    def env(self) -> dict[str, str]:
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    email: str
    date: str  # ISO 8601 with offset
    subject: str

    @property
    def is_agent(self) -> bool:
        return is_agent_email(self.email)


class GitStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._git = Git(str(root))
        self._tracked: set[str] | None = None
        self._commits = 0
        self._env = {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
        # What the repository's config would run: read once, then again only
        # when one of the config files' stat changed (see config_guard).
        self._guard = _NO_GUARD
        self._guard_key: tuple[object, ...] | None = None
        self._guard_files: list[str] = []
        # (variables, the repository's and the user's config files, the git dir)
        self._base_files: tuple[tuple[str | None, ...], list[str], str] | None = None

    # --------------------------------------------------------------- core --

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        strip: bool = True,
        ok_codes: Sequence[int] = (0,),
        config: Sequence[str] = (),
    ) -> str:
        status, out, err = self.execute(*args, env=env, strip=strip, config=config)
        if status not in ok_codes:
            raise GitError(f"git {args[0]}: {_failure(status, err, out)}")
        return out

    def execute(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        strip: bool = True,
        config: Sequence[str] = (),
    ) -> tuple[int, str, str]:
        """Run git with the safe settings; (exit status, stdout, stderr)."""
        command = self._command(args, config)
        merged = {**self._env, **self._guard_env(), **(env or {})}

        def once() -> tuple[int, str, str]:
            status, out, err = self._git.execute(
                command,
                env=merged,
                with_extended_output=True,
                with_exceptions=False,
                strip_newline_in_stdout=strip,
            )
            return int(status), str(out), str(err)

        try:
            return self._waiting_for_locks(once, lambda err: err)
        except GitCommandNotFound:
            raise GitError("git is not installed or not on PATH") from None
        except GitCommandError as exc:  # pragma: no cover - with_exceptions=False
            raise GitError(first_line(str(exc.stderr), _MESSAGE_CHARS)) from None

    def execute_bytes(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        config: Sequence[str] = (),
    ) -> tuple[int, bytes, bytes]:
        """Run git with the safe settings, ``input`` on its stdin; (status, stdout, stderr)."""
        command = self._command(args, config)
        environment = self._environment(env)

        def once() -> tuple[int, bytes, bytes]:
            proc = subprocess.run(
                command,
                cwd=self.root,
                env=environment,
                input=input,
                stdin=subprocess.DEVNULL if input is None else None,
                capture_output=True,
                check=False,
            )
            return proc.returncode, proc.stdout, proc.stderr

        try:
            return self._waiting_for_locks(once, lambda err: err.decode("utf-8", "replace"))
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None

    def _waiting_for_locks(
        self, once: Callable[[], tuple[int, T, T]], text: Callable[[T], str]
    ) -> tuple[int, T, T]:
        """Run ``once``; while git fails on a lock file that exists, clear or wait.

        A lock whose git is gone (killed mid-write) is removed and the command
        runs again at once; one a live git holds (a person's commit, a git
        orphaned by a killed writer finishing up) is waited for, up to
        :data:`_LOCK_WAIT` seconds. See :mod:`mdmem.store.gitlocks` for the rule.
        """
        deadline = time.monotonic() + _LOCK_WAIT
        attempt = 0
        while True:
            status, out, err = once()
            lock = held_lock_in(text(err)) if status != 0 else None
            if lock is None or time.monotonic() >= deadline:
                return status, out, err
            if remove_if_stale(lock, self.root, grace=WRITE_GRACE):
                log.warning("removed %s: the git that made it is gone", lock)
                continue
            attempt += 1
            time.sleep(min(0.02 * attempt, 0.2))

    def run_bytes(
        self,
        *args: str,
        input: bytes | None = None,
        ok_codes: Sequence[int] = (0,),
        env: dict[str, str] | None = None,
        config: Sequence[str] = (),
    ) -> bytes:
        """:meth:`execute_bytes`, raising GitError on an exit status not in ``ok_codes``."""
        status, out, err = self.execute_bytes(*args, input=input, env=env, config=config)
        if status not in ok_codes:
            text = err.decode("utf-8", "replace")
            raise GitError(f"git {args[0]}: {_failure(status, text, '')}")
        return out

    def popen(
        self,
        *args: str,
        stdin: Stream = subprocess.DEVNULL,
        stdout: Stream = subprocess.PIPE,
        stderr: Stream = subprocess.PIPE,
        env: dict[str, str] | None = None,
        config: Sequence[str] = (),
    ) -> subprocess.Popen[bytes]:
        """Start git with the safe settings and return it running, for streaming.

        The caller owns the process: it reads and closes the pipes it asked
        for and waits for the exit status.
        """
        try:
            return subprocess.Popen(
                self._command(args, config),
                cwd=self.root,
                env=self._environment(env),
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
            )
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None

    def _command(self, args: Sequence[str], config: Sequence[str]) -> list[str]:
        extra: list[str] = []
        for item in config:
            extra += ["-c", item]
        guard = self.config_guard()
        guard.check(args)
        return ["git", *_SAFE_CONFIG, *_FIXED_CONFIG, *extra, *guard.arguments(args)]

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        # What GitPython's Git.execute gives run/execute: the process's own
        # environment, C messages, this store's fixed settings, then ``env``.
        return {**os.environ, "LANGUAGE": "C", **self._env, **self._guard_env(), **(env or {})}

    # ------------------------------------------- the repository's git config --

    def program_settings(self) -> tuple[ProgramSetting, ...]:
        """Settings of the vault's own git config that would run a program (for doctor)."""
        return self.config_guard().settings

    def config_guard(self) -> ConfigGuard:
        """How git calls neutralise what the repository's config would run.

        Read with ``git config --list`` when a config file (the repository's,
        the files it includes, the user's global ones) changed since the last
        read: a write pays a few stat calls, not a process.
        """
        env = tuple(os.environ.get(name) for name in _CONFIG_ENV)
        base = self._config_files(env)
        if base is None:
            # No repository (yet): no config of its own to distrust.
            self._guard, self._guard_key = _NO_GUARD, None
            return _NO_GUARD
        for _attempt in range(3):
            key = _config_key([*base, *self._guard_files], env)
            if key == self._guard_key:
                return self._guard
            entries = self._read_config()
            self._guard = guard_for(entries)
            seen = self._watched_files(entries, base)
            if seen == self._guard_files:
                self._guard_key = key
                return self._guard
            # New included files: watch them too, and read once more so the
            # key covers every file the guard came from.
            self._guard_files = seen
        self._guard_key = None
        return self._guard

    def _watched_files(self, entries: list[ConfigEntry], base: list[str]) -> list[str]:
        """Files besides ``base`` whose change changes the config: included ones,
        the worktree config when enabled, HEAD when an include depends on the branch."""
        found = [str(self.root / e.where) for e in entries if e.origin.startswith("file:")]
        found += [str(p) for p in include_targets(entries, self.root)]
        assert self._base_files is not None  # set by _config_files, which gave ``base``
        git_dir = Path(self._base_files[2])  # these two are per worktree, not common
        for entry in entries:
            key = entry.key.lower()
            if key == "extensions.worktreeconfig" and entry.value.lower() in _TRUE:
                found.append(str(git_dir / "config.worktree"))
            elif key.startswith("includeif.onbranch:"):
                found.append(str(git_dir / "HEAD"))
        known = set(base)
        return sorted({p for p in found if p not in known})

    def _config_files(self, env: tuple[str | None, ...]) -> list[str] | None:
        """The config files git reads for this repository (None: not a repository)."""
        if self._base_files is not None and self._base_files[0] == env:
            return self._base_files[1]
        dot_git = self.root / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        else:
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = self.root / line[len("gitdir:") :].strip()
        common = git_dir
        try:
            common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
        except OSError:
            pass
        files = [common / "config"]
        if os.environ.get("GIT_CONFIG_GLOBAL"):
            files.append(Path(os.environ["GIT_CONFIG_GLOBAL"]))
        else:
            home = Path(os.path.expanduser("~"))
            xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
            files += [home / ".gitconfig", Path(xdg) / "git" / "config"]
        self._base_files = (env, [str(f) for f in files], str(git_dir))
        return self._base_files[1]

    def _read_config(self) -> list[ConfigEntry]:
        """Every config entry git sees here, with its scope and file (no program runs)."""
        try:
            proc = subprocess.run(
                [
                    "git", *_SAFE_CONFIG,
                    "config", "--list", "--show-scope", "--show-origin", "--includes", "-z",
                ],
                cwd=self.root,
                env={**os.environ, "LANGUAGE": "C", **self._env},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                check=False,
            )  # fmt: skip
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None
        if proc.returncode != 0:
            # A config git cannot parse stops every git command before it runs anything.
            return []
        return parse_config_list(proc.stdout.decode("utf-8", "surrogateescape"))

    def _guard_env(self) -> dict[str, str]:
        """The environment half of the guard of the last :meth:`_command`."""
        return {**fixed_env(os.environ), **self._guard.env(os.environ)}

    @classmethod
    def init(cls, root: Path) -> GitStore:
        store = cls(root)
        store.run("init", "-q", "-b", "main")
        return store

    def is_repo(self) -> bool:
        return (self.root / ".git").exists()

    # ------------------------------------------------------------ queries --

    def head(self) -> str | None:
        """HEAD's sha, read from the ref files (no process) when they are plain."""
        git_dir = self.root / ".git"
        try:
            head = (git_dir / "HEAD").read_text().strip()
            if not head.startswith("ref: "):
                return head or None
            ref = head[5:]
            ref_file = git_dir / ref
            if ref_file.is_file():
                return ref_file.read_text().strip() or None
            packed = git_dir / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
            return None
        except (OSError, NotADirectoryError):
            pass
        try:
            return self.run("rev-parse", "--verify", "-q", "HEAD", ok_codes=(0, 1)) or None
        except GitError:
            return None

    def _message_args(self, message: str) -> list[str]:
        # Long messages (a batch's trailers) go through a file: argv is limited.
        if len(message) < 16_000:
            return ["-m", message]
        path = self.root / ".git" / "MDMEM_COMMIT_MSG"
        path.write_text(message, encoding="utf-8")
        return ["-F", str(path)]

    def tracked(self) -> set[str]:
        if self._tracked is None:
            out = self.run("ls-files", "-z", strip=False)
            self._tracked = {p for p in out.split("\0") if p}
        return self._tracked

    def forget_tracked(self) -> None:
        """Drop the cached list of tracked files (after checkouts, pulls, purges)."""
        self._tracked = None

    def changed_between(self, old: str, new: str) -> list[str]:
        """Paths a ``git diff --name-status -M old..new`` names (renames: both); [] on error."""
        status, out, _err = self.execute(
            "diff", "--name-status", "-M", "-z", f"{old}..{new}", strip=False
        )
        return [f for f in out.split("\0") if f] if status == 0 else []

    def dirty_paths(self) -> list[str]:
        """Paths that differ from HEAD (modified, deleted, untracked, staged)."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all", strip=False)
        paths: list[str] = []
        entries = out.split("\0")
        i = 0
        while i < len(entries):
            entry = entries[i]
            i += 1
            if len(entry) < 4:
                continue
            code, path = entry[:2], entry[3:]
            if "R" in code or "C" in code:
                i += 1  # the rename source follows
            paths.append(path)
        return paths

    def refs_under(self, prefix: str) -> dict[str, str] | None:
        """Refs starting with ``prefix`` -> sha, read from the ref files (no process).

        For checks made on every write. None when the layout needs git itself
        to answer (a worktree, reftable): the caller then asks git.
        """
        git_dir = self.root / ".git"
        if not git_dir.is_dir() or (git_dir / "reftable").exists():
            return None
        found: dict[str, str] = {}
        try:
            for line in (git_dir / "packed-refs").read_text(encoding="utf-8").splitlines():
                sha, _sep, ref = line.partition(" ")
                if ref.startswith(prefix) and not line.startswith(("#", "^")):
                    found[ref] = sha
        except FileNotFoundError:
            pass
        except OSError:
            return None
        folder = git_dir / prefix.rsplit("/", 1)[0]
        if folder.is_dir():
            try:
                for path in folder.rglob("*"):
                    ref = path.relative_to(git_dir).as_posix()
                    if ref.startswith(prefix) and path.is_file() and not ref.endswith(".lock"):
                        found[ref] = path.read_text(encoding="utf-8").strip()  # loose wins
            except OSError:
                return None
        return found

    def operation_in_progress(self) -> str | None:
        """ "merge", "rebase", "revert" or "cherry-pick" when one was left unfinished."""
        git_dir = self.root / ".git"
        for marker, name in (
            ("MERGE_HEAD", "merge"),
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("REVERT_HEAD", "revert"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
        ):
            if (git_dir / marker).exists():
                return name
        return None

    def config(self, key: str) -> str:
        return self.run("config", "--get", key, ok_codes=(0, 1))

    def human_identity(self, name: str = "", email: str = "") -> Identity:
        name = name or self.config("user.name") or os.environ.get("GIT_AUTHOR_NAME", "")
        email = email or self.config("user.email") or os.environ.get("GIT_AUTHOR_EMAIL", "")
        if not name:
            try:
                name = getpass.getuser()
            except (KeyError, OSError):
                name = "human"
        if not email:
            email = f"{name}@localhost"
        return Identity(name, email)

    def last_commit(self) -> CommitInfo | None:
        if self.head() is None:
            return None
        out = self.run("log", "-1", "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s")
        return _commit_info(out)

    def log(self, *args: str) -> list[CommitInfo]:
        out = self.run("log", "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s", *args)
        return [_commit_info(line) for line in out.splitlines() if line.strip()]

    def show(self, rev: str, path: str) -> bytes | None:
        """File content at a revision, or None where it did not exist."""
        status, data, _err = self.execute_bytes("show", f"{rev}:{path}")
        return data if status == 0 else None

    def line_authors(self, path: str) -> list[tuple[str, str]]:
        """(author email, text) of each line of ``path`` as HEAD has it; [] when
        HEAD lacks it. What tells a line mdmem wrote from one a person typed."""
        if self.head() is None:
            return []
        status, out, _err = self.execute(
            "blame", "--line-porcelain", "HEAD", "--", path, strip=False
        )
        if status != 0:
            return []
        lines: list[tuple[str, str]] = []
        email = ""
        for row in out.split("\n"):
            if row.startswith("author-mail "):
                email = row[len("author-mail ") :].strip().strip("<>")
            elif row.startswith("\t"):
                lines.append((email, row[1:]))
        return lines

    # ------------------------------------------------------------ commits --

    def commit(
        self,
        message: str,
        author: Identity,
        paths: Iterable[str] | None = None,
        *,
        allow_empty: bool = False,
        amend: bool = False,
        work_tree: Path | None = None,
    ) -> str | None:
        """Commit ``paths`` (or every change) as ``author``; returns the sha or None.

        With paths, only those paths' working-tree content is committed
        (``git commit -- paths``), whatever else is staged: one process for
        files git already tracks, which keeps a durable write near 30 ms.
        ``work_tree`` reads them from another folder (see
        :meth:`commit_contents`); ``amend`` replaces the last commit.
        """
        env = author.env()
        if paths is not None:
            path_list = sorted(set(paths))
            if not path_list:
                return None
            tree = self.root
            if work_tree is not None:
                env["GIT_WORK_TREE"] = str(work_tree)
                tree = work_tree
            tracked = self.tracked()
            new = [p for p in path_list if p not in tracked]
            if new:
                self.run("add", "-A", "--", *new, env=env)
            args = ["commit", "-q", "--no-verify", *self._message_args(message)]
            if allow_empty:
                args.append("--allow-empty")
            if amend:
                args.append("--amend")
            status, out, err = self.execute(*args, "--", *path_list, env=env)
            if status != 0:
                if status == 1 and not err.strip() and "commit" in out:
                    return None  # nothing changed in those paths
                raise GitError(f"git commit: {_failure(status, err, out)}")
            tracked.update(p for p in path_list if (tree / p).exists())
            tracked.difference_update(p for p in path_list if not (tree / p).exists())
        else:
            self.run("add", "-A")
            staged = self.run("diff", "--cached", "--name-only", "-z", strip=False)
            if not staged.strip("\0") and not allow_empty:
                return None
            args = ["commit", "-q", "--no-verify", *self._message_args(message)]
            if allow_empty:
                args.append("--allow-empty")
            self.run(*args, env=env)
            self._tracked = None
        self._after_commit()
        return self.head()

    # -------------------------------------------------------- maintenance --

    def _after_commit(self) -> None:
        """Count the commit; every :data:`MAINTAIN_EVERY` start maintenance.

        The count lives in ``.git`` (not in this process), so a vault written
        by many short processes (CLI calls, hooks) is maintained too. The
        first commit of a process converts an index of another version to
        version 4 (once per repository, a rewrite of the index).
        """
        git_dir = self.root / ".git"
        if self._commits == 0:
            self._index_v4(git_dir / "index")
        self._commits += 1
        counter = git_dir / _MAINTENANCE_FILE
        try:
            count = int(counter.read_text(encoding="ascii").strip() or 0) + 1
        except (OSError, ValueError):
            count = 1
        if count >= MAINTAIN_EVERY:
            self.maintain()
            count = 0
        try:
            counter.write_text(str(count), encoding="ascii")
        except OSError:
            pass  # a count lost is maintenance a little later

    def _index_v4(self, index: Path) -> None:
        try:
            with open(index, "rb") as f:
                head = f.read(8)
        except OSError:
            return
        if len(head) == 8 and head[:4] == b"DIRC" and int.from_bytes(head[4:], "big") != 4:
            # Busy (a person's git holds index.lock): the next process tries again.
            self.execute("update-index", "--index-version", "4")

    def maintain(self) -> subprocess.Popen[bytes] | None:
        """Start git's maintenance, detached (a write never waits for it):
        the commit graph (with changed-path filters: the first run writes
        it), loose objects packed, ``gc`` when its thresholds say so. Every
        command runs with the safe settings and the config guard, so no
        program or hook from the vault's own config runs. Returns the
        process (None if git could not start)."""
        graph = self.root / ".git" / "objects" / "info"
        has_graph = (graph / "commit-graph").exists() or (graph / "commit-graphs").is_dir()
        args = _MAINTENANCE if has_graph else _FIRST_GRAPH
        try:
            return subprocess.Popen(
                self._command(args, ["gc.auto=6700"]),
                cwd=self.root,
                env=self._environment(None),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except (OSError, GitError) as exc:
            log.info("git maintenance not started: %s", exc)
            return None

    def commit_contents(
        self,
        message: str,
        author: Identity,
        contents: Mapping[str, bytes | None],
        *,
        amend: bool = False,
    ) -> str | None:
        """Commit exactly ``contents`` (path -> bytes, None: deleted) as ``author``.

        :meth:`commit` takes what a file holds when git reads it; a person's
        save landing between a write and that read would be swept into the
        writer's commit. Here git reads the bytes given, from a private copy
        (``GIT_WORK_TREE`` pointing at a temp folder), in one ``git commit``
        as usual. Other paths keep HEAD's content. With ``amend`` the last
        commit is replaced by one with these contents (to take a person's
        lines back out of an agent's commit). The vault's files are left
        alone: bytes that differ stay as uncommitted edits. Returns the new
        HEAD, or None if nothing changed.
        """
        if not contents:
            return None
        with tempfile.TemporaryDirectory(prefix="mdmem-exact-") as private:
            tree = Path(private)
            for rel, data in contents.items():
                if data is not None:  # a path missing from the copy is committed as deleted
                    target = tree / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            return self.commit(message, author, paths=list(contents), amend=amend, work_tree=tree)


def _config_key(files: list[str], env: tuple[str | None, ...]) -> tuple[object, ...]:
    """What the config git reads depends on: the files' stat and a few variables."""
    stats: list[object] = [env]
    for path in files:
        try:
            st = os.stat(path)
            stats.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            stats.append(None)
    return tuple(stats)


def _commit_info(line: str) -> CommitInfo:
    parts = line.split("\x1f")
    while len(parts) < 5:
        parts.append("")
    return CommitInfo(*parts[:5])


def _failure(status: int, err: str, out: str) -> str:
    """What went wrong, for a GitError: the first line git wrote, or the exit status."""
    return (
        first_line(str(err), _MESSAGE_CHARS)
        or first_line(str(out), _MESSAGE_CHARS)
        or f"exit status {status}"
    )


def paths_shown(paths: Iterable[str]) -> str:
    """Paths for a commit subject: the first five, and how many more."""
    listed = sorted(paths)
    more = f" and {len(listed) - 5} more" if len(listed) > 5 else ""
    return ", ".join(listed[:5]) + more


def format_message(subject: str, body: str = "", trailers: Iterable[tuple[str, str]] = ()) -> str:
    """A commit message: one-line subject (<= 72 chars), optional body, trailers."""
    subject = " ".join(subject.split())
    if len(subject) > 72:
        subject = subject[:71] + "…"
    parts = [subject]
    if body.strip():
        parts.append(body.strip())
    trailer_lines = [f"{key}: {' '.join(str(value).split())}" for key, value in trailers]
    if trailer_lines:
        parts.append("\n".join(trailer_lines))
    return "\n\n".join(parts) + "\n"
