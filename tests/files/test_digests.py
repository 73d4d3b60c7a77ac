"""A file whose stat changed but whose bytes did not (a restored or copied
vault, a checkout of the same text) is not parsed again; one whose bytes
changed is, whatever else is true of it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.files import catalog as catalog_module
from mdmem.files.fieldfiles import FieldFiles
from mdmem.files.sidecar import sidecar_of


def _vault_files(root: Path) -> list[Path]:
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts and p.name.endswith((".md", ".md.jsonl"))
    ]


def _restore(root: Path) -> int:
    """Write every note and fields file again, same bytes, new inode and mtime
    (what a restore from a backup or ``cp`` without ``-p`` does)."""
    files = _vault_files(root)
    for path in files:
        data = path.read_bytes()
        fresh = path.with_name(path.name + ".restoring")
        fresh.write_bytes(data)
        os.replace(fresh, path)
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 7_000_000_000))
    return len(files)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Which notes were parsed and which fields files read, from here on."""
    seen: dict[str, list[str]] = {"notes": [], "fields": []}
    real_parse, real_read = catalog_module.parse, FieldFiles.read

    def parse(path: str, *args: Any, **kwargs: Any) -> Any:
        seen["notes"].append(path)
        return real_parse(path, *args, **kwargs)

    def read(self: FieldFiles, rel: str, *args: Any, **kwargs: Any) -> Any:
        seen["fields"].append(rel)
        return real_read(self, rel, *args, **kwargs)

    monkeypatch.setattr(catalog_module, "parse", parse)
    monkeypatch.setattr(FieldFiles, "read", read)
    return seen


def _filled(vault: Vault) -> dict[str, str]:
    vault.remember("The billing job runs at 02:00.", kind="fact")
    old = vault.remember("Deploys go out on Tuesdays.", kind="decision", tags=["deploy"])
    new = vault.supersede(old.id, "Deploys go out on Thursdays.")
    vault.remember("Ana prefers short standups.", kind="preference")
    return {"old": old.id, "new": new.id}


def test_a_restored_vault_opens_without_parsing_a_file(
    vault: Vault, reads: dict[str, list[str]]
) -> None:
    ids = _filled(vault)
    root = vault.root
    vault.close()
    assert _restore(root) >= 3
    reads["notes"].clear()
    reads["fields"].clear()
    again = Vault.open(root)
    assert reads == {"notes": [], "fields": []}
    assert again.recall("when do deploys go out", k=3).items[0].id == ids["new"]
    assert again.get(ids["old"]).status == "superseded"
    again.close()
    # The new stats were recorded: nor does the next open.
    third = Vault.open(root)
    assert reads == {"notes": [], "fields": []}
    assert third.get(ids["new"]).text.startswith("Deploys go out on Thursdays.")
    third.close()


def test_changed_bytes_are_parsed_even_after_a_restore(
    vault: Vault, reads: dict[str, list[str]]
) -> None:
    ids = _filled(vault)
    root = vault.root
    vault.close()
    _restore(root)
    memory = root / "MEMORY.md"
    memory.write_text(
        memory.read_text(encoding="utf-8") + "- The cold room is kept at 4 degrees.\n",
        encoding="utf-8",
    )
    reads["notes"].clear()
    again = Vault.open(root)
    assert reads["notes"] == ["MEMORY.md"]
    hits = again.recall("cold room temperature", k=3, mode="keyword").items
    assert hits and "4 degrees" in hits[0].text
    assert again.get(ids["old"]).status == "superseded"
    again.close()


def test_a_person_s_change_to_a_fields_file_is_read_after_a_restore(
    vault: Vault, reads: dict[str, list[str]]
) -> None:
    ids = _filled(vault)
    root = vault.root
    side = root / sidecar_of(vault.get(ids["new"]).path)
    vault.close()
    _restore(root)
    side.write_text(
        side.read_text(encoding="utf-8")
        + f'{{"id": "{ids["new"]}", "at": "2030-01-01T00:00:00Z", "status": "archived"}}\n',
        encoding="utf-8",
    )
    reads["fields"].clear()
    again = Vault.open(root)
    assert side.relative_to(root).as_posix() in reads["fields"]
    assert again.get(ids["new"]).status == "archived"
    again.close()


def test_a_manifest_from_before_digests_learns_them_at_its_first_open(
    vault: Vault, reads: dict[str, list[str]]
) -> None:
    ids = _filled(vault)
    root = vault.root
    manifest = vault.admin.store.indexer.manifest.path
    vault.close()
    with sqlite3.connect(manifest) as db:
        db.execute("UPDATE files SET digest = NULL")
        # Strip each fields stamp back to mtime:size:ino, as the older rows hold it.
        rows = db.execute("SELECT path, fields_sig FROM files WHERE fields_sig != ''").fetchall()
        for path, stamp in rows:
            db.execute(
                "UPDATE files SET fields_sig = ? WHERE path = ?",
                (":".join(stamp.split(":")[:3]), path),
            )
    reads["notes"].clear()
    Vault.open(root).close()  # stat-matched: nothing parsed, the digests taken
    assert reads["notes"] == []
    _restore(root)
    reads["fields"].clear()
    again = Vault.open(root)
    assert reads == {"notes": [], "fields": []}
    assert again.get(ids["old"]).status == "superseded"
    again.close()
