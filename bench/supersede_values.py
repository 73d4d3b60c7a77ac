"""Updates that change one value: does the newer memory retire the older, end to end?

Usage: python bench/supersede_values.py [--set all|dev|held-out] [--before REV] [--misses] [--json]

The pairs of ``bench/data/supersede-values.json`` (issue "Discernment", item
4): true updates where one value changed (a time, date, version, host, port,
path, named option, amount, on/off state, count; said plainly or with
"now", "moved to", "went up to") and look-alikes that must both stay
active (the same template about another subject, per-item facts of a list,
relations that hold many values, events that add up). ``dev`` was used
while the rule was designed; ``held_out`` was written with it, before the
rule changed, and run only once the rule was frozen.

Each pair goes through the real write path: a vault with the default
offline embedder (MiniLM) and no judge; the older memory and then the newer
are remembered in a scope of their own (so pairs never meet), and the pair
counts as *retired* when the older ends up superseded. Two rules in the same
run: "before" is ``subjects.compare`` as it is at ``--before`` (default
``main``, loaded from git; auto-resolve then decides exactly as it did
there, since the verdict fields the old rule lacks keep their defaults), and
"after" is this tree's. About 960 ``remember`` calls: ~5 minutes on a shared
2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir
from supersede import run_pipeline
from supersede_more import rule_at
from supersede_pairs import UPDATE, Pair

DATA = Path(__file__).resolve().parent / "data" / "supersede-values.json"
SETS = {"dev": "dev", "held-out": "held_out"}


def load(name: str) -> tuple[list[Pair], list[str]]:
    """The pairs of one set, and what kind of value or look-alike each is."""
    rows = json.loads(DATA.read_text(encoding="utf-8"))[SETS[name]]
    return [(r["old"], r["new"], r["label"]) for r in rows], [r["what"] for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("all", *SETS), default="all")
    parser.add_argument("--before", default="main", help="git revision of the old rule")
    parser.add_argument("--misses", action="store_true", help="list what each rule got wrong")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from mdmem import __version__
    from mdmem.memory.consolidation.subjects import compare

    chosen = list(SETS) if args.set == "all" else [args.set]
    rules = {f"before ({args.before})": rule_at(args.before), "after (this tree)": compare}
    base = scratch_dir("mdmem-bench-supersede-values-")
    load_before = os.getloadavg()[0]
    results: dict[str, Any] = {"mdmem": __version__, "embedder": "minilm", "runs": []}
    rows = []
    misses: list[str] = []
    for name in chosen:
        pairs, kinds = load(name)
        for label, rule in rules.items():
            root = base / f"{name}-{label.split()[0]}"
            retired, seconds = run_pipeline(root, pairs, old_rule=False, base_url=None, rule=rule)
            is_update = [lab == UPDATE for *_, lab in pairs]
            caught = sum(r and u for r, u in zip(retired, is_update, strict=True))
            false = sum(r and not u for r, u in zip(retired, is_update, strict=True))
            updates, lookalikes = sum(is_update), len(pairs) - sum(is_update)
            missed = Counter(
                k for k, r, u in zip(kinds, retired, is_update, strict=True) if u and not r
            )
            rows.append(
                [
                    name,
                    label,
                    f"{caught}/{updates}",
                    f"{100 * caught / updates:.0f}%",
                    f"{false}/{lookalikes}",
                    ", ".join(f"{k} {n}" for k, n in sorted(missed.items())) or "-",
                    f"{seconds:.0f}",
                ]
            )
            results["runs"].append(
                {"set": name, "rule": label, "caught": caught, "updates": updates,
                 "false": false, "look-alikes": lookalikes, "missed": dict(missed),
                 "seconds": seconds}
            )  # fmt: skip
            for (old, new, lab), what, r in zip(pairs, kinds, retired, strict=True):
                if r != (lab == UPDATE):
                    verdict = rule(old, new)
                    state = "kept" if lab == UPDATE else "RETIRED"
                    misses.append(
                        f"  {name} / {label}: {state} {lab} ({what}) "
                        f"[{verdict.kind}: {verdict.reason}] {old!r} -> {new!r}"
                    )
    results["load average (1 min) before / after"] = [load_before, os.getloadavg()[0]]
    if args.json:
        emit_json(results)
        return 0
    print(
        f"mdmem {__version__}: {DATA.name}, embedder MiniLM, no judge; load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print_table(
        "Retirement through remember(): old rule and new rule in the same run",
        ["set", "rule", "updates retired", "recall", "look-alikes retired", "missed", "s"],
        rows,
    )
    if args.misses:
        print("\nWrong:")
        print("\n".join(misses) or "  none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
