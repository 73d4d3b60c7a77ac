"""Consolidation benchmark: mdmem's own overhead per consolidation, and the trust experiment.

Usage: python bench/consolidate.py [--entries 100] [--runs 3] [--embedder hash] [--json]

Part 1 - consolidation overhead. A local OpenAI-compatible server
(mdmem.testing.ScriptedOpenAIServer) answers every request instantly, so the
times are mdmem's own work: reading pending entries, building prompts,
validating JSON, writing episode + facts + markers in one commit, reindexing.
For --entries recorded turns it reports the prompt tokens sent per
consolidation request and in total per ``consolidate()`` call, drafting plus
the contradiction judge that runs as the facts are stored (the server counts
len/4 characters per token, like a rough BPE), the seconds per 100 entries
with the LLM and with the extractive summariser, and as a baseline measured in
the same run the time to *record* the same 100 entries (one commit each) - the
cost consolidation should stay small against.

Part 2 - usefulness signals. A synthetic feedback scenario: 40 topics, each with
a correct memory and a stale near-duplicate of equal relevance. For half the
topics the agent recalls and gives feedback (helpful on the correct one,
unhelpful on the stale one) three times; then precision@1 is measured on
paraphrased queries, for trained and untrained topics, per recall.trust_weight.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir

USER_LINES = [
    "My name is Ada and I work on the billing service.",
    "I prefer metric units in every report.",
    "The staging database resets every night at two; can you remember that?",
    "Please prepare the deploy checklist for Thursday.",
    "My team is Platform and we deploy on Thursdays.",
    "What did the last load test say about the checkout latency?",
]
ASSISTANT_LINES = [
    "Noted. I will keep the billing service context in mind.",
    "Understood, metric units from now on.",
    "The last load test showed a p95 checkout latency of 420 ms under 2,000 users.",
    "I drafted the deploy checklist: freeze, tag, migrate, deploy, verify.",
]


def instant_model(body: dict[str, Any]) -> str:
    """Valid, instant answers to mdmem's prompts (no thinking time to measure)."""
    system = "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
    if "contradiction judge" in system:
        return json.dumps({"contradicted": []})
    user = body["messages"][-1]["content"]
    facts = sorted(set(re.findall(r"user: (My \w+ is \w+)", user)))
    return json.dumps(
        {
            "summary": "The user and the agent discussed billing, deploys and load tests.",
            "facts": [f.replace("My", "The user's", 1) + "." for f in facts],
            "pending": ["Send the deploy checklist."],
            "preferences": ["The user prefers metric units."],
            "tone": "friendly",
            "confidence": 0.9,
        }
    )


def record(vault: Any, n: int, session: str) -> float:
    s = vault.session(session, source="bench", contact="bench:1")
    start = time.perf_counter()
    for i in range(n):
        line = USER_LINES if i % 2 == 0 else ASSISTANT_LINES
        s.record("user" if i % 2 == 0 else "assistant", f"{line[i % len(line)]} (#{i})")
    return time.perf_counter() - start


def part_one(base: Path, entries: int, runs: int, embedder: str) -> dict[str, Any]:
    from mdmem import Vault
    from mdmem.testing import ScriptedOpenAIServer

    rows: dict[str, list[float]] = {
        "record_s": [],
        "llm_s": [],
        "extractive_s": [],
        "tokens": [],
        "tokens_total": [],
        "chars": [],
        "requests": [],
        "completion": [],
        "judge": [],
    }
    with ScriptedOpenAIServer(responder=instant_model) as server:
        for run in range(runs):
            for mode in ("llm", "extractive"):
                llm = {"base_url": server.base_url, "model": "instant"} if mode == "llm" else {}
                vault = Vault.init(
                    base / f"{mode}-{run}",
                    agent="bench",
                    embedder={"provider": embedder},
                    llm=llm,
                    consolidation={"auto": False},
                )
                took = record(vault, entries, f"s{run}")
                if mode == "llm":
                    rows["record_s"].append(took)
                before = len(server.chat_requests())
                start = time.perf_counter()
                result = vault.consolidate()
                rows[f"{mode}_s"].append(time.perf_counter() - start)
                assert result.consolidated == entries, result
                if mode == "llm":
                    drafting = max(1, result.llm_requests - result.judge_requests)
                    drafting_tokens = result.prompt_tokens - result.judge_prompt_tokens
                    rows["tokens"].append(drafting_tokens / drafting)
                    rows["tokens_total"].append(result.prompt_tokens)
                    rows["completion"].append(result.completion_tokens)
                    rows["requests"].append(result.llm_requests)
                    rows["judge"].append(result.judge_requests)
                    sent = server.chat_requests()[before:]
                    sent = [
                        r for r in sent if "consolidator" in r["body"]["messages"][0]["content"]
                    ]
                    chars = sum(
                        len(m["content"]) for r in sent for m in r["body"]["messages"]
                    ) / max(1, len(sent))
                    rows["chars"].append(chars)
                vault.close()
    per100 = 100 / entries
    return {
        "entries": entries,
        "runs": runs,
        "embedder": embedder,
        "record_s_per_100": median(rows["record_s"]) * per100,
        "llm_s_per_100": median(rows["llm_s"]) * per100,
        "extractive_s_per_100": median(rows["extractive_s"]) * per100,
        "prompt_tokens_per_request": median(rows["tokens"]),
        "prompt_tokens_per_consolidate_call": median(rows["tokens_total"]),
        "completion_tokens_per_consolidate_call": median(rows["completion"]),
        "prompt_chars_per_request": median(rows["chars"]),
        "llm_requests": median(rows["requests"]),
        "judge_requests": median(rows["judge"]),
    }


