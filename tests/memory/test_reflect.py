"""reflect (synthesis across memories), flush (facts before compaction), extractive helpers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.agent.compaction import compact
from mdmem.cli import main
from mdmem.memory.capture.extractive import covered, explicit_facts, keywords, slugify, summarize
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, client, data_blocks, llm_vault, system_of


def commits(root: Path) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
    )
    return int(out.stdout.strip())


# -- reflect ---------------------------------------------------------------------------


def test_reflect_offline_returns_memories_and_says_no_synthesis_ran(vault: Vault) -> None:
    m = vault.remember("Deploys need a green CI run and a second reviewer.")
    r = vault.reflect("what do deploys need?")
    assert r.synthesized is False and r.model is None
    assert r.answer.startswith("No synthesis ran (no LLM is configured)")
    assert [h.id for h in r.memories] == [m.id]
    assert r.citations == [f"MEMORY.md#^{m.id}"] and f"MEMORY.md#^{m.id}" in r.answer


def test_reflect_synthesises_and_keeps_only_real_citations(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    vault = llm_vault(tmp_path, server)
    a = vault.remember("Deploys need a green CI run.")
    b = vault.remember("Deploys also need a second reviewer.", kind="decision")
    cite_a = f"MEMORY.md#^{a.id}"

    def answer(question: str, memories: str) -> dict[str, object]:
        assert cite_a in memories and "green CI" in memories
        return {
            "answer": f"A green CI run ({cite_a}) and a second reviewer (^{b.id}).",
            "citations": [cite_a, "MEMORY.md#^m-madeupmadeup"],
        }

    model.reflect = answer
    r = vault.reflect("what do deploys need?")
    assert r.synthesized and r.model == "local-test"
    assert r.answer.startswith("A green CI run")
    assert r.citations == [cite_a, f"MEMORY.md#^{b.id}"]  # the made-up one is dropped
    request = next(
        q["body"] for q in server.chat_requests() if "reflection step" in system_of(q["body"])
    )
    assert data_blocks(request)["question"] == "what do deploys need?"


def test_reflect_with_nothing_recalled_does_not_call_the_model(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    vault = llm_vault(tmp_path, server)
    r = vault.reflect("quantum chromodynamics lecture notes")
    assert not r.synthesized and r.memories == [] and "nothing to synthesise" in r.answer
    assert "reflect" not in model.calls


def test_cli_reflect_json(vault: Vault) -> None:
    vault.remember("The on-call rotation changes every Monday.")
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "reflect", "when does on-call rotate?", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["synthesized"] is False and data["memories"][0]["citation"].startswith("MEMORY.md")


# -- flush -----------------------------------------------------------------------------


MESSAGES = [
    {"role": "system", "content": "You are a helpful agent. I prefer nothing."},
    {"role": "user", "content": "Hi! I prefer dark mode. My timezone is CET."},
    {"role": "assistant", "content": "Got it. I prefer to ask before deleting files."},
    {"role": "tool", "tool_call_id": "t1", "content": "My password is in the tool output."},
    {"role": "user", "content": [{"type": "text", "text": "Remember that Friday is a holiday."}]},
    {"role": "user", "content": "What time is it now?"},
]


def test_flush_offline_keeps_only_explicit_user_statements(vault: Vault) -> None:
    before = commits(vault.root)
    result = vault.sessions.flush(MESSAGES)
    assert not result.used_llm and result.new == 3
    assert sorted(m.text for m in result.memories) == [
        "Friday is a holiday.",
        "The user prefers dark mode.",
        "The user's timezone is CET.",
    ]
    assert commits(vault.root) == before + 1
    assert vault.get(result.memories[0].id).field("origin") == "flush"
    again = vault.sessions.flush(MESSAGES)
    assert again.new == 0 and commits(vault.root) == before + 1


def test_flush_with_a_model_stores_its_facts(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    vault = llm_vault(tmp_path, server)
    model.flush = lambda transcript: {
        "facts": ["The user's timezone is CET."] if "CET" in transcript else [],
        "preferences": ["The user prefers dark mode."],
    }
    result = vault.sessions.flush(MESSAGES, session="chat-9")
    assert result.used_llm and result.new == 2
    kinds = {m.text: m.kind for m in result.memories}
    assert kinds == {
        "The user's timezone is CET.": "fact",
        "The user prefers dark mode.": "preference",
    }
    assert vault.get(result.memories[0].id).field("session") == "chat-9"
    request = next(
        q["body"] for q in server.chat_requests() if "memory flush" in system_of(q["body"])
    )
    transcript = data_blocks(request)["messages"]
    assert "user: Hi! I prefer dark mode." in transcript and "password" not in transcript


def test_flush_plugs_into_compaction(vault: Vault) -> None:
    history = [{"role": "user", "content": f"My project is Apollo{i}."} for i in range(3)]
    history += [{"role": "assistant", "content": f"ok {i}"} for i in range(12)]
    result = compact(history, threshold=10, keep_recent=4, flush=vault.sessions.flush)
    assert result.compacted
    texts = {m.text for m in vault.library.list()}
    assert "The user's project is Apollo0." in texts


def test_explicit_llm_argument_overrides_settings(
    vault: Vault, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    model.flush = lambda t: {"facts": ["The user is on call this week."], "preferences": []}
    result = vault.sessions.flush([{"role": "user", "content": "hello"}], llm=client(server))
    assert result.used_llm and [m.text for m in result.memories] == [
        "The user is on call this week."
    ]


# -- extractive helpers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("I prefer metric units.", [("The user prefers metric units.", "preference")]),
        (
            "I really like my espresso strong",
            [("The user likes their espresso strong.", "preference")],
        ),
        ("My name is Ada Lovelace.", [("The user's name is Ada Lovelace.", "fact")]),
        ("I live in Lisbon.", [("The user lives in Lisbon.", "fact")]),
        ("Please remember that I am vegetarian.", [("The user is vegetarian.", "fact")]),
        ("Remember that I hate onions", [("The user hates onions.", "fact")]),
        ("remember my car is blue", [("The user's car is blue.", "fact")]),
        ("Note: the VPN needs 2FA.", [("The VPN needs 2FA.", "fact")]),
        ("Do I prefer tea?", []),
        ("I want coffee right now.", []),
        ("I need the report", []),
        ("The weather is nice.", []),
    ],
)
def test_explicit_facts(said: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.text, f.kind) for f in explicit_facts([("user", said)])] == expected
    assert explicit_facts([("assistant", said)]) == []


def test_covered_tolerates_rewording_but_not_loss() -> None:
    assert covered("The user prefers metric units.", "User likes metric units for everything")
    assert covered("Deploys happen on Tuesdays.", "they deploy on tuesday")
    assert not covered("The user's dog is Rex.", "A short chat about the weather.")
    assert not covered("The office moves to Porto in June.", "")


def test_summarize_picks_central_sentences_in_order() -> None:
    items = [
        ("user", "The deploy pipeline failed on the database migration step."),
        ("assistant", "Hi!"),
        ("assistant", "The database migration step failed because of a lock timeout."),
        ("user", "By the way, nice weather today."),
        ("tool", "migration log: lock timeout on table users during the deploy pipeline"),
    ]
    summary = summarize(items, max_sentences=2)
    assert summary == (
        "The deploy pipeline failed on the database migration step. "
        "The database migration step failed because of a lock timeout."
    )
    assert summarize([]) == ""


def test_keywords_and_slug() -> None:
    assert keywords(["Deploy deploy pipeline, database migration!"], n=2) == ["deploy", "migration"]
    assert slugify("Deploy schedule: Thursday!") == "deploy-schedule-thursday"
    assert slugify("!!!") == "episode"
