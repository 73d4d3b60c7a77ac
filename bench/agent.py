"""Agent-facing overhead: prefetch and the recall tool, from Python and over MCP.

Usage: python bench/agent.py [--memories 10000] [--queries 100]
                             [--embedder minilm|hash] [--json]

Seeds a vault with --memories synthetic memories (one batch commit), then
measures warm latencies (p50/p95 ms) of:

* ``vault.recall(q, k=5)``                   the baseline every row is compared to;
* ``MemoryHooks.prefetch(q)``                recall + the "## Recalled Memory" block;
* ``Toolset.dispatch("recall", …)``          argument validation + JSON shaping;
* MCP ``recall`` tool call over stdio          a real client session to ``mdmem serve``;
* MCP ``context`` tool call over stdio         the MCP counterpart of prefetch.

"ratio" is p50 divided by the baseline p50 measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir
from scale import sentence

REPO = Path(__file__).resolve().parent.parent


def seed(base: Path, n: int, provider: str) -> tuple[Any, list[str], float]:
    from mdmem import Vault

    os.environ["MDMEM_EMBEDDER_PROVIDER"] = provider
    vault = Vault.init(base / "vault", agent="bench")
    rng = random.Random(n)
    queries: list[str] = []
    start = time.perf_counter()
    with vault.batch("bench seed"):
        for i in range(n):
            text, query = sentence(rng)
            vault.remember(f"{text} (#{i})")
            if len(queries) < 500:
                queries.append(query)
    vault.reindex()  # checkpoint, so the MCP server process opens warm indexes
    return vault, queries, time.perf_counter() - start


def timed(fn: Any, queries: list[str], count: int) -> list[float]:
    for q in queries[:5]:
        fn(q)
    times = []
    for q in (queries * 3)[:count]:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    return times


def mcp_times(vault_root: Path, queries: list[str], count: int) -> dict[str, list[float]]:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {
        "MDMEM_STATE_DIR": os.environ["MDMEM_STATE_DIR"],
        "MDMEM_EMBEDDER_PROVIDER": os.environ["MDMEM_EMBEDDER_PROVIDER"],
        "PYTHONPATH": str(REPO),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mdmem.cli.serve", "serve", "--vault", str(vault_root)],
        env=env,
    )
    out: dict[str, list[float]] = {"recall": [], "context": []}

    async def run() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            for tool, extra in (("recall", {"top_k": 5}), ("context", {"top_k": 5})):
                for q in queries[:5]:
                    await client.call_tool(tool, {"query": q, **extra})
                for q in (queries * 3)[:count]:
                    start = time.perf_counter()
                    result = await client.call_tool(tool, {"query": q, **extra})
                    out[tool].append((time.perf_counter() - start) * 1000)
                    if result.is_error:
                        raise RuntimeError(f"MCP {tool} failed: {result.content}")

    anyio.run(run)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hash")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from mdmem.agent.hooks import MemoryHooks
    from mdmem.mcp.tools import Toolset

    base = scratch_dir("mdmem-bench-agent-")
    vault, queries, seed_s = seed(base, args.memories, args.embedder)
    hooks = MemoryHooks(vault, llm=None)
    tools = Toolset(vault)

    rows: list[tuple[str, str, list[float]]] = [
        (
            "vault.recall (baseline)",
            "python",
            timed(lambda q: vault.recall(q, k=5), queries, args.queries),
        ),
        ("prefetch", "python", timed(hooks.prefetch, queries, args.queries)),
        (
            "recall tool",
            "python",
            timed(lambda q: tools.dispatch("recall", {"query": q}), queries, args.queries),
        ),
    ]
    vault.close()
    mcp = mcp_times(vault.root, queries, args.queries)
    rows += [
        ("recall tool", "mcp stdio", mcp["recall"]),
        ("context tool (prefetch)", "mcp stdio", mcp["context"]),
    ]
    hooks.shutdown()

    base_p50 = median(rows[0][2])
    table = [
        {
            "operation": name,
            "path": path,
            "p50_ms": round(median(times), 3),
            "p95_ms": round(percentile(times, 95), 3),
            "ratio": round(median(times) / base_p50, 2) if base_p50 else None,
            "n": len(times),
        }
        for name, path, times in rows
    ]
    if args.json:
        emit_json(
            {
                "memories": args.memories,
                "embedder": args.embedder,
                "seed_seconds": round(seed_s, 1),
                "results": table,
            }
        )
        return
    print_table(
        f"agent overhead at {args.memories:,} memories (embedder {args.embedder}; "
        f"seeded in {seed_s:.1f} s)",
        ["operation", "path", "p50 ms", "p95 ms", "ratio", "n"],
        [[r["operation"], r["path"], r["p50_ms"], r["p95_ms"], r["ratio"], r["n"]] for r in table],
    )


if __name__ == "__main__":
    main()
