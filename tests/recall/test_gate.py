"""The relevance gate: "nothing relevant" as an answer, a short list, exact identifiers first."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.recall import gate, identifiers
from mdmem.recall.gate_weights import GATE

MEMORIES = (
    "Production deploys go out through the release pipeline every Tuesday at 14:00 UTC.",
    "The card processor client timeout is 8 seconds; the gateway gives up at 10.",
    "Amounts are stored as integer minor units (cents); never use floats for money.",
    "The team standup is at 09:30 CET in the payments channel.",
    "PAY-1234 tracks the double-charge bug on refunds issued within a minute of capture.",
)


@pytest.fixture
def coding(tmp_path: Path) -> Vault:
    vault = Vault.init(tmp_path / "coding", agent="test-agent")
    with vault.batch():
        for text in MEMORIES:
            vault.remember(text)
    return vault


def _prompt(repo: Path, prompt: str) -> dict[str, object]:
    return {
        "session_id": "s",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def test_an_unrelated_question_is_answered_nothing_relevant(coding: Vault) -> None:
    found = coding.recall("Write a regex that matches an email address.")
    assert found.nothing_relevant
    assert found.relevance is not None and found.relevance.keep == 0
    assert found.relevant_items == []
    assert "(no relevant memories)" in coding.context(
        "Write a regex that matches an email address."
    )


def test_a_related_question_keeps_its_memory_first(coding: Vault) -> None:
    found = coding.recall("What is the timeout of the card processor client?")
    assert not found.nothing_relevant
    assert found.relevance is not None and found.relevance.confidence >= GATE.threshold
    kept = found.relevant_items
    assert kept and "timeout is 8 seconds" in kept[0].text
    assert len(kept) <= GATE.most


def test_the_prompt_hook_answers_an_empty_object_when_nothing_is_relevant(
    coding: Vault, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # What is injected, not how fast: a loaded machine must not turn the answer into
    # "degraded" by running past the 300 ms default budget.
    policy = replace(Policy(), prompt_latency_ms=60_000)

    def ask(prompt: str) -> dict[str, object]:
        out = json.loads(
            run_event(coding, "claude-code", "prompt-submit", _prompt(repo, prompt), policy)
        )
        assert isinstance(out, dict)
        return out

    assert ask("Explain Python decorators with an example.") == {}
    related = ask("When do production deploys go out?")
    assert "Tuesday at 14:00" in json.dumps(related)


def test_a_rare_identifier_puts_its_block_in_the_top_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = Vault.init(tmp_path / "ids", agent="test-agent")
    with vault.batch():
        # Look-alikes that share every other word of the query.
        for i in range(12):
            vault.remember(f"The refund ticket status is pending review for merchant number {i}.")
        target = vault.remember("PAY-4711 was closed after the double charge was fixed.")
    query = "what is the refund ticket status of PAY-4711"
    top = [h.id for h in vault.recall(query, k=5).items[:3]]
    assert target.id in top
    # Without the exact rule the look-alikes win: what the rule is for.
    monkeypatch.setattr(identifiers, "FEW", 0)
    assert target.id not in [h.id for h in vault.recall(query, k=5).items[:3]]


def test_exact_tokens_and_identifier_shapes() -> None:
    assert identifiers.exact_tokens("Why does parse_config fail on src/pay/api.py?") == [
        "Why",
        "does",
        "parse_config",
        "fail",
        "src/pay/api.py",
    ]
    for token in (
        "E1234",
        "ERR_CONN_RESET",
        "PAY-1234",
        "src/pay/api.py",
        "parseConfig",
        "9f3c2ab",
    ):
        assert identifiers.identifier_like(token), token
    for token in ("before", "team", "Unit", "about", "A1"):
        assert not identifiers.identifier_like(token), token
    assert identifiers.holds_exactly("see PAY-1234 now", "pay-1234")
    assert not identifiers.holds_exactly("see PAY-12345 now", "PAY-1234")
    assert not identifiers.holds_exactly("src/pay/api.py.bak", "src/pay/api.py")


def test_keep_stops_when_the_next_item_adds_little() -> None:
    assert gate.keep([1.0, 0.95, 0.9, 0.3, 0.29], ratio=0.8, most=10) == 3
    assert gate.keep([1.0, 0.95, 0.9, 0.85], ratio=0.5, most=2) == 2
    assert gate.keep([], ratio=0.5, most=2) == 0


def test_the_shipped_rule_stops_at_a_share_of_the_best_not_at_a_count() -> None:
    # A share of the best decides (fitted: 0.68), a count only bounds (12); it
    # replaced a cap of 7 that cut nearly every chat list, however alike its scores.
    assert (GATE.ratio, GATE.most) == (0.68, 12)
    assert gate.keep([1.0] * 20) == 12
    assert gate.keep([1.0, 0.95, 0.9, 0.88, 0.85, 0.8, 0.78, 0.75, 0.72, 0.7]) == 10
    # ...and stops at the first item below the share, whatever follows it.
    assert gate.keep([1.0, 0.9, 0.8, 0.7, 0.6, 0.95]) == 4
    assert gate.keep([0.6, 0.3, 0.29]) == 1


_SERVICES = ("billing", "search", "auth", "payments", "ledger", "reports", "mailer", "gateway",
             "scheduler", "exports", "invoices", "webhooks", "accounts", "profiles")  # fmt: skip


def _alike(vault: Vault, count: int) -> None:
    with vault.batch():
        for name in _SERVICES[:count]:
            vault.remember(f"The {name} service deploys on Tuesday through the release pipeline.")
        for text in MEMORIES[1:4]:
            vault.remember(text)


def test_memories_that_answer_alike_are_all_kept_up_to_the_bound(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "alike", agent="test-agent")
    _alike(vault, 14)
    found = vault.recall("Which services deploy on Tuesday through the release pipeline?", k=13)
    kept = found.relevant_items
    assert len(kept) == GATE.most > 7  # the cap of 7 it replaced cut this list
    assert all("service deploys on Tuesday" in h.text for h in kept)


def test_the_prompt_hook_injects_more_than_seven_memories_that_answer_alike(
    tmp_path: Path,
) -> None:
    vault = Vault.init(tmp_path / "alike", agent="test-agent")
    _alike(vault, 9)
    repo = tmp_path / "repo"
    repo.mkdir()
    prompt = "Which services deploy on Tuesday through the release pipeline?"
    out = run_event(vault, "claude-code", "prompt-submit", _prompt(repo, prompt), Policy())
    assert out.count("service deploys on Tuesday") == 9
    assert "standup" not in out


def test_features_weigh_the_query_by_its_rare_words() -> None:
    common = gate.features(
        gate.GateInput(
            query_terms=["team", "football", "favourite"],
            doc_count=100,
            df={"team": 30},
            hit_terms=[{"team", "standup"}],
            cosines=[0.3, 0.25, 0.2],
            top_keyword_rank=1,
            top_vector_rank=4,
            top_score=0.4,
            exact=False,
        )
    )
    rare = gate.features(
        gate.GateInput(
            query_terms=["standup", "time"],
            doc_count=100,
            df={"standup": 1, "time": 20},
            hit_terms=[{"team", "standup", "time"}],
            cosines=[0.6, 0.25, 0.2],
            top_keyword_rank=1,
            top_vector_rank=1,
            top_score=0.9,
            exact=False,
        )
    )
    # "football" and "favourite" are words this vault never saw: the query is
    # about something else, however well "team" matches.
    assert common["absent"] > 0.5
    assert rare["cover"] == 1.0 and rare["absent"] == 0.0 and rare["agree"] == 1.0
    assert gate.confidence(rare) > gate.confidence(common)
