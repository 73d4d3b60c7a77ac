"""A long-lived vault (warm server, MCP server) stays right when another process rebuilds."""

from __future__ import annotations

from mdmem import Vault


def test_a_full_reindex_elsewhere_is_seen_by_an_open_vault(vault: Vault) -> None:
    vault.remember("The launch is on May 12")
    assert [h.text for h in vault.recall("launch").items] == ["The launch is on May 12"]
    other = Vault.open(vault.root)  # another process, as far as the indexes go
    other.remember("The garage code is 4711")
    other.reindex(full=True)
    other.close()
    for mode in ("keyword", "vector", "hybrid"):
        found = vault.recall("garage code", mode=mode)
        assert [h.text for h in found.items][:1] == ["The garage code is 4711"], mode
    # And what it held before is still there once, not twice.
    assert [h.text for h in vault.recall("launch", mode="keyword").items] == [
        "The launch is on May 12"
    ]


def test_two_rebuilds_elsewhere_in_a_row_are_both_seen(vault: Vault) -> None:
    vault.recall("warm up")
    other = Vault.open(vault.root)
    for text in ("First fact about otters", "Second fact about beavers"):
        other.remember(text)
        other.reindex(full=True)
        assert vault.recall(text.split()[-1], mode="keyword").items[0].text == text
    other.close()
