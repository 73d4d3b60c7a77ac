"""The memory viewer's page times on large vaults (issue 35: a page in <= 300 ms at 100k).

Usage: python bench/ui.py [--sizes 1000,10000,100000] [--commits 2000] [--rounds 7]
                          [--cache DIR] [--json]

Each size is the scale corpus of bench/scale.py (sessions, ledgers, episodes,
documents, git history; built once into --cache, default /tmp/mdmem-ui-bench-cache).
A copy of it is opened, ``mdmem ui``'s server started on it (UiServer, a real
HTTP server on 127.0.0.1) and each page requested --rounds times over real HTTP
with the session cookie the printed URL sets: the first page of memories, a
deep page (page 20, reached by its "older" links), a kind filter, a file
filter, a search (hybrid recall), a memory with its git history, and the hook
log. The table shows median and
worst milliseconds per page and size, and each page's median as a ratio to the
same page at the smallest size (the baseline, measured in the same run), beside
the load average.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import scale

from tests.ui.conftest import login


def pages(vault: Any) -> dict[str, str]:
    from urllib.parse import urlencode

    first = vault.library.list(limit=1)[0]
    return {
        "memories, page 1": "/",
        "memories, page 20": "",  # filled in by following "older →" (a cursor)
        "kind=fact": "/?kind=fact",
        "file=MEMORY.md": "/?file=MEMORY.md",
        "search": "/?" + urlencode({"q": "what did we decide about the release schedule"}),
        "one memory + history": f"/m/{first.id}",
        "hook log": "/hooks",
    }


def run_size(n: int, args: argparse.Namespace, cache: Path) -> dict[str, Any]:
    from mdmem import Vault
    from mdmem.ui import UiServer

    vault_dir, root, info = scale.corpus(n, cache, args.commits)
    work = cache / f"work-{n}"
    copy, copy_root = scale.work_copy(vault_dir, root, work)
    with scale.state_root(copy_root):
        vault = Vault.open(copy, agent="bench")
        server = UiServer(vault)
        server.start()
        try:
            session = login(server)
            out: dict[str, Any] = {"memories": info["memories"]}
            listed = pages(vault)
            deep = "/"
            for _ in range(19):
                body = session.get(deep).body
                found = re.search(r'<a href="([^"]+)">older →</a>', body)
                if found is None:
                    break
                # The page's links carry the session's path: the pages here are below it.
                deep = html.unescape(found.group(1)).removeprefix(session.base)
            listed["memories, page 20"] = deep
            for name, path in listed.items():
                times = []
                for _ in range(args.rounds):
                    start = time.perf_counter()
                    reply = session.get(path)
                    times.append((time.perf_counter() - start) * 1000)
                    assert reply.status == 200, (path, reply.status, reply.body[:200])
                out[name] = {"p50": statistics.median(times), "max": max(times)}
                scale.log(f"{n:,} {name}: p50 {out[name]['p50']:.0f} ms (load {scale.load()})")
        finally:
            server.close()
            vault.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--commits", type=int, default=2_000, help="most commits of history")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--cache", default=os.environ.get("MDMEM_UI_BENCH_CACHE", "/tmp/mdmem-ui-bench-cache")
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MDMEM_SERVER", "off")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {n: run_size(n, args, cache) for n in sizes}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    base = sizes[0]
    names = [k for k in results[base] if k != "memories"]
    print(f"load average: {scale.load()}  (ratio: median / the same page at {base:,})")
    print("| page | " + " | ".join(f"{n:,}: p50 / max ms (ratio)" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name in names:
        cells = []
        for n in sizes:
            r = results[n][name]
            ratio = r["p50"] / max(results[base][name]["p50"], 1e-9)
            cells.append(f"{r['p50']:.0f} / {r['max']:.0f} ({ratio:.1f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
