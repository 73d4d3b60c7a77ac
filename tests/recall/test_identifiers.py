"""An identifier the prompt names is never withheld: the rule no fitted gate vetoes.

A memory holding, whole, an identifier-shaped token of the prompt (a hash, a
ticket id, a path, a port, an error code, a symbol) that at most a few
memories hold is kept and ranked first by recall, ``context``,
``prompt_context`` and the prompt hook alike. The identifiers here are held
apart from the coding set the gate was fitted on (bench/data/coding-dev.json
names none of them), and each prompt is otherwise unlike its memory.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.agent.prompt import prompt_context
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.recall import identifiers, pipeline
from mdmem.recall.gate_weights import GATE

# (shape, the prompt, the memory that holds its identifier)
NAMED = (
    (
        "hash",
        "anything I should know about b7e41c9d before the release?",
        "Commit b7e41c9d reverted the retry change; cherry-pick it onto the hotfix branch.",
    ),
    (
        "ticket",
        "where are we on OPS-5531",
        "OPS-5531: the nightly export job double-counts refunds from the EU shard.",
    ),
    (
        "path",
        "I'm about to edit services/ledger/reconcile.go",
        "services/ledger/reconcile.go must hold the ledger lock before reading balances.",
    ),
    (
        "port",
        "what listens on 6443 again",
        "The kube API server on the lab cluster listens on 6443, behind the bastion.",
    ),
    (
        "error code",
        "seeing E7702 in the logs, ideas?",
        "E7702 means the card vault token expired; re-tokenise and retry once.",
    ),
    (
        "errno",
        "tests die with EADDRINUSE",
        "EADDRINUSE in CI: the previous run's fixture server was not stopped; kill it first.",
    ),
    (
        "symbol",
        "should I call flush_pending_writes here",
        "flush_pending_writes is not thread-safe; call it only from the writer thread.",
    ),
    (
        "symbol in backticks",
        "what does `rehydrate` do",
        "rehydrate rebuilds the session cache from the event log on startup.",
    ),
)

# Look-alikes: every other word of the prompts, none of their identifiers.
FILLER = (
    "Anything shipped before the release needs a changelog entry.",
    "The release branch is cut on Thursdays; the hotfix branch follows it.",
    "We are on the new on-call rotation since March.",
    "Edit the config with care: the ledger service reads it at startup.",
    "The API gateway listens behind the bastion host on the lab cluster.",
    "Logs from the export job go to the EU log bucket.",
    "Ideas for the retrospective go in the team doc.",
    "Tests run in CI on every push; flaky ones are quarantined.",
    "Call the payments team before changing the writer thread pool.",
    "The session cache is warmed on startup from the event log.",
    "Retry once on a timeout, never on a validation error.",
    "The card vault is owned by the security team.",
)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    v = Vault.init(tmp_path / "ids", agent="test-agent")
    with v.batch():
        for text in FILLER:
            v.remember(text)
        for _, _, text in NAMED:
            v.remember(text)
    return v


@pytest.fixture
def vetoing_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate that says "nothing relevant" to everything: the rule must hold anyway."""
    monkeypatch.setattr(
        pipeline, "GATE", replace(GATE, threshold=2.0, keyword_cover=2.0, keyword_threshold=2.0)
    )


def _hook(vault: Vault, repo: Path, prompt: str) -> str:
    payload = {
        "session_id": "s",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    # What is injected, not how fast: a loaded machine must not time the hook out.
    policy = replace(Policy(), prompt_latency_ms=60_000)
    return run_event(vault, "claude-code", "prompt-submit", payload, policy)


@pytest.mark.parametrize(("shape", "prompt", "memory"), NAMED, ids=[n[0] for n in NAMED])
def test_a_named_identifier_is_kept_first_whatever_the_gate_says(
    vault: Vault, vetoing_gate: None, tmp_path: Path, shape: str, prompt: str, memory: str
) -> None:
    for mode in ("hybrid", "keyword", "vector"):
        found = vault.recall(prompt, mode=mode)
        kept = found.relevant_items
        assert kept and kept[0].text == memory, (shape, mode, [h.text for h in found.items])
        assert not found.nothing_relevant
        assert found.relevance is not None and found.relevance.named == 1
    assert memory in vault.context(prompt)
    assert memory in prompt_context(vault, prompt).render()
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    injected = json.loads(_hook(vault, repo, prompt))
    assert memory in json.dumps(injected, ensure_ascii=False)


def test_without_the_rule_the_vetoing_gate_withholds_them(
    vault: Vault, vetoing_gate: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the rule is for: with the identifier lookup off, the same gate keeps nothing.
    monkeypatch.setattr(identifiers, "FEW", 0)
    for _, prompt, _ in NAMED:
        assert vault.recall(prompt).relevant_items == []


def test_an_identifier_many_memories_hold_names_none_of_them(
    tmp_path: Path, vetoing_gate: None
) -> None:
    vault = Vault.init(tmp_path / "many", agent="test-agent")
    with vault.batch():
        for n in range(identifiers.FEW + 1):
            vault.remember(f"Runbook step {n} for OPS-5531: check the export job.")
    found = vault.recall("OPS-5531")
    assert found.relevance is not None and found.relevance.named == 0
    assert found.nothing_relevant  # the gate decides alone again


def test_a_longer_identifier_is_not_the_named_one(tmp_path: Path, vetoing_gate: None) -> None:
    vault = Vault.init(tmp_path / "whole", agent="test-agent")
    with vault.batch():
        vault.remember("OPS-55310 is the follow-up to the export bug.")
        vault.remember("services/ledger/reconcile.go.orig is a stale backup.")
    assert vault.recall("OPS-5531").relevant_items == []
    assert vault.recall("services/ledger/reconcile.go").relevant_items == []


def test_identifier_shapes() -> None:
    named = {
        "b7e41c9d",  # a hash
        "OPS-5531",  # a ticket
        "services/ledger/reconcile.go",  # a path
        "6443",  # a port
        "E7702",  # an error code
        "ERR_CONN_RESET",
        "EADDRINUSE",  # an errno name
        "SIGKILL",
        "flush_pending_writes",  # symbols
        "parseConfig",
        "Vault.recall",
        "v1.2.3",
        "payments-webhooks-dlq",  # kebab-case names
        "X-Fail-Mode",  # a header
        "fix/login-timeout",  # a branch
    }
    for token in named:
        assert identifiers.identifier_like(token), token
    # Shapes that are dates, times, counts, abbreviations or words, not identifiers.
    for token in ("2023", "10.01.2024", "11/22/63", "14:00", "8th", "U.S", "J.K", "and/or",
                  "artists/bands", "dairy-free", "ex-partner", "Wars-related", "before",
                  "team", "Unit", "EVERY", "A1"):  # fmt: skip
        assert not identifiers.identifier_like(token), token
    assert identifiers.named_identifiers(
        "why does `rehydrate` fail after flush() with --dry-run on db-07 in 2023?"
    ) == ["rehydrate", "flush", "dry-run", "db-07"]
    assert identifiers.holds_exactly("see OPS-5531, then", "ops-5531")
    assert not identifiers.holds_exactly("see OPS-55310", "OPS-5531")
    assert not identifiers.holds_exactly("a.go.orig", "a.go")
