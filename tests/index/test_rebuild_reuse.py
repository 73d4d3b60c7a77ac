"""Rebuilds that don't start from zero: every vector seen before comes from the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mdmem import Vault


def counting(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the vault's embedder is asked to embed from now on."""
    embedder = vault.admin.store.indexer.embedding.embedder
    assert embedder is not None
    seen: list[str] = []
    real = embedder.embed

    def embed(texts: list[str]) -> object:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "embed", embed)
    return seen


def test_a_full_rebuild_a_move_and_a_reimport_embed_nothing_seen(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        vault.remember(f"Fact {i} about the tide tables of the northern harbour")
    vault.log("Checked the ferry timetable", category="Research")
    embedded = counting(vault, monkeypatch)
    reports: list[tuple[str, int, int]] = []
    blocks = vault.admin.store.indexer.rebuild(progress=lambda *r: reports.append(r))
    assert embedded == []
    assert vault.admin.store.indexer.stats().vectors == blocks
    # Progress counts up to the total, per phase, for the bar and its ETA.
    assert ("keyword", blocks, blocks) in reports and ("vectors", blocks, blocks) in reports
    # A file moved by hand: the same texts under another path.
    (vault.root / "notes").mkdir()
    shutil.move(str(vault.root / "MEMORY.md"), str(vault.root / "notes" / "MEMORY.md"))
    vault.reindex()
    assert embedded == []
    hits = vault.recall("tide tables harbour", k=1, mode="vector").items
    assert hits[0].path == "notes/MEMORY.md"
    # The state dir gone (a re-import on another machine keeps its cache): only
    # the embedding cache survives, and nothing is embedded again.
    state: Path = vault.admin.state_dir
    vault.close()
    for entry in state.iterdir():
        if entry.name.startswith("embeddings.sqlite"):
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    again = Vault.open(vault.root)
    embedded = counting(again, monkeypatch)
    again.reindex(full=True)
    assert embedded == []
    # A changed text is embedded: that one alone.
    target = again.root / "notes" / "MEMORY.md"
    target.write_text(target.read_text().replace("Fact 7 about", "Fact 7, corrected, about"))
    again.reindex()
    assert embedded == ["Fact 7, corrected, about the tide tables of the northern harbour"]
    again.close()
