"""False positives of the instruction-like detector on ordinary chat turns.

Usage: python bench/instructions.py [PATH ...] [--show 20] [--json]
       python bench/instructions.py --set [bench/data/injections.json] [--baseline REV]

Runs :func:`mdmem.recall.instructions.instruction_cues` over every turn (and
the session observations/summaries when present) of LoCoMo-format files
(default: the dev files in ``$MDMEM_BENCH_DATA`` or ``../shared/bench-data`` beside the checkout),
which hold no instruction aimed at a model: every flag is a false positive.
Prints the rate per cue and the flagged turns (``--show``).

``--set`` measures the marker on a labelled set (``bench/data/injections.json``,
written by ``bench/data/build_injections.py``, or
``bench/data/injections_fresh.json``, written by
``bench/data/build_injections_fresh.py`` with every other string held out of
rule work: its rows say the recall of each half): recall per form of injection
(a split pair counts when either memory is marked on its own text: each
injected item is marked alone), false positives on its
benign controls and on every dev-chat turn; ``--baseline REV`` also measures
the marker of that git revision in the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import emit_json, print_table
from locomo_data import load

from mdmem.recall.instructions import CUES, instruction_cues

ROOT = Path(__file__).resolve().parent.parent


def _marker_of(rev: str) -> Any:
    """``instruction_cues`` as it was at git revision ``rev``."""
    import importlib.util
    import subprocess
    import tempfile

    source = subprocess.run(
        ["git", "show", f"{rev}:mdmem/recall/instructions.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp(prefix="mdmem-bench-marker-")) / "baseline_marker.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_marker", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.instruction_cues


def _measure_set(set_path: Path, baseline: str | None, as_json: bool) -> None:
    import json

    data = json.loads(set_path.read_text(encoding="utf-8"))
    markers: dict[str, Any] = {"this tree": instruction_cues}
    if baseline:
        markers[baseline] = _marker_of(baseline)
    chats = [t.text for p in _default_paths() for c in load(p) for t in c.turns if t.text.strip()]
    forms: dict[str, list[str]] = {}
    for case in data["injections"]:
        forms.setdefault(case["form"].split(":")[0], []).append(case["text"])
    pairs = [tuple(case["parts"]) for case in data["split"]]
    rows, results = [], {}
    for who, cues in markers.items():
        found = {form: sum(bool(cues(t)) for t in texts) for form, texts in forms.items()}
        # A split pair: each memory is marked on its own text.
        found_split = sum(bool(cues(a) or cues(b)) for a, b in pairs)
        total = sum(len(t) for t in forms.values()) + len(pairs)
        hits = sum(found.values()) + found_split
        benign = sum(bool(cues(t)) for t in data["benign"])
        chat = sum(bool(cues(t)) for t in chats)
        for form, texts in forms.items():
            rows.append([who, form, len(texts), found[form], f"{found[form] / len(texts):.2f}"])
        rows.append([who, "split across two memories", len(pairs), found_split,
                     f"{found_split / max(1, len(pairs)):.2f}"])  # fmt: skip
        rows.append([who, "ALL injections (recall)", total, hits, f"{hits / total:.3f}"])
        for half in ("dev", "held"):
            cases = [c for c in data["injections"] if c.get("half") == half]
            if cases:
                got = sum(bool(cues(c["text"])) for c in cases)
                rows.append([who, f"  {half} half (recall)", len(cases), got,
                             f"{got / len(cases):.3f}"])  # fmt: skip
        rows.append([who, "benign controls (false positives)", len(data["benign"]), benign, ""])
        for half in ("dev", "held") if "benign_half" in data else ():
            halves = zip(data["benign"], data["benign_half"], strict=True)
            texts = [t for t, h in halves if h == half]
            rows.append([who, f"  {half} half (false positives)", len(texts),
                         sum(bool(cues(t)) for t in texts), ""])  # fmt: skip
        rows.append([who, "dev-chat turns (false positives)", len(chats), chat, ""])
        results[who] = {"recall": hits / total, "injections": total, "benign_fp": benign,
                        "chat_fp": chat, "chat_turns": len(chats), "per_form": found}  # fmt: skip
    if as_json:
        emit_json(results)
        return
    print_table(f"instruction-like marker on {set_path.name}",
                ["marker", "form", "n", "flagged", "recall"], rows)  # fmt: skip


def _default_paths() -> list[Path]:
    base = Path(
        os.environ.get(
            "MDMEM_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench-data"
        )
    )
    return sorted(base.glob("*-dev.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--show", type=int, default=20, help="flagged turns to print")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--set", action="store_true", help="measure on a labelled injection set")
    ap.add_argument("--baseline", metavar="REV", help="with --set: also this revision's marker")
    args = ap.parse_args()
    if args.set:
        set_path = args.paths[0] if args.paths else ROOT / "bench" / "data" / "injections.json"
        _measure_set(set_path, args.baseline, args.json)
        return
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
