"""The vector index alone at 10k-1M vectors: build, tuned nprobe, recall@10, latency, RSS.

Usage: python bench/scale_vectors.py [--sizes 100000,1000000] [--queries 200] [--json]

Vectors are synthetic like bench/scale_corpus.py's (the IDF-weighted sum of
MiniLM word vectors of texts drawn on topics, calibrated to MiniLM's own
cosines), made straight in numpy without a vault, so 1M takes minutes;
queries are texts of a few words of a stored text, embedded by the real
MiniLM. For each size: the time to add every vector through
``VectorIndex.upsert`` in one bulk (the index kind chosen at the end, as a
rebuild does), the IVF parameters it measured, recall@10 of the index
against the exact answer (a numpy scan of the float32 vectors, the
baseline of the same run), search p50/p95 at k=100 (what recall asks for)
against the exact flat scan's, the index file's size, and the peak RSS of a
fresh process that loads the saved index and runs the queries.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
import scale_corpus
from _common import emit_json, median, percentile, print_table

DIM = 384


def synthesize(n: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(vectors, word ids of each text, the vocabulary)."""
    from mdmem.providers.embedders import make_embedder

    words = scale_corpus.vocabulary()
    table = make_embedder("minilm").embed(words).astype(np.float32)
    rng = np.random.default_rng(seed)
    ranks = np.arange(len(words))
    p = 1.0 / (ranks + 20.0)
    p /= p.sum()
    content = p.copy()
    content[:100] = 0
    content /= content.sum()
    topics = rng.choice(len(words), size=(max(10, n // 100), 12), p=content)
    topic_of = rng.integers(len(topics), size=n)
    mean = table.mean(axis=0)
    centred = table - mean
    direction = mean / np.linalg.norm(mean)
    weight = np.log((ranks + 20.0) / 20.0).astype(np.float32)
    out = np.empty((n, DIM), dtype=np.float32)
    docs = np.empty((n, 25), dtype=np.int64)
    for start in range(0, n, 50_000):
        m = min(50_000, n - start)
        picks = rng.integers(12, size=(m, 15))
        chosen = topics[topic_of[start : start + m]][np.arange(m)[:, None], picks]
        doc = np.concatenate([chosen, rng.choice(len(words), size=(m, 10), p=p)], axis=1)
        v = (centred[doc] * weight[doc][..., None]).sum(axis=1)
        v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-9
        v += 0.3 * direction
        out[start : start + m] = v / np.linalg.norm(v, axis=1, keepdims=True)
        docs[start : start + m] = doc
    return out, docs, words


def exact_top(x: np.ndarray, q: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """The exact top k of each query (a chunked numpy scan) and ms per query."""
    best_s = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_i = np.full((len(q), k), -1, dtype=np.int64)
    start = time.perf_counter()
    for s in range(0, len(x), 100_000):
        scores = q @ x[s : s + 100_000].T
        idx = np.arange(s, s + scores.shape[1])
        both = np.concatenate([best_s, scores], axis=1)
        both_i = np.concatenate([best_i, np.broadcast_to(idx, scores.shape)], axis=1)
        top = np.argpartition(-both, k - 1, axis=1)[:, :k]
        best_s, best_i = (
            np.take_along_axis(both, top, axis=1),
            np.take_along_axis(both_i, top, axis=1),
        )
    return best_i, (time.perf_counter() - start) * 1000 / len(q)


def serve(directory: str) -> None:
    """The child: load the index, search stdin's query vectors, print a JSON line."""
    from mdmem.index.vector import VectorIndex

    start = time.perf_counter()
    index = VectorIndex(Path(directory), dim=DIM, model="bench")
    loaded = time.perf_counter() - start
    queries = np.load(io.BytesIO(sys.stdin.buffer.read()))
    times, cpu = [], []
    for q in queries:
        t, c = time.perf_counter(), time.process_time()
        index.search(q, 100)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    with open("/proc/self/status", encoding="ascii") as status:
        peak_kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    out = {"load_s": loaded, "times": times, "cpu": cpu, "rss_mb": int(peak_kb) / 1024}
    print(json.dumps(out))


def run(n: int, queries: int) -> dict[str, object]:
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.embedders import make_embedder

    x, docs, words = synthesize(n)
    rng = np.random.default_rng(3)
    texts = [
        " ".join(words[w] for w in rng.choice(docs[i], size=5, replace=False))
        for i in rng.integers(n, size=queries)
    ]
    q = make_embedder("minilm").embed(texts).astype(np.float32)
    truth, exact_ms = exact_top(x, q, 10)
    with tempfile.TemporaryDirectory(prefix="mdmem-vectors-") as tmp:
        index = VectorIndex(Path(tmp), dim=DIM, model="bench")
        ids = [f"m{i}" for i in range(n)]
        start = time.perf_counter()
        with index.bulk():
            for s in range(0, n, 10_000):
                index.upsert(ids[s : s + 10_000], x[s : s + 10_000])
        build_s = time.perf_counter() - start
        hits = sum(
            len({f"m{i}" for i in t} & {b for b, _ in index.search(v, 10)})
            for t, v in zip(truth, q, strict=True)
        )
        params = index.params
        index.save()
        size = (Path(tmp) / "vectors.mdvec").stat().st_size
        del index, x
        buf = io.BytesIO()
        np.save(buf, q)
        child = subprocess.run(
            [sys.executable, __file__, "--serve", tmp],
            input=buf.getvalue(),
            capture_output=True,
            check=True,
        )
        served = json.loads(child.stdout.decode().strip().splitlines()[-1])
    return {
        "build_s": build_s,
        "ann": params.to_json() if params is not None else None,
        "recall_at_10": hits / (10 * len(q)),
        "search_p50_ms": median(served["times"]),
        "search_p95_ms": percentile(served["times"], 95),
        # CPU time per search: what it costs whatever else the machine runs.
        "search_cpu_p50_ms": median(served.get("cpu", [float("nan")])),
        "exact_scan_ms": exact_ms,
        "file_mb": size / 1e6,
        "load_s": served["load_s"],
        "rss_mb": served["rss_mb"],
        "load": " ".join(f"{v:.1f}" for v in os.getloadavg()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    results = {}
    for n in [int(s) for s in args.sizes.split(",") if s]:
        results[n] = run(n, args.queries)
        print(f"{n:,}: {results[n]}", file=sys.stderr, flush=True)
    if args.json:
        emit_json(results)
        return
    rows = []
    for n, r in results.items():
        ann = r["ann"] or {}
        rows.append(
            [
                f"{n:,}",
                "IVF-SQ8" if ann else "exact",
                f"{ann.get('nlist', '-')}/{ann.get('nprobe', '-')}",
                r["recall_at_10"],
                r["search_p50_ms"],
                r["search_p95_ms"],
                r["search_cpu_p50_ms"],
                r["exact_scan_ms"],
                r["build_s"],
                r["file_mb"],
                r["rss_mb"],
                r["load"],
            ]
        )
    print_table(
        "vector index alone (synthetic MiniLM-calibrated vectors, real MiniLM queries, k=100)",
        [
            "vectors",
            "kind",
            "nlist/nprobe",
            "recall@10 vs exact",
            "search p50 ms",
            "p95 ms",
            "CPU ms p50",
            "baseline: exact numpy scan ms",
            "bulk add + build s",
            "file MB",
            "serving RSS MB",
            "load",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
