"""A scripted agent run (issue 18, "How it will be checked"): a long document and two
platforms for one contact give document chunks recallable by content and one contact
profile with both platform ids. The model is a real local OpenAI-protocol server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai

from mdmem import Vault
from mdmem.mcp.tools import Toolset
from mdmem.testing import Reply, ScriptedOpenAIServer
from tests.agent.scripted_agent import TOPICS, long_manual
from tests.llm_fakes import llm_vault


class Agent:
    """The model: a recall when asked about the manual, contact_profile when asked who."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            data = json.loads(last["content"])
            if "items" in data:
                return Reply(content=f"From the manual: {data['items'][0]['content']}")
            return Reply(content=f"You are {data['display_name']} on {data['platform_ids']}")
        question = str(last["content"])
        if "valve" in question:
            call = (
                "recall",
                {"query": "wombat valve torque Nm", "source_kinds": ["document_chunk"]},
            )
        else:
            call = ("contact_profile", {"who": "whatsapp:+15550100"})
        return Reply(
            tool_calls=[
                {
                    "id": f"call_{len(body['messages'])}",
                    "type": "function",
                    "function": {"name": call[0], "arguments": json.dumps(call[1])},
                }
            ]
        )


def turn(vault: Vault, tools: Toolset, client: openai.OpenAI, session: Any, text: str) -> str:
    session.record("user", text)
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    while True:
        reply = (
            client.chat.completions.create(
                model="local-test",
                messages=messages,
                tools=tools.schemas,  # type: ignore[arg-type]
            )
            .choices[0]
            .message
        )
        if not reply.tool_calls:
            session.record("assistant", reply.content or "")
            return reply.content or ""
        messages.append(reply.model_dump(exclude_none=True))
        for call in reply.tool_calls:
            result = tools.dispatch(call.function.name, call.function.arguments)
            session.record_tool_output(call.function.name, json.dumps(result))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


def test_long_document_and_two_platforms_in_one_agent_run(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(responder=Agent()) as server:
        vault = llm_vault(tmp_path, server)
        # The host: links both platform ids to one person, ingests the manual.
        vault.contacts.link("telegram:123", "user:alice", display_name="Alice")
        vault.contacts.link("whatsapp:+15550100", "user:alice")
        manual = long_manual(tmp_path / "manual.md")
        assert manual.stat().st_size > 8_000
        ingested = vault.library.ingest(manual)[0]
        assert len(ingested.chunks) == len(TOPICS) + 1

        tools = Toolset(
            vault, allowed_scopes=["user:alice", "root"], tools=["recall", "contact_profile"]
        )
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-x")
        telegram = vault.session("tg-1", source="telegram", contact="telegram:123")
        answer = turn(vault, tools, client, telegram, "What torque does the wombat valve need?")
        assert "40 Nm" in answer
        whatsapp = vault.session("wa-1", source="whatsapp", contact="whatsapp:+15550100")
        who = turn(vault, tools, client, whatsapp, "Who am I to you?")
        assert "Alice" in who and "telegram:123" in who and "whatsapp:+15550100" in who

        # Document chunks are recallable by content (also outside the agent loop).
        hit = vault.recall("how tight should the wombat valve be", kinds="document_chunk").items[0]
        assert "40 Nm" in hit.text and hit.id in ingested.chunks
        assert hit.heading == "Pump station manual › 6. Valves"
        # One contact profile with both platform ids; both sessions in the person's scope.
        [profile] = vault.contacts.list()
        assert profile.person == "user:alice"
        assert profile.platform_ids == ["telegram:123", "whatsapp:+15550100"]
        assert profile.first_seen and profile.last_seen
        assert {m.scope for m in telegram.entries() + whatsapp.entries()} == {"user:alice"}
