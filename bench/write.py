"""Write-path benchmark: `remember` and `Session.record` latency (durable, one commit each)
and batch throughput.

Usage: python bench/write.py [--memories 10000] [--samples 200] [--batch 5000] [--json]

Prints p50/p95 of a single `remember` (atomic fsynced write + git commit) on a
vault that already holds --memories memories, batch throughput, and as a
baseline measured in the same run the cost of the two things a durable write
cannot avoid: an fsynced file replace and one `git commit` of one file.
Targets (issue 2): p50 <= 40 ms single; >= 1,000 memories/s in a batch. A
recorded chat turn (issue 17) costs what a remember costs: record p50 / remember
p50 ~ 1 (automatic consolidation, on by default, runs inside the turn that
crosses the threshold: it shows in p95 and the mean), and turns recorded inside
`vault.batch()` go in one commit like memories.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir


def baseline(root: Path, samples: int) -> tuple[list[float], list[float]]:
    """fsync+replace of the vault's MEMORY.md-sized file, and a bare git commit."""
    from mdmem.files.textfile import atomic_write

    memory = root / "MEMORY.md"
    data = memory.read_bytes()
    fsync_ms, commit_ms = [], []
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    scratch = root / "baseline.md"
    for i in range(samples):
        start = time.perf_counter()
        atomic_write(scratch, data + f"- {i}\n".encode())
        fsync_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        subprocess.run(
            [
                "git",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "gc.auto=0",
                "-c",
                "maintenance.auto=false",
                "add",
                "baseline.md",
            ],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                "git",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "gc.auto=0",
                "-c",
                "maintenance.auto=false",
                "-c",
                "core.fsync=committed",
                "commit",
                "-q",
                "--no-verify",
                "-m",
                f"b{i}",
                "--",
                "baseline.md",
            ],
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
        commit_ms.append((time.perf_counter() - start) * 1000)
    return fsync_ms, commit_ms


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = scratch_dir("mdmem-bench-write-")
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "none")
    from mdmem import Vault

    vault = Vault.init(base / "vault", agent="bench")
    start = time.perf_counter()
    with vault.batch("seed"):
        for i in range(args.memories):
            vault.remember(f"Seed memory {i}: the user mentioned topic {i % 97} on day {i % 31}.")
    seed_s = time.perf_counter() - start

    single = []
    for i in range(args.samples):
        start = time.perf_counter()
        vault.remember(f"Single durable memory {i} about project {i % 13}.")
        single.append((time.perf_counter() - start) * 1000)

    session = vault.session("bench-chat", source="bench", contact="alice")
    turns = []
    for i in range(args.samples):
        start = time.perf_counter()
        session.record(
            "user" if i % 2 == 0 else "assistant", f"Chat turn {i} about errand {i % 17}."
        )
        turns.append((time.perf_counter() - start) * 1000)

    importer = vault.session("bench-import", source="bench")
    start = time.perf_counter()
    with vault.batch("bench import"):
        for i in range(args.batch):
            importer.record("user", f"Imported turn {i} about chore {i % 89}.", event_id=f"i{i}")
    import_s = time.perf_counter() - start

    start = time.perf_counter()
    with vault.batch("bench batch"):
        for i in range(args.batch):
            vault.remember(f"Batch memory {i} noting detail {i % 101}.")
    batch_s = time.perf_counter() - start

    fsync_ms, commit_ms = baseline(vault.root, min(args.samples, 100))
    floor = median(fsync_ms) + median(commit_ms)
    results = {
        "vault_memories": args.memories,
        "single_p50_ms": median(single),
        "single_p95_ms": percentile(single, 95),
        "batch_per_s": args.batch / batch_s,
        "record_p50_ms": median(turns),
        "record_p95_ms": percentile(turns, 95),
        "record_mean_ms": sum(turns) / len(turns),
        "record_p50_over_remember_p50": median(turns) / median(single),
        "record_batch_per_s": args.batch / import_s,
        "seed_per_s": args.memories / seed_s,
        "baseline_fsync_replace_ms": median(fsync_ms),
        "baseline_git_commit_ms": median(commit_ms),
        "single_p50_over_floor": median(single) / floor,
    }
    if args.json:
        emit_json(results)
        return
    print_table(
        f"remember on a vault of {args.memories:,} memories ({args.samples} samples)",
        ["measure", "value", "target"],
        [
            ["single remember p50 (ms)", results["single_p50_ms"], "<= 40"],
            ["single remember p95 (ms)", results["single_p95_ms"], ""],
            [f"batch of {args.batch:,} (memories/s)", results["batch_per_s"], ">= 1,000"],
            ["Session.record p50 (ms)", results["record_p50_ms"], "<= 40"],
            ["Session.record p95 (ms)", results["record_p95_ms"], ""],
            ["Session.record mean (ms, incl. auto-consolidation)", results["record_mean_ms"], ""],
            ["record p50 / remember p50", results["record_p50_over_remember_p50"], "~ 1"],
            [
                f"record {args.batch:,} turns in one vault.batch() (turns/s)",
                results["record_batch_per_s"],
                "",
            ],
            [f"seed batch of {args.memories:,} (memories/s)", results["seed_per_s"], ""],
            [
                "baseline: fsynced replace of MEMORY.md (ms)",
                results["baseline_fsync_replace_ms"],
                "",
            ],
            ["baseline: git add + commit of one file (ms)", results["baseline_git_commit_ms"], ""],
            ["single p50 / (replace + commit) floor", results["single_p50_over_floor"], ""],
        ],
    )


if __name__ == "__main__":
    main()
