"""Derived state that breaks heals and never hides a memory that is in the files.

Faults are simulated where the bytes go: a manifest or keyword write that
fails with ENOSPC (monkeypatched), a process whose file size is capped with
RLIMIT_FSIZE (a real full disk for SQLite, Whoosh and FAISS alike), garbage
bytes in a derived file, the state dir deleted under an open vault.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.errors import MemoryNotFoundError
from mdmem.files.manifest import Manifest
from mdmem.index.keyword import KeywordIndex
from mdmem.index.vector import VectorIndex

ID_AT_END = re.compile(r"\^(m-[0-9a-z]+)$", re.MULTILINE)


def disk_full(*args: Any, **kwargs: Any) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def ids_in_file(path: Path) -> list[str]:
    return ID_AT_END.findall(path.read_text())


def test_full_disk_during_writes_loses_no_memory(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    vault.remember("A fact written while the disk had room")
    with monkeypatch.context() as m, caplog.at_level(logging.WARNING, logger="mdmem"):
        m.setattr(Manifest, "put_blocks", disk_full)
        m.setattr(Manifest, "replace_file", disk_full)
        m.setattr(KeywordIndex, "add_new", no_space)
        m.setattr(KeywordIndex, "change", no_space)
        written = [vault.remember(f"Full disk fact {i} about narwhals") for i in range(4)]
        # Written and committed although no derived write went through.
        assert all(w.was_new for w in written)
        assert set(w.id for w in written) <= set(ids_in_file(vault.root / "MEMORY.md"))
        assert "narwhals" in vault.admin.store.git.run("show", "HEAD:MEMORY.md")
        assert [vault.get(w.id).text for w in written] == [w.text for w in written]
        warnings = [
            r.getMessage() for r in caplog.records if "indexing MEMORY.md failed" in r.getMessage()
        ]
        assert len(warnings) == 1 and "No space left on device" in warnings[0]
        status = vault.status().index
        assert not status["fresh"] and any("not indexed" in p for p in status["problems"])
        degraded = vault.recall("narwhals")
        assert degraded.degraded and "not indexed" in (degraded.degraded_reason or "")
    # The disk has room again: the next write must not record a partial
    # manifest row on top of the rows that were never written.
    later = vault.remember("A fact written after the disk was freed")
    vault.close()
    fresh = Vault.open(vault.root)
    for w in [*written, later]:
        assert fresh.get(w.id).text == w.text
    found = {h.id for h in fresh.recall("narwhals", k=10, mode="keyword").items}
    assert {w.id for w in written} <= found
    assert fresh.status().index["fresh"]
    assert fresh.admin.doctor().ok


def test_full_disk_in_a_real_process_keeps_every_memory(tmp_path: Path) -> None:
    # RLIMIT_FSIZE: every file the process grows past 64 KiB fails with EFBIG
    # (SQLite's WAL, Whoosh segments, the vectors file); the small markdown
    # file and git objects still fit, as on a nearly full state disk.
    root = tmp_path / "vault"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    script = textwrap.dedent(
        """
        import os, resource, signal, sys
        from mdmem import Vault
        vault = Vault.init(sys.argv[1], agent="a")
        for i in range(40):
            vault.remember(f"Seed fact number {i} about the harbour")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))
        for i in range(4):
            vault.remember(f"Written on a full disk {i} about walruses")
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        )
        vault.remember("Written after the disk was freed")
        vault.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    fresh = Vault.open(root)
    walrus = [m for m in fresh.library.list() if "walruses" in m.text]
    assert len(walrus) == 4
    for m in walrus:
        assert fresh.get(m.id).text == m.text
    assert len(fresh.recall("walruses", k=10, mode="keyword").items) == 4


def test_a_manifest_behind_its_file_never_hides_a_memory(vault: Vault) -> None:
    # A manifest row with the file's current signature but without one of
    # its blocks (what a failed index write used to leave behind).
    kept = vault.remember("Owls can turn their heads a long way")
    hidden = vault.remember("Moles dig tunnels under the lawn")
    rows = vault.admin.store.indexer.manifest.files()
    row = rows["MEMORY.md"]
    blocks = [
        b for b in vault.admin.store.indexer.manifest.blocks("MEMORY.md") if b.id != hidden.id
    ]
    vault.admin.store.indexer.manifest.replace_file("MEMORY.md", row, blocks)
    vault.close()

    fresh = Vault.open(vault.root)
    assert fresh.get(hidden.id).text == hidden.text
    assert fresh.get(kept.id).text == kept.text
    assert hidden.id in {m.id for m in fresh.library.list()}
    assert [h.id for h in fresh.recall("moles tunnels lawn", mode="keyword").items] == [hidden.id]
    again = Vault.open(vault.root)  # healed in the manifest too, not only in memory
    assert hidden.id in {m.id for m in again.library.list()}


def test_status_counts_the_memories_a_stale_manifest_hid(vault: Vault) -> None:
    vault.remember("Foxes are most active at dusk")
    hidden = vault.remember("Badgers live in setts")
    row = vault.admin.store.indexer.manifest.files()["MEMORY.md"]
    blocks = [
        b for b in vault.admin.store.indexer.manifest.blocks("MEMORY.md") if b.id != hidden.id
    ]
    vault.admin.store.indexer.manifest.replace_file("MEMORY.md", row, blocks)
    vault.close()
    fresh = Vault.open(vault.root)
    status = fresh.status()
    # The status counts what the files hold, and re-read the hiding file.
    assert status.memories == 2 and status.index["fresh"]
    assert status.index["blocks"] == status.index["keyword_docs"]


