"""The prompt hook on a coding vault, as a host runs it: identifiers, related, unrelated.

Usage: python bench/coding_hook.py [--coding FILE ...] [--latency-ms MS] [--json]

Each coding set (default: ``bench/data/coding-heldout.json``, which nothing is
fitted on, and ``bench/data/coding-dev.json``) is written into a fresh vault
(one ``remember`` per memory), and every prompt of it is put to
``mdmem --vault V hook prompt-submit --host claude-code`` as a process, with a
Claude Code ``UserPromptSubmit`` payload on stdin (bench/inject.py's
``Hooks``: default token budgets, the latency ceiling raised so a loaded
machine does not time out), twice:

* cold: no warm server, so the hook recalls keyword-only, as on a session's
  first prompt;
* warm: after ``mdmem server start``, hybrid, as on every later prompt.

Reported per set and run: ``exact injected`` (prompts naming an identifier
whose memory is in the injected context; the rule of mdmem/recall/identifiers.py
says every one), ``exact first`` (cited first), ``related injected``,
``unrelated silent`` (nothing injected), the median memories injected for
related prompts, and p50 ms of the hook process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir
from inject import _CITED, Hooks

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = (
    ROOT / "bench" / "data" / "coding-heldout.json",
    ROOT / "bench" / "data" / "coding-dev.json",
)


def record(data: dict[str, Any], path: Path) -> dict[str, str]:
    """A fresh vault holding the set's memories: memory key -> id."""
    from mdmem import Vault

    vault = Vault.init(
        path, agent="coding-hook-bench", secrets="off", consolidation={"auto": False}
    )
    with vault.batch():
        ids = {m["key"]: vault.remember(m["text"], kind="fact").id for m in data["memories"]}
    vault.recall("warm up", k=1)  # the indexes are built before a server opens them
    vault.close()
    return ids


def ask(hooks: Hooks, vault: Path, data: dict[str, Any], ids: dict[str, str]) -> dict[str, float]:
    exact = [(r["prompt"], ids[r["memory"]]) for r in data["exact"]]
    related = [(r["prompt"], ids[r["memory"]]) for r in data["related"]]
    cited: dict[str, list[list[str]]] = {"exact": [], "related": [], "unrelated": []}
    ms: list[float] = []
    for kind, prompts in (("exact", exact), ("related", related)):
        for prompt, _ in prompts:
            context, took = hooks.prompt_submit(vault, prompt)
            cited[kind].append(_CITED.findall(context))
            ms.append(took)
    for prompt in data["unrelated"]:
        context, took = hooks.prompt_submit(vault, prompt)
        cited["unrelated"].append(_CITED.findall(context))
        ms.append(took)
    return {
        "exact injected": _share([m in c for (_, m), c in zip(exact, cited["exact"], strict=True)]),
        "exact first": _share(
            [c[:1] == [m] for (_, m), c in zip(exact, cited["exact"], strict=True)]
        ),
        "related injected": _share(
            [m in c for (_, m), c in zip(related, cited["related"], strict=True)]
        ),
        "unrelated silent": _share([not c for c in cited["unrelated"]]),
        "items (related, median)": median([float(len(c)) for c in cited["related"]]),
        "p50 ms": median(ms),
    }


def _share(values: list[bool]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--coding", type=Path, nargs="+", default=list(DEFAULT_SETS))
    parser.add_argument("--latency-ms", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = scratch_dir("mdmem-bench-coding-hook-")
    hooks = Hooks(base, args.latency_ms)
    result: dict[str, Any] = {"load": os.getloadavg(), "sets": {}}
    for path in args.coding:
        data = json.loads(path.read_text(encoding="utf-8"))
        vault = base / "vaults" / path.stem
        ids = record(data, vault)
        # Cold: no server, and none started by the hook itself (it would, to warm
        # the next prompt).
        hooks.env["MDMEM_SERVER"] = "off"
        runs = {"cold (keyword only)": ask(hooks, vault, data, ids)}
        hooks.env.pop("MDMEM_SERVER")
        hooks.mdmem(vault, "server", "start")
        try:
            runs["warm (hybrid)"] = ask(hooks, vault, data, ids)
        finally:
            hooks.mdmem(vault, "server", "stop")
        result["sets"][path.stem] = runs
    if args.json:
        emit_json(result)
        return
    columns = ["exact injected", "exact first", "related injected", "unrelated silent",
               "items (related, median)", "p50 ms"]  # fmt: skip
    print_table(
        f"The prompt hook on coding vaults (load average {result['load'][0]:.1f})",
        ["set", "run", *columns],
        [
            [name, run, *(scores[c] for c in columns)]
            for name, runs in result["sets"].items()
            for run, scores in runs.items()
        ],
    )


if __name__ == "__main__":
    main()
