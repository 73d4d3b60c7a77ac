"""doctor reports git lock files whose git is gone, at any age, and --fix removes them."""

from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main

from ..conftest import git
from ..store.test_git_locks import needs_proc, sigkill, start_git_commit_in_editor

LOCKS = ["index.lock", "HEAD.lock", "packed-refs.lock", "refs/heads/main.lock"]


def test_doctor_fix_removes_every_stale_git_lock_however_young(vault: Vault) -> None:
    vault.remember("a memory before the crash")
    for name in LOCKS:
        (vault.root / ".git" / name).write_text("")  # just now: no age to wait out
    report = vault.admin.doctor()
    stale = sorted(p.detail.split()[0] for p in report.problems if p.check == "git")
    assert stale == sorted(f".git/{name}" for name in LOCKS)
    assert all(p.fixable for p in report.problems if p.check == "git")
    fixed = runner_fix(vault)
    assert fixed.exit_code == 0, fixed.output
    assert not [name for name in LOCKS if (vault.root / ".git" / name).exists()]
    again = vault.admin.doctor()
    assert again.ok, again.problems
    assert vault.remember("a memory after the fix").was_new


def runner_fix(vault: Vault) -> object:
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "doctor", "--fix"])
    return result


@needs_proc
def test_doctor_fix_leaves_the_lock_of_a_git_still_running(vault: Vault) -> None:
    proc = start_git_commit_in_editor(vault.root)
    lock = vault.root / ".git" / "index.lock"
    try:
        report = vault.admin.doctor(fix=True)
        held = [p for p in report.problems if "index.lock" in p.detail]
        assert [p.fixable for p in held] == [False]
        assert f"running git (pid {proc.pid})" in held[0].detail
        assert lock.exists() and not report.ok
    finally:
        sigkill(proc)
    report = vault.admin.doctor(fix=True)
    assert [p.detail for p in report.problems if "index.lock" in p.detail]
    assert not lock.exists()
    assert git(vault.root, "status", "--porcelain") == ""  # the person's edit, committed


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_after_doctor_fix_git_itself_works_again(vault: Vault, name: str) -> None:
    (vault.root / ".git" / name).write_text("")
    vault.admin.doctor(fix=True)
    (vault.root / "USER.md").write_text("# User\n\n- edited by hand\n")
    done = subprocess.run(
        ["git", "commit", "-qam", "by hand"], cwd=vault.root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
