"""The contact_profile tool over a real MCP stdio session, confined to the host's scopes."""

from __future__ import annotations

from mdmem import Vault
from tests.mcp_client import mcp_session


def test_contact_profile_over_mcp(vault: Vault) -> None:
    vault.contacts.link("telegram:123", "user:alice", display_name="Alice")
    vault.contacts.link("whatsapp:+15550100", "user:alice")
    vault.contacts.link("telegram:999", "user:bob")
    fact = vault.remember("Alice is allergic to peanuts", scope="user:alice").id
    seen = mcp_session(
        vault,
        [
            ("alice", "contact_profile", {"who": "telegram:123"}),
            ("bob", "contact_profile", {"who": "telegram:999"}),
        ],
        "user:alice",
    )
    assert "contact_profile" in seen["tools"] and "link" not in seen["tools"]
    alice = seen["alice"].structured_content
    assert alice["platform_ids"] == ["telegram:123", "whatsapp:+15550100"]
    assert alice["display_name"] == "Alice" and alice["facts"] == [fact]
    assert seen["bob"].is_error
    assert seen["bob"].structured_content["error"]["type"] == "not_found"
