"""Time-travel benchmark: recall(as_of=...) cold and warm, against plain recall.

Usage: python bench/timetravel.py [--memories 10000] [--queries 30] [--embedder minilm] [--json]

The vault gets --memories memories in ten commits; then as_of recall is asked
about the fifth commit: cold (the snapshot index is built from that commit's
tree, vectors from the embedding cache), warm (snapshot in memory), and after
reopening the vault (snapshot loaded from disk). Plain recall on HEAD in the
same run is the baseline.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir
from scale import sentence


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = scratch_dir("mdmem-bench-asof-")
    os.environ["MDMEM_EMBEDDER_PROVIDER"] = args.embedder
    import faiss

    faiss.omp_set_num_threads(1)
    from mdmem import Vault

    vault = Vault.init(base / "vault", agent="bench")
    rng = random.Random(3)
    queries: list[str] = []
    commits = []
    per = args.memories // 10
    for c in range(10):
        with vault.batch(f"chunk {c}"):
            for i in range(per):
                text, query = sentence(rng)
                vault.remember(f"{text} (#{c}-{i})")
                if len(queries) < args.queries and c < 5:
                    queries.append(query)
        commits.append(vault.git.head())
    target = str(commits[4])

    plain = []
    for q in queries:
        start = time.perf_counter()
        vault.recall(q, k=5)
        plain.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    vault.recall(queries[0], k=5, as_of=target)
    cold = (time.perf_counter() - start) * 1000
    warm = []
    for q in queries:
        start = time.perf_counter()
        vault.recall(q, k=5, as_of=target)
        warm.append((time.perf_counter() - start) * 1000)
    vault.close()
    reopened = Vault.open(vault.root)
    start = time.perf_counter()
    reopened.recall(queries[0], k=5, as_of=target)
    from_disk = (time.perf_counter() - start) * 1000
    results = {
        "memories": args.memories,
        "snapshot_memories": per * 5,
        "plain_p50_ms": median(plain),
        "as_of_cold_ms": cold,
        "as_of_warm_p50_ms": median(warm),
        "as_of_from_disk_ms": from_disk,
        "warm_over_plain": median(warm) / median(plain),
    }
    if args.json:
        emit_json(results)
        return
    print_table(
        f"recall(as_of=commit 5 of 10) on a vault of {args.memories:,} memories ({args.embedder})",
        ["measure", "ms"],
        [
            ["plain recall p50 (baseline)", results["plain_p50_ms"]],
            [f"as_of cold: build snapshot of {per * 5:,} memories + recall", cold],
            ["as_of warm p50 (snapshot in memory)", results["as_of_warm_p50_ms"]],
            ["as_of after reopen (snapshot from disk)", from_disk],
            ["warm / plain", results["warm_over_plain"]],
        ],
    )


if __name__ == "__main__":
    main()
