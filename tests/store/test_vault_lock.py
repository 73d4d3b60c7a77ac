"""The vault lock: exclusive even if its files are deleted, fair, free when its holder dies."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import LockTimeoutError
from mdmem.store.vaultlock import VaultLock

from ..conftest import git

HOLDER = textwrap.dedent(
    """
    import sys, time
    from mdmem import Vault
    vault = Vault.open(sys.argv[1], agent="holder")
    with vault.admin.store.writer.writing():
        print("held", flush=True)
        sys.stdin.readline()  # hold until told (or killed)
    print("released", flush=True)
    """
)

WRITER = textwrap.dedent(
    """
    import json, sys, time
    from mdmem import Vault
    root, agent, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    vault = Vault.open(root, agent=agent)
    print("ready", flush=True)
    while not __import__("os").path.exists(go):
        time.sleep(0.001)
    waits = []
    for i in range(n):
        start = time.monotonic()
        vault.remember(f"{agent} wrote fact {i}")
        waits.append(time.monotonic() - start)
    print(json.dumps(waits), flush=True)
    """
)


def spawn(script: str, *args: str, timeout: float = 120) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "MDMEM_GIT_LOCK_TIMEOUT": str(timeout)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def hold_in_another_process(vault: Vault) -> subprocess.Popen[str]:
    proc = spawn(HOLDER, str(vault.root))
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def remove_lock_files(state_dir: Path) -> list[str]:
    """What clearing a cache folder does: every lock file and folder in the state dir goes."""
    gone = []
    for path in state_dir.iterdir():
        if "lock" in path.name:
            gone.append(path.name)
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
    return gone


def test_deleting_the_lock_files_while_held_does_not_let_a_second_writer_in(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = hold_in_another_process(vault)
    try:
        assert remove_lock_files(vault.admin.state_dir)
        monkeypatch.setenv("MDMEM_GIT_LOCK_TIMEOUT", "1.5")
        second = Vault.open(vault.root, agent="second")
        with pytest.raises(LockTimeoutError):
            second.remember("written while another process holds the lock")
        assert "written while another" not in (vault.root / "MEMORY.md").read_text()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=60)
    memory = second.remember("written once the holder let go")
    assert second.get(memory.id).text == "written once the holder let go"


def test_a_killed_holder_hands_the_lock_on_at_once(vault: Vault) -> None:
    holder = hold_in_another_process(vault)
    waiter = spawn(WRITER, str(vault.root), "waiter", "1", str(vault.root / "go"))
    assert waiter.stdout is not None and waiter.stdout.readline() == "ready\n"
    (vault.root / "go").touch()
    time.sleep(0.5)  # the waiter is queued behind the holder
    killed = time.monotonic()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert time.monotonic() - killed < 10
    assert json.loads(out)[0] < 30


def test_tickets_are_served_in_the_order_they_were_taken(vault: Vault) -> None:
    state = vault.admin.state_dir
    first = VaultLock(vault.root, state)
    first.acquire(5)
    order: list[int] = []
    waiters = [VaultLock(vault.root, state) for _ in range(3)]

    def take(n: int) -> None:
        waiters[n].acquire(30)
        order.append(n)
        time.sleep(0.01)
        waiters[n].release()

    threads = []
    for n in (2, 0, 1):  # queue up in this order, one after another
        thread = threading.Thread(target=take, args=(n,))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 10
        while len(os.listdir(first.queue_dir)) < len(threads) + 2:  # + the holder and mutex
            assert time.monotonic() < deadline
            time.sleep(0.002)
    first.release()
    for thread in threads:
        thread.join(timeout=30)
    assert order == [2, 0, 1]


def test_a_dead_processes_ticket_is_skipped(vault: Vault) -> None:
    lock = VaultLock(vault.root, vault.admin.state_dir)
    lock.queue_dir.mkdir(parents=True, exist_ok=True)
    # A ticket its process left when it was killed while waiting: nobody flocks it.
    dead = lock.queue_dir / f"{1:016d}.999999.deadbeef"
    dead.touch()
    started = time.monotonic()
    lock.acquire(5)
    try:
        assert time.monotonic() - started < 1
        assert not dead.exists()
    finally:
        lock.release()


def test_the_lock_is_reentrant_and_times_out_with_the_process_ahead(vault: Vault) -> None:
    holder = VaultLock(vault.root, vault.admin.state_dir)
    with holder.hold(5), holder.hold(5):
        assert holder.held
        other = VaultLock(vault.root, vault.admin.state_dir)
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match=f"process {os.getpid()} is ahead"):
            other.acquire(0.3)
        assert 0.25 < time.monotonic() - started < 5
        assert len(os.listdir(holder.queue_dir)) == 2  # the timed-out ticket is gone
    assert not holder.held
    other.acquire(1)
    other.release()


def run_contenders(vault: Vault, procs: int, writes: int) -> dict[str, list[float]]:
    go = vault.root.parent / "go"
    started = [
        spawn(WRITER, str(vault.root), f"writer-{n}", str(writes), str(go), timeout=600)
        for n in range(procs)
    ]
    for proc in started:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    go.touch()
    waits = {}
    for n, proc in enumerate(started):
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err
        waits[f"writer-{n}"] = json.loads(out)
    return waits


def longest_run_while_all_wait(root: Path, procs: int) -> int:
    """The most commits in a row by one writer while every writer still had writes to make."""
    authors = git(root, "log", "--reverse", "--format=%an").split("\n")
    authors = [a for a in authors if a.startswith("writer-")]
    last = {a: i for i, a in enumerate(authors)}
    busy_until = min(last.values())  # after this, some writer is done
    return max(len(list(run)) for _, run in itertools.groupby(authors[: busy_until + 1]))


def test_four_writers_take_turns(vault: Vault) -> None:
    waits = run_contenders(vault, 4, 8)
    assert all(len(w) == 8 for w in waits.values())
    # An unfair lock let one process make every write in a row; in turn,
    # nobody writes twice while the three others wait.
    assert longest_run_while_all_wait(vault.root, 4) <= 3


@pytest.mark.slow
def test_four_writers_times_sixty_each_make_progress_with_a_bounded_wait(vault: Vault) -> None:
    waits = run_contenders(vault, 4, 60)
    for agent, times in sorted(waits.items()):
        print(f"{agent}: {len(times)} writes, max wait {max(times):.2f}s")
    assert longest_run_while_all_wait(vault.root, 4) <= 3
    every = sorted(t for times in waits.values() for t in times)
    median = every[len(every) // 2]
    # In turn, a write waits for at most the three writes ahead of it.
    assert max(every) < max(20 * median, 5.0), (max(every), median)
