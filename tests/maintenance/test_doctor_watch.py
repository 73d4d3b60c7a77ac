"""doctor finds and repairs derived-state damage; watch keeps the index live."""

from __future__ import annotations

import os
import time
from pathlib import Path

from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main


def test_doctor_is_clean_on_a_healthy_vault(vault: Vault) -> None:
    vault.remember("Healthy fact")
    report = vault.admin.doctor()
    assert report.ok, report.problems
    assert "keyword index" in report.checks and "git" in report.checks


def test_doctor_finds_and_fixes_damage(vault: Vault) -> None:
    m = vault.remember("Otters hold hands while sleeping")
    vault.admin.store.indexer.keyword.delete([m.id])
    (vault.root / ".MEMORY.md.mdmem-123-abcd.tmp").write_text("half")
    (vault.root / "scratch.md").write_text("# Scratch\n")
    report = vault.admin.doctor()
    checks = {p.check for p in report.problems}
    assert {"keyword index", "no interrupted writes", "git"} <= checks
    fixed = vault.admin.doctor(fix=True)
    assert fixed.fixed
    again = vault.admin.doctor()
    assert again.ok, again.problems
    assert not (vault.root / ".MEMORY.md.mdmem-123-abcd.tmp").exists()
    assert [h.id for h in vault.recall("otters sleeping", mode="keyword").items] == [m.id]


def test_doctor_cli_exit_codes(vault: Vault) -> None:
    runner = CliRunner()
    ok = runner.invoke(main, ["--vault", str(vault.root), "doctor"])
    assert ok.exit_code == 0, ok.output
    (vault.root / "broken.md").write_bytes(b"\x00binary")
    bad = runner.invoke(main, ["--vault", str(vault.root), "doctor", "--json"])
    assert bad.exit_code == 1 and '"ok": false' in bad.output


def _wait_for(predicate: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_watch_handles_rename_style_saves(vault: Vault) -> None:
    watcher = vault.admin.watch(debounce=0.1)
    try:
        before = watcher.refreshes
        notes = vault.root / "notes.md"
        # vim/Obsidian style: write a temp file, rename it over the target.
        tmp = vault.root / ".notes.md.swp"
        tmp.write_text("# Notes\n\nThe lighthouse keeper feeds seagulls at dawn.\n")
        os.replace(tmp, notes)
        assert _wait_for(lambda: watcher.refreshes > before)
        state = vault.admin.store.indexer.manifest.files()
        assert "notes.md" in state  # indexed by the watcher, before any recall
        hits = vault.recall("lighthouse keeper seagulls", mode="keyword").items
        assert hits and hits[0].path == "notes.md"
    finally:
        watcher.stop()


def test_watch_debounces_bursts(vault: Vault) -> None:
    watcher = vault.admin.watch(debounce=0.3)
    try:
        path = vault.root / "burst.md"
        for i in range(20):
            path.write_text(f"# Burst\n\nline {i}\n")
            time.sleep(0.01)
        assert _wait_for(lambda: watcher.refreshes >= 1)
        time.sleep(0.5)
        assert watcher.refreshes <= 2
    finally:
        watcher.stop()


def test_head_move_forces_reread(vault: Vault, tmp_path: Path) -> None:
    m = vault.remember("Branch fact one")
    vault.admin.store.git.run("checkout", "-q", "-b", "other")
    memory = vault.root / "MEMORY.md"
    memory.write_text(memory.read_text().replace("one", "two"))
    vault.admin.commit_human_edits()
    vault.admin.store.git.run("checkout", "-q", "main")
    assert "one" in vault.get(m.id).text
    vault.admin.store.git.run("checkout", "-q", "other")
    assert "two" in vault.recall("branch fact", mode="keyword").items[0].text


def test_watch_json_prints_one_object_per_refresh(tmp_path: Path) -> None:
    import json
    import os
    import select
    import signal
    import subprocess
    import sys

    from mdmem import Vault

    Vault.init(tmp_path / "v", agent="test-agent").close()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mdmem",
            "--vault",
            str(tmp_path / "v"),
            "watch",
            "--json",
            "--debounce",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert "watching" in proc.stderr.readline()
        # The observer starts just after that line: save until a refresh is reported.
        note = tmp_path / "v" / "notes.md"
        line = ""
        for attempt in range(20):
            note.write_text(f"# Notes\n\nThe heron nests by the weir ({attempt}).\n")
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                break
        assert json.loads(line) == {"reindexed": ["notes.md"]}
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()  # not left running (SIGINT is ignored under `nohup … &`)
            raise
