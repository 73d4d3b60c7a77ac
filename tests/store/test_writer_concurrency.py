"""Concurrent writers, killed writers and a human typing: nothing is lost."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.files.blocks import parse
from mdmem.files.textfile import decode

from ..conftest import git

WRITER = textwrap.dedent(
    """
    import sys
    from mdmem import Vault
    vault = Vault.open(sys.argv[1], agent=sys.argv[2])
    print("ready", flush=True)
    for i in range(int(sys.argv[3])):
        vault.remember(f"{sys.argv[2]} fact number {i}")
    """
)


def _spawn(vault: Vault, agent: str, n: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(vault.root), agent, str(n)],
        # Correctness, not latency, is under test: on a loaded machine eight
        # writers in turn can make one wait past the default 120 s.
        env={**os.environ, "MDMEM_GIT_LOCK_TIMEOUT": "1200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _memory_ids(vault: Vault) -> list[str]:
    ids = []
    for path in vault.root.rglob("*.md"):
        if ".git" in path.parts:
            continue
        parsed = parse(path.relative_to(vault.root).as_posix(), decode(path.read_bytes()))
        ids += [b.id for b in parsed.memories()]
    return ids


def _wait_for_text(path: Path, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if text in path.read_text(encoding="utf-8"):
                return
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never reached {path}")


@pytest.mark.slow
def test_eight_processes_times_250_remembers(vault: Vault) -> None:
    procs = [_spawn(vault, f"agent-{n}", 250) for n in range(8)]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err.decode()
    ids = _memory_ids(vault)
    assert len(ids) == 2000 == len(set(ids))
    subjects = git(vault.root, "log", "--format=%s").splitlines()
    assert len(subjects) == 2001  # init + one commit per write
    # A write that retires a near-identical older fact (auto-resolve) says so
    # in its subject; it is still that one write's own commit.
    assert sum(s.startswith(("remember fact:", "auto-supersede fact:")) for s in subjects) == 2000
    fsck = subprocess.run(
        ["git", "fsck", "--strict"], cwd=vault.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stderr


@pytest.mark.slow
def test_writer_killed_in_a_loop_leaves_parseable_files_and_no_stale_lock(vault: Vault) -> None:
    rng = random.Random(7)
    for round_ in range(12):
        proc = _spawn(vault, f"victim-{round_}", 10_000)
        # Time the kill from the moment the writer is open, not from spawn:
        # on a loaded machine the import alone can outlast a fixed delay.
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        if round_ == 0:
            _wait_for_text(vault.root / "MEMORY.md", "victim-0 fact number 0")
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    # Every file parses: no half-written memory anywhere.
    reopened = Vault.open(vault.root, agent="survivor")
    assert reopened.status().skipped == {}
    ids = _memory_ids(reopened)
    assert len(ids) == len(set(ids)) and ids
    # The lock is free: a new write goes through at once.
    started = time.monotonic()
    memory = reopened.remember("written after the massacre")
    assert time.monotonic() - started < 10
    assert reopened.get(memory.id).text == "written after the massacre"
    fsck = subprocess.run(["git", "fsck"], cwd=vault.root, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert git(vault.root, "status", "--porcelain") == ""
    _assert_leftovers_are_inert(reopened)


def test_a_killed_writers_temp_file_is_inert_until_doctor_removes_it(vault: Vault) -> None:
    """What a SIGKILL between staging and rename leaves: a full, parseable copy."""
    vault.remember("a real memory")
    staged = (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    staged += "- zebras staged but never installed ^m-01jd3k5x7q0000\n"
    (vault.root / ".MEMORY.md.mdmem-4242-0badf00d.tmp").write_text(staged, encoding="utf-8")
    reopened = Vault.open(vault.root, agent="next")
    hits = reopened.recall("zebras staged but never installed").items
    assert all("zebras" not in hit.text for hit in hits)
    assert _assert_leftovers_are_inert(reopened) == [".MEMORY.md.mdmem-4242-0badf00d.tmp"]


def _assert_leftovers_are_inert(vault: Vault) -> list[str]:
    """Temp files a killed writer left stay out of git and the indexes; doctor --fix drops them.

    Every write stages ``.<name>.mdmem-<pid>-<hex>.tmp`` beside its file and
    renames it into place; a kill in between leaves the staged copy, which is
    a complete markdown file. Nothing cleans it on open (it could belong to a
    live writer in another process), so it must be harmless until
    ``mdmem doctor --fix``, which runs under the vault lock.
    """
    leftovers = sorted(
        p.relative_to(vault.root).as_posix()
        for p in vault.root.rglob(".*.tmp")
        if ".git" not in p.relative_to(vault.root).parts
    )
    for rel in leftovers:
        assert re.fullmatch(r"(.*/)?\.[^/]+\.md\.mdmem-\d+-[0-9a-f]{8}\.tmp", rel), rel
        ignored = subprocess.run(["git", "check-ignore", "-q", rel], cwd=vault.root)
        assert ignored.returncode == 0, f"{rel} is not ignored by git"
    vault.admin.refresh()
    assert not [path for path in vault.admin.store.catalog.files if not path.endswith(".md")]
    report = vault.admin.doctor()
    flagged = sorted(
        p.detail.split()[0] for p in report.problems if p.check == "no interrupted writes"
    )
    assert flagged == leftovers
    vault.admin.doctor(fix=True)
    assert not [
        p for p in vault.root.rglob(".*.tmp") if ".git" not in p.relative_to(vault.root).parts
    ]
    return leftovers


def test_human_appending_to_user_md_while_agent_remembers(vault: Vault) -> None:
    stop = threading.Event()
    typed: list[str] = []

    def human() -> None:
        n = 0
        while not stop.is_set():
            line = f"- human note {n}"
            with open(vault.root / "USER.md", "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
            typed.append(line)
            n += 1
            time.sleep(0.03)  # a very fast human: an editor save every 30 ms

    thread = threading.Thread(target=human)
    thread.start()
    try:
        agent_ids = [
            vault.remember(f"agent preference {i}", kind="preference").id for i in range(25)
        ]
    finally:
        stop.set()
        thread.join()
    vault.admin.commit_human_edits()
    text = (vault.root / "USER.md").read_text(encoding="utf-8")
    for line in typed:
        assert line in text
    for memory_id in agent_ids:
        assert f"^{memory_id}" in text
    authors = set(git(vault.root, "log", "--format=%an", "--", "USER.md").split("\n")) - {""}
    assert "test-agent" in authors and len(authors) >= 2


def test_append_during_the_write_is_merged_without_a_replay(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mdmem.store.swap as swap_module
    from mdmem.store.writer import Writer

    user_md = vault.root / "USER.md"
    real_write_temp = swap_module.write_temp
    typed = []

    def human_types_meanwhile(path: Path, data: bytes, **kwargs: object) -> Path:
        # Each time mdmem stages its copy, the human saves one more line:
        # a replay would never catch up.
        if path == user_md and len(typed) < 2:
            line = f"- typed while mdmem wrote {len(typed)}\n"
            with open(user_md, "a", encoding="utf-8") as fh:
                fh.write(line)
            typed.append(line.strip())
        return real_write_temp(path, data, **kwargs)  # type: ignore[arg-type]

    loads = []
    real_load = Writer.load_pending

    def counting_load(self: Writer, *args: object, **kwargs: object) -> object:
        loads.append(args)
        return real_load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Writer, "load_pending", counting_load)
    vault.remember("prefers light mode", kind="preference")
    plain_loads, loads[:] = len(loads), []
    monkeypatch.setattr(swap_module, "write_temp", human_types_meanwhile)
    memory = vault.remember("prefers dark mode", kind="preference")
    # No replay: both their lines are merged at the swap (and committed as
    # theirs, exactly, before ours), so a typist cannot starve the write.
    assert len(loads) == plain_loads
    text = user_md.read_text(encoding="utf-8")
    assert all(line in text for line in typed) and len(typed) == 2
    assert text.index(typed[-1]) < text.index(f"^{memory.id}")  # ours goes after theirs
    assert vault.get(memory.id).text == "prefers dark mode"
    vault.admin.commit_human_edits()
    assert git(vault.root, "status", "--porcelain") == ""
    for line in typed:
        author = git(vault.root, "log", "-1", "--format=%an", "-S", line, "--", "USER.md")
        assert author.strip() != "test-agent"


def test_a_recall_in_another_thread_does_not_wait_for_an_open_write(vault: Vault) -> None:
    vault.remember("We deploy the shop service to fly.io in the ams region.")
    started = threading.Event()
    release = threading.Event()

    def writer() -> None:
        with vault.batch("a long capture"):
            vault.remember("The orders table moves to integer cents.")
            started.set()
            release.wait(30)  # the write stays open, holding the vault

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert started.wait(30)
        begun = time.monotonic()
        hits = vault.recall("where do we deploy", k=3)
        assert time.monotonic() - begun < 5  # not the 30 s the write stays open
        assert hits.items and "fly.io" in hits.items[0].text
    finally:
        release.set()
        thread.join(60)
    assert "integer cents" in vault.recall("orders table cents", k=1).items[0].text
