"""Benchmark the default MiniLM embedder (numpy forward pass).

Prints one table: cold load time (fresh process), single-query latency p50/p95,
and throughput in sentences/s on ~1,000 deterministic synthetic sentences of
mixed lengths, for

* naive     - input order, batches of 32 padded to their longest text, one
              stream, OpenBLAS threading left as is (what a straightforward
              port does);
* 1-stream  - length-sorted batches, packed tokens (no padding in the GEMMs),
              one stream, OpenBLAS threading left as is;
* bucketed  - the default: as 1-stream, with batches spread over worker
              threads and OpenBLAS pinned to one thread per worker.

plus the same on "typical" sentences only (15-30 words), and the ceiling: the
sentences/s the model's dense layers (~97% of its FLOPs) would allow if
every core ran them at the SGEMM rate this machine reaches in the same run,
with the share of it that the default (bucketed) path reaches. Each figure is the
median of --repeats runs, interleaved so that machine noise hits all variants
alike; ratios are to the naive baseline of the same run. Wall-clock rates
collapse when other processes hold the cores (OpenBLAS spin-waits), so the
table also gives sentences per CPU-second, which moves much less with load.

    .venv/bin/python bench/embed.py [--n 1000] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

_VOCAB = (
    "the a an user agent memory vault note fact prefers metric units system deploy deploys "
    "happen on tuesday morning we should remember that project meeting notes about python "
    "code review git commit branch merge conflict index search recall keyword vector embedding "
    "markdown file folder obsidian link tag heading paragraph summary consolidation weekly "
    "report customer support ticket priority bug fix release version database migration "
    "schema query latency throughput benchmark server client request response timeout retry "
    "coffee lunch weather travel flight hotel booking invoice payment budget quarterly goals "
    "is are was were has have had will would can could likes prefers wants needs asked said "
    "decided agreed because however therefore although meanwhile yesterday today tomorrow "
    "Kubernetes PostgreSQL TypeScript authentication authorization idempotency serialization"
)
WORDS = _VOCAB.split()


def make_sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    words[0] = words[0].capitalize()
    # Some punctuation and numbers, as real notes have.
    for _ in range(n_words // 12):
        words[rng.randrange(n_words)] += rng.choice([",", ";", " (2024)", ":", " 42%"])
    return " ".join(words) + rng.choice([".", ".", ".", "?", "!"])


def mixed_sentences(n: int, seed: int = 20240611) -> list[str]:
    """60% typical (15-30 words), 25% short, 10% paragraphs, 5% over the 256-token limit."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.60:
            k = rng.randint(15, 30)
        elif r < 0.85:
            k = rng.randint(2, 10)
        elif r < 0.95:
            k = rng.randint(40, 90)
        else:
            k = rng.randint(150, 320)
        out.append(make_sentence(rng, k))
    return out


def typical_sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [make_sentence(rng, rng.randint(15, 30)) for _ in range(n)]


def cold_load() -> dict[str, float]:
    """Load time in a fresh interpreter (imports excluded, then first vector)."""
    code = (
        "import time, json\n"
        "import numpy, tokenizers, safetensors.numpy\n"
        "from mdmem.providers import minilm\n"
        "t = time.perf_counter(); m = minilm.load_minilm(); t1 = time.perf_counter()\n"
        "m.embed(['warm up the first query']); t2 = time.perf_counter()\n"
        "print(json.dumps({'load_s': t1 - t, 'first_vector_s': t2 - t}))\n"
    )
    runs = []
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def dense_flops_per_token(model: Any) -> float:
    """Multiply-adds x 2 of the dense layers (QKV, output, feed-forward) per token."""
    return 2.0 * sum(
        w.shape[0] * w.shape[1]
        for layer in model.layers
        for w in (layer.w_qkv, layer.w_o, layer.w_i, layer.w_out)
    )


