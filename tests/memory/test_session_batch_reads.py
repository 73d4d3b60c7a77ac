"""Session turns recorded inside ``vault.batch()``: one commit, and reads inside the
batch see the turns not yet written (the catalog holds them, the disk doesn't)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

from mdmem import Vault


def _count(vault: Vault) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=vault.root, capture_output=True, text=True
    )
    return int(out.stdout)


def test_entries_inside_a_batch_keep_the_pending_turns(vault: Vault) -> None:
    chat = vault.session("b")
    before = _count(vault)
    with vault.batch("two turns"):
        chat.record("user", "one")
        assert [e.text for e in chat.entries()] == ["one"]
        chat.record("user", "two")
        chat.record_tool_output("ls", "a.txt", when=datetime(2024, 1, 1, tzinfo=UTC))
    assert [e.text for e in chat.entries()] == ["one", "two", "```\na.txt\n```"]
    assert _count(vault) == before + 1
    vault.close()
    assert len(Vault.open(vault.root).session("b").entries()) == 3
