"""Step-history compaction and action-scoped short-term memory (issue 18 item 12, OrcBot)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mdmem import Vault
from mdmem.agent.steps import STEP_SUMMARY_MARKER, compact_steps
from mdmem.cli import main
from mdmem.testing import Reply, ScriptedOpenAIServer
from tests.conftest import git
from tests.llm_fakes import client, data_blocks


def _steps(n: int) -> list[dict[str, object]]:
    return [
        {"step": i, "skill": "web_search", "observation": f"Result {i}: found page {i} on herons."}
        for i in range(1, n + 1)
    ]


def test_keeps_first_two_and_last_five_and_summarises_the_middle() -> None:
    steps = _steps(12)
    result = compact_steps(steps)  # no LLM: extractive
    assert result.compacted and result.extractive and result.summarized == 5
    assert result.steps[:2] == steps[:2] and result.steps[-5:] == steps[-5:]
    marker = result.steps[2]
    assert isinstance(marker, dict) and marker["type"] == "summary"
    assert str(marker["content"]).startswith(f"{STEP_SUMMARY_MARKER} steps 3-7:")
    assert "herons" in str(marker["content"])
    assert steps == _steps(12)  # input untouched
    # At the threshold (10) nothing happens; strings work too.
    assert not compact_steps(_steps(10)).compacted
    texts = [f"step {i}: ran ls and saw {i} files" for i in range(11)]
    out = compact_steps(texts)
    assert len(out.steps) == 8 and isinstance(out.steps[2], str)
    # A second round folds the earlier summary into the new one.
    again = compact_steps([*result.steps, *_steps(6)])
    assert again.compacted and len(again.steps) == 8


def test_llm_summariser_gets_the_middle_as_data_and_failure_falls_back(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as srv:
        srv.push(Reply(content="Searched five pages about herons; page 4 had the nesting dates."))
        result = compact_steps(_steps(12), client(srv))
        (request,) = srv.chat_requests()
        payload = data_blocks(request["body"])["steps"]
        assert "Result 3" in payload and "Result 7" in payload and "Result 8" not in payload
        assert not result.extractive and "nesting dates" in str(result.steps[2])
        srv.push(Reply(content="overloaded", status=500))
        fallback = compact_steps(_steps(12), client(srv, max_retries=0))
        assert fallback.compacted and fallback.extractive


def test_vault_compact_steps_uses_the_vault_llm_when_configured(vault: Vault) -> None:
    result = compact_steps(_steps(11), vault.llm)  # no LLM configured here
    assert result.compacted and result.extractive and len(result.steps) == 8


def test_action_notes_live_until_the_action_completes(vault: Vault) -> None:
    action = vault.sessions.action("task-42")
    a = action.add("Tool web_search returned 10 results about GPT.", step=1, skill="web_search")
    action.add("Opened the first result.", step=2, skill="browser")
    vault.sessions.action("task-43").add("Unrelated step.")
    block = vault.admin.store.block(a.id)
    assert block.kind == "log" and block.field("action") == "task-42"
    assert block.field("step") == "1" and block.field("skill") == "web_search"
    assert [m.text for m in action.memories()] == [
        "Tool web_search returned 10 results about GPT.",
        "Opened the first result.",
    ]
    assert vault.recall("web_search results GPT").items  # recallable while it runs
    before = int(git(vault.root, "rev-list", "--count", "HEAD"))
    assert action.complete() == 2
    assert int(git(vault.root, "rev-list", "--count", "HEAD")) == before + 1
    assert action.memories() == [] and action.complete() == 0
    assert len(vault.sessions.action("task-43").memories()) == 1
    assert not any("GPT" in h.text for h in vault.recall("web_search results GPT").items)
    # Not session turns: consolidation leaves them alone.
    assert vault.consolidate().episodes == []


def test_action_cli(vault: Vault) -> None:
    runner = CliRunner()
    base = ["--vault", str(vault.root), "session", "action"]
    out = runner.invoke(main, [*base, "add", "deploy-7", "Ran the migration.", "--step", "1"])
    assert out.exit_code == 0, out.output
    listed = json.loads(runner.invoke(main, [*base, "list", "deploy-7", "--json"]).output)
    assert [m["text"] for m in listed] == ["Ran the migration."]
    done = runner.invoke(main, [*base, "complete", "deploy-7", "--json"])
    assert json.loads(done.output) == {"removed": 1}
    bad = runner.invoke(main, [*base, "add", "../x", "text"])
    assert bad.exit_code != 0 and "invalid action id" in bad.output
