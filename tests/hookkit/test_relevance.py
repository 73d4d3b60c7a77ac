"""The relevance cut: which recalled memories the prompt hook injects."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.hookkit import relevance
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.relevance import RelevanceCut, relevant
from mdmem.hookkit.runner import run_event
from mdmem.models import Hit


def hit(memory_id: str, score: float, cosine: float | None) -> Hit:
    return Hit(
        id=memory_id,
        path="MEMORY.md",
        line_start=1,
        line_end=1,
        heading="",
        text=memory_id,
        kind="fact",
        tags=(),
        status="active",
        created=datetime(2024, 1, 1, tzinfo=UTC),
        score=score,
        scores={"vector": cosine} if cosine is not None else {},
    )


HITS = [hit("m-a", 0.9, 0.6), hit("m-b", 0.7, 0.4), hit("m-c", 0.3, None), hit("m-d", 0.2, 0.1)]


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def test_no_cut_keeps_every_hit_in_order() -> None:
    assert ids(relevant(HITS, RelevanceCut())) == ["m-a", "m-b", "m-c", "m-d"]
    assert relevant([], RelevanceCut(gate=0.9)) == []


def test_the_gate_asks_for_one_hit_that_matches_well() -> None:
    assert relevant(HITS, RelevanceCut(gate=0.91)) == []
    assert ids(relevant(HITS, RelevanceCut(gate=0.9))) == ["m-a", "m-b", "m-c", "m-d"]


def test_recency_orders_but_does_not_make_a_memory_relevant() -> None:
    new = replace(hit("m-new", 0.8, 0.5), scores={"vector": 0.5, "recency": 1.0})
    old = replace(hit("m-old", 0.6, 0.5), scores={"vector": 0.5, "recency": 0.0})
    # 0.8 of which 0.3 is recency: 0.5 against the gate.
    assert relevant([new, old], RelevanceCut(gate=0.55), recency_weight=0.3) == []
    assert ids(relevant([new, old], RelevanceCut(gate=0.5), recency_weight=0.3)) == [
        "m-new",
        "m-old",
    ]
    assert ids(relevant([new, old], RelevanceCut(ratio=0.9), recency_weight=0.3)) == [
        "m-new",
        "m-old",
    ]


def test_floor_ratio_and_count() -> None:
    assert ids(relevant(HITS, RelevanceCut(floor=0.3))) == ["m-a", "m-b", "m-c"]
    assert ids(relevant(HITS, RelevanceCut(ratio=0.75))) == ["m-a", "m-b"]  # 0.7 >= 0.675
    assert ids(relevant(HITS, RelevanceCut(max_items=1))) == ["m-a"]


def test_the_hook_injects_nothing_when_no_memory_matches_well(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = Vault.init(tmp_path / "v", embedder={"provider": "hash"})
    vault.remember("We deploy the shop service to fly.io in the ams region.")
    repo = tmp_path / "repo"
    repo.mkdir()

    def ask(prompt: str) -> str:
        data = {
            "session_id": "s",
            "transcript_path": None,
            "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        out = json.loads(run_event(vault, "claude-code", "prompt-submit", data, Policy()))
        return str((out.get("hookSpecificOutput") or {}).get("additionalContext", ""))

    monkeypatch.setattr(relevance, "DEFAULT", RelevanceCut(gate=0.0))
    assert "fly.io" in ask("where do we deploy the shop service")
    monkeypatch.setattr(relevance, "DEFAULT", replace(relevance.DEFAULT, gate=5.0))
    assert ask("where do we deploy the shop service") == ""
    vault.close()
