"""What an MCP client sees of the tools: the list, its annotations, kinds,
strict argument types, note ids and tool outputs, over a real stdio session."""

from __future__ import annotations

import json
from typing import Any

from mdmem import Vault
from mdmem.mcp.server import MCP_TOOLS
from tests.mcp_client import mcp_session

INTERNAL_KINDS = {"chat_message", "tool_output", "episode", "session_summary", "note"}
# The tool list goes to the model with every request: kept under this many
# tokens per tool on average, and recall (the largest) under its own cap
# (characters / 4; bench/mcp_tools.py prints the per-tool numbers). Per tool,
# so a new tool of ordinary size does not break the budget of the others.
TOKENS_PER_TOOL = 160
RECALL_TOKENS = 450


def _tool_json(tool: Any) -> dict[str, Any]:
    out = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    if tool.annotations is not None:
        out["annotations"] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return out


def test_tool_list_has_read_tool_output_annotations_agent_kinds_and_stays_small(
    vault: Vault,
) -> None:
    seen = mcp_session(vault, [])
    tools = seen["tools"]
    assert set(tools) == set(MCP_TOOLS) and "read_tool_output" in tools

    def hints(name: str) -> Any:
        return tools[name].annotations

    for name in ("recall", "get", "history", "context", "read_tool_output", "reflect"):
        assert hints(name) is not None and hints(name).read_only_hint is True, name
    assert hints("forget").read_only_hint is False
    assert hints("forget").destructive_hint is True
    assert hints("remember").destructive_hint is False
    assert hints("remember").idempotent_hint is True
    for name in ("archive", "unarchive"):  # reversible: nothing is removed
        assert hints(name).read_only_hint is False and hints(name).destructive_hint is False

    kinds = set(tools["remember"].input_schema["properties"]["kind"]["enum"])
    assert kinds and not kinds & INTERNAL_KINDS
    assert {"fact", "preference", "decision", "gotcha", "bug_fix"} <= kinds

    listed = json.dumps([_tool_json(t) for t in tools.values()], ensure_ascii=False)
    tokens = -(-len(listed) // 4)
    print(f"MCP tool list: {len(tools)} tools, {len(listed)} chars, ~{tokens} tokens")
    assert tokens <= TOKENS_PER_TOOL * len(tools)
    assert len(json.dumps(_tool_json(tools["recall"]), ensure_ascii=False)) / 4 <= RECALL_TOKENS


def test_loose_argument_types_are_refused_with_a_clear_error(vault: Vault) -> None:
    vault.remember("Tea is preferred over coffee.", kind="preference")
    seen = mcp_session(
        vault,
        [
            ("tags", "remember", {"content": "Deploys happen on Tuesday.", "tags": "single"}),
            ("kinds", "recall", {"query": "tea", "source_kinds": "fact"}),
            ("internal", "remember", {"content": "hello", "kind": "chat_message"}),
        ],
    )
    for label, arg in (("tags", "tags"), ("kinds", "source_kinds")):
        result = seen[label]
        assert result.is_error, label
        error = result.structured_content["error"]
        assert error["type"] == "invalid_arguments"
        assert arg in error["message"] and "array" in error["message"]
    assert seen["internal"].is_error
    assert "Deploys happen" not in (vault.root / "MEMORY.md").read_text(encoding="utf-8")


def test_note_ids_from_recall_open_with_get_and_forget_is_refused(vault: Vault) -> None:
    note = vault.root / "notes" / "garden.md"
    note.parent.mkdir()
    body = "# Garden\n\n## Roses\n\nThe climbing roses want pruning in late February.\n"
    note.write_text(body, encoding="utf-8")
    vault.admin.commit_human_edits()
    note_id = vault.recall("pruning climbing roses").items[0].id
    assert note_id == "notes/garden.md#Roses"

    seen = mcp_session(
        vault,
        [
            ("recall", "recall", {"query": "pruning climbing roses"}),
            ("get", "get", {"memory_id": note_id}),
            ("forget", "forget", {"memory_id": note_id}),
            ("missing", "get", {"memory_id": "notes/garden.md#Tulips"}),
        ],
    )
    assert seen["recall"].structured_content["items"][0]["id"] == note_id
    got = seen["get"]
    assert not got.is_error, got.structured_content
    assert "late February" in got.structured_content["content"]
    assert got.structured_content["source_ref"] == note_id
    refused = seen["forget"].structured_content["error"]
    assert refused["type"] == "human_note" and "notes/garden.md" in refused["message"]
    assert note.read_text(encoding="utf-8") == body
    assert seen["missing"].structured_content["error"]["type"] == "not_found"


def test_archive_unarchive_recall_controls_and_tiers_over_mcp(vault: Vault) -> None:
    fact = vault.remember("The VPN config lives in the team wiki.")
    seen = mcp_session(
        vault,
        [
            ("archive", "archive", {"memory_id": fact.id}),
            ("hidden", "recall", {"query": "VPN config team wiki"}),
            ("unarchive", "unarchive", {"memory_id": fact.id}),
            ("back", "recall", {"query": "VPN config team wiki"}),
            ("seen", "recall", {"query": "VPN config team wiki", "exclude_ids": [fact.id]}),
            ("weighted", "recall", {"query": "VPN config", "scope_weights": {"root": 0}}),
            ("tiered", "recall", {"query": "VPN config team wiki", "tier": 0}),
        ],
    )
    assert seen["archive"].structured_content == {"id": fact.id, "status": "archived"}
    assert seen["hidden"].structured_content["items"] == []
    assert seen["unarchive"].structured_content["status"] == "active"
    assert seen["back"].structured_content["items"][0]["id"] == fact.id
    # Recall controls over MCP: what was seen, and a scope weighed out.
    assert seen["seen"].structured_content["items"] == []
    assert seen["weighted"].structured_content["items"] == []
    (abstract,) = seen["tiered"].structured_content["items"]
    assert abstract["tier"] == 0 and abstract["content"] == "The VPN config lives in the team wiki."


def test_read_tool_output_serves_the_key_recall_hands_out(vault: Vault) -> None:
    payload = "\n".join(f"row {i}: checksum mismatch in shard {i % 7}" for i in range(600))
    vault.session("build-1").record_tool_output("pytest", payload)
    seen = mcp_session(
        vault,
        [
            (
                "recall",
                "recall",
                {"query": "checksum mismatch shard", "source_kinds": ["tool_output"]},
            ),
            (
                "read",
                "read_tool_output",
                lambda s: {"key": s["recall"].structured_content["items"][0]["tool_output_key"]},
            ),
        ],
    )
    assert not seen["read"].is_error, seen["read"].structured_content
    assert seen["read"].structured_content["content"] == payload
