"""Every git process the git-native features start goes through GitStore's safe settings.

The features are run with process creation recorded (``subprocess.Popen``, and
GitPython's ``safer_popen``, which binds Popen at import): each git command
must carry the wrapper's ``-c core.hooksPath=<devnull>`` and
``-c core.fsmonitor=false``, so a hook or fsmonitor daemon planted in a vault
never runs, whichever feature touched it, and the environment that keeps the
vault's own git config from running programs (only the file, ssh and https
transports, no pager; see tests/git/test_git_programs.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git.cmd as gitpython_cmd
import pytest

from mdmem import Vault
from mdmem.git.merge_driver import merge_texts
from mdmem.git.purge import purge

from ..conftest import git

SAFE = (f"core.hooksPath={os.devnull}", "core.fsmonitor=false", "log.showSignature=false")
SAFE_ENV = {"GIT_ALLOW_PROTOCOL": "file:ssh:https", "GIT_PAGER": "cat"}


class Launches:
    """(argv, cwd) of every process started while :meth:`recording`; env in :attr:`envs`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.active = False
        self.seen: list[tuple[list[str], Path | None]] = []
        self.envs: dict[int, dict[str, str]] = {}  # by id() of the argv in seen
        launches = self
        real_popen = subprocess.Popen

        class RecordingPopen(real_popen):  # type: ignore[misc, valid-type]
            def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
                if launches.active:
                    one = isinstance(args, (str, bytes))
                    argv = [os.fsdecode(args)] if one else [os.fsdecode(a) for a in args]
                    cwd = kwargs.get("cwd")
                    launches.envs[id(argv)] = dict(kwargs.get("env") or os.environ)
                    launches.seen.append((argv, Path(cwd).resolve() if cwd else None))
                super().__init__(args, *rest, **kwargs)

        monkeypatch.setattr(subprocess, "Popen", RecordingPopen)
        monkeypatch.setattr(gitpython_cmd, "safer_popen", RecordingPopen)

    @contextmanager
    def recording(self) -> Iterator[list[tuple[list[str], Path | None]]]:
        start = len(self.seen)
        self.active = True
        found: list[tuple[list[str], Path | None]] = []
        try:
            yield found
        finally:
            self.active = False
            found.extend(self.seen[start:])

    @staticmethod
    def subcommand(argv: list[str]) -> str:
        """The git subcommand: the first argument after the ``-c`` settings."""
        i = 1
        while i < len(argv) and argv[i] == "-c":
            i += 2
        return argv[i] if i < len(argv) else ""


def _check(
    launches: Launches, found: list[tuple[list[str], Path | None]], cwd: Path, *expected: str
) -> None:
    gits = [(argv, where) for argv, where in found if Path(argv[0]).name == "git"]
    assert gits, "the feature started no git process at all"
    assert len(gits) == len(found), f"non-git processes started: {found}"
    for argv, where in gits:
        settings = [argv[i + 1] for i in range(1, len(argv) - 1) if argv[i] == "-c"]
        for item in SAFE:
            assert item in settings, f"git without -c {item}: {argv}"
        assert where == cwd.resolve(), f"git ran in {where}, not {cwd}: {argv}"
        env = launches.envs[id(argv)]
        for key, value in SAFE_ENV.items():
            assert env.get(key) == value, f"git without {key}={value}: {argv}"
    commands = {Launches.subcommand(argv) for argv, _where in gits}
    assert set(expected) <= commands, (expected, commands)


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Launches:
    return Launches(monkeypatch)


def test_purge_starts_git_only_through_the_wrapper(vault: Vault, launches: Launches) -> None:
    vault.remember("The user likes green tea")
    secret = vault.remember("The locker code is 4471-kilo for the basement archive")
    with launches.recording() as found:
        purge(vault.admin.store, secret.id, confirm=True)
    _check(launches, found, vault.root, "fast-export", "fast-import", "reflog", "gc")
    assert "4471-kilo" not in git(vault.root, "log", "--all", "-p")


def test_sync_starts_git_only_through_the_wrapper(tmp_path: Path, launches: Launches) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a = Vault.init(tmp_path / "a", agent="agent-a")
    git(a.root, "remote", "add", "origin", str(remote))
    a.remember("A writes first")
    with launches.recording() as found:
        assert a.git.sync().ok
    _check(launches, found, a.root, "fetch", "push")
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    b = Vault.open(tmp_path / "b", agent="agent-b")
    b.log("B's entry")
    a.log("A's entry")  # both append to today's log: the rebase runs the merge driver
    assert b.git.sync().ok
    with launches.recording() as found:
        result = a.git.sync()
    assert result.ok and result.pulled == 1
    _check(launches, found, a.root, "fetch", "rebase", "push")


def test_time_travel_and_history_start_git_only_through_the_wrapper(
    vault: Vault, launches: Launches
) -> None:
    first = vault.remember("Deploys happen on Tuesdays", kind="decision")
    then = vault.git.head()
    assert then is not None
    vault.supersede(first.id, "Deploys happen on Fridays")
    with launches.recording() as found:
        hits = vault.recall("when do deploys happen", as_of=then)
    assert [h.id for h in hits.items] == [first.id]
    _check(launches, found, vault.root, "ls-tree", "cat-file")
    with launches.recording() as found:
        versions = vault.history(first.id)
    assert [v.text for v in versions][:1] == ["Deploys happen on Tuesdays"]
    _check(launches, found, vault.root, "log", "show")
    with launches.recording() as found:
        vault.git.changes(then)
        vault.git.provenance(first.id)
    _check(launches, found, vault.root, "log", "blame")


def test_an_in_process_merge_asks_git_through_the_wrapper(
    tmp_path: Path, launches: Launches
) -> None:
    base = "# Notes\n\nalpha\n"
    with launches.recording() as found:
        merged = merge_texts(base, base + "ours\n", "theirs\n" + base, "MEMORY.md", "default")
    assert merged == "theirs\n# Notes\n\nalpha\nours\n"
    assert found and all(Launches.subcommand(argv) == "merge-file" for argv, _ in found)
    for argv, _where in found:
        assert all(item in argv for item in SAFE), argv
