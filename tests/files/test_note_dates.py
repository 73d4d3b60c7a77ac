"""A note's date is its own, never the day its file was copied (issue #32, item 5)."""

from __future__ import annotations

from datetime import UTC, datetime

from mdmem import Vault
from mdmem.files.blocks import UNDATED, name_date


def test_a_daily_note_is_dated_by_its_name() -> None:
    assert name_date("journal/2025-11-20.md") == datetime(2025, 11, 20, tzinfo=UTC)
    assert name_date("2025-03-02.md") == datetime(2025, 3, 2, tzinfo=UTC)
    assert name_date("notes/2025-13-40.md") is None
    assert name_date("notes/release-2025-03-02-plan.md") is None


def test_an_undated_note_neither_wins_nor_loses_by_recency(vault: Vault) -> None:
    # An Obsidian vault adopted today: every file's mtime is today.
    (vault.root / "notes").mkdir()
    (vault.root / "notes" / "adopted.md").write_text(
        "---\ncreated: 2025-03-02\n---\n# Release\n\n"
        "The release checklist lives in the ops wiki.\n",
        encoding="utf-8",
    )
    (vault.root / "inbox.md").write_text(
        "# Inbox\n\nSome thoughts about the party after the release.\n", encoding="utf-8"
    )
    (vault.root / "journal").mkdir()
    (vault.root / "journal" / "2025-11-20.md").write_text(
        "# Thursday\n\nWalked through the release checklist with Ana.\n", encoding="utf-8"
    )
    hits = vault.recall("what is in the release checklist", k=10, mode="keyword").items
    by_path = {h.path: h for h in hits}
    adopted, inbox = by_path["notes/adopted.md"], by_path["inbox.md"]
    assert adopted.created.date().isoformat() == "2025-03-02"
    assert "recency" in adopted.scores and adopted.scores["recency"] < 0.2
    assert inbox.created == UNDATED and "recency" not in inbox.scores  # date unknown
    assert by_path["journal/2025-11-20.md"].created.date().isoformat() == "2025-11-20"
    ranked = [h.path for h in hits]
    assert ranked.index("notes/adopted.md") < ranked.index("inbox.md")
