"""Progress bars: on stderr when it is a terminal, never on stdout nor without a terminal;
and the progress callbacks the long library calls report through."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mdmem import Vault

DATA = Path(__file__).parent.parent / "memory" / "data"


def _run(args: list[str], *, tty: bool, env: dict[str, str]) -> tuple[int, str, str]:
    """Run ``python -m mdmem ARGS`` with stderr on a pseudo-terminal (or a pipe)."""
    cmd = [sys.executable, "-m", "mdmem", *args]
    if not tty:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        return out.returncode, out.stdout, out.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=120)
    os.close(master)
    return code, stdout, b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MDMEM_DEBUG"}
    env.update(TERM="xterm", COLUMNS="100", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return env


def test_import_bar_on_a_terminal_only(vault: Vault, tmp_path: Path, cli_env: dict) -> None:
    args = [
        "--vault",
        str(vault.root),
        "library",
        "import",
        str(DATA / "claude_conversations.json"),
    ]
    code, out, err = _run(args, tty=True, env=cli_env)
    assert code == 0, err
    assert "import" in err and "100/100" in err  # the bar (per cent read), on the terminal
    assert out.startswith("imported 3 of 3 messages")  # stdout holds only the result
    # --json: the report, and no bar even on a terminal.
    code, out, err = _run([*args, "--json"], tty=True, env=cli_env)
    assert code == 0 and json.loads(out)["duplicates"] == 3 and err == ""
    # No terminal: no bar.
    code, out, err = _run(args, tty=False, env=cli_env)
    assert code == 0 and err == "" and "imported 0 of 3" in out


def test_rebuild_after_the_state_dir_is_gone_shows_a_bar(
    vault: Vault, tmp_path: Path, cli_env: dict
) -> None:
    with vault.batch():
        for i in range(30):
            vault.remember(f"Fact number {i} about the harbour.")
    vault.close()
    shutil.rmtree(tmp_path / "_state")
    code, out, err = _run(["--vault", str(vault.root), "status"], tty=True, env=cli_env)
    assert code == 0, err
    assert "30" in out
    assert "vectors" in err and "keyword" in err


def test_open_reports_the_reindex_after_the_state_dir_is_gone(vault: Vault, tmp_path: Path) -> None:
    with vault.batch():
        for i in range(12):
            vault.remember(f"Fact number {i} about the harbour.")
    vault.close()
    shutil.rmtree(tmp_path / "_state")
    seen: list[tuple[str, int, int]] = []
    with Vault.open(vault.root, progress=lambda *a: seen.append(a)) as again:
        assert again.recall("harbour", k=3).items
    phases = {p for p, _, _ in seen}
    assert {"keyword", "vectors"} <= phases
    last = {p: (d, t) for p, d, t in seen}
    assert last["vectors"][0] == last["vectors"][1] >= 12
    # A warm open has nothing to index and reports nothing.
    quiet: list[tuple[str, int, int]] = []
    Vault.open(vault.root, progress=lambda *a: quiet.append(a)).close()
    assert quiet == []


def test_consolidate_doctor_and_purge_report_steps(vault: Vault) -> None:
    chat = vault.session("s1")
    chat.record("user", "My favourite colour is green.")
    chat.record("assistant", "Noted: green.")
    seen: list[tuple[str, int, int]] = []
    vault.consolidate(progress=lambda *a: seen.append(a))
    assert seen[0][0] == "consolidate" and seen[-1][1] == seen[-1][2] >= 1

    seen.clear()
    vault.admin.doctor(progress=lambda *a: seen.append(a))
    assert [d for p, d, _ in seen if p == "doctor"] == [0, 1, 2, 3, 4, 5, 6]

    m = vault.remember("Temporary fact to purge.")
    seen.clear()
    vault.git.purge(m.id, confirm=True, progress=lambda *a: seen.append(a))
    assert [d for p, d, _ in seen if p == "purge"] == [0, 1, 2, 3]
    assert "keyword" in {p for p, _, _ in seen}  # the full re-index after the rewrite


def test_sync_reports_steps(vault: Vault, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(
        ["git", "-C", str(vault.root), "remote", "add", "origin", str(remote)], check=True
    )
    vault.remember("Synced fact.")
    seen: list[tuple[str, int, int]] = []
    vault.git.sync(progress=lambda *a: seen.append(a))
    assert [d for p, d, _ in seen if p == "sync"][-1] == 4
