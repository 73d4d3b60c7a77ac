"""doctor compares the derived state with the files on disk, and --fix heals it."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.files.manifest import Manifest
from mdmem.index.keyword import KeywordIndex


def disk_full(*args: Any, **kwargs: Any) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def details(report: Any) -> str:
    return "\n".join(f"{p.check}: {p.detail}" for p in report.problems)


def garble(path: Path) -> None:
    path.write_bytes(os.urandom(16384))
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)


def test_doctor_reports_a_full_disk_and_fix_heals_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("Written while the disk had room")
    with monkeypatch.context() as m:
        for name in ("put_blocks", "replace_file", "set_meta"):
            m.setattr(Manifest, name, disk_full)
        m.setattr(KeywordIndex, "add_new", no_space)
        m.setattr(KeywordIndex, "change", no_space)
        written = [vault.remember(f"Full disk fact {i} about lemurs") for i in range(4)]
        report = vault.admin.doctor()
        assert not report.ok
        text = details(report)
        assert "not indexed yet" in text
        assert "missing from the keyword index" in text
        assert "MEMORY.md" in text  # the manifest check names the file
    fixed = vault.admin.doctor(fix=True)
    assert fixed.ok, details(fixed)
    assert vault.admin.doctor().ok
    found = {h.id for h in vault.recall("lemurs", k=10, mode="keyword").items}
    assert {w.id for w in written} <= found


def test_doctor_sees_a_manifest_that_hides_a_memory(vault: Vault) -> None:
    vault.remember("Owls can turn their heads a long way")
    hidden = vault.remember("Moles dig tunnels under the lawn")
    row = vault.admin.store.indexer.manifest.files()["MEMORY.md"]
    blocks = [
        b for b in vault.admin.store.indexer.manifest.blocks("MEMORY.md") if b.id != hidden.id
    ]
    vault.admin.store.indexer.manifest.replace_file("MEMORY.md", row, blocks)
    vault.close()
    fresh = Vault.open(vault.root)
    report = fresh.admin.doctor()
    assert not report.ok
    assert "MEMORY.md: manifest rows out of step with the file" in details(report)
    assert fresh.admin.doctor(fix=True).ok
    assert fresh.admin.doctor().ok
    assert [h.id for h in fresh.recall("moles tunnels", mode="keyword").items] == [hidden.id]


def test_doctor_reports_a_manifest_rebuilt_at_open(vault: Vault) -> None:
    vault.remember("Seals sleep in the water")
    vault.close()
    garble(vault.admin.state_dir / "manifest.sqlite")
    fresh = Vault.open(vault.root)
    report = fresh.admin.doctor()
    assert not report.ok
    assert "manifest.sqlite was damaged and rebuilt" in details(report)
    assert fresh.admin.doctor(fix=True).ok
    assert not (vault.admin.state_dir / "manifest.sqlite.corrupt").exists()
    assert fresh.admin.doctor().ok


def test_every_command_works_with_a_corrupt_manifest(vault: Vault) -> None:
    m = vault.remember("Walruses use their tusks to climb")
    vault.close()
    runner = CliRunner()
    manifest = vault.admin.state_dir / "manifest.sqlite"
    base = ["--vault", str(vault.root)]
    commands = [
        ["get", m.id, "--json"],
        ["recall", "walruses tusks", "--json"],
        ["context", "walruses tusks"],
        ["remember", "Walrus calves stay with their mothers"],
        ["status", "--json"],
        ["history", m.id],
        ["reindex"],
        ["forget", m.id],
    ]
    for args in commands:
        garble(manifest)
        result = runner.invoke(main, [*base, *args])
        assert result.exit_code == 0, (args, result.output)
        assert "Traceback" not in result.output
    garble(manifest)
    doctor = runner.invoke(main, [*base, "doctor", "--json"])
    assert doctor.exit_code == 1 and "manifest.sqlite was damaged" in doctor.output
    fixed = runner.invoke(main, [*base, "doctor", "--fix"])
    assert fixed.exit_code == 0, fixed.output
    status = json.loads(runner.invoke(main, [*base, "status", "--json"]).output)
    assert status["index"]["fresh"] and status["memories"] == 1


def test_doctor_checks_the_sqlite_files_it_does_not_have_open(vault: Vault) -> None:
    m = vault.remember("Sloths move slowly")
    vault.recall("sloths")
    vault.usefulness.feedback(m.id, helpful=True)
    vault.close()
    useful = vault.admin.state_dir / "usefulness.sqlite"
    data = bytearray(useful.read_bytes())
    # Damage a page past the header: the file still opens, the b-tree does not add up.
    for i in range(4096 + 16, len(data), 7):
        data[i] = 0xFF
    useful.write_bytes(bytes(data))
    fresh = Vault.open(vault.root)
    report = fresh.admin.doctor()
    assert "usefulness.sqlite is damaged" in details(report)
    assert fresh.admin.doctor(fix=True).ok
    assert fresh.admin.doctor().ok
    assert [h.id for h in fresh.recall("sloths slowly").items] == [m.id]


def test_doctor_reports_an_unreadable_id_counter_and_half_built_snapshots(
    vault: Vault,
) -> None:
    vault.remember("Geese fly in a V")
    (vault.admin.state_dir / "last-id-ms").write_bytes(b"\x00\xffgarbage")
    half = vault.admin.state_dir / "asof" / ("0" * 40)
    (half / "keyword").mkdir(parents=True)
    report = vault.admin.doctor()
    text = details(report)
    assert "id counter last-id-ms is unreadable" in text
    assert "was left half-built" in text
    assert vault.admin.doctor(fix=True).ok
    assert not half.exists()
    assert vault.remember("Swans mate for life").was_new
    assert vault.admin.doctor().ok


def test_doctor_fix_reports_what_it_could_not_fix(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("Written while the disk had room")
    monkeypatch.setattr(KeywordIndex, "add_new", no_space)
    monkeypatch.setattr(KeywordIndex, "change", no_space)
    monkeypatch.setattr(KeywordIndex, "add_many", no_space)
    vault.remember("A fact the keyword index never got")
    report = vault.admin.doctor(fix=True)  # the disk is still full
    assert not report.ok
    assert "could not rebuild the indexes" in details(report)


def test_doctor_is_clean_after_every_kind_of_write(vault: Vault) -> None:
    # The manifest check compares with the files themselves, so what the
    # write path records incrementally must be what a full parse reads.
    pref = vault.remember("The user prefers tea", kind="preference", tags=["drinks"])
    vault.remember("Deploys happen on Tuesday", kind="decision", scope="project:web")
    vault.log("Looked at FAISS", category="Research", tags=["vectors"])
    vault.journal("I should double check dates")
    vault.learn("Python", "Use pathlib for paths", tags=["py"])
    second = vault.learn("Python", "f-strings are fast")
    old = vault.remember("Old fact about coffee")
    vault.supersede(old.id, "New fact about coffee")
    vault.resolve(pref.id)
    gone = vault.remember("Forget me please")
    vault.forget(gone.id)
    with vault.batch("import"):
        for i in range(5):
            vault.remember(f"Batch fact {i} about rivers")
    (vault.root / "notes.md").write_text("# Notes\n\nSome text.\n\n## Sub\n\nMore text #tag\n")
    memory = vault.root / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n- A line a person added\n")
    vault.remember("Written after the person's edit")
    # A second item under an existing topic keeps its section's heading.
    assert vault.admin.store.block(second.id).heading == "Topic: Python"
    hits = vault.recall("f-strings fast", mode="keyword").items
    assert hits[0].id == second.id and hits[0].heading == "Topic: Python"
    report = vault.admin.doctor()
    assert report.ok, details(report)
    vault.close()
    assert Vault.open(vault.root).admin.doctor().ok
