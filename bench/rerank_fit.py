"""Fit recall's re-ranking weights by leave-one-conversation-out cross-validation.

Usage: python bench/rerank_fit.py [--data FILE] [--record memories|session|both]
                                  [--embedder minilm|hash] [--write] [--json]

Each conversation is recorded into a fresh vault (bench/locomo_record.py, the
same two ways as bench/locomo.py), every headline question (categories 1, 2,
4) is recalled once with k=60, and each returned candidate's first-stage
score (``scores["base"]``) and re-ranking features (``scores["f_<name>"]``,
see mdmem.recall.signals) are kept. Fitting happens offline on those rows:
a candidate's score is ``base + Σ w·f``, and coordinate ascent over a small
grid of each weight maximises mean R@5 (+ MRR / 10 as a tie-break) on the
training conversations.

Leave-one-conversation-out: for each conversation, weights fitted on all the
others are scored on it; the reported line is the mean over the held-out
questions (never in-fold numbers). ``--write`` then fits on every
conversation and writes the weights to mdmem/recall/rerank_weights.py.

``leave_one_conversation_out(data, embedder=..., record=...)`` is the hook
bench/locomo.py calls for its leave-one-out line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import scratch_dir
from locomo_data import HEADLINE_CATEGORIES, load, memory_text, reciprocal_rank
from locomo_record import ingest

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "bench-data" / "locomo-dev.json"
WEIGHTS_FILE = ROOT / "mdmem" / "recall" / "rerank_weights.py"
DEPTH = 60
GRID = (-0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
ROUNDS = 3
# As bench/locomo.py: every turn is old and equally recent, and a floor would
# hide candidates the metric should see.
OVERRIDES = {"recency_weight": 0.0, "min_relevance": 0.0, "min_vector": -1.0}


@dataclass
class Row:
    """One question: its candidates' ids, base scores and features, and its evidence."""

    conversation: str
    category: int
    ids: list[frozenset[str]]  # each candidate: the dialog ids it stands for
    base: list[float]
    features: list[dict[str, float]]
    evidence: set[str]


def collect(data: Path, *, embedder: str, record: str) -> list[Row]:
    from mdmem import Vault
    from mdmem.recall.signals import FEATURES, RERANK_WEIGHTS

    # Recall runs the second round only when its weight is positive; a weight
    # too small to move any rank lets its feature be measured and fitted.
    if RERANK_WEIGHTS.get("second", 0.0) <= 0:
        RERANK_WEIGHTS["second"] = 1e-9
    rows: list[Row] = []
    base_dir = scratch_dir("mdmem-rerank-fit-")
    for conv in load(data):
        vault = Vault.init(
            base_dir / f"{conv.sample_id}-{record}",
            agent="rerank-fit",
            secrets="off",
            embedder={"provider": embedder},
            recall=OVERRIDES,
            consolidation={"auto": False},
        )
        previous = [None, *conv.turns[:-1]]
        texts = [memory_text(t, "said", p) for t, p in zip(conv.turns, previous, strict=True)]
        ing = ingest(vault, conv, record, texts)
        dia_of: dict[str, set[str]] = {}
        for dia, mid in ing.turn_ids.items():
            dia_of.setdefault(mid, set()).add(dia)
        vault.recall("warm up", k=5)
        for q in conv.questions:
            if q.category not in HEADLINE_CATEGORIES or not q.evidence:
                continue
            hits = vault.recall(q.question, k=DEPTH, include_inactive=True).items
            rows.append(
                Row(
                    conv.sample_id,
                    q.category,
                    [frozenset(dia_of.get(h.id, ())) for h in hits],
                    [h.scores.get("base", h.score) for h in hits],
                    [{f: h.scores.get(f"f_{f}", 0.0) for f in FEATURES} for h in hits],
                    set(q.evidence),
                )
            )
        vault.close()
    return rows


