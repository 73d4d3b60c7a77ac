"""Are updates noticed? The same-subject rule before and after, on every labelled set, in one run.

Usage: python bench/supersede_more.py [--before REV] [--pipeline] [--misses] [--json]

For each pair (old, new) of ``bench/supersede_pairs.py`` (PAIRS, HELD_OUT)
and ``bench/supersede_pairs_more.py`` (MORE), a pair counts as *retired* when
auto-resolve would retire the old memory without a judge: the wording rule
says ``update`` and the MiniLM cosine of the two texts reaches the threshold
(``same_context_threshold`` when the rule found the shared subject, else
``other_context_threshold``; ``lifecycle.SAID_THRESHOLD`` when the newer
text says it changed), as ``lifecycle.auto_resolve`` decides.

"before" is the rule as it is at ``--before`` (default ``main``), loaded from
git; "after" is this tree's. ``--pipeline`` also remembers every pair of the
held-back and new sets through the real write path (bench/supersede.py's
run_pipeline, new rule, no judge) to check the simulation.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir
from supersede import cosines, run_pipeline
from supersede_pairs import HELD_OUT, PAIRS, UPDATE, Pair
from supersede_pairs_more import MORE

if TYPE_CHECKING:
    from mdmem.memory.consolidation.subjects import Verdict

RULE = "mdmem/memory/consolidation/subjects.py"


def rule_at(rev: str) -> Callable[[str, str], Verdict]:
    """``compare`` as the file is at git revision ``rev``, answering with this tree's
    :class:`Verdict` (a field the old one lacks keeps its default), so that
    auto-resolve can run it as its rule."""
    root = Path(__file__).resolve().parent.parent
    text = subprocess.run(
        ["git", "show", f"{rev}:{RULE}"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="mdmem-rule-")) / "subjects_before.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("subjects_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["subjects_before"] = module
    spec.loader.exec_module(module)
    from mdmem.memory.consolidation import subjects

    known = set(subjects.Verdict.__dataclass_fields__)

    def compare(old: str, new: str) -> Verdict:
        v = module.compare(old, new)
        return subjects.Verdict(**{k: getattr(v, k) for k in v.__dataclass_fields__ if k in known})

    return compare


def decide(rule: Callable[[str, str], Any], pairs: list[Pair], cos: list[float]) -> list[bool]:
    from mdmem.config import ConsolidationSettings
    from mdmem.memory.consolidation import lifecycle

    cfg = ConsolidationSettings()
    out = []
    for (old, new, _), c in zip(pairs, cos, strict=True):
        verdict = rule(old, new)
        limit = lifecycle.retire_limit(verdict, False, cfg)
        out.append(verdict.update and c >= limit)
    return out


def score(pairs: list[Pair], retired: list[bool]) -> tuple[str, str]:
    updates = [r for (*_, lab), r in zip(pairs, retired, strict=True) if lab == UPDATE]
    distinct = [r for (*_, lab), r in zip(pairs, retired, strict=True) if lab != UPDATE]
    return f"{sum(updates)}/{len(updates)}", f"{sum(distinct)}/{len(distinct)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="main", help="git revision of the old rule")
    parser.add_argument("--pipeline", action="store_true")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from mdmem.memory.consolidation.subjects import compare

    sets = {"pairs": PAIRS, "held-out": HELD_OUT, "more": MORE}
    rules = {"before": rule_at(args.before), "after": compare}
    results: dict[str, Any] = {"before": args.before, "sets": []}
    rows = []
    for name, pairs in sets.items():
        cos = cosines(pairs)
        for label, rule in rules.items():
            retired = decide(rule, pairs, cos)
            caught, false = score(pairs, retired)
            alone = [bool(rule(o, n).update) for o, n, _ in pairs]
            rule_caught, rule_false = score(pairs, alone)
            rows.append([name, label, caught, false, rule_caught, rule_false])
            results["sets"].append(
                {"set": name, "rule": label, "caught": caught, "false": false,
                 "rule alone caught": rule_caught, "rule alone false": rule_false}
            )  # fmt: skip
            if args.misses and label == "after":
                for (o, n, lab), r, c in zip(pairs, retired, cos, strict=True):
                    if r != (lab == UPDATE):
                        print(f"  {name} {lab} cos={c:.2f} {rule(o, n).reason}: {o} -> {n}")
    if args.pipeline:
        base = scratch_dir("mdmem-bench-supersede-more-")
        for name in ("held-out", "more"):
            started = time.perf_counter()
            retired, _ = run_pipeline(base / name, sets[name], old_rule=False, base_url=None)
            caught, false = score(sets[name], retired)
            rows.append([name, "after, write path", caught, false, "", ""])
            results["sets"].append(
                {"set": name, "rule": "after, write path", "caught": caught, "false": false,
                 "seconds": time.perf_counter() - started}
            )  # fmt: skip
    if args.json:
        emit_json(results)
        return 0
    print_table(
        "Auto-resolve without a judge (MiniLM cosine gate + same-subject rule)",
        ["set", "rule", "updates retired", "false retirements", "rule: updates", "rule: false"],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
