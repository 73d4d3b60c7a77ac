"""Small helpers shared by the benchmark scripts: timing and table printing."""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# Measure the checkout these scripts live in, not whichever mdmem is installed
# (an editable install points at another worktree).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value >= 100:
            return f"{value:,.0f}"
        if value >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    return str(value)


def emit_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    print()


def scratch_dir(prefix: str) -> Path:
    base = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ.setdefault("MDMEM_STATE_DIR", str(base / "state"))
    return base
