"""A git killed mid-write leaves ``.git/*.lock``: the next write clears it, a live git's stays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import GitError
from mdmem.store.gitlocks import (
    git_lock_files,
    git_processes_using,
    remove_if_stale,
    stale_git_locks,
)

from ..conftest import git

needs_proc = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")


def wait_for(path: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def start_git_commit_in_editor(root: Path) -> subprocess.Popen[bytes]:
    """A person's ``git commit -a`` sitting in its editor: git holds index.lock meanwhile."""
    with open(root / "USER.md", "a", encoding="utf-8") as fh:
        fh.write("- a human line being committed by hand\n")
    proc = subprocess.Popen(
        ["git", "commit", "-a"],
        cwd=root,
        env={**os.environ, "GIT_EDITOR": "sleep 120;:"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own group: a kill takes its editor too
    )
    wait_for(root / ".git" / "index.lock")
    return proc


def sigkill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture
def live_git(vault: Vault) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_git_commit_in_editor(vault.root)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            sigkill(proc)


def assert_healthy(vault: Vault) -> None:
    assert git_lock_files(vault.root) == []
    fsck = subprocess.run(["git", "fsck"], cwd=vault.root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert git(vault.root, "status", "--porcelain") == ""


@needs_proc
def test_sigkill_during_git_commit_leaves_index_lock_and_the_next_remember_succeeds(
    vault: Vault, live_git: subprocess.Popen[bytes]
) -> None:
    sigkill(live_git)
    assert (vault.root / ".git" / "index.lock").exists()  # what a SIGKILL leaves
    started = time.monotonic()
    memory = vault.remember("written after git was killed mid-commit")
    assert time.monotonic() - started < 8
    assert vault.get(memory.id).text == "written after git was killed mid-commit"
    assert_healthy(vault)
    # The person's uncommitted line went in as theirs, before the agent's write.
    mails = git(vault.root, "log", "-2", "--format=%ae").split()
    assert mails[0].endswith("@agents.mdmem") and not mails[1].endswith("@agents.mdmem")


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
@pytest.mark.parametrize("age", [0.0, 600.0], ids=["fresh", "old"])
def test_a_lock_left_by_a_killed_git_does_not_wedge_writes(
    vault: Vault, name: str, age: float
) -> None:
    """What a kill leaves at each step of a commit: the index, HEAD or the branch ref."""
    vault.remember("a first memory")
    lock = vault.root / ".git" / name
    head = git(vault.root, "rev-parse", "HEAD").strip()
    lock.write_text(head + "\n" if name != "index.lock" else "")
    if age:
        os.utime(lock, (time.time() - age, time.time() - age))
    started = time.monotonic()
    memory = vault.remember("a second memory")
    # A fresh lock waits out the grace period (a libgit2 tool may be mid-write).
    assert time.monotonic() - started < 8
    assert git(vault.root, "log", "-1", "--format=%s").startswith("remember")
    assert vault.get(memory.id).text == "a second memory"
    assert_healthy(vault)


@needs_proc
def test_the_lock_of_a_live_git_is_never_taken(
    vault: Vault, live_git: subprocess.Popen[bytes]
) -> None:
    lock = vault.root / ".git" / "index.lock"
    assert live_git.pid in (git_processes_using(vault.root) or [])
    assert stale_git_locks(vault.root, grace=0.0) == []
    assert remove_if_stale(lock, vault.root, grace=0.0) is False
    assert lock.exists()
    sigkill(live_git)
    assert git_processes_using(vault.root) == []
    assert stale_git_locks(vault.root, grace=0.0) == [lock]
    assert remove_if_stale(lock, vault.root, grace=0.0) is True
    assert not lock.exists()


def idle_git(root: Path) -> subprocess.Popen[bytes]:
    """A git that runs on without locking anything (like ``git log`` in a pager)."""
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch-check"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"HEAD\n")
    proc.stdin.flush()
    assert b" commit " in proc.stdout.readline()  # it is git now, not the forked parent
    return proc


@needs_proc
def test_a_git_started_after_the_lock_was_left_cannot_own_it(vault: Vault) -> None:
    lock = vault.root / ".git" / "index.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 30, time.time() - 30))  # left by a kill 30 s ago
    later = idle_git(vault.root)
    try:
        assert later.pid in (git_processes_using(vault.root) or [])
        assert remove_if_stale(lock, vault.root, grace=0.0) is True
        # One that was running before the lock was written might own it.
        lock.write_text("")
        assert remove_if_stale(lock, vault.root, grace=0.0) is False
    finally:
        later.kill()
        later.wait()


def test_a_lock_younger_than_the_grace_period_is_left_alone(vault: Vault) -> None:
    """A lock younger than the grace period may belong to a program that isn't git."""
    lock = vault.root / ".git" / "index.lock"
    lock.write_text("")
    assert remove_if_stale(lock, vault.root, grace=60.0) is False
    assert lock.exists()
    assert remove_if_stale(lock, vault.root, grace=0.0) is True


@needs_proc
@pytest.mark.slow
def test_a_write_waits_for_a_live_git_then_fails_in_one_clear_line(
    vault: Vault, live_git: subprocess.Popen[bytes]
) -> None:
    with pytest.raises(GitError) as err:
        vault.remember("blocked by a person's commit in progress")
    assert "index.lock" in str(err.value) and "\n" not in str(err.value)
    assert (vault.root / ".git" / "index.lock").exists()


VICTIM = textwrap.dedent(
    """
    import sys
    from mdmem import Vault
    vault = Vault.open(sys.argv[1], agent="victim")
    print("ready", flush=True)
    i = 0
    while True:
        vault.remember(f"victim fact {i}")
        i += 1
    """
)

SURVIVOR = textwrap.dedent(
    """
    import sys
    from mdmem import Vault
    Vault.open(sys.argv[1], agent="survivor").remember("written after kill " + sys.argv[2])
    """
)


def kill_writers_mid_commit(root: Path, kills: int) -> tuple[int, int]:
    """Kill a writer's whole process group while its git holds index.lock, ``kills``
    times; after each, a new process must write. Returns (locks left, writes that failed)."""
    left = failed = 0
    for n in range(kills):
        victim = subprocess.Popen(
            [sys.executable, "-c", VICTIM, str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        assert victim.stdout is not None and victim.stdout.readline() == b"ready\n"
        wait_for(root / ".git" / "index.lock")
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        victim.stdout.close()
        left += bool(git_lock_files(root))
        survivor = subprocess.run(
            [sys.executable, "-c", SURVIVOR, str(root), str(n)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        failed += survivor.returncode != 0
    return left, failed


@needs_proc
def test_writers_killed_during_their_commit_never_wedge_the_vault(vault: Vault) -> None:
    _left, failed = kill_writers_mid_commit(vault.root, 2)
    assert failed == 0
    assert git(vault.root, "log", "-1", "--format=%an").strip() == "survivor"
    # What git didn't need again (a killed commit's next-index-<pid>.lock) is
    # litter, not a wedge: doctor --fix clears it.
    left = {p.name for p in git_lock_files(vault.root)}
    assert not left & {"index.lock", "HEAD.lock", "main.lock"}
    vault.admin.doctor(fix=True)
    assert git_lock_files(vault.root) == []


@needs_proc
@pytest.mark.slow
def test_thirty_writers_killed_during_their_commit(vault: Vault) -> None:
    left, failed = kill_writers_mid_commit(vault.root, 30)
    print(f"30 kills: {left} left a git lock, {failed} wedged the next write")
    assert failed == 0
    assert left > 0  # the kills did land inside git
    fsck = subprocess.run(["git", "fsck"], cwd=vault.root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
