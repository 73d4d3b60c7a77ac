"""Secret guard benchmark: what `guard()` costs on ordinary text and on text it must scan.

Usage: python bench/secret_guard.py [--calls 10000] [--baseline REV] [--json]
       python bench/secret_guard.py --false-positives [--baseline REV] [--show 10]

Times --calls guard() calls on ordinary 20-word sentences (the quick check
returns before any pattern runs), on sentences that name a secret or hold a
URL without one (the full scan runs and finds nothing), and on sentences with
a secret (refused). Best of five rounds, in microseconds per call.
``--baseline REV`` also times the guard of git revision REV (rounds
interleaved, so both see the same machine load). Target
(issue "Trust in what is written", item 4): ordinary text well under 100 us.

``--false-positives`` scans every turn of the dev chats (``*-dev.json`` in
``$MDMEM_BENCH_DATA`` or ``../shared/bench-data`` beside the checkout), every paragraph of
``docs/*.md``, the ordinary shell commands of
``tests/store/data/shell_commands.txt`` (what a coding agent runs: git,
docker, kubectl, databases without a password on the line...), and judges
every distinct word of the dev chats as a tag would be
(:func:`mdmem.store.inputs.refuse_secret_name`): none holds a secret, so every
finding is a false positive. With ``--baseline REV`` the guard of that
revision is measured on the same texts in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

ROOT = Path(__file__).resolve().parent.parent

WORDS = [
    "the",
    "user",
    "prefers",
    "metric",
    "units",
    "and",
    "likes",
    "to",
    "review",
    "pull",
    "requests",
    "before",
    "lunch",
    "deploy",
    "staging",
    "server",
    "report",
    "weekly",
    "meeting",
    "notes",
    "project",
    "marketing",
    "budget",
    "coffee",
    "morning",
    "afternoon",
    "team",
    "decided",
    "migrate",
    "database",
    "friday",
    "release",
    "plan",
]


def sentences(
    rng: random.Random, n: int, extra: Callable[[random.Random], str] | None
) -> list[str]:
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(20)]
        if extra is not None:
            words[rng.randrange(20)] = extra(rng)
        out.append(" ".join(words).capitalize() + ".")
    return out


def best_us(fn: Callable[[str], object], texts: list[str], rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - started)
    return best / len(texts) * 1e6


def guard_of(rev: str, name: str = "guard") -> Callable[[str], object]:
    """``guard`` (or another function of the module) as it was at git revision ``rev``."""
    root = ROOT
    source = subprocess.run(
        ["git", "show", f"{rev}:mdmem/store/secret_guard.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(scratch_dir("mdmem-bench-guard-")) / "baseline_guard.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_guard", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_guard"] = module
    spec.loader.exec_module(module)
    guard: Callable[[str], object] = getattr(module, name)
    return guard


def ordinary_texts() -> dict[str, list[str]]:
    """Texts that hold no secret: every dev-chat turn, every docs paragraph."""
    import os
    import re

    sys.path.insert(0, str(ROOT))
    from locomo_data import load

    base = Path(
        os.environ.get(
            "MDMEM_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "bench-data"
        )
    )
    out: dict[str, list[str]] = {}
    for path in sorted(base.glob("*-dev.json")):
        out[f"dev chat turns ({path.name})"] = [
            t.text for conv in load(path) for t in conv.turns if t.text.strip()
        ]
    docs = [
        part
        for doc in sorted((ROOT / "docs").glob("*.md"))
        for part in re.split(r"\n\s*\n", doc.read_text(encoding="utf-8"))
        if part.strip()
    ]
    out["docs/*.md paragraphs"] = docs
    shell = (ROOT / "tests" / "store" / "data" / "shell_commands.txt").read_text(encoding="utf-8")
    out["shell commands (tests/store/data)"] = [
        line for line in shell.splitlines() if line.strip() and not line.startswith("## ")
    ]
    return out


def chat_words() -> list[str]:
    """Every distinct word of the dev chats that is a valid tag: what a caller might tag with."""
    import re

    texts = [t for name, ts in ordinary_texts().items() if name.startswith("dev chat") for t in ts]
    words = {w.strip("#") for text in texts for w in re.findall(r"#?[A-Za-z_][\w/-]{0,63}", text)}
    return sorted(w for w in words if w)


def false_positives(baseline: str | None, show: int, as_json: bool) -> None:
    from mdmem.store.secret_guard import scan

    scan("warm up", quick=False)
    scanners: dict[str, Callable[[str], object]] = {"this tree": scan}
    if baseline:
        scanners[baseline] = guard_of(baseline, "scan")
    rows, results, shown = [], {}, []
    for corpus, texts in ordinary_texts().items():
        for who, fn in scanners.items():
            started = time.perf_counter()
            flagged = [text for text in texts if fn(text)]
            took = time.perf_counter() - started
            results[f"{corpus}, {who}"] = {"texts": len(texts), "flagged": len(flagged)}
            rows.append(
                (corpus, who, len(texts), len(flagged), f"{len(flagged) / max(1, len(texts)):.4%}",
                 f"{took / max(1, len(texts)) * 1e6:.1f}")
            )  # fmt: skip
            if who == "this tree":
                shown.extend(flagged)
    from mdmem.errors import SecretRefusedError
    from mdmem.store.inputs import refuse_secret_name

    def refused(word: str) -> bool:
        try:
            refuse_secret_name(word, "the tags")
        except SecretRefusedError:
            return True
        return False

    words = chat_words()
    started = time.perf_counter()
    flagged = [w for w in words if refused(w)]
    took = time.perf_counter() - started
    results["dev chat words judged as tags, this tree"] = {
        "texts": len(words),
        "flagged": len(flagged),
    }
    rows.append(
        ("dev chat words judged as tags", "this tree", len(words), len(flagged),
         f"{len(flagged) / max(1, len(words)):.4%}", f"{took / max(1, len(words)) * 1e6:.1f}")
    )  # fmt: skip
    shown.extend(flagged)
    if as_json:
        emit_json({"false_positives": results})
        return
    print_table(
        "secrets found in text that holds none (every finding is a false positive)",
        ["texts", "guard", "count", "flagged", "rate", "us/text"],
        rows,
    )
    for text in shown[:show]:
        print("  flagged:", " ".join(text.split())[:160])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--baseline", metavar="REV", help="also time the guard of this revision")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--false-positives", action="store_true", help="count findings in dev chats and docs"
    )
    parser.add_argument("--show", type=int, default=10, help="flagged texts to print")
    args = parser.parse_args()
    if args.false_positives:
        false_positives(args.baseline, args.show, args.json)
        return

    from mdmem.errors import SecretRefusedError
    from mdmem.store.secret_guard import guard, scan

    def refused(text: str) -> None:
        try:
            guard(text)
        except SecretRefusedError:
            pass

    rng = random.Random(7)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    cases = {
        "ordinary 20-word sentence": (guard, sentences(rng, args.calls, None)),
        "names a secret, holds none": (
            guard,
            sentences(rng, args.calls // 10, lambda r: r.choice(["password", "token", "secret"])),
        ),
        "holds a URL without credentials": (
            guard,
            sentences(rng, args.calls // 10, lambda r: f"https://example.com/p/{r.randrange(999)}"),
        ),
        "holds numbers (a date, an amount, a 16-digit id)": (
            guard,
            sentences(
                rng,
                args.calls // 10,
                lambda r: (
                    f"2024-06-{r.randrange(10, 29)} {r.randrange(99)}.50 EUR ref "
                    + "".join(r.choice("0123456789") for _ in range(16))
                ),
            ),
        ),
        "holds a card number (refused)": (
            refused,
            sentences(rng, args.calls // 10, lambda r: "card 4111 1111 1111 1111 exp 12/29"),
        ),
        "holds a secret (refused)": (
            refused,
            sentences(
                rng,
                args.calls // 10,
                lambda r: "ghp_" + "".join(r.choice(alnum) for _ in range(36)),
            ),
        ),
    }
    scan("warm up", quick=False)  # loads detect-secrets once, outside the timing
    rows = []
    results = {}
    if args.baseline:
        old = guard_of(args.baseline)
        for name in (
            "ordinary 20-word sentence",
            "holds numbers (a date, an amount, a 16-digit id)",
        ):
            texts = cases[name][1]
            best_old, best_new = float("inf"), float("inf")
            for _ in range(5):  # interleaved: both see the same load
                best_old = min(best_old, best_us(old, texts, rounds=1))
                best_new = min(best_new, best_us(guard, texts, rounds=1))
            results[f"{name}, {args.baseline}"] = best_old
            rows.append(
                (f"{name} ({args.baseline})", len(texts), best_old, best_old * len(texts) / 1000)
            )
            rows.append((f"{name} (this tree)", len(texts), best_new, best_new * len(texts) / 1000))
    for name, (fn, texts) in cases.items():
        us = best_us(fn, texts)
        results[name] = us
        rows.append((name, len(texts), us, us * len(texts) / 1000))
    if args.json:
        emit_json({"us_per_call": results})
        return
    print_table(
        "guard() cost (best of 5 rounds)",
        ["text", "calls", "us/call", "ms total"],
        rows,
    )


if __name__ == "__main__":
    main()
