"""Latency of the per-session features a host calls on its hot paths (issue 18).

Usage: python bench/session_features.py [--memories 2000] [--samples 30] [--json]

On a vault holding --memories memories, prints p50/p95 (ms) of:
capture_tool_results for one call (a passing call with nothing to record,
a failing call that writes a gotcha), summarize_session (extractive) of a
40-turn session, changes("last-session") after 50 commits, the
session-start prompt section (changes + mark), pending push and take, and
flush_reminder. A post-tool-use hook pays the first two on every call.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir


def timed(samples: int, fn: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(samples):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import os

    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
    from mdmem import Vault
    from mdmem.memory.capture.toolcalls import ToolCall

    base = scratch_dir("mdmem-bench-session-")
    vault = Vault.init(base / "vault", agent="bench", consolidation={"auto": False})
    with vault.batch("seed"):
        for n in range(args.memories):
            vault.remember(f"Seed fact {n}: the service {n % 97} listens on port {8000 + n}.")
    s = vault.session("bench-s")
    for n in range(40):
        s.record("user" if n % 2 else "assistant", f"Turn {n}: we discussed deploying service {n}.")
    vault.git.mark_seen()
    for n in range(50):
        vault.remember(f"Change {n}: release {n} shipped to staging.")

    rows = []

    def add(name: str, ms: list[float]) -> None:
        rows.append((name, len(ms), median(ms), percentile(ms, 95)))

    add(
        "capture_tool_results, passing call",
        timed(
            args.samples,
            lambda i: vault.sessions.capture_tool_results(
                "bench-s", [ToolCall("Read", {"file_path": f"f{i}.py"}, "ok", success=True)]
            ),
        ),
    )
    add(
        "capture_tool_results, failing call",
        timed(
            args.samples,
            lambda i: vault.sessions.capture_tool_results(
                "bench-s",
                [ToolCall("Bash", f"make t{i}", f"error: target t{i} failed", exit_code=2)],
            ),
        ),
    )

    def summary(i: int) -> object:
        s.record("user", f"One more turn {i} about the rollout.")
        return vault.sessions.summarize("bench-s")

    add("summarize_session (1 new turn + record)", timed(args.samples, summary))
    add("changes('last-session'), 50 commits", timed(args.samples, lambda i: vault.git.changes()))
    add(
        "session-start section (changes + mark)",
        timed(
            args.samples,
            lambda i: vault.prompt_context(
                "start",
                session_start=True,
                session=f"s{i}",
                semantic_k=0,
                recent_n=0,
                episodes_k=0,
            ),
        ),
    )
    add("pending push", timed(args.samples, lambda i: vault.sessions.pending.push(f"message {i}")))
    add("pending take (1)", timed(args.samples, lambda i: vault.sessions.pending.take(limit=1)))
    add(
        "flush_reminder",
        timed(args.samples, lambda i: vault.sessions.flush_reminder(session="bench-s")),
    )
    vault.close()
    if args.json:
        emit_json([dict(zip(("op", "n", "p50_ms", "p95_ms"), r, strict=True)) for r in rows])
    else:
        print_table(
            f"Session features on a vault of {args.memories:,} memories (ms)",
            ("operation", "n", "p50", "p95"),
            rows,
        )


if __name__ == "__main__":
    main()
