"""A copied line (one id on two lines) through the agent tools: allowed scopes only."""

from __future__ import annotations

from mdmem import Vault
from mdmem.mcp.tools import Toolset


def test_tools_name_a_copied_lines_places_within_the_allowed_scopes(vault: Vault) -> None:
    m = vault.remember("The router password hint is the cat's name.")
    line = next(
        x for x in (vault.root / "MEMORY.md").read_text(encoding="utf-8").splitlines() if m.id in x
    )
    secret_dir = vault.root / "scopes" / "user" / "bob"
    secret_dir.mkdir(parents=True)
    (secret_dir / "MEMORY.md").write_text(f"# Memory\n\n{line}\n", encoding="utf-8")
    vault.recall("router")  # the copy is noticed

    root_only = Toolset(vault, ["root"]).dispatch("get", {"memory_id": m.id})
    assert root_only["error"]["type"] == "duplicate_id"
    message = root_only["error"]["message"]
    assert "MEMORY.md:" in message and "1 more outside the allowed scopes" in message
    assert "bob" not in message and "mdmem doctor --fix" in message
    everyone = Toolset(vault).dispatch("forget", {"memory_id": m.id})
    assert everyone["error"]["type"] == "duplicate_id"
    assert "scopes/user/bob/MEMORY.md:3" in everyone["error"]["message"]
    alice = Toolset(vault, ["user:alice"]).dispatch("get", {"memory_id": m.id})
    assert alice["error"]["type"] == "scope_denied"
