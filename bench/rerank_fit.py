"""Fit recall's re-ranking weights by leave-one-conversation-out cross-validation.

Usage: python bench/rerank_fit.py [--data FILE ...] [--holdout FILE ...]
                                  [--record memories|session|both]
                                  [--embedder minilm|hash] [--rows DIR] [--write] [--json]

Each conversation is recorded into a fresh vault (bench/locomo_record.py, the
same two ways as bench/locomo.py), every headline question (categories 1, 2,
4) is recalled once with k=60, and each returned candidate's first-stage
score (``scores["base"]``) and re-ranking features (``scores["f_<name>"]``,
see mdmem.recall.signals) are kept. Fitting happens offline on those rows:
a candidate's score is ``base + Σ w·f``, fitted by ListNet (see :func:`fit`).

The default data are LoCoMo dev and the real-chat dev set (REALTALK), both
in ``../shared/bench-data/``: leave-one-conversation-out runs over all ten
conversations, and the held-out line is printed per data set and category
(never in-fold numbers). ``--holdout`` scores sets nothing was fitted on
(our hand-written bench/data/shortchat.json is a smoke test there, not a
fitting target). ``--rows DIR`` caches what was recorded (keyed by the data
file's contents, the embedder and the recording way: delete it after a
change to recall). ``--write`` fits on every conversation of ``--data`` and
writes the weights to mdmem/recall/rerank_weights.py.

``leave_one_conversation_out(data, embedder=..., record=..., rows=...)`` is
the hook bench/locomo.py calls for its leave-one-out line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import scratch_dir
from locomo_data import HEADLINE_CATEGORIES, load, memory_text
from locomo_record import ingest

ROOT = Path(__file__).resolve().parents[1]
# LoCoMo dev and the real-chat dev set (REALTALK): ten conversations, left out
# one at a time. Our hand-written bench/data/shortchat.json is a smoke test
# (``--holdout``), not something to fit: it does not read like real chat.
DEFAULT_DATA = (
    ROOT.parent / "shared" / "bench-data" / "locomo-dev.json",
    ROOT.parent / "shared" / "bench-data" / "realtalk-dev.json",
)
WEIGHTS_FILE = ROOT / "mdmem" / "recall" / "rerank_weights.py"
DEPTH = 60
# ListNet: scores are scaled by TEMPERATURE before the softmax (first-stage
# scores differ by hundredths); FIT_STEPS of Adam at LEARNING_RATE converge.
TEMPERATURE = 10.0
L2 = 1e-3
FIT_STEPS = 400
LEARNING_RATE = 0.05
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
    dataset: str = ""
    # Candidates put first by recall's identifier rule (mdmem.recall.identifiers,
    # hit.scores["named"]): they stay first whatever the weights, as in recall.
    named: list[bool] | None = None


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
                    data.stem,
                    [bool(h.scores.get("named")) for h in hits],
                )
            )
        vault.close()
    return rows


class _Table:
    """Rows as arrays, so one weight vector scores every question fast.

    A candidate's gain is the share of its question's evidence it stands for
    (candidates stand for disjoint turns: each is one memory's turns).
    """

    def __init__(self, rows: Sequence[Row], names: Sequence[str]) -> None:
        self.names = list(names)
        self.base = [np.asarray(r.base, dtype=np.float64) for r in rows]
        self.features = [
            np.asarray(
                [[f.get(n, 0.0) for n in self.names] for f in r.features], dtype=np.float64
            ).reshape(len(r.base), len(self.names))
            for r in rows
        ]
        self.gain = [
            np.asarray([len(ids & r.evidence) / len(r.evidence) for ids in r.ids]) for r in rows
        ]
        self.named = [np.asarray(r.named or [False] * len(r.base), dtype=bool) for r in rows]

    def scores(self, weights: Mapping[str, float]) -> dict[str, np.ndarray]:
        """Per question: R@1, R@5, R@10 and the reciprocal rank (first 25)."""
        w = np.asarray([weights.get(n, 0.0) for n in self.names], dtype=np.float64)
        out: dict[str, list[float]] = {"R@1": [], "R@5": [], "R@10": [], "MRR": []}
        for base, feats, gain, named in zip(
            self.base, self.features, self.gain, self.named, strict=True
        ):
            # Ties keep recall's order (stable sort of the candidates as returned);
            # what recall's identifier rule put first stays first.
            order = np.argsort(-(base + feats @ w + np.where(named, 1e6, 0.0)), kind="stable")
            ranked = gain[order]
            for k in (1, 5, 10):
                out[f"R@{k}"].append(min(1.0, float(ranked[:k].sum())))
            found = np.flatnonzero(ranked[:25] > 0)
            out["MRR"].append(1.0 / (found[0] + 1) if len(found) else 0.0)
        return {k: np.asarray(v) for k, v in out.items()}


def metrics(rows: Sequence[Row], weights: Mapping[str, float]) -> dict[str, float]:
    """Mean R@1/5/10 and MRR of ``rows`` ranked by ``base + Σ w·f``."""
    if not rows:
        return {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0, "n": 0}
    per = _Table(rows, _names(rows, weights)).scores(weights)
    return {**{k: float(v.mean()) for k, v in per.items()}, "n": len(rows)}


def _names(rows: Sequence[Row], weights: Mapping[str, float] = {}) -> list[str]:
    names = dict.fromkeys(weights)
    for r in rows:
        for f in r.features:
            names.update(dict.fromkeys(f))
    return list(names)


def fit(rows: Sequence[Row]) -> dict[str, float]:
    """ListNet (Cao et al., 2007): the weights that make each question's
    softmax over its candidates' scores ``base + Σ w·f`` match the share of
    its evidence each candidate holds, with a small L2 penalty, by Adam.

    A smooth loss over every candidate rather than a grid search on R@5
    itself: measured on LoCoMo dev (leave-one-conversation-out) and on the
    short-chat set fitted on dev alone, it gains 1-2 points of R@5 over
    coordinate ascent, which followed the noise of a few questions.
    """
    from mdmem.recall.signals import FEATURES

    names = list(FEATURES)
    kept = [r for r in rows if any(ids & r.evidence for ids in r.ids)]
    if not kept:
        return dict.fromkeys(names, 0.0)
    table = _Table(kept, names)
    depth = max(len(b) for b in table.base)
    # Questions padded to one depth; padding never gets probability.
    base = np.full((len(kept), depth), -1e9)
    feats = np.zeros((len(kept), depth, len(names)))
    target = np.zeros((len(kept), depth))
    for i, (b, f, g) in enumerate(zip(table.base, table.features, table.gain, strict=True)):
        base[i, : len(b)] = b
        feats[i, : len(b)] = f
        target[i, : len(b)] = g / g.sum()
    w = np.zeros(len(names))
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for step in range(1, FIT_STEPS + 1):
        logits = TEMPERATURE * (base + feats @ w)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = TEMPERATURE * np.einsum("qc,qcf->f", p - target, feats) / len(kept) + 2 * L2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w -= LEARNING_RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return {name: round(float(x), 3) for name, x in zip(names, w, strict=True)}


def leave_one_conversation_out(
    data: Path | Sequence[Path],
    *,
    embedder: str = "minilm",
    record: str = "memories",
    rows: Path | None = None,
) -> dict[str, Any]:
    """Held-out means over every conversation of ``data`` (one file or several,
    left out one conversation at a time across all of them), by data set too;
    ``rows``: a directory caching recorded rows. The hook bench/locomo.py calls."""
    files = [data] if isinstance(data, Path) else list(data)
    collected: list[Row] = []
    for path in files:
        cache = cache_file(rows, path, record, embedder)
        collected += rows_for(path, embedder=embedder, record=record, cache=cache)
    return loco(collected)


def cache_file(rows: Path | None, data: Path, record: str, embedder: str) -> Path | None:
    """Where ``--rows DIR`` keeps the rows of one data file and way (None: no cache)."""
    return rows / f"{data.stem}-{record}-{embedder}.json" if rows is not None else None


def loco(rows: Sequence[Row]) -> dict[str, Any]:
    """Leave-one-conversation-out: each conversation scored with weights
    fitted on all the others; means over the held-out questions, by
    category and by data set too."""
    convs = sorted({r.conversation for r in rows})
    held: list[Row] = []
    per: dict[str, list[float]] = {"R@1": [], "R@5": [], "R@10": [], "MRR": []}
    folds = []
    for conv in convs:
        test = [r for r in rows if r.conversation == conv]
        weights = fit([r for r in rows if r.conversation != conv])
        got = _Table(test, _names(test, weights)).scores(weights)
        for key, values in got.items():
            per[key].extend(values.tolist())
        held.extend(test)
        folds.append(
            {
                "conversation": conv,
                **{k: float(v.mean()) for k, v in got.items()},
                "n": len(test),
                "baseline_R@5": metrics(test, {})["R@5"],
            }
        )
    out: dict[str, Any] = {k: sum(v) / max(1, len(v)) for k, v in per.items()}
    out["baseline"] = metrics(held, {})
    out["by_category_R@5"] = _means(per["R@5"], [r.category for r in held])
    if len({r.dataset for r in held}) > 1:
        out["by_dataset"] = {}
        for name in sorted({r.dataset for r in held}):
            mine = [i for i, r in enumerate(held) if r.dataset == name]
            cats = [held[i].category for i in mine]
            out["by_dataset"][name] = {
                **{key: sum(values[i] for i in mine) / len(mine) for key, values in per.items()},
                "baseline_R@5": metrics([held[i] for i in mine], {})["R@5"],
                "by_category_R@5": _means([per["R@5"][i] for i in mine], cats),
                "by_category_MRR": _means([per["MRR"][i] for i in mine], cats),
                "n": len(mine),
            }
    out["folds"] = folds
    return out


def holdout(train: Sequence[Row], test: Sequence[Row]) -> dict[str, Any]:
    """Weights fitted on ``train`` (every conversation) scored on ``test``, a
    set nothing was fitted on, beside the first stage alone and the weights
    recall ships with."""
    from mdmem.recall.signals import RERANK_WEIGHTS

    weights = fit(train)
    out: dict[str, Any] = {}
    for label, w in (("fitted", weights), ("first_stage", {}), ("shipped", RERANK_WEIGHTS)):
        got = _Table(test, _names(test, w)).scores(w)
        out[label] = {k: float(v.mean()) for k, v in got.items()}
        out[label]["by_category_R@5"] = _means(got["R@5"].tolist(), [r.category for r in test])
    out["weights"] = weights
    return out


def _means(values: Sequence[float], keys: Sequence[Any]) -> dict[Any, float]:
    groups: dict[Any, list[float]] = {}
    for key, value in zip(keys, values, strict=True):
        groups.setdefault(key, []).append(value)
    return {k: sum(v) / len(v) for k, v in sorted(groups.items())}


def write_weights(weights: dict[str, float], note: str) -> None:
    body = "\n".join(f'    "{k}": {v!r},' for k, v in weights.items())
    WEIGHTS_FILE.write_text(
        '"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` '
        "(ListNet over recall's candidates).\n\n"
        "Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the\n"
        "first stage's score; all zero is the first stage alone. Regenerate with\n"
        "``python bench/rerank_fit.py --write`` (LoCoMo dev and the REALTALK dev chats).\n"
        f"{note}\n"
        '"""\n\n'
        f"RERANK_WEIGHTS: dict[str, float] = {{\n{body}\n}}\n"
    )


