"""Scale benchmark: ingest throughput, warm recall latency, edit freshness, RSS.

Usage: python bench/scale.py [--sizes 1000,10000,100000] [--queries 100]
                             [--files 10000] [--embedder minilm] [--embed-after]
                             [--json]

Synthetic memories are sentences drawn from fixed word lists (seeded, so runs
compare); queries reuse a memory's content words in another order. Reported:

* ingest memories/s, keyword-only (embedder none) and with embeddings;
* recall p50/p95 (warm, the query embedding included) at each size;
* in a vault of --files files (one memory each), the time for the next
  recall to reflect a one-file edit, against a full rebuild (`reindex --full`)
  of that vault, as a ratio;
* memory: the RSS of a fresh process that opens each vault and runs the
  same recalls (what an agent serving that vault holds), and the peak RSS
  of this benchmark process (which also built every vault in one batch).

Targets (issue 3): recall p50 <= 20 ms at 10k and <= 60 ms at 100k; an edit
reflected in <= 150 ms and >= 100x faster than a full rebuild; keyword-only
ingest >= 2,000 memories/s; RSS <= 600 MB at 100k.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir

NAMES = [
    "Alice", "Bob", "Carmen", "Dmitri", "Eva", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemal", "Lena", "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
]  # fmt: skip
VERBS = [
    "deployed", "reviewed", "broke", "fixed", "migrated", "benchmarked", "documented",
    "refactored", "scheduled", "cancelled", "approved", "rejected", "tested", "profiled",
    "archived", "restored", "renamed", "monitored", "upgraded", "audited",
]  # fmt: skip
ADJS = [
    "legacy", "staging", "production", "nightly", "encrypted", "flaky", "shared", "internal",
    "public", "experimental", "deprecated", "critical", "regional", "mobile", "billing",
    "search", "analytics", "payment", "onboarding", "reporting",
]  # fmt: skip
NOUNS = [
    "database", "cluster", "pipeline", "dashboard", "service", "cache", "queue", "gateway",
    "scheduler", "backup", "certificate", "firewall", "repository", "runner", "index",
    "bucket", "webhook", "cron job", "load balancer", "feature flag", "API key rotation",
    "release", "invoice export", "login page", "sync worker", "report",
]  # fmt: skip
PLACES = [
    "Lisbon", "Berlin", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Seoul", "Austin",
    "Dublin", "the EU region", "the US region", "the test lab", "the data center",
]  # fmt: skip
WHEN = [
    "on Monday", "on Tuesday", "after the standup", "before the launch", "last sprint",
    "during the outage", "at midnight", "in the retro", "after the audit", "next quarter",
]  # fmt: skip


def sentence(rng: random.Random) -> tuple[str, str]:
    who, verb, adj, noun = rng.choice(NAMES), rng.choice(VERBS), rng.choice(ADJS), rng.choice(NOUNS)
    where, when = rng.choice(PLACES), rng.choice(WHEN)
    memory = f"{who} {verb} the {adj} {noun} in {where} {when}."
    query = f"who {verb} the {noun} {adj} {where}"
    return memory, query


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serving_rss_mb(root: Path, provider: str, queries: list[str]) -> float:
    """Peak RSS of a fresh process that opens ``root`` and recalls ``queries``."""
    env = dict(os.environ, MDMEM_EMBEDDER_PROVIDER=provider)
    done = subprocess.run(
        [sys.executable, __file__, "--serve", str(root)],
        input="\n".join(queries),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def serve(root: str) -> None:
    """The child of serving_rss_mb: open, recall every stdin line, print peak RSS."""
    from mdmem import Vault

    vault = Vault.open(root, agent="bench")
    for query in sys.stdin.read().splitlines():
        vault.recall(query, k=5)
    vault.close()
    # Not ru_maxrss: after fork + exec it still counts the parent's pages.
    with open("/proc/self/status", encoding="ascii") as status:
        peak_kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    print(int(peak_kb) / 1024)


def build(
    base: Path, name: str, n: int, provider: str, *, embed_after: bool = False
) -> tuple[object, float, list[str]]:
    """A vault of ``n`` memories; ``embed_after``: ingest keyword-only, then embed all at once.

    The second way skips auto-resolve's one-by-one embedding during the
    import (it then never compares the new memories with each other), which
    makes 100k memories with MiniLM a matter of minutes instead of half an hour.
    """
    from mdmem import Vault

    os.environ["MDMEM_EMBEDDER_PROVIDER"] = "none" if embed_after else provider
    vault = Vault.init(base / name, agent="bench")
    rng = random.Random(n)
    queries = []
    start = time.perf_counter()
    with vault.batch("bench ingest"):
        for i in range(n):
            text, query = sentence(rng)
            vault.remember(f"{text} (#{i})")
            if len(queries) < 500:
                queries.append(query)
    if embed_after:
        vault.close()
        os.environ["MDMEM_EMBEDDER_PROVIDER"] = provider
        vault = Vault.open(base / name, agent="bench")
        vault.reindex()  # embeds every block in batches
    return vault, n / (time.perf_counter() - start), queries


def whoosh_alone(directory: Path, n: int) -> float:
    """Baseline: the same sentences straight into Whoosh with the tuned bulk
    writer and mdmem's schema, no vault, files, git or ids (documents/s)."""
    from datetime import UTC, datetime

    from whoosh import index

    from mdmem.index.keyword import BULK_WRITER_ARGS, build_schema
    from mdmem.index.whoosh_compat import cache_missing_length_columns, inlining_codec

    cache_missing_length_columns()  # Whoosh as mdmem runs it
    rng = random.Random(n)
    created = datetime.now(UTC).replace(tzinfo=None, second=0, microsecond=0)
    docs = [
        {
            "id": f"m-{i:012d}",
            "text": f"{sentence(rng)[0]} (#{i})",
            "path": "MEMORY",
            "kind": "fact",
            "scope": "<root>",
            "status": "active",
            "created": created,
        }
        for i in range(n)
    ]
    directory.mkdir(parents=True)
    ix = index.create_in(str(directory), build_schema(), indexname="MAIN")
    start = time.perf_counter()
    writer = ix.writer(codec=inlining_codec(), **BULK_WRITER_ARGS)
    for doc in docs:
        writer.add_document(**doc)
    writer.commit()
    return n / (time.perf_counter() - start)


