"""A recall's query embedding and the warm recall around it, before and after, in one process.

Usage: python bench/query_speed.py [--size 10000] [--queries 60] [--commits 2000]
                                   [--cache DIR] [--json]

The corpus is bench/scale.py's (built once under --cache, synthetic vectors
in the embedding cache; a work copy is recalled from). One process opens
it and, query by query, alternates the two configurations so both see the
same load:

* **before**: the query's forward pass with numpy's BLAS free to use its
  threads (``MDMEM_EMBED_THREADS=0``, what a single query got before) and
  no query-vector cache;
* **after**: the default: one BLAS thread for a query-sized batch, and the
  query vectors of :mod:`mdmem.index.queryvectors` (a miss for each new
  query; the "repeated" row asks each query again: a hit).

It prints the query-embedding and warm-recall p50/p95 of both, their ratio,
the CPU time per recall, whether each query's ranked ids were identical in
both, and the largest difference between the two vectors of a query
(cosine). Load matters on a shared machine: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
import scale
from _common import emit_json, median, percentile, print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--commits", type=int, default=2_000)
    parser.add_argument(
        "--cache",
        default=os.environ.get("MDMEM_BENCH_CACHE", "/tmp/mdmem-scale-cache"),
        help="where bench/scale.py's corpora are kept",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cache = Path(args.cache)
    vault_dir, root, info = scale.corpus(args.size, cache, args.commits)
    work = cache / f"query-speed-{os.getpid()}"
    copy_vault, copy_root = scale.work_copy(vault_dir, root, work)
    os.environ["MDMEM_STATE_DIR"] = str(copy_root)
    os.environ["MDMEM_EMBEDDER_PROVIDER"] = "minilm"
    os.environ["MDMEM_RECALL_RECENCY_WEIGHT"] = "0"  # the same scores a moment apart
    from mdmem import Vault
    from mdmem.index.queryvectors import QueryVectors
    from mdmem.providers.minilm import ENV_THREADS, load_minilm

    vault = Vault.open(copy_vault, agent="bench")
    service = vault.admin.store.embedding
    model = load_minilm()
    queries = [str(q) for q in info["queries"]][: args.queries]
    for q in queries[:5]:
        vault.recall(q, k=5)
    cached = service.queries

    def configure(before: bool) -> None:
        if before:
            os.environ[ENV_THREADS] = "0"
            service.queries = QueryVectors(capacity=0)
        else:
            os.environ.pop(ENV_THREADS, None)
            service.queries = cached

    times: dict[str, list[float]] = {
        k: [] for k in ("embed_before", "embed_after", "recall_before", "recall_after", "repeat")
    }
    cpu: dict[str, list[float]] = {"recall_before": [], "recall_after": [], "repeat": []}
    same_ranking = 0
    worst_cosine = 1.0
    for i, q in enumerate(queries):
        order = (True, False) if i % 2 == 0 else (False, True)
        ids: dict[bool, list[str]] = {}
        vecs: dict[bool, np.ndarray] = {}
        for before in order:
            configure(before)
            tag = "before" if before else "after"
            start = time.perf_counter()
            vecs[before] = model.embed([q])[0]
            times[f"embed_{tag}"].append((time.perf_counter() - start) * 1000)
            start, start_cpu = time.perf_counter(), time.process_time()
            ids[before] = [h.id for h in vault.recall(q, k=5).items]
            times[f"recall_{tag}"].append((time.perf_counter() - start) * 1000)
            cpu[f"recall_{tag}"].append((time.process_time() - start_cpu) * 1000)
        configure(False)
        start, start_cpu = time.perf_counter(), time.process_time()
        again = [h.id for h in vault.recall(q, k=5).items]
        times["repeat"].append((time.perf_counter() - start) * 1000)
        cpu["repeat"].append((time.process_time() - start_cpu) * 1000)
        same_ranking += ids[True] == ids[False] == again
        worst_cosine = min(worst_cosine, float(np.dot(vecs[True], vecs[False])))
    vault.close()
    import shutil

    shutil.rmtree(work, ignore_errors=True)

    def row(label: str, key: str, base: str | None = None) -> list[Any]:
        p50 = median(times[key])
        ratio = f"{p50 / median(times[base]):.2f}x" if base else ""
        cpu_p50 = f"{median(cpu[key]):.1f}" if key in cpu else ""
        return [label, f"{p50:.1f}", f"{percentile(times[key], 95):.1f}", cpu_p50, ratio]

    rows = [
        row("query embedding, before", "embed_before"),
        row("query embedding, after", "embed_after", "embed_before"),
        row("warm recall, before", "recall_before"),
        row("warm recall, after (new query)", "recall_after", "recall_before"),
        row("warm recall, after (repeated query)", "repeat", "recall_before"),
    ]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_table(
        f"{info['memories']:,} memories, {len(queries)} queries, paired (load {load})",
        ["", "p50 ms", "p95 ms", "CPU p50 ms", "vs before"],
        rows,
    )
    print(
        f"ranked ids identical before/after/repeated: {same_ranking} of {len(queries)}; "
        f"lowest cosine between a query's two vectors: {worst_cosine:.7f}"
    )
    if args.json:
        emit_json(
            {
                "times": times,
                "cpu": cpu,
                "same_ranking": same_ranking,
                "worst_cosine": worst_cosine,
                "load": os.getloadavg(),
            }
        )


if __name__ == "__main__":
    main()
