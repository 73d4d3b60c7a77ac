"""The keyword index alone at 100k and 1M blocks: query cost, update cost, merges.

Usage: python bench/scale_keyword.py [--sizes 100000,1000000] [--queries 200]
                                     [--updates 50] [--cache DIR] [--json]

Each size's blocks are those of the bench/scale_corpus.py vault of that many
memories (made in memory, no git; each block as the indexer derives it, with
its index-only context), indexed once with the bulk writer into
``--cache/keyword-v<GEN>-<n>/`` (kept between runs) and copied for each run.
Reported per size, wall time beside CPU time (the machine is shared):

* a query as recall asks it (``limit=100``, no filter): p50/p95 on a fresh
  process's first sight of each query (postings read from disk) and again
  once they were read (warm), with the baseline of the same queries'
  analysis alone;
* one ``upsert`` of a single block (a ``remember``'s keyword commit):
  p50 and the slowest, and the segments and partitions after them;
* the bulk build time (when built in this run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_corpus
from _common import emit_json, median, percentile, print_table


def log(*parts: object) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *parts, file=sys.stderr, flush=True)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def corpus_blocks(n: int) -> tuple[Iterator[Any], list[str]]:
    """(the indexed blocks of the ``n``-memory corpus, its queries)."""
    from mdmem.files.blocks import parse
    from mdmem.files.textfile import SkipFile, decode
    from mdmem.index.blocktext import indexable
    from mdmem.index.context import IndexedBlock, TurnOrder, context_of
    from mdmem.models import Block

    gen = scale_corpus.Generator(n)
    for _ in scale_corpus._take(gen.ops(), gen, n):
        pass
    files = gen.vault.files
    fields = [f for f in Block.__dataclass_fields__]

    def blocks() -> Iterator[Any]:
        for path in sorted(files):
            try:
                parsed = parse(path, decode("".join(files.pop(path)).encode()))
            except SkipFile:
                continue
            order = TurnOrder(lambda _path, found=parsed.blocks: found)  # type: ignore[misc]
            for block in parsed.blocks:
                if not indexable(block):
                    continue
                if block.is_memory:
                    context = context_of(block, order.previous(block))
                    block = IndexedBlock(**{f: getattr(block, f) for f in fields}, context=context)
                yield block

    return blocks(), gen.queries


def cached_index(n: int, cache: Path) -> tuple[Path, dict[str, Any]]:
    home = cache / f"keyword-v{scale_corpus.GEN_VERSION}-{n}"
    info_path = home / "info.json"
    if info_path.exists():
        return home / "index", json.loads(info_path.read_text())
    from mdmem.index.keyword import KeywordIndex

    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    log(f"{n:,}: generating the corpus's blocks (once; load {load()})")
    start = time.perf_counter()
    blocks, queries = corpus_blocks(n)
    sample: list[dict[str, Any]] = []

    def kept(it: Iterator[Any]) -> Iterator[Any]:
        for i, block in enumerate(it):
            if i % max(1, n // 200) == 0 and len(sample) < 200:
                sample.append(_block_json(block))
            yield block

    index = KeywordIndex.create(home / "index")
    log(f"{n:,}: indexing (bulk writer)")

    def progress(done: int) -> None:
        if done % 100_000 == 0:
            log(f"  {done:,}")

    count = index.add_many(kept(blocks), bulk=True, progress=progress)
    index.close()
    info = {
        "blocks": count,
        "queries": queries,
        "sample": sample,
        "build_s": round(time.perf_counter() - start, 1),
        "build_load": load(),
    }
    info_path.write_text(json.dumps(info))
    return home / "index", info


def _block_json(block: Any) -> dict[str, Any]:
    return {
        "id": block.id,
        "path": block.path,
        "text": block.text,
        "heading": block.heading,
        "kind": block.kind,
        "scope": block.scope,
        "created": block.created.isoformat(),
        "tags": list(block.tags),
        "context": getattr(block, "context", ""),
    }


def _block_of(data: dict[str, Any], i: int) -> Any:
    from datetime import datetime

    from mdmem.index.context import IndexedBlock

    return IndexedBlock(
        id=data["id"],
        path=data["path"],
        line_start=1,
        line_end=1,
        text=f"{data['text']} updated {i}",
        heading=data["heading"],
        kind=data["kind"],
        scope=data["scope"],
        created=datetime.fromisoformat(data["created"]),
        tags=tuple(data["tags"]),
        status="active",
        updated=None,
        content_hash=f"bench-{i}",
        context=data["context"],
    )


def measure(directory: Path, queries: list[str], count: int) -> dict[str, Any]:
    """The child: a fresh process opens the index and runs the queries twice."""
    from mdmem.index.keyword import KeywordIndex

    start, cpu = time.perf_counter(), time.process_time()
    index = KeywordIndex(directory)
    opened = (time.perf_counter() - start, time.process_time() - cpu)
    for q in queries[:5]:  # imports, length columns: not what a query costs
        index.search(q, limit=100, statuses=None)
    asked = queries[5 : 5 + count]

    def timed(fn: Any) -> tuple[list[float], list[float]]:
        wall, cpu_ms = [], []
        for q in asked:
            start, cpu = time.perf_counter(), time.process_time()
            fn(q)
            wall.append((time.perf_counter() - start) * 1000)
            cpu_ms.append((time.process_time() - cpu) * 1000)
        return wall, cpu_ms

    analysis = timed(index.query_terms)
    cold = timed(lambda q: index.search(q, limit=100, statuses=None))
    warm = timed(lambda q: index.search(q, limit=100, statuses=None))
    with open("/proc/self/status", encoding="ascii") as status:
        peak_kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    index.close()
    return {
        "open_s": opened[0],
        "open_cpu_s": opened[1],
        "analysis": analysis,
        "cold": cold,
        "warm": warm,
        "rss_mb": int(peak_kb) / 1024,
    }


def updates(directory: Path, sample: list[dict[str, Any]], count: int) -> dict[str, Any]:
    from mdmem.index.keyword import KeywordIndex

    index = KeywordIndex(directory)
    wall, cpu_ms = [], []
    for i in range(count):
        block = _block_of(sample[i % len(sample)], i)
        start, cpu = time.perf_counter(), time.process_time()
        index.upsert([block])
        wall.append((time.perf_counter() - start) * 1000)
        cpu_ms.append((time.process_time() - cpu) * 1000)
    segments = len(list(directory.rglob("*.seg")))
    index.close()
    return {"wall": wall, "cpu": cpu_ms, "segments": segments}


def run_size(n: int, args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    directory, info = cached_index(n, cache)
    work = cache / f"keyword-work-{n}"
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["cp", "-a", str(directory), str(work)], check=True)
    log(f"{n:,}: queries in a fresh process (load {load()})")
    done = subprocess.run(
        [sys.executable, __file__, "--measure", str(work), "--queries", str(args.queries)],
        input=json.dumps(info["queries"]),
        capture_output=True,
        text=True,
        check=True,
    )
    q = json.loads(done.stdout.strip().splitlines()[-1])
    log(f"{n:,}: single updates")
    u = updates(work, info["sample"], args.updates)
    shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {
        "blocks": info["blocks"],
        "build_s": info["build_s"],
        "open_s": q["open_s"],
        "rss_mb": q["rss_mb"],
        "segments_after": u["segments"],
        "load": load(),
    }
    for name in ("analysis", "cold", "warm"):
        wall, cpu = q[name]
        out[f"{name}_p50_ms"] = median(wall)
        out[f"{name}_p95_ms"] = percentile(wall, 95)
        out[f"{name}_cpu_p50_ms"] = median(cpu)
        out[f"{name}_cpu_p95_ms"] = percentile(cpu, 95)
    out["update_p50_ms"] = median(u["wall"])
    out["update_max_ms"] = max(u["wall"])
    out["update_cpu_p50_ms"] = median(u["cpu"])
    out["update_cpu_max_ms"] = max(u["cpu"])
    return out


ROWS = [
    ("blocks", "blocks indexed"),
    ("build_s", "bulk build (s, once)"),
    ("open_s", "open (s)"),
    ("analysis_cpu_p50_ms", "baseline: query analysis alone, CPU p50 (ms)"),
    ("cold_p50_ms", "query, postings read from disk: wall p50 (ms)"),
    ("cold_p95_ms", "  wall p95 (ms)"),
    ("cold_cpu_p50_ms", "  CPU p50 (ms)"),
    ("cold_cpu_p95_ms", "  CPU p95 (ms)"),
    ("warm_p50_ms", "query, postings read before: wall p50 (ms)"),
    ("warm_p95_ms", "  wall p95 (ms)"),
    ("warm_cpu_p50_ms", "  CPU p50 (ms)"),
    ("warm_cpu_p95_ms", "  CPU p95 (ms)"),
    ("rss_mb", "peak RSS of the querying process (MB)"),
    ("update_p50_ms", "one block's upsert: wall p50 (ms)"),
    ("update_cpu_p50_ms", "  CPU p50 (ms)"),
    ("update_max_ms", "  slowest wall (ms, merges)"),
    ("update_cpu_max_ms", "  slowest CPU (ms)"),
    ("segments_after", "segments after the updates"),
]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--updates", type=int, default=50)
    parser.add_argument(
        "--cache", default=os.environ.get("MDMEM_BENCH_CACHE", "/tmp/mdmem-scale-cache")
    )
    parser.add_argument("--prepare", action="store_true", help="only build the cached indexes")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        queries = json.loads(sys.stdin.read())
        print(json.dumps(measure(Path(args.measure), queries, args.queries)))
        return
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.prepare:
        for n in sizes:
            cached_index(n, cache)
        return
    results = {str(n): run_size(n, args, cache) for n in sizes}
    if args.json:
        emit_json(results)
        return
    rows = [[label, *(results[str(n)][key] for n in sizes)] for key, label in ROWS]
    print_table(f"keyword index alone (load {load()})", ["", *(f"{n:,}" for n in sizes)], rows)


if __name__ == "__main__":
    main()