def recall_latency(vault: object, queries: list[str], count: int) -> list[float]:
    times = []
    for query in queries[:5]:
        vault.recall(query, k=5)  # type: ignore[attr-defined]
    for query in (queries * 3)[:count]:
        start = time.perf_counter()
        vault.recall(query, k=5)  # type: ignore[attr-defined]
        times.append((time.perf_counter() - start) * 1000)
    return times


def edit_freshness(base: Path, files: int, provider: str, rounds: int = 10) -> dict[str, float]:
    """A vault of ``files`` notes: the next recall after editing one, vs a full rebuild."""
    from mdmem import Vault

    os.environ["MDMEM_EMBEDDER_PROVIDER"] = provider
    root = base / f"files-{files}"
    vault = Vault.init(root, agent="bench")
    rng = random.Random(7)
    notes = root / "notes"
    for i in range(files):
        folder = notes / f"{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        text, _ = sentence(rng)
        (folder / f"note-{i:05d}.md").write_text(f"# Note {i}\n\n{text}\n", encoding="utf-8")
    vault.close()
    vault = Vault.open(root)  # indexes every note once
    vault.recall("warm up the caches", k=5)
    edit_ms = []
    for r in range(rounds):
        target = notes / f"{(r * 37) % (files // 500 or 1):03d}" / f"note-{(r * 37) % files:05d}.md"
        if not target.exists():
            target = next(notes.rglob("*.md"))
        marker = f"zanzibarcode{r}"
        target.write_text(f"# Edited {r}\n\nThe {marker} ferry leaves at noon.\n", encoding="utf-8")
        start = time.perf_counter()
        hits = vault.recall(f"{marker} ferry", k=1).items
        edit_ms.append((time.perf_counter() - start) * 1000)
        assert hits and marker in hits[0].text, "edit not reflected"
    start = time.perf_counter()
    vault.reindex(full=True)
    full_s = time.perf_counter() - start
    vault.close()
    return {"edit_ms": median(edit_ms), "full_rebuild_s": full_s}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument(
        "--embed-after",
        action="store_true",
        help="build each size keyword-only, then embed it in one reindex (fast for 100k)",
    )
    parser.add_argument(
        "--ingest-runs", type=int, default=5, help="keyword-only ingest runs (median reported)"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    base = scratch_dir("mdmem-bench-scale-")

    results: dict[str, object] = {"sizes": {}}
    kw_rates, whoosh_rates = [], []
    ingest_n = max(sizes[0], 10_000)
    for run in range(max(1, args.ingest_runs)):
        # Alternating with the baseline, so both see the same machine load.
        kw_vault, rate, _ = build(base, f"kw-only-{run}", ingest_n, "none")
        kw_vault.close()  # type: ignore[attr-defined]
        kw_rates.append(rate)
        whoosh_rates.append(whoosh_alone(base / f"whoosh-{run}", ingest_n))
    kw_rate = median(kw_rates)
    results["ingest_keyword_only_per_s"] = kw_rate
    results["ingest_keyword_only_runs"] = kw_rates
    results["whoosh_alone_per_s"] = median(whoosh_rates)
    rows = []
    for n in sizes:
        vault, rate, queries = build(base, f"v{n}", n, args.embedder, embed_after=args.embed_after)
        times = recall_latency(vault, queries, args.queries)
        entry = {
            "ingest_per_s": rate,
            "recall_p50_ms": median(times),
            "recall_p95_ms": percentile(times, 95),
            "rss_mb": rss_mb(),
        }
        vault.close()  # type: ignore[attr-defined]
        entry["serving_rss_mb"] = serving_rss_mb(base / f"v{n}", args.embedder, queries[:50])
        results["sizes"][str(n)] = entry  # type: ignore[index]
        rows.append(
            [
                f"{n:,}",
                rate,
                entry["recall_p50_ms"],
                entry["recall_p95_ms"],
                entry["serving_rss_mb"],
                entry["rss_mb"],
            ]
        )
    fresh = edit_freshness(base, args.files, args.embedder)
    results["edit"] = {**fresh, "ratio": fresh["full_rebuild_s"] * 1000 / fresh["edit_ms"]}
    results["peak_rss_mb"] = rss_mb()
    if args.json:
        emit_json(results)
        return
    how = ", embedded after a keyword-only ingest" if args.embed_after else ""
    print_table(
        f"recall and ingest ({args.embedder} embedder{how}, warm, {args.queries} queries, k=5)",
        [
            "memories",
            "ingest /s",
            "recall p50 ms",
            "recall p95 ms",
            "serving RSS MB",
            "bench peak RSS MB",
        ],
        rows,
    )
    edit = results["edit"]
    print_table(
        f"freshness in a {args.files:,}-file vault",
        ["measure", "value", "target"],
        [
            [
                f"keyword-only ingest (memories/s, median of {len(kw_rates)})",
                kw_rate,
                ">= 2,000",
            ],
            ["keyword-only ingest, slowest run (memories/s)", min(kw_rates), ""],
            [
                "baseline: Whoosh alone, same sentences, tuned writer (docs/s)",
                results["whoosh_alone_per_s"],
                "",
            ],
            [
                "ingest / Whoosh alone",
                kw_rate / results["whoosh_alone_per_s"],  # type: ignore[operator]
                "",
            ],
            ["next recall after a one-file edit (ms)", edit["edit_ms"], "<= 150"],  # type: ignore[index]
            ["full rebuild (s)", edit["full_rebuild_s"], ""],  # type: ignore[index]
            ["full rebuild / edit", edit["ratio"], ">= 100"],  # type: ignore[index]
            [
                f"serving RSS at {sizes[-1]:,} (MB)",
                results["sizes"][str(sizes[-1])]["serving_rss_mb"],  # type: ignore[index]
                "<= 600 at 100k",
            ],
            ["bench process peak RSS (MB)", results["peak_rss_mb"], ""],
        ],
    )


if __name__ == "__main__":
    main()
