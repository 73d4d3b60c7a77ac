"""The manifest keeps each file's rows: one file's blocks never replace another's."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from mdmem.files.manifest import Manifest
from mdmem.models import Block


def _block(path: str, block_id: str, text: str) -> Block:
    return Block(
        id=block_id,
        path=path,
        line_start=3,
        line_end=3,
        heading="",
        text=text,
        kind="fact",
        tags=(),
        scope="",
        status="active",
        created=datetime(2026, 1, 1, tzinfo=UTC),
        updated=None,
        content_hash=text,
    )


def test_the_same_block_id_in_two_files_keeps_both_rows(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path / "manifest.sqlite")
    row = (1, 2, 3, "", {}, 0, None)
    # A line copied into a second file (or a move seen half-way): the id is the same.
    manifest.replace_file("MEMORY.md", row, [_block("MEMORY.md", "m-0123456789ab", "tea")])
    manifest.replace_file("USER.md", row, [_block("USER.md", "m-0123456789ab", "tea at four")])
    by_path = manifest.blocks_by_path()
    assert [b.text for b in by_path["MEMORY.md"]] == ["tea"]
    assert [b.text for b in by_path["USER.md"]] == ["tea at four"]
    assert manifest.count_blocks() == 2
    # Re-recording one file leaves the other's rows alone.
    manifest.replace_file("USER.md", row, [])
    assert [b.text for b in manifest.blocks("MEMORY.md")] == ["tea"]
    manifest.close()


def test_an_older_schema_is_dropped_and_rebuilt(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path / "manifest.sqlite")
    row = (1, 2, 3, "", {}, 0, None)
    manifest.replace_file("MEMORY.md", row, [_block("MEMORY.md", "m-1", "x")])
    manifest.set_meta("schema_version", "2")
    manifest.close()
    again = Manifest(tmp_path / "manifest.sqlite")
    assert again.files() == {} and again.count_blocks() == 0
    again.close()


def test_a_manifest_from_before_digests_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "manifest.sqlite"
    Manifest(path).close()
    with sqlite3.connect(path) as db:  # the files table as 0.1 wrote it: no digest column
        db.execute("DROP TABLE files")
        db.execute(
            "CREATE TABLE files (path TEXT PRIMARY KEY, mtime_ns INTEGER,"
            " size INTEGER, ino INTEGER, fields_sig TEXT, meta TEXT, fm_lines INTEGER)"
        )
        db.execute("INSERT INTO files VALUES ('MEMORY.md', 1, 2, 3, '', '{}', 0)")
    db.close()
    again = Manifest(path)
    assert again.files() == {"MEMORY.md": (1, 2, 3, "", {}, 0, None)}
    again.put_files([("MEMORY.md", (4, 5, 6, "7:8:9:ab", {}, 0, "cd"))])
    assert again.files()["MEMORY.md"] == (4, 5, 6, "7:8:9:ab", {}, 0, "cd")
    again.close()
