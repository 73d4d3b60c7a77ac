"""The optional LLM re-rank of recall's top hits, against the real local server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.testing import Reply, ScriptedOpenAIServer


def _vault(tmp_path: Path, server: ScriptedOpenAIServer, **recall: object) -> Vault:
    vault = Vault.init(
        tmp_path / "v",
        agent="t",
        llm={"base_url": server.base_url, "model": "scripted-model", "max_retries": 0},
        recall={"rerank": True, **recall},
    )
    vault.remember("The launch checklist lives in the ops wiki.")
    vault.remember("Launch is May 12.")
    vault.remember("The launch party is at the rooftop bar.")
    return vault


def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")


def test_the_model_orders_the_top_hits_and_reranked_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch)
    with ScriptedOpenAIServer() as server:
        vault = _vault(tmp_path, server)
        first = vault.recall("launch", k=3, mode="keyword")
        # The model puts the last hit first: the order must follow it.
        wanted = [first.items[2].id, first.items[0].id, first.items[1].id]
        server.push(Reply(json.dumps({"order": [3, 1, 2]})))
        again = vault.recall("launch", k=3, mode="keyword")
    assert again.reranked is True
    assert [h.id for h in again.items] == wanted
    # The memories went to the model as data blocks, with the query.
    body = json.dumps(server.chat_requests()[-1])
    assert "Launch is May 12." in body and "MDMEM_DATA" in body


def test_a_slow_model_leaves_the_order_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch)
    with ScriptedOpenAIServer() as server:
        vault = _vault(tmp_path, server, rerank_budget_ms=200.0)
        plain = [h.id for h in vault.recall("launch", k=3, mode="keyword").items]
        server.push(Reply(json.dumps({"order": [3, 2, 1]}), delay=2.0))
        got = vault.recall("launch", k=3, mode="keyword")
    assert got.reranked is False
    assert [h.id for h in got.items] == plain
    assert got.took_ms < 1500


def test_nonsense_from_the_model_leaves_the_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _env(monkeypatch)
    with ScriptedOpenAIServer() as server:
        vault = _vault(tmp_path, server)
        plain = [h.id for h in vault.recall("launch", k=3, mode="keyword").items]
        server.push(Reply(json.dumps({"order": [9, 1]})), Reply(json.dumps({"order": "first"})))
        got = vault.recall("launch", k=3, mode="keyword")
    assert got.reranked is False
    assert [h.id for h in got.items] == plain


def test_without_a_model_rerank_is_off_and_nothing_is_asked(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="t", recall={"rerank": True})
    vault.remember("Launch is May 12.")
    got = vault.recall("launch", k=3)
    assert got.reranked is False and got.items