def _ranked(row: Row, weights: dict[str, float]) -> list[frozenset[str]]:
    scored = [
        (b + sum(weights.get(k, 0.0) * v for k, v in f.items()), i)
        for i, (b, f) in enumerate(zip(row.base, row.features, strict=True))
    ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [row.ids[i] for _, i in scored]


def _flat(ranked: list[frozenset[str]]) -> list[str]:
    # A candidate standing for several turns counts at its rank for each.
    out: list[str] = []
    for ids in ranked:
        out.extend(sorted(ids) or ["-"])
    return out


def metrics(rows: Sequence[Row], weights: dict[str, float]) -> dict[str, float]:
    if not rows:
        return {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0, "n": 0}
    r1 = r5 = r10 = mrr = 0.0
    for row in rows:
        ranked = _ranked(row, weights)
        # Rank by candidate, as recall returns them: the first k candidates.
        for k, acc in ((1, "r1"), (5, "r5"), (10, "r10")):
            got = set().union(*ranked[:k]) if ranked[:k] else set()
            value = len(got & row.evidence) / len(row.evidence)
            if acc == "r1":
                r1 += value
            elif acc == "r5":
                r5 += value
            else:
                r10 += value
        mrr += reciprocal_rank(_first_ids(ranked), row.evidence, 25)
    n = len(rows)
    return {"R@1": r1 / n, "R@5": r5 / n, "R@10": r10 / n, "MRR": mrr / n, "n": n}


def _first_ids(ranked: list[frozenset[str]]) -> list[str]:
    return [sorted(ids)[0] if ids else "-" for ids in ranked]


def _objective(rows: Sequence[Row], weights: dict[str, float]) -> float:
    m = metrics(rows, weights)
    return m["R@5"] + m["MRR"] / 10


def fit(rows: Sequence[Row]) -> dict[str, float]:
    """Coordinate ascent over :data:`GRID`, starting from all zeros."""
    from mdmem.recall.signals import FEATURES

    weights = dict.fromkeys(FEATURES, 0.0)
    best = _objective(rows, weights)
    for _ in range(ROUNDS):
        improved = False
        for name in FEATURES:
            for value in GRID:
                trial = {**weights, name: value}
                got = _objective(rows, trial)
                if got > best + 1e-9:
                    best, weights, improved = got, trial, True
        if not improved:
            break
    return weights


def leave_one_conversation_out(
    data: Path, *, embedder: str = "minilm", record: str = "memories"
) -> dict[str, Any]:
    """Held-out means over every conversation (the hook bench/locomo.py calls)."""
    rows = collect(data, embedder=embedder, record=record)
    return loco(rows)


def loco(rows: Sequence[Row]) -> dict[str, Any]:
    convs = sorted({r.conversation for r in rows})
    held: list[Row] = []
    folds = []
    held_weights: list[tuple[Row, dict[str, float]]] = []
    for conv in convs:
        train = [r for r in rows if r.conversation != conv]
        test = [r for r in rows if r.conversation == conv]
        weights = fit(train)
        m = metrics(test, weights)
        folds.append({"conversation": conv, **m, "baseline_R@5": metrics(test, {})["R@5"]})
        held.extend(test)
        held_weights.extend((r, weights) for r in test)
    out: dict[str, Any] = {}
    for key in ("R@1", "R@5", "R@10", "MRR"):
        out[key] = sum(metrics([r], w)[key] for r, w in held_weights) / max(1, len(held))
    out["baseline"] = metrics(held, {})
    by_cat: dict[int, list[tuple[Row, dict[str, float]]]] = {}
    for r, w in held_weights:
        by_cat.setdefault(r.category, []).append((r, w))
    out["by_category_R@5"] = {
        c: sum(metrics([r], w)["R@5"] for r, w in items) / len(items)
        for c, items in sorted(by_cat.items())
    }
    out["folds"] = folds
    return out


def write_weights(weights: dict[str, float], note: str) -> None:
    body = "\n".join(f'    "{k}": {v!r},' for k, v in weights.items())
    WEIGHTS_FILE.write_text(
        '"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` '
        "(leave-one-conversation-out on LoCoMo dev).\n\n"
        "Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the\n"
        "first stage's score; all zero is the first stage alone. Regenerate with\n"
        "``python bench/rerank_fit.py --data ../shared/bench-data/locomo-dev.json --write``.\n"
        f"{note}\n"
        '"""\n\n'
        f"RERANK_WEIGHTS: dict[str, float] = {{\n{body}\n}}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--record", choices=("memories", "session", "both"), default="both")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--write", action="store_true", help="write the all-data fit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.data.is_file():
        parser.error(f"no data file at {args.data} (pass --data FILE)")
    ways = ("memories", "session") if args.record == "both" else (args.record,)
    rows: list[Row] = []
    result: dict[str, Any] = {}
    for way in ways:
        print(f"collecting {way} ...", file=sys.stderr)
        way_rows = collect(args.data, embedder=args.embedder, record=way)
        rows.extend(way_rows)
        result[way] = loco(way_rows)
    # Both recording ways share one set of weights: fit on their union.
    final = fit(rows)
    result["weights_all_data"] = final
    if args.write:
        held = {w: round(result[w]["R@5"], 3) for w in ways}
        write_weights(final, f"Held-out (leave-one-conversation-out) R@5 when fitted: {held}.")
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    for way in ways:
        r = result[way]
        print(
            f"{way}: held-out R@1 {r['R@1']:.3f}  R@5 {r['R@5']:.3f}  R@10 {r['R@10']:.3f}  "
            f"MRR {r['MRR']:.3f}   (unweighted: R@5 {r['baseline']['R@5']:.3f}  "
            f"MRR {r['baseline']['MRR']:.3f})  by category R@5 {r['by_category_R@5']}"
        )
        for f in r["folds"]:
            print(
                f"   {f['conversation']}: R@5 {f['R@5']:.3f} (unweighted {f['baseline_R@5']:.3f})"
            )
    print(f"weights (all data): {final}")


if __name__ == "__main__":
    main()
