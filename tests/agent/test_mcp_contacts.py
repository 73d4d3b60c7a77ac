"""The contact_profile tool over a real MCP stdio session, confined to the host's scopes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio

from mdmem import Vault


def test_contact_profile_over_mcp(vault: Vault) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    vault.contacts.link("telegram:123", "user:alice", display_name="Alice")
    vault.contacts.link("whatsapp:+15550100", "user:alice")
    vault.contacts.link("telegram:999", "user:bob")
    fact = vault.remember("Alice is allergic to peanuts", scope="user:alice").id
    env = {
        "MDMEM_STATE_DIR": os.environ["MDMEM_STATE_DIR"],
        "MDMEM_EMBEDDER_PROVIDER": "hash",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    args = ["-m", "mdmem.cli.serve", "serve", "--vault", str(vault.root), "--scope", "user:alice"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    seen: dict[str, Any] = {}

    async def session() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                seen["tools"] = {t.name for t in (await client.list_tools()).tools}
                seen["alice"] = await client.call_tool("contact_profile", {"who": "telegram:123"})
                seen["bob"] = await client.call_tool("contact_profile", {"who": "telegram:999"})

    anyio.run(session)
    assert "contact_profile" in seen["tools"] and "link" not in seen["tools"]
    alice = seen["alice"].structured_content
    assert alice["platform_ids"] == ["telegram:123", "whatsapp:+15550100"]
    assert alice["display_name"] == "Alice" and alice["facts"] == [fact]
    assert seen["bob"].is_error
    assert seen["bob"].structured_content["error"]["type"] == "not_found"
