"""False positives of the instruction-like detector on ordinary chat turns.

Usage: python bench/instructions.py [PATH ...] [--show 20] [--json]

Runs :func:`mdmem.recall.instructions.instruction_cues` over every turn (and
the session observations/summaries when present) of LoCoMo-format files
(default: the dev files in ``$MDMEM_BENCH_DATA`` or ``/work/shared/bench-data``),
which hold no instruction aimed at a model: every flag is a false positive.
Prints the rate per cue and the flagged turns (``--show``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import emit_json, print_table
from locomo_data import load

from mdmem.recall.instructions import CUES, instruction_cues


def _default_paths() -> list[Path]:
    base = Path(os.environ.get("MDMEM_BENCH_DATA", "/work/shared/bench-data"))
    return sorted(base.glob("*-dev.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--show", type=int, default=20, help="flagged turns to print")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    paths = args.paths or _default_paths()
    if not paths:
        sys.exit("no LoCoMo-format files given or found")
    texts: list[str] = []
    for path in paths:
        for conv in load(path):
            texts.extend(t.text for t in conv.turns if t.text.strip())
    started = time.perf_counter()
    flagged = [(text, cues) for text in texts if (cues := instruction_cues(text))]
    took = time.perf_counter() - started
    per_cue = Counter(c for _, cues in flagged for c in cues)
    rate = len(flagged) / max(1, len(texts))
    result = {
        "files": [p.name for p in paths],
        "texts": len(texts),
        "flagged": len(flagged),
        "false_positive_rate": rate,
        "per_cue": {name: per_cue.get(name, 0) for name in CUES},
        "us_per_text": took / max(1, len(texts)) * 1e6,
    }
    if args.json:
        emit_json(result)
        return
    print_table(
        "instruction-like cues on ordinary chat turns (every flag is a false positive)",
        ["texts", "flagged", "rate", "us/text"],
        [[len(texts), len(flagged), f"{rate:.4%}", f"{result['us_per_text']:.1f}"]],
    )
    print_table("per cue", ["cue", "flags"], [[n, per_cue.get(n, 0)] for n in CUES])
    for text, cues in flagged[: args.show]:
        print(f"  [{', '.join(cues)}] {' '.join(text.split())[:200]}")


if __name__ == "__main__":
    main()
