"""The catalog's scan: a live catalog asks inotify what changed, and falls back to stat-ing all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mdmem.files import changefeed
from mdmem.files.catalog import Catalog

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux")


def _note(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {rel}\n\n{text}\n", encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    for i in range(3):
        _note(root, f"notes/{i}/n{i}.md", f"note {i}")
    _note(root, "MEMORY.md", "top")
    _note(root, "templates/t.md", "a template")
    return root


def _no_walk(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    def walk(*_: object) -> object:
        raise AssertionError("the change feed should have answered without a walk")

    monkeypatch.setattr(catalog, "walk", walk)


def test_a_live_scan_rereads_only_what_inotify_names(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(tree, live=True)
    assert sorted(catalog.scan().changed) == [
        "MEMORY.md",
        "notes/0/n0.md",
        "notes/1/n1.md",
        "notes/2/n2.md",
    ]
    assert catalog.watching
    _no_walk(catalog, monkeypatch)
    assert not catalog.scan()
    (tree / "notes/1/n1.md").write_text("# n1\n\nedited in place\n", encoding="utf-8")
    (tree / "notes/2/n2.md").unlink()
    _note(tree, "notes/0/new.md", "a new note in a known folder")
    _note(tree, "templates/u.md", "not memory")
    _note(tree, "notes/0/.hidden.md", "not walked, not watched")
    delta = catalog.scan()
    assert delta.changed == ["notes/0/new.md", "notes/1/n1.md"]
    assert delta.removed == ["notes/2/n2.md"]
    assert "edited in place" in catalog.blocks_in("notes/1/n1.md")[0].text
    catalog.close()


def test_folder_changes_and_invalidations_fall_back_to_a_full_scan(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(tree, live=True)
    catalog.scan()
    _note(tree, "notes/9/deep/n9.md", "in a new folder")
    assert catalog.scan().changed == ["notes/9/deep/n9.md"]
    # The new folder is watched now: an edit in it needs no walk.
    _no_walk(catalog, monkeypatch)
    _note(tree, "notes/9/deep/n9.md", "edited")
    assert catalog.scan().changed == ["notes/9/deep/n9.md"]
    monkeypatch.undo()
    os.rename(tree / "notes/0", tree / "notes/zero")
    delta = catalog.scan()
    assert (delta.changed, delta.removed) == (["notes/zero/n0.md"], ["notes/0/n0.md"])
    # invalidate() re-reads a file whatever its stat (and inotify) say.
    catalog.invalidate("MEMORY.md")
    _no_walk(catalog, monkeypatch)
    assert catalog.scan().changed == ["MEMORY.md"]
    catalog.close()


def test_a_symlinked_note_makes_every_scan_stat_everything(tree: Path) -> None:
    os.symlink(tree / "notes/0/n0.md", tree / "link.md")
    catalog = Catalog(tree, live=True)
    catalog.scan()
    # An edit of the target reaches no watch on link.md's folder; only a stat sees it.
    (tree / "notes/0/n0.md").write_text("# n0\n\nedited through the target\n", encoding="utf-8")
    assert sorted(catalog.scan().changed) == ["link.md", "notes/0/n0.md"]
    catalog.close()


def test_a_new_symlink_out_of_the_vault_is_skipped_not_read(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnot vault content\n", encoding="utf-8")
    catalog = Catalog(tree, live=True)
    catalog.scan()
    os.symlink(outside, tree / "notes/0/leak.md")
    assert not catalog.scan().changed
    assert "notes/0/leak.md" not in catalog.files
    catalog.close()


def test_without_a_feed_scans_stat_everything(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changefeed, "LOCAL_FILESYSTEMS", frozenset())  # a network mount, say
    catalog = Catalog(tree, live=True)
    catalog.scan()
    assert not catalog.watching
    (tree / "MEMORY.md").write_text("# M\n\nchanged\n", encoding="utf-8")
    assert catalog.scan().changed == ["MEMORY.md"]


def test_a_catalog_that_is_not_live_never_opens_a_feed(tree: Path) -> None:
    catalog = Catalog(tree)
    catalog.scan()
    assert not catalog.watching


def test_a_vault_recalls_through_the_change_feed(tmp_path: Path) -> None:
    from mdmem import Vault

    vault = Vault.init(tmp_path / "vault")
    vault.remember("The ferry to the island leaves at noon")
    assert vault.admin.store.catalog.watching
    note = tmp_path / "vault" / "notes" / "trip.md"
    note.parent.mkdir()
    note.write_text("# Trip\n\nThe zanzibar ferry is late.\n", encoding="utf-8")
    assert vault.recall("zanzibar ferry").items[0].path == "notes/trip.md"
    note.write_text("# Trip\n\nThe zanzibar ferry was cancelled.\n", encoding="utf-8")
    assert "cancelled" in vault.recall("zanzibar ferry").items[0].text
    vault.close()
    assert not vault.admin.store.catalog.watching
