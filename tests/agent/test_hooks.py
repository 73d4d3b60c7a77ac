"""Lifecycle hooks: prefetch, warming, turn sync with a real scripted LLM, flush, compaction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mdmem import Vault
from mdmem.agent.compaction import SUMMARY_MARKER, is_summary_message
from mdmem.agent.hooks import MemoryHooks, compact_with_vault, extract_facts
from mdmem.memory.desks.reading import Reading
from mdmem.providers.llm import LLMClient, LLMConfig
from mdmem.testing.openai_server import Reply, ScriptedOpenAIServer
from tests.agent.test_compaction import assert_tool_integrity, conversation_40

Msg = dict[str, Any]


class FlushSpy:
    """Wraps the vault's own flush and records each call."""

    def __init__(self, vault: Vault) -> None:
        self.calls: list[list[Msg]] = []
        self._real = vault.sessions.flush

    def __call__(self, messages: list[Msg], **kwargs: Any) -> Any:
        self.calls.append(messages)
        return self._real(messages, **kwargs)


class RecallCounter:
    """Counts recalls through the reading view, which every door reads through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = Reading.recall

        def counted(reading: Reading, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return real(reading, *args, **kwargs)

        monkeypatch.setattr(Reading, "recall", counted)


@pytest.fixture
def server() -> Any:
    with ScriptedOpenAIServer() as srv:
        yield srv


def _llm(srv: ScriptedOpenAIServer) -> LLMClient:
    return LLMClient(LLMConfig(base_url=srv.base_url, model="scripted-model", max_retries=0))


def test_prefetch_returns_top5_block_within_the_cap(vault: Vault) -> None:
    with vault.batch():
        for i in range(8):
            vault.remember(f"Kubernetes cluster note {i}: nodes run on spot instances.")
    hooks = MemoryHooks(vault)
    block = hooks.prefetch("kubernetes cluster nodes")
    assert block.startswith("## Recalled Memory")
    assert len([line for line in block.splitlines() if line.startswith("- ")]) == 5
    assert "MEMORY.md#^m-" in block
    small = MemoryHooks(vault, max_prompt_chars=200).prefetch("kubernetes cluster nodes")
    assert len(small) <= 200
    hooks.shutdown()


def test_prefetch_is_empty_when_nothing_is_stored(vault: Vault) -> None:
    assert MemoryHooks(vault).prefetch("anything") == ""


def test_queue_prefetch_warms_the_next_turn(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    vault.remember("The deploy window is Thursday 14:00 UTC.")
    counter = RecallCounter(monkeypatch)
    hooks = MemoryHooks(vault)
    hooks.queue_prefetch("deploy window")
    block = hooks.prefetch("  Deploy   WINDOW ")  # same query, other spacing and case
    assert "Thursday 14:00" in block
    assert counter.calls == 1  # the warmed result was used

    # A write through the hooks after warming makes the warm result stale.
    hooks.queue_prefetch("deploy window")
    hooks.on_memory_write("add", "memory", "The deploy window moves to Friday 10:00 UTC.")
    block = hooks.prefetch("deploy window")
    assert "Friday 10:00" in block
    assert counter.calls == 3
    hooks.shutdown()


def test_turn_facts_extracted_with_the_llm(vault: Vault, server: ScriptedOpenAIServer) -> None:
    server.push(
        json.dumps(
            [
                {"content": "The user's sister is called Ana.", "kind": "fact", "tags": ["family"]},
                {"content": "The user prefers short answers.", "kind": "preference"},
            ]
        ),
        "NONE",
    )
    hooks = MemoryHooks(vault, llm=_llm(server), scope="user:alice")
    hooks.on_turn_complete("My sister Ana visits soon. Keep answers short.", "Noted!")
    hooks.on_turn_complete("Thanks.", "You're welcome.")
    hooks.drain()

    hits = vault.recall("sister Ana", scope="user:alice").items
    assert hits and hits[0].text.startswith("The user's sister is called Ana.")
    assert "family" in hits[0].tags
    prefs = vault.recall("short answers", kinds=["preference"], scope="user:alice").items
    assert prefs and prefs[0].path == "scopes/user/alice/USER.md"
    # The second turn answered NONE: nothing more was stored.
    facts = [m for m in vault.library.list() if m.kind != "chat_message"]
    assert sorted(m.scope for m in facts) == ["user:alice", "user:alice"]

    prompt = server.chat_requests()[0]["body"]["messages"]
    # The turn reaches the model as delimited data, not as instructions.
    assert "MDMEM_DATA" in prompt[1]["content"]
    assert "My sister Ana visits soon." in prompt[1]["content"]
    hooks.shutdown()


def test_llm_failure_does_not_break_the_turn(vault: Vault, server: ScriptedOpenAIServer) -> None:
    server.push(Reply(status=500, content="boom"))
    hooks = MemoryHooks(vault, llm=_llm(server), background=False)
    hooks.on_turn_complete("I moved to Berlin.", "Nice!")  # must not raise
    assert not [m for m in vault.library.list() if m.kind != "chat_message"]


def test_turns_are_recorded_in_the_session(vault: Vault) -> None:
    hooks = MemoryHooks(vault, session_id="s-1", contact="telegram:1", background=False)
    hooks.on_turn_complete("What is the capital of Peru?", "Lima.")
    texts = [m.text for m in vault.library.list() if m.kind == "chat_message"]
    assert any("capital of Peru" in t for t in texts)
    assert any("Lima." in t for t in texts)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("NONE", []),
        ("  none. ", []),
        ('["The user is vegan."]', ["The user is vegan."]),
        ('```json\n[{"content": "Works at ACME.", "kind": "fact"}]\n```', ["Works at ACME."]),
        ('{"facts": [{"content": "Has two kids."}]}', ["Has two kids."]),
        ("- Likes hiking.\n- Lives in Oslo.", ["Likes hiking.", "Lives in Oslo."]),
        ('[{"content": ""}, 5, {"content": "Speaks Dutch.", "kind": "evil"}]', ["Speaks Dutch."]),
    ],
)
def test_fact_parsing(server: ScriptedOpenAIServer, reply: str, expected: list[str]) -> None:
    server.push(reply)
    facts = extract_facts(_llm(server), "Tell me about me.", "Sure.")
    assert [f["content"] for f in facts] == expected
    assert all(f["kind"] in ("fact", "preference", "decision", "learning") for f in facts)


def test_memory_write_mirroring(vault: Vault) -> None:
    hooks = MemoryHooks(vault, scope="user:alice")
    pref = hooks.on_memory_write("add", "user", "Alice prefers dark mode.")
    assert pref is not None and pref.kind == "preference" and pref.scope == "user:alice"
    new = hooks.on_memory_write("replace", pref.id, "Alice prefers light mode.")
    assert new is not None and vault.get(pref.id).status == "superseded"
    gone = hooks.on_memory_write("remove", new.id)
    assert gone is not None and vault.recall("light mode").items == []
    assert hooks.on_memory_write("frobnicate", "x", "y") is None
    assert hooks.on_memory_write("remove", "m-doesnotexist0") is None  # logged, not raised


def test_disabled_hooks_do_nothing(
    vault: Vault, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("Something recallable about llamas.")
    before = vault.git.last_commit()
    spy = FlushSpy(vault)
    monkeypatch.setattr(vault.sessions, "flush", spy)
    hooks = MemoryHooks(vault, enabled=False, llm=_llm(server))
    assert hooks.prefetch("llamas") == ""
    hooks.queue_prefetch("llamas")
    hooks.on_turn_complete("I love llamas.", "Me too.")
    assert hooks.on_pre_compact([{"role": "user", "content": "x"}]) == []
    assert hooks.on_session_end([{"role": "user", "content": "x"}]) == []
    assert hooks.on_memory_write("add", "memory", "Llamas hum.") is None
    hooks.shutdown()
    assert spy.calls == []
    assert server.chat_requests() == []
    assert vault.git.last_commit() == before


def test_prefetch_false_never_recalls(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    vault.remember("The deploy window is Thursday 14:00 UTC.")
    counter = RecallCounter(monkeypatch)
    hooks = MemoryHooks(vault, prefetch=False, background=False)
    hooks.queue_prefetch("deploy window")
    assert hooks.prefetch("deploy window") == ""
    hooks.shutdown()
    assert counter.calls == 0
    # Only reading is off: the turn is still recorded.
    hooks = MemoryHooks(vault, prefetch=False, session_id="s-1", background=False)
    hooks.on_turn_complete("When is the deploy window?", "Thursday.")
    assert any(m.kind == "chat_message" for m in vault.library.list())
    assert counter.calls == 0


def test_sync_turns_false_skips_turns_but_not_the_other_hooks(
    vault: Vault, server: ScriptedOpenAIServer
) -> None:
    vault.remember("Something recallable about llamas.")
    before = vault.git.last_commit()
    hooks = MemoryHooks(vault, sync_turns=False, llm=_llm(server), session_id="s-1")
    hooks.on_turn_complete("I love llamas.", "Me too.")
    hooks.drain()
    # The turn was neither recorded nor sent to the LLM for fact extraction.
    assert server.chat_requests() == []
    assert not [m for m in vault.library.list() if m.kind == "chat_message"]
    assert vault.git.last_commit() == before
    assert "llamas" in hooks.prefetch("llamas")
    server.push(json.dumps({"facts": ["The user's dentist is Dr. Silva."], "preferences": []}))
    stored = hooks.on_pre_compact([{"role": "user", "content": "My dentist is Dr. Silva."}])
    assert [m.text for m in stored] == ["The user's dentist is Dr. Silva."]
    hooks.shutdown()


def test_compaction_of_40_messages_keeps_tool_pairs_and_flushes(
    vault: Vault, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = FlushSpy(vault)
    monkeypatch.setattr(vault.sessions, "flush", spy)
    server.push(
        {"facts": [], "preferences": []},  # the memory flush asks first
        "The agent compared Q3 and Q2 revenue using search calls 1-6.",
    )
    hooks = MemoryHooks(vault, llm=_llm(server))
    msgs = conversation_40()
    assert len(msgs) == 40 and sum(1 for m in msgs if m.get("tool_calls")) >= 8

    out = hooks.compact(msgs)
    assert out.compacted and not out.fell_back
    assert_tool_integrity(msgs, out.messages)
    assert out.messages[0] == msgs[0]  # system prompt kept
    assert is_summary_message(out.messages[1])
    assert out.messages[1]["content"].startswith(SUMMARY_MARKER)
    assert "Q3 and Q2" in out.messages[1]["content"]
    # The flush ran once, before compaction, with exactly the dropped messages.
    assert len(spy.calls) == 1
    assert len(spy.calls[0]) == out.dropped
    kept = out.messages[2:]
    assert spy.calls[0] + kept == msgs[1:]
    hooks.shutdown()


def test_compaction_falls_back_to_safe_trim_when_the_llm_fails(
    vault: Vault, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = FlushSpy(vault)
    monkeypatch.setattr(vault.sessions, "flush", spy)
    server.push(Reply(status=500, content="down"), Reply(status=500, content="down"))
    out = compact_with_vault(vault, conversation_40(), llm=_llm(server))
    assert out.fell_back and out.compacted
    assert_tool_integrity(conversation_40(), out.messages)
    assert out.messages[1]["role"] != "tool"
    assert len(spy.calls) == 1


def test_compact_with_vault_without_llm_trims(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = FlushSpy(vault)
    monkeypatch.setattr(vault.sessions, "flush", spy)
    out = compact_with_vault(vault, conversation_40())
    assert out.fell_back and len(spy.calls) == 1
    assert_tool_integrity(conversation_40(), out.messages)


def test_shutdown_joins_background_work(vault: Vault, server: ScriptedOpenAIServer) -> None:
    server.push(Reply(content='["The user owns a red bicycle."]', delay=0.3))
    hooks = MemoryHooks(vault, llm=_llm(server))
    hooks.on_turn_complete("My bike is red.", "Cool.")
    hooks.shutdown()
    assert vault.recall("red bicycle").items
    hooks.on_turn_complete("after", "shutdown")  # a no-op, not an error
    hooks.queue_prefetch("after shutdown")


def test_pre_compact_flush_stores_facts_with_the_real_vault_flush(vault: Vault) -> None:
    hooks = MemoryHooks(vault, scope="user:alice", llm=None, session_id="s-7")
    stored = hooks.on_pre_compact(
        [
            {"role": "user", "content": "Please remember that my dentist is Dr. Silva."},
            {"role": "assistant", "content": "Noted."},
        ]
    )
    assert stored, "the offline flush should keep an explicit 'remember that' fact"
    assert all(m.scope == "user:alice" for m in stored)
    assert vault.recall("dentist Silva", scope="user:alice").items


def test_session_end_flushes_after_pending_turns(
    vault: Vault, server: ScriptedOpenAIServer
) -> None:
    server.push(
        Reply(content="NONE", delay=0.2),
        json.dumps({"facts": ["The user's car is a 2012 Volvo."], "preferences": []}),
    )
    hooks = MemoryHooks(vault, llm=_llm(server), session_id="s-8")
    hooks.on_turn_complete("My car is a 2012 Volvo.", "Nice car.")
    stored = hooks.on_session_end([{"role": "user", "content": "My car is a 2012 Volvo."}])
    assert [m.text for m in stored] == ["The user's car is a 2012 Volvo."]
    # The turn's extraction ran before the flush; the session summary came last.
    assert len(server.chat_requests()) == 3
    assert hooks.last_summary is not None
    hooks.shutdown()