SERVICES = [
    "billing", "search", "checkout", "inventory", "payments", "auth", "reporting", "mailer",
    "gateway", "scheduler", "catalog", "pricing", "shipping", "returns", "ledger", "metrics",
    "exports", "imports", "webhooks", "profiles", "sessions", "uploads", "thumbnails", "feeds",
    "alerts", "audit", "backups", "cdn", "dns", "queue", "cache", "ranking", "ads", "chat",
    "wiki", "forms", "tickets", "surveys", "coupons", "loyalty",
]  # fmt: skip
TIMES = ["01:00", "02:00", "03:00", "04:00", "05:00", "22:00", "23:00"]


def part_two(
    base: Path, weights: list[float], embedder: str, seed: int = 7
) -> list[dict[str, Any]]:
    from mdmem import Vault

    rng = random.Random(seed)
    plan = []
    for name in SERVICES:
        good, stale = rng.sample(TIMES, 2)
        plan.append((name, good, stale, rng.random() < 0.5))
    trained = {name for name, *_ in plan[::2]}
    out = []
    for weight in weights:
        vault = Vault.init(
            base / f"trust-{weight}",
            agent="bench",
            embedder={"provider": embedder},
            # Similarity off: the stale twin must stay active for the experiment.
            consolidation={"same_context_threshold": 2.0, "other_context_threshold": 2.0},
            recall={"trust_weight": weight},
        )
        good_ids: dict[str, str] = {}
        stale_ids: dict[str, str] = {}
        with vault.batch("bench import"):
            for name, good, stale, good_first in plan:
                texts = [
                    (f"The {name} backup job runs nightly at {good}.", True),
                    (f"The {name} backup job runs nightly at {stale}.", False),
                ]
                for text, is_good in texts if good_first else texts[::-1]:
                    m = vault.remember(text)
                    (good_ids if is_good else stale_ids)[name] = m.id
        for _ in range(3):  # the agent uses its memory and says what helped
            for name in trained:
                hits = vault.recall(f"when does the {name} backup run?", k=2)
                for hit in hits.items:
                    if hit.id == good_ids[name]:
                        vault.usefulness.feedback(hit.id, helpful=True)
                    elif hit.id == stale_ids[name]:
                        vault.usefulness.feedback(hit.id, helpful=False)
        scores: dict[str, list[bool]] = {"trained": [], "untrained": [], "off_topic": []}
        for name, *_ in plan:
            top = vault.recall(f"at what time is the nightly {name} backup?", k=2).items
            right = bool(top) and top[0].id == good_ids[name]
            scores["trained" if name in trained else "untrained"].append(right)
            own = {good_ids[name], stale_ids[name]}
            if name not in trained:
                scores["off_topic"].append(bool(top) and top[0].id not in own)
        out.append(
            {
                "trust_weight": weight,
                "p_at_1_trained": sum(scores["trained"]) / len(scores["trained"]),
                "p_at_1_untrained": sum(scores["untrained"]) / len(scores["untrained"]),
                "off_topic_top1_untrained": sum(scores["off_topic"]) / len(scores["off_topic"]),
            }
        )
        vault.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--embedder", default="hash", help="hash (default) or minilm")
    parser.add_argument("--weights", default="0,0.05,0.1,0.2,0.3")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = scratch_dir("mdmem-bench-consolidate-")
    import openai  # noqa: F401 - a one-time import cost, not consolidation overhead

    one = part_one(base, args.entries, args.runs, args.embedder)
    two = part_two(base, [float(w) for w in args.weights.split(",")], args.embedder)
    if args.json:
        emit_json({"consolidation": one, "trust": two})
        return
    rec, llm_s, ext_s = (
        one["record_s_per_100"],
        one["llm_s_per_100"],
        one["extractive_s_per_100"],
    )
    print_table(
        f"Consolidation of {one['entries']} recorded turns, local server answering instantly "
        f"(median of {one['runs']} runs, embedder {one['embedder']})",
        ["what", "seconds / 100 entries", "ratio to recording them"],
        [
            ["record the turns (baseline: one commit each)", rec, 1.0],
            ["consolidate with the LLM (one commit)", llm_s, llm_s / rec],
            ["consolidate extractively (one commit)", ext_s, ext_s / rec],
        ],
    )
    print_table(
        "Tokens sent per consolidation request (one per group of <= 20 entries) "
        "and per consolidate() call (all requests, judge included)",
        [
            "prompt tokens / request",
            "prompt tokens / call",
            "completion tokens / call",
            "prompt chars / request",
            "requests / call",
            "judge calls / call",
        ],
        [
            [
                one["prompt_tokens_per_request"],
                one["prompt_tokens_per_consolidate_call"],
                one["completion_tokens_per_consolidate_call"],
                one["prompt_chars_per_request"],
                one["llm_requests"],
                one["judge_requests"],
            ]
        ],
    )
    print_table(
        "Trust blending: precision@1 after feedback on half the topics (40 topic pairs)",
        [
            "recall.trust_weight",
            "P@1 trained topics",
            "P@1 untrained topics",
            "untrained: top-1 from another topic",
        ],
        [
            [
                t["trust_weight"],
                t["p_at_1_trained"],
                t["p_at_1_untrained"],
                t["off_topic_top1_untrained"],
            ]
            for t in two
        ],
    )


if __name__ == "__main__":
    main()
