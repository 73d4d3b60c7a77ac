"""One gate, one answer, everywhere: what a new user met in an adopted Obsidian folder.

Reproduced first: the gate read a dated note's score with its recency term
taken out but an undated note's whole (so the same words were relevant in one
and not in the other), it read the best hits and the vector pool as deep as
the caller's k (so recall(k=1), context and the hook's k=13 could disagree),
and recall listed a block the second keyword round found with no keyword and
no vector score of its own (relevance 0.0).
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

NOTES = {
    "daily/2025-05-03.md": "# Saturday\n\nPut copper tape around the raised beds to keep the "
    "slugs off the lettuce. Seems to work so far.\n\nAlso bought seed potatoes.\n",
    "Projects/Tomatoes.md": "---\ncreated: 2025-04-01\n---\n# Tomatoes\n\nSowed San Marzano "
    "indoors under the grow light. Transplant after the last frost, mid May.\n",
    "Reading.md": "# Reading list\n\n- The Overstory by Richard Powers\n- Braiding Sweetgrass\n",
    "Recipes.md": "# Recipes\n\n## Pesto\nBasil, pine nuts, parmesan, garlic, olive oil.\n\n"
    "## Slug beer trap\nNot a recipe, but a shallow dish of beer catches slugs overnight.\n",
}
QUERIES = (
    "copper tape",
    "how do I keep slugs off the lettuce",
    "when do I transplant the tomatoes",
    "pesto",
    "what is the capital of Australia",
    "kubernetes ingress timeout",
)


def _adopted(root: Path, notes: dict[str, str]) -> Vault:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Vault.init(root, agent="test-agent")


@pytest.fixture
def garden(tmp_path: Path) -> Vault:
    return _adopted(tmp_path / "garden", NOTES)


def _hook(vault: Vault, repo: Path, prompt: str, *, warm: bool = True) -> bool:
    payload = {
        "session_id": "s",
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }
    policy = replace(Policy(), prompt_latency_ms=60_000)  # what, not how fast
    # warm: the hook as its warm server runs it, hybrid like recall; cold: keyword only.
    out = run_event(vault, "claude-code", "prompt-submit", payload, policy, warm=warm)
    return bool(json.loads(out))


def test_recall_context_prompt_context_and_the_hook_give_one_verdict(
    garden: Vault, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for query in QUERIES:
        verdicts = {f"recall k={k}": not garden.recall(query, k=k).nothing_relevant
                    for k in (1, 2, 5, 13, 40)}  # fmt: skip
        verdicts["context"] = "(no relevant memories)" not in garden.context(query)
        verdicts["prompt_context"] = bool(prompt_context(garden, query)["semantic"].ids)
        verdicts["hook"] = _hook(garden, repo, query)
        # Before its warm server is up the hook recalls keyword-only: no vector
        # features, a model of its own fitted to give the same answer (it gave
        # one of its own: the share of the query's words a hit holds, alone).
        verdicts["hook, keyword only"] = _hook(garden, repo, query, warm=False)
        verdicts["recall, keyword only"] = not garden.recall(query, mode="keyword").nothing_relevant
        assert len(set(verdicts.values())) == 1, (query, verdicts)
        confidences = {garden.recall(query, k=k).relevance.confidence for k in (1, 5, 13)}  # type: ignore[union-attr]
        assert len(confidences) == 1, (query, confidences)


def test_a_dated_note_and_an_undated_one_are_judged_alike(tmp_path: Path) -> None:
    note = NOTES["daily/2025-05-03.md"]
    dated = _adopted(tmp_path / "dated", {"daily/2025-05-03.md": note, **_others()})
    undated = _adopted(tmp_path / "undated", {"Garden log.md": note, **_others()})
    a, b = dated.recall("copper tape"), undated.recall("copper tape")
    assert a.items[0].text == b.items[0].text and "copper tape" in a.items[0].text
    assert "recency" in a.items[0].scores and "recency" not in b.items[0].scores
    assert a.relevance is not None and b.relevance is not None
    # How new a note is orders hits; it doesn't make one more or less relevant.
    assert a.relevance.confidence == pytest.approx(b.relevance.confidence, abs=1e-6)
    assert a.nothing_relevant == b.nothing_relevant


def _others() -> dict[str, str]:
    return {k: v for k, v in NOTES.items() if not k.startswith("daily/")}


def test_no_item_is_listed_without_evidence_of_its_own(garden: Vault, tmp_path: Path) -> None:
    # "Slug beer trap" shares no word with "copper tape"; the second keyword round
    # (the query widened with the best note's rarest words: "slugs") found it,
    # and it was listed with relevance 0.0, no keyword and no vector score.
    floor = garden.settings.recall.min_vector
    for query in QUERIES:
        for hit in garden.recall(query, k=10).items:
            evidence = (
                "keyword" in hit.scores
                or hit.scores.get("vector", -1.0) >= floor
                or hit.scores.get("thread", 0.0) > 0
                or hit.scores.get("named", 0.0) > 0
            )
            assert evidence, (query, hit.heading, hit.scores)
    assert all("beer" not in h.text for h in garden.recall("copper tape", k=10).items)


def test_the_cli_recall_and_context_agree(garden: Vault) -> None:
    from click.testing import CliRunner

    from mdmem.cli import main

    runner = CliRunner()
    for query in QUERIES:
        base = ["--vault", str(garden.root)]
        found = json.loads(runner.invoke(main, [*base, "recall", query, "--json"]).output)
        context = json.loads(runner.invoke(main, [*base, "context", query, "--json"]).output)
        relevant = not found["nothing_relevant"]
        assert relevant == bool(context["ids"]), (query, found["relevance"], context["ids"])
        if relevant:
            kept = found["items"][: found["relevance"]["keep"]]
            assert context["ids"] == [h["id"] for h in kept][: len(context["ids"])]