def test_a_human_edit_seen_by_get_is_indexed_before_the_next_write(vault: Vault) -> None:
    m = vault.remember("The cat sleeps on the mat")
    memory = vault.root / "MEMORY.md"
    memory.write_text(
        memory.read_text() + "- A hand written note about giraffes ^m-0hand0note0001\n"
    )
    vault.get(m.id)  # re-reads MEMORY.md (it changed on disk)
    vault.remember("Dogs bark at the postman")  # appends to the same file
    assert [h.id for h in vault.recall("giraffes", mode="keyword").items] == ["m-0hand0note0001"]
    vault.close()
    fresh = Vault.open(vault.root)
    assert fresh.get("m-0hand0note0001").text == "A hand written note about giraffes"
    assert [h.id for h in fresh.recall("giraffes", mode="keyword").items] == ["m-0hand0note0001"]


def test_a_corrupt_manifest_is_set_aside_and_rebuilt_at_open(vault: Vault) -> None:
    m = vault.remember("Seals sleep in the water")
    vault.close()
    manifest = vault.admin.state_dir / "manifest.sqlite"
    manifest.write_bytes(os.urandom(16384))
    for side in ("-wal", "-shm"):
        Path(f"{manifest}{side}").unlink(missing_ok=True)

    fresh = Vault.open(vault.root)
    assert fresh.get(m.id).text == m.text
    assert [h.id for h in fresh.recall("seals sleep water").items] == [m.id]
    new = fresh.remember("Sea lions have ear flaps")
    assert fresh.get(new.id).text == new.text
    assert fresh.status().index["fresh"]
    assert (vault.admin.state_dir / "manifest.sqlite.corrupt").exists()
    fresh.close()
    again = Vault.open(vault.root)  # the rebuilt manifest is a real file
    assert again.admin.store.indexer.manifest.files()["MEMORY.md"]
    assert {m.id, new.id} <= {x.id for x in again.library.list()}


def test_an_unwritable_manifest_is_kept_in_memory(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = vault.remember("Puffins nest in burrows")
    vault.close()
    manifest = str(vault.admin.state_dir / "manifest.sqlite")
    connect = sqlite3.connect

    def refuse(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        # What a read-only or vanished state dir answers.
        if str(database) == manifest:
            raise sqlite3.OperationalError("unable to open database file")
        return connect(database, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(sqlite3, "connect", refuse)
        opened = Vault.open(vault.root)
        assert opened.get(m.id).text == m.text
        assert [h.id for h in opened.recall("puffins burrows", mode="keyword").items] == [m.id]
        new = opened.remember("Gannets dive from great heights")
        assert opened.get(new.id).text == new.text
        status = opened.status().index
        assert not status["fresh"]
        assert any("manifest kept in memory" in p for p in status["problems"])
        report = opened.admin.doctor()
        assert not report.ok
        assert any("manifest kept in memory" in p.detail for p in report.problems)
    # The disk answers again: the manifest goes back to its file.
    monkeypatch.setattr("mdmem.files.health.RETRY_SECONDS", 0.0)
    assert opened.admin.doctor(fix=True).ok
    assert not opened.admin.store.indexer.manifest.in_memory
    assert opened.status().index["fresh"]


def test_the_state_dir_deleted_under_an_open_vault_is_rebuilt(vault: Vault) -> None:
    before = vault.remember("Herons stand still in shallow water")
    vault.recall("herons")
    shutil.rmtree(vault.admin.state_dir)

    assert [h.id for h in vault.recall("herons shallow water").items] == [before.id]
    after = vault.remember("Kingfishers dive for small fish")
    assert [h.id for h in vault.recall("kingfishers dive").items] == [after.id]
    assert vault.get(after.id).text == after.text
    assert vault.status().index["fresh"]
    assert (vault.admin.state_dir / "manifest.sqlite").exists()
    assert (vault.admin.state_dir / "vault-lock").is_dir()  # the lock's queue came back too
    vault.close()
    fresh = Vault.open(vault.root)
    assert {before.id, after.id} <= {m.id for m in fresh.library.list()}
    assert fresh.status().index["fresh"]


def test_a_vector_index_that_cannot_be_saved_does_not_fail_writes(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(VectorIndex, "save", no_space)
        written = vault.remember("Swifts sleep while flying")
        assert any("not saved" in p for p in vault.status().index["problems"])
    vault.remember("Albatrosses glide for hours")  # the next checkpoint saves
    assert vault.status().index["problems"] == []
    assert [h.id for h in vault.recall("swifts sleep flying", mode="vector").items][:1] == [
        written.id
    ]


def test_an_unusable_id_counter_does_not_fail_writes(vault: Vault) -> None:
    counter = vault.admin.state_dir / "last-id-ms"
    counter.unlink(missing_ok=True)
    counter.mkdir()  # cannot be opened as a file
    first = vault.remember("Wrens are small and loud")
    second = vault.remember("Robins sing before dawn")
    assert first.id < second.id
    assert vault.get(first.id).text == first.text


def test_a_missing_memory_is_still_not_found(vault: Vault) -> None:
    # The file check on a miss must not invent memories or loop.
    vault.remember("Stoats change colour in winter")
    vault.close()
    fresh = Vault.open(vault.root)
    for _ in range(2):
        with pytest.raises(MemoryNotFoundError):
            fresh.get("m-0000nothere00")
