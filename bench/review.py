"""Consolidation under review: what the branch, the review, the merge and the undo cost.

Usage: python bench/review.py [--memories 1000] [--entries 20] [--rounds 3] [--json]

Each round builds a vault of --memories facts and a chat session of --entries
pending entries (auto-consolidation off, extractive summariser, hash
embedder), then times, in one process:

* ``consolidate(review=True)`` - drafts, then one commit on a review branch;
* ``review()`` - counts from the blocks at the merge base and the tip, and the diff;
* ``merge_review()`` after a memory was written on the main line meanwhile;
* ``undo()`` of that merge;
* a plain ``consolidate()`` of the same entries, the baseline: review mode
  should cost about the same.

Medians over the rounds are printed with the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, out


def one_round(root: Path, memories: int, entries: int) -> dict[str, float]:
    from mdmem import Vault

    vault = Vault.init(root, agent="bench", consolidation={"auto": False})
    with vault.batch("seed"):
        for i in range(memories):
            vault.remember(f"background fact {i} about project {i % 37} in region {i % 11}")
    chat = vault.session("s1", contact="dana")
    for i in range(entries):
        role = "user" if i % 2 == 0 else "assistant"
        chat.record(role, f"Message {i}: the release plan item {i}; I prefer option {i % 3}.")
    out: dict[str, float] = {}
    out["consolidate --review"], proposed = timed(lambda: vault.consolidate(review=True))
    out["review (counts + diff)"], _ = timed(lambda: vault.git.review(proposed.branch))
    vault.remember("written on the main line while the review is open")
    out["merge_review"], merged = timed(lambda: vault.git.merge_review(proposed.branch))
    out["undo of the merge"], _ = timed(lambda: vault.git.undo(merged.commit))
    out["plain consolidate (baseline)"], plain = timed(vault.consolidate)
    if plain.consolidated != proposed.consolidated:
        raise SystemExit(
            f"the baseline consolidated {plain.consolidated} entries, the review "
            f"{proposed.consolidated}: not the same work"
        )
    vault.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = scratch_dir("mdmem-bench-review-")
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
    rounds = [
        one_round(base / f"round-{n}", args.memories, args.entries) for n in range(args.rounds)
    ]
    med = {key: median([r[key] for r in rounds]) for key in rounds[0]}
    baseline = med["plain consolidate (baseline)"]
    if args.json:
        emit_json({"args": vars(args), "median_ms": med, "rounds": rounds})
        return
    print_table(
        f"consolidation under review: {args.memories:,} memories, {args.entries} pending "
        f"entries, median of {args.rounds} rounds",
        ["step", "ms", "× plain consolidate"],
        [[step, ms, ms / baseline if baseline else float("nan")] for step, ms in med.items()],
    )


if __name__ == "__main__":
    main()