def sgemm_gflops(model: Any, tokens: int = 4096, seconds: float = 2.0) -> float:
    """GFLOP/s of this machine's BLAS on the model's own dense layers (all
    cores, as many rows as a large batch), best of a few passes."""
    import numpy as np

    rng = np.random.default_rng(0)
    layer = model.layers[0]
    x = rng.standard_normal((tokens, layer.w_qkv.shape[0]), dtype=np.float32)
    inter = rng.standard_normal((tokens, layer.w_i.shape[1]), dtype=np.float32)
    flops = tokens * dense_flops_per_token(model) / len(model.layers)
    best = float("inf")
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t = time.perf_counter()
        _ = x @ layer.w_qkv, x @ layer.w_o, x @ layer.w_i, inter @ layer.w_out
        best = min(best, time.perf_counter() - t)
    return flops / best / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="sentences (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant (median)")
    parser.add_argument("--queries", type=int, default=100, help="single-query samples")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    from mdmem.providers import minilm

    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_start": os.getloadavg()[0],
            "workers": minilm.default_workers(),
        }
    }
    result["cold"] = cold_load()

    model = minilm.load_minilm()
    mixed = mixed_sentences(args.n)
    typical = typical_sentences(args.n)
    result["corpus"] = {
        "sentences": len(mixed),
        "mean_tokens_mixed": statistics.fmean(len(ids) for ids in model.tokenize(mixed)),
        "mean_tokens_typical": statistics.fmean(len(ids) for ids in model.tokenize(typical)),
    }

    # Single-query latency (what recall pays per query).
    queries = typical_sentences(args.queries, seed=99)
    model.embed(queries[:4])
    lat = []
    for q in queries:
        t = time.perf_counter()
        model.embed([q])
        lat.append((time.perf_counter() - t) * 1e3)
    lat.sort()
    result["query_ms"] = {
        "p50": statistics.median(lat),
        "p95": lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))],
    }

    variants: dict[str, dict[str, Any]] = {
        "naive": {"bucketed": False, "max_batch": 32, "workers": 0},
        "1-stream": {"workers": 0},
        "bucketed": {},
    }
    corpora = {"mixed": mixed, "typical": typical}
    times: dict[str, dict[str, list[float]]] = {c: {v: [] for v in variants} for c in corpora}
    cpu: dict[str, dict[str, list[float]]] = {c: {v: [] for v in variants} for c in corpora}
    for _ in range(args.repeats):
        for cname, texts in corpora.items():
            for vname, kwargs in variants.items():
                t, c = time.perf_counter(), time.process_time()
                model.embed(texts, **kwargs)
                times[cname][vname].append(time.perf_counter() - t)
                cpu[cname][vname].append(time.process_time() - c)
    throughput: dict[str, dict[str, float]] = {}
    per_cpu: dict[str, dict[str, float]] = {}
    for cname, texts in corpora.items():
        throughput[cname] = {}
        per_cpu[cname] = {}
        for vname in variants:
            throughput[cname][vname] = len(texts) / statistics.median(times[cname][vname])
            per_cpu[cname][vname] = len(texts) / statistics.median(cpu[cname][vname])
    result["throughput_sps"] = throughput
    # Sentences per CPU-second (all threads): far less sensitive than wall time
    # to other processes on the machine; BLAS spin-waiting counts as spent.
    result["sentences_per_cpu_s"] = per_cpu
    result["ratio_vs_naive"] = {
        c: {v: throughput[c][v] / throughput[c]["naive"] for v in variants} for c in corpora
    }
    peak = sgemm_gflops(model)
    per_token = dense_flops_per_token(model)
    result["ceiling"] = {
        "sgemm_gflops": peak,
        "dense_gflop_per_token": per_token / 1e9,
        "sentences_per_s": {
            c: peak * 1e9 / (per_token * result["corpus"][f"mean_tokens_{c}"]) for c in corpora
        },
    }
    result["machine"]["loadavg_end"] = os.getloadavg()[0]

    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    m = result["machine"]
    print(
        f"MiniLM numpy embedder - {m['cpus']} CPUs, {m['workers']} workers, "
        f"load avg {m['loadavg_start']:.1f} -> {m['loadavg_end']:.1f}"
    )
    print(
        f"corpus: {len(mixed)} mixed sentences (mean {result['corpus']['mean_tokens_mixed']:.1f}"
        f" tokens), {len(typical)} typical 15-30 words (mean "
        f"{result['corpus']['mean_tokens_typical']:.1f} tokens); median of {args.repeats}"
    )
    print()
    print(f"{'metric':<34}{'value':>12}")
    print("-" * 46)
    print(f"{'cold load (fresh process)':<34}{result['cold']['load_s'] * 1e3:>9.0f} ms")
    print(f"{'cold load + first vector':<34}{result['cold']['first_vector_s'] * 1e3:>9.0f} ms")
    print(f"{'single query p50':<34}{result['query_ms']['p50']:>9.1f} ms")
    print(f"{'single query p95':<34}{result['query_ms']['p95']:>9.1f} ms")
    print()
    ceiling = result["ceiling"]
    print(
        f"{'SGEMM, dense layers, all cores':<34}{ceiling['sgemm_gflops']:>7.0f} GFLOP/s"
        f"  ({ceiling['dense_gflop_per_token'] * 1e3:.1f} MFLOP per token)"
    )
    print()
    print(
        f"{'throughput (sentences/s)':<26}{'naive':>10}{'1-stream':>10}{'bucketed':>10}{'ratio':>9}"
        f"{'ceiling':>10}{'of it':>8}"
    )
    print("-" * 83)
    for cname in corpora:
        row = throughput[cname]
        ratio = result["ratio_vs_naive"][cname]["bucketed"]
        limit = ceiling["sentences_per_s"][cname]
        print(
            f"{cname:<26}{row['naive']:>10.1f}{row['1-stream']:>10.1f}{row['bucketed']:>10.1f}"
            f"{ratio:>8.2f}x{limit:>10.1f}{row['bucketed'] / limit:>8.0%}"
        )
    for cname in corpora:
        row = per_cpu[cname]
        ratio = row["bucketed"] / row["naive"]
        label = f"{cname} per CPU-second"
        print(
            f"{label:<26}{row['naive']:>10.1f}{row['1-stream']:>10.1f}{row['bucketed']:>10.1f}"
            f"{ratio:>8.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