def rows_for(data: Path, *, embedder: str, record: str, cache: Path | None) -> list[Row]:
    """Collected rows of one data file, read from ``cache`` when it holds them
    (same file contents, embedder and recording way), else collected and saved."""
    key = {
        "data": hashlib.sha256(data.read_bytes()).hexdigest(),
        "embedder": embedder,
        "record": record,
    }
    if cache is not None and cache.is_file():
        saved = json.loads(cache.read_text())
        if saved.get("key") == key:
            return [_row_from(r) for r in saved["rows"]]
    print(f"collecting {data.name} ({record}) ...", file=sys.stderr)
    rows = collect(data, embedder=embedder, record=record)
    if cache is not None:
        cache.write_text(json.dumps({"key": key, "rows": [_row_to(r) for r in rows]}))
    return rows


def _row_to(row: Row) -> dict[str, Any]:
    return {**row.__dict__, "ids": [sorted(i) for i in row.ids], "evidence": sorted(row.evidence)}


def _row_from(d: dict[str, Any]) -> Row:
    return Row(**{**d, "ids": [frozenset(i) for i in d["ids"]], "evidence": set(d["evidence"])})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, nargs="+", default=list(DEFAULT_DATA))
    parser.add_argument(
        "--holdout",
        type=Path,
        nargs="*",
        default=[],
        help="data files scored with weights fitted on --data only (never fitted on)",
    )
    parser.add_argument("--record", choices=("memories", "session", "both"), default="both")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument(
        "--rows", type=Path, help="directory caching collected rows (refits skip recording)"
    )
    parser.add_argument("--write", action="store_true", help="write the all-data fit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for path in [*args.data, *args.holdout]:
        if not path.is_file():
            parser.error(f"no data file at {path}")
    ways = ("memories", "session") if args.record == "both" else (args.record,)
    if args.rows is not None:
        args.rows.mkdir(parents=True, exist_ok=True)

    def cached(files: Sequence[Path], way: str) -> list[Row]:
        rows: list[Row] = []
        for path in files:
            cache = cache_file(args.rows, path, way, args.embedder)
            rows.extend(rows_for(path, embedder=args.embedder, record=way, cache=cache))
        return rows

    rows: list[Row] = []
    result: dict[str, Any] = {}
    for way in ways:
        way_rows = cached(args.data, way)
        rows.extend(way_rows)
        result[way] = loco(way_rows)
        if args.holdout:
            result[way]["holdout"] = holdout(way_rows, cached(args.holdout, way))
    # Both recording ways share one set of weights: fit on their union.
    final = fit(rows)
    result["weights_all_data"] = final
    if args.write:
        held = {w: (round(result[w]["R@5"], 3), round(result[w]["MRR"], 3)) for w in ways}
        sets = ", ".join(p.name for p in args.data)
        write_weights(
            final,
            f"Fitted on {sets}, {' and '.join(ways)} rows; held-out\n(leave-one-conversation-out) "
            f"R@5, MRR when fitted:\n{held}.",
        )
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    for way in ways:
        r = result[way]
        print(
            f"{way}: held-out R@1 {r['R@1']:.3f}  R@5 {r['R@5']:.3f}  R@10 {r['R@10']:.3f}  "
            f"MRR {r['MRR']:.3f}   (first stage: R@5 {r['baseline']['R@5']:.3f}  "
            f"MRR {r['baseline']['MRR']:.3f})  by category R@5 {_rounded(r['by_category_R@5'])}"
        )
        for name, d in r.get("by_dataset", {}).items():
            print(
                f"   {name} ({d['n']} questions): held-out R@5 {d['R@5']:.3f}  "
                f"MRR {d['MRR']:.3f}  (first stage R@5 {d['baseline_R@5']:.3f})  "
                f"by category R@5 {_rounded(d['by_category_R@5'])}  "
                f"MRR {_rounded(d['by_category_MRR'])}"
            )
        for f in r["folds"]:
            print(
                f"   {f['conversation']}: R@5 {f['R@5']:.3f} (first stage {f['baseline_R@5']:.3f})"
            )
        if "holdout" in r:
            h = r["holdout"]
            for label in ("first_stage", "shipped", "fitted"):
                m = h[label]
                print(
                    f"   holdout {label:<11}: R@5 {m['R@5']:.3f}  MRR {m['MRR']:.3f}  "
                    f"by category R@5 {_rounded(m['by_category_R@5'])}"
                )
    print(f"weights (all data): {final}")


def _rounded(d: Mapping[Any, float]) -> dict[Any, float]:
    return {k: round(v, 3) for k, v in d.items()}


if __name__ == "__main__":
    main()
