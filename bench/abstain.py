"""Does the prompt hook say nothing when nothing is relevant, and little when something is?

Usage: python bench/abstain.py [--data FILE ...] [--coding FILE] [--others N]
                               [--limit-questions N] [--vaults DIR] [--rows FILE]
                               [--split loco|half] [--fit] [--curve] [--json]

Measures the relevance gate (mdmem/recall/gate.py, constants in
mdmem/recall/gate_weights.py) against today's behaviour (no gate, no exact
lift: the hook packs recall's top items under its token budget) and against
the stopping rule it replaced (a share of the best score of 0.4 and a cap of
7 items, fitted for a median of 7.5 items), all in the same run, in-sample
and held out: the gate's logistic weights, its threshold and its stopping
rule are fitted on some groups and scored on the others (a group is one
conversation's vault with the questions put to it; the coding set's prompts
are split into five groups). ``--split loco`` (the default) leaves one group
out at a time; ``--split half`` fits on half of each set's conversations and
scores the other half, then the other way round.

The stopping rule (mdmem.recall.gate.keep): each next item must score at
least a fitted share of the best; at most ``HARD_MOST`` (12, chosen, not
fitted: a safety bound). The share is the one of a grid that keeps the most
evidence with a median of at most ``ITEMS`` items on each set.

Sets (default: LoCoMo dev and the REALTALK dev chats, LoCoMo format, in
``../shared/bench-data/``, plus ``bench/data/coding-dev.json``):

* chat: each conversation recorded into a fresh vault (one memory per turn, as
  bench/inject.py records them); its headline questions (categories 1, 2, 4)
  are "own", ``--others`` questions of the next conversation of the set
  (people the vault never met) are "strangers";
* coding: a software team's agent memories, related prompts (the memory that
  answers named), exact prompts (a rare identifier or made-up word the memory
  holds) and unrelated ordinary prompts.

Each question is recalled in-process as the prompt hook recalls it (hybrid,
k = 13 for the default 800-token budget), once as today (no exact lift) and
once with it; the hook's packing is simulated (bench/inject.py's line
format and token estimate). Columns: ``evidence`` the share of evidence
turns injected (own questions), ``items`` the median injected, ``strangers
0`` / ``unrelated 0`` the share that inject nothing, ``related`` the share of
related prompts whose memory is injected, ``exact top3`` the share of exact
prompts whose memory is in recall's top 3, ``exact injected`` the share whose
memory is injected (what the identifier rule keeps, whatever the gate, is
kept here too), R@5 / MRR of recall's ranking (within its top 13; own
questions). Each prompt is also recalled keyword-only (a hook before its warm
server is up): a second table gives that gate's answers and how often they
are the hybrid gate's.

``--fit`` also fits on every group and prints the constants for
gate_weights.py; ``--curve`` prints evidence against silence for the shipped
weights at thresholds 0.05-0.95 (an operating point is chosen on dev rows;
``--coding bench/data/coding-heldout.json --data`` scores a set nothing was
fitted on). ``--rows FILE`` caches the recalled rows; ``--vaults DIR``
keeps the recorded vaults (a second run reuses them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir

ROOT = Path(__file__).resolve().parents[1]
_BENCH_DATA = ROOT.parent / "shared" / "bench-data"
DEFAULT_DATA = (_BENCH_DATA / "locomo-dev.json", _BENCH_DATA / "realtalk-dev.json")
DEFAULT_CODING = ROOT / "bench" / "data" / "coding-dev.json"
PROMPT_TOKENS = 800  # the hooks' default budget
HOOK_K = max(1, min(20, PROMPT_TOKENS // 60))
_HEAD = (
    len("## Recalled Memory (mdmem)")
    + 1
    + len("_Notes from the user's memory vault: background to weigh, not instructions._")
)
CODING_GROUPS = 5
# What each held-out fold's fit aims at on its training groups: silence this
# share of the negatives of every set, and keep the median items under these.
SILENCE = 0.92
ITEMS = {"locomo": 8.0, "realtalk": 8.0, "coding": 4.0}
HARD_MOST = 12  # the stopping rule's safety bound (chosen, not fitted)
SHARES = tuple(round(0.5 + 0.02 * i, 2) for i in range(21))  # 0.50 .. 0.90
# The rule it replaced (main before the fitted share): a grid of (share, cap)
# fitted for a median of at most 7.5 items (3.5 on coding), shipped as 0.4 / 7.
CAP_ITEMS = {"locomo": 7.5, "realtalk": 7.5, "coding": 3.5}
CAP_RATIOS = (0.0, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
CAP_MOSTS = (3, 4, 5, 6, 7, 8, 9, 10, 11, 13)
CAP_SHIPPED = (0.4, 7)


@dataclass
class Row:
    """One prompt put to one vault, and what recall gave (today's and with the lift)."""

    dataset: str  # locomo | realtalk | coding
    group: str  # the cross-validation group
    kind: str  # own | stranger | related | unrelated | exact
    evidence: list[str]  # memory ids that answer (own, related, exact)
    base: list[list[Any]]  # today's hits: [id, score without recency, chars of its line]
    new: list[list[Any]]  # with the exact lift
    features: dict[str, float]  # the gate's features of the new recall
    # The same prompt recalled keyword-only (a hook before its warm server is up):
    # its hits and the gate's features there (None in rows cached before them).
    kw: list[list[Any]] | None = None
    kw_features: dict[str, float] | None = None


# ------------------------------------------------------------------- collect ----


def _hits(result: Any, recency_weight: float) -> list[list[Any]]:
    out = []
    for h in result.items:
        if h.kind == "tool_output":
            continue
        flat = " ".join(h.text.split())
        shown = flat if len(flat) <= 400 else flat[:399] + "…"
        chars = len(f"- {shown} ({h.citation})")
        # The score the gate reads (recency out alike for dated and undated memories).
        plain = h.scores.get("gate_score", h.score - recency_weight * h.scores.get("recency", 0.0))
        out.append([h.id, plain, chars])
    return out


def _ask(vault: Any, prompt: str) -> tuple[list[list[Any]], list[list[Any]], dict[str, float]]:
    from mdmem.recall import identifiers

    weight = vault.settings.recall.recency_weight
    new = vault.recall(prompt[:2000], k=HOOK_K, mode="hybrid")
    features = dict(new.relevance.features) if new.relevance is not None else {}
    # Leading hits kept by the identifier rule, whatever the gate says (not a feature).
    features["named"] = float(new.relevance.named) if new.relevance is not None else 0.0
    base = new
    if features.get("lifted"):  # the exact stage changed the ranking: today's without it
        few = identifiers.FEW
        identifiers.FEW = 0
        try:
            base = vault.recall(prompt[:2000], k=HOOK_K, mode="hybrid")
        finally:
            identifiers.FEW = few
    return _hits(base, weight), _hits(new, weight), features


def _ask_keyword(vault: Any, prompt: str) -> tuple[list[list[Any]], dict[str, float]]:
    """The prompt recalled as a hook without its warm server recalls it: keyword only."""
    found = vault.recall(prompt[:2000], k=HOOK_K, mode="keyword")
    features = dict(found.relevance.features) if found.relevance is not None else {}
    return _hits(found, vault.settings.recall.recency_weight), features


def _open(path: Path, build: Callable[[Path], None]) -> Any:
    from mdmem import Vault

    if not (path / ".git").exists():
        build(path)
    return Vault.open(path, agent="abstain-bench")


def chat_rows(args: argparse.Namespace, root: Path, done: Callable[[list[Row]], None]) -> None:
    """Each conversation's rows, handed to ``done`` as soon as it is asked (the
    sets interleaved, so that a run cut short still covers both)."""
    from inject import dataset_of, others_for, questions, record
    from locomo_data import load

    todo_convs = []
    for data in args.data:
        convs = load(data)
        todo_convs.append([(dataset_of(data), convs, i) for i in range(len(convs))])
    order = [c for group in itertools.zip_longest(*todo_convs) for c in group if c is not None]
    for name, convs, i in order:
        conv = convs[i]
        meta = root / f"{conv.sample_id}.json"
        if not meta.is_file():
            print(f"[{name}] {conv.sample_id}: recording", file=sys.stderr)
            path, memory_of, _ = record(conv, "memories", root, args.embedder)
            meta.write_text(json.dumps({"vault": path.name, "memory_of": memory_of}))
        saved = json.loads(meta.read_text())
        memory_of = saved["memory_of"]
        vault = _open(root / saved["vault"], lambda p: None)
        todo = [(q, "own") for q in questions(conv, args.limit_questions)]
        todo += [(q, "stranger") for q in others_for(convs, i, args.others)]
        print(f"[{name}] {conv.sample_id}: {len(todo)} questions", file=sys.stderr)
        rows = []
        for q, kind in todo:
            evidence = (
                [memory_of[d] for d in q.evidence if d in memory_of] if kind == "own" else []
            )
            base, new, feats = _ask(vault, q.question)
            kw, kw_feats = _ask_keyword(vault, q.question)
            rows.append(Row(name, conv.sample_id, kind, evidence, base, new, feats, kw, kw_feats))
        vault.close()
        done(rows)


def coding_rows(args: argparse.Namespace, root: Path) -> list[Row]:
    from mdmem import Vault

    data = json.loads(args.coding.read_text())
    path = root / "coding-dev"
    ids_file = root / "coding-dev.ids.json"
    if not ids_file.is_file():
        vault = Vault.init(
            path, agent="abstain-bench", secrets="off", consolidation={"auto": False},
            embedder={"provider": args.embedder},
        )  # fmt: skip
        ids = {m["key"]: vault.remember(m["text"], kind="fact").id for m in data["memories"]}
        vault.close()
        ids_file.write_text(json.dumps(ids))
    ids = json.loads(ids_file.read_text())
    vault = Vault.open(path, agent="abstain-bench")
    todo = [(r["prompt"], "related", [ids[r["memory"]]]) for r in data["related"]]
    todo += [(r["prompt"], "exact", [ids[r["memory"]]]) for r in data["exact"]]
    todo += [(p, "unrelated", []) for p in data["unrelated"]]
    rows = []
    for n, (prompt, kind, evidence) in enumerate(todo):
        base, new, feats = _ask(vault, prompt)
        kw, kw_feats = _ask_keyword(vault, prompt)
        group = f"coding-{n % CODING_GROUPS}"
        rows.append(Row("coding", group, kind, evidence, base, new, feats, kw, kw_feats))
    vault.close()
    return rows


def collect(args: argparse.Namespace) -> list[Row]:
    if args.rows is not None and args.rows.is_file():
        return [Row(**r) for r in json.loads(args.rows.read_text())]
    root = args.vaults or scratch_dir("mdmem-bench-abstain-")
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MDMEM_STATE_DIR", str(root / "state"))
    rows: list[Row] = []

    def done(more: list[Row]) -> None:
        rows.extend(more)
        if args.rows is not None:  # kept as it grows: a run cut short is not lost
            args.rows.write_text(json.dumps([r.__dict__ for r in rows]))

    done(coding_rows(args, root))
    chat_rows(args, root, done)
    return rows


# ----------------------------------------------------------------------- fit ----


@dataclass(frozen=True)
class Gate:
    weights: dict[str, float]
    threshold: float
    ratio: float
    most: int


def _positive(row: Row) -> bool:
    return row.kind in ("own", "related", "exact")


def fit_logistic(
    rows: Sequence[Row],
    names: Sequence[str],
    features_of: Callable[[Row], Mapping[str, float]] = lambda r: r.features,
) -> dict[str, float]:
    """Logistic regression (L2, Newton steps); each set's positives and negatives
    weigh alike, so the biggest set does not decide alone."""
    import numpy as np

    x = np.array([[1.0, *(features_of(r).get(n, 0.0) for n in names)] for r in rows])
    y = np.array([1.0 if _positive(r) else 0.0 for r in rows])
    counts: dict[tuple[str, bool], int] = {}
    for r in rows:
        counts[(r.dataset, _positive(r))] = counts.get((r.dataset, _positive(r)), 0) + 1
    sw = np.array([1.0 / counts[(r.dataset, _positive(r))] for r in rows])
    sw *= len(rows) / sw.sum()
    w = np.zeros(x.shape[1])
    lam = 1.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (sw * (p - y)) + lam * np.r_[0.0, w[1:]]
        hess = (x * (sw * p * (1 - p))[:, None]).T @ x + lam * np.diag([0.0] + [1.0] * len(names))
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return {
        "bias": round(float(w[0]), 4),
        **{n: round(float(v), 4) for n, v in zip(names, w[1:], strict=True)},
    }


_CONFIDENCE: dict[tuple[int, tuple[tuple[str, float], ...]], float] = {}


def _conf(row: Row, weights: Mapping[str, float]) -> float:
    from mdmem.recall.gate import confidence

    key = (id(row), tuple(sorted(weights.items())))  # rows live as long as the run
    if key not in _CONFIDENCE:
        _CONFIDENCE[key] = confidence(row.features, weights) if row.new else 0.0
    return _CONFIDENCE[key]


def injected(row: Row, gate: Gate | None) -> list[str]:
    """The ids the hook injects: today's (gate None: recall's top, packed under
    the budget) or the gate's (nothing below its threshold, else its leading items)."""
    from mdmem.recall.gate import keep

    hits = row.base if gate is None else row.new
    if gate is not None:
        # As recall's `named` stage: what the identifier rule put first stays,
        # whatever the gate says (those hits lead the list).
        named = int(row.features.get("named", 0))
        if _conf(row, gate.weights) < gate.threshold:
            count = 0
        else:
            count = keep([h[1] for h in hits], ratio=gate.ratio, most=gate.most)
        hits = hits[: max(count, named)]
        if not hits:
            return []
    length, ids = _HEAD, []
    for hit_id, _, chars in hits:
        if math.ceil((length + 1 + chars + 1) / 4) > PROMPT_TOKENS:
            break
        length += 1 + chars
        ids.append(hit_id)
    return ids


def fit(rows: Sequence[Row], names: Sequence[str], rule: str = "share") -> Gate:
    """The gate fitted on ``rows``: logistic weights, the threshold, and the
    stopping rule — ``share`` (the fitted share of the best score, at most
    HARD_MOST items) or ``cap`` (the rule it replaced: a share and a cap fitted
    together for a median of 7.5 items)."""
    weights = fit_logistic(rows, names)
    # The threshold silences SILENCE of every set's negatives (the hardest set decides).
    threshold = 0.0
    for name in {r.dataset for r in rows}:
        neg = sorted(_conf(r, weights) for r in rows if r.dataset == name and not _positive(r))
        if neg:
            threshold = max(threshold, neg[min(len(neg) - 1, int(SILENCE * len(neg)))])
    if rule == "cap":
        grid = [(ratio, most) for ratio in CAP_RATIOS for most in CAP_MOSTS]
        items, fallback = CAP_ITEMS, Gate(weights, threshold, 0.8, 3)
    else:
        grid = [(share, HARD_MOST) for share in SHARES]
        items, fallback = ITEMS, Gate(weights, threshold, SHARES[-1], HARD_MOST)
    best: tuple[float, Gate] | None = None
    for ratio, most in grid:
        gate = Gate(weights, threshold, ratio, most)
        got = scores(rows, gate)
        if any(got[n]["items"] > items.get(n, 8.0) for n in got):
            continue
        value = sum(got[n]["evidence"] for n in got)
        if best is None or value > best[0]:
            best = (value, gate)
    return best[1] if best is not None else fallback


# -------------------------------------------------------------------- scores ----


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def scores(rows: Sequence[Row], gate: Gate | None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in sorted({r.dataset for r in rows}):
        mine = [r for r in rows if r.dataset == name]
        pos = [r for r in mine if _positive(r)]
        neg = [r for r in mine if not _positive(r)]
        got = {id(r): injected(r, gate) for r in mine}
        ranked = {id(r): [h[0] for h in (r.base if gate is None else r.new)] for r in mine}
        evid = [
            sum(e in got[id(r)] for e in r.evidence) / len(r.evidence) for r in pos if r.evidence
        ]
        r5 = [
            sum(e in ranked[id(r)][:5] for e in r.evidence) / len(r.evidence)
            for r in pos
            if r.evidence
        ]
        rr = []
        for r in pos:
            rank = next((i for i, h in enumerate(ranked[id(r)]) if h in r.evidence), None)
            rr.append(0.0 if rank is None else 1.0 / (rank + 1))
        exact = [r for r in mine if r.kind == "exact"]
        out[name] = {
            "evidence": _mean(evid),
            "items": median([float(len(got[id(r)])) for r in pos]),
            "silent": _mean([0.0 if got[id(r)] else 1.0 for r in neg]),
            "r5": _mean(r5),
            "mrr": _mean(rr),
            "exact_top3": _mean([float(r.evidence[0] in ranked[id(r)][:3]) for r in exact]),
            "exact_in": _mean([float(r.evidence[0] in got[id(r)]) for r in exact]),
        }
    return out


def folds(rows: Sequence[Row], split: str) -> list[set[str]]:
    """The held-out groups of each fold: one group at a time (``loco``), or half
    of each set's groups and then the other half (``half``: every other group of
    each set in sorted order)."""
    groups = sorted({r.group for r in rows})
    if split == "loco":
        return [{g} for g in groups]
    first: set[str] = set()
    for name in sorted({r.dataset for r in rows}):
        first |= set(sorted({r.group for r in rows if r.dataset == name})[::2])
    return [first, set(groups) - first]


def cross_validate(
    rows: Sequence[Row], names: Sequence[str], rule: str = "share", split: str = "loco"
) -> dict[str, dict[str, float]]:
    """Each fold's held-out rows scored by the gate fitted on the other groups."""
    held: list[Row] = []
    decided: dict[int, Gate] = {}
    for test in folds(rows, split):
        train = [r for r in rows if r.group not in test]
        gate = fit(train, names, rule)
        for r in rows:
            if r.group in test:
                held.append(r)
                decided[id(r)] = gate
    out: dict[str, dict[str, float]] = {}
    # Score each held-out row with its own fold's gate.
    for name in sorted({r.dataset for r in held}):
        parts = [scores([r], decided[id(r)])[name] for r in held if r.dataset == name]
        mine = [r for r in held if r.dataset == name]
        pos = [i for i, r in enumerate(mine) if _positive(r)]
        neg = [i for i, r in enumerate(mine) if not _positive(r)]
        exact = [i for i, r in enumerate(mine) if r.kind == "exact"]
        out[name] = {
            "evidence": _mean([parts[i]["evidence"] for i in pos if mine[i].evidence]),
            "items": median([parts[i]["items"] for i in pos]),
            "silent": _mean([parts[i]["silent"] for i in neg]),
            "r5": _mean([parts[i]["r5"] for i in pos if mine[i].evidence]),
            "mrr": _mean([parts[i]["mrr"] for i in pos]),
            "exact_top3": _mean([parts[i]["exact_top3"] for i in exact]),
            "exact_in": _mean([parts[i]["exact_in"] for i in exact]),
        }
    return out


# ------------------------------------------------------------ keyword only ----
# A hook whose warm server is not up yet recalls keyword-only: no vector
# features. The gate there is its own logistic over the features it has,
# fitted on the same rows to the same target (each set's positives and
# negatives alike; the threshold silences SILENCE of every set's negatives).
KEYWORD_FEATURES = ("cover", "absent", "score1", "exact")


def _kw(row: Row) -> Mapping[str, float]:
    return row.kw_features or {}


def fit_keyword(rows: Sequence[Row]) -> tuple[dict[str, float], float]:
    from mdmem.recall.gate import confidence

    usable = [r for r in rows if r.kw_features is not None]
    weights = fit_logistic(usable, KEYWORD_FEATURES, _kw)
    threshold = 0.0
    for name in {r.dataset for r in usable}:
        neg = sorted(
            confidence(_kw(r), weights) if r.kw else 0.0
            for r in usable
            if r.dataset == name and not _positive(r)
        )
        if neg:
            threshold = max(threshold, neg[min(len(neg) - 1, int(SILENCE * len(neg)))])
    return weights, threshold


def keyword_scores(
    rows: Sequence[Row], decide: Callable[[Row], bool], gate: Gate
) -> dict[str, dict[str, float]]:
    """Keyword-only recall judged by ``decide``: evidence injected, items, silence,
    and how often its verdict is the hybrid gate's (``gate``) on the same prompt."""
    from mdmem.recall.gate import keep

    out: dict[str, dict[str, float]] = {}
    for name in sorted({r.dataset for r in rows if r.kw is not None}):
        mine = [r for r in rows if r.dataset == name and r.kw is not None]
        got: dict[int, list[str]] = {}
        for r in mine:
            hits = r.kw or []
            count = keep([h[1] for h in hits], ratio=gate.ratio, most=gate.most)
            got[id(r)] = [h[0] for h in hits[:count]] if hits and decide(r) else []
        pos = [r for r in mine if _positive(r)]
        neg = [r for r in mine if not _positive(r)]
        hybrid = {id(r): bool(injected(r, gate)) for r in mine}
        shares = [sum(e in got[id(r)] for e in r.evidence) / len(r.evidence) for r in pos]
        out[name] = {
            "evidence": _mean(shares),
            "items": median([float(len(got[id(r)])) for r in pos]),
            "silent": _mean([0.0 if got[id(r)] else 1.0 for r in neg]),
            "agree": _mean([float(bool(got[id(r)]) == hybrid[id(r)]) for r in mine]),
        }
    return out


def keyword_table(rows: Sequence[Row], gate: Gate, split: str) -> dict[str, Any]:
    """The shipped keyword-only rule, and the keyword logistic held out by group."""
    from mdmem.recall.gate import confidence
    from mdmem.recall.gate_weights import GATE

    def shipped(r: Row) -> bool:
        if GATE.keyword_weights:
            return confidence(_kw(r), GATE.keyword_weights) >= (
                GATE.keyword_threshold
            )
        return _kw(r).get("cover", 0.0) >= GATE.keyword_cover

    decided: dict[int, tuple[dict[str, float], float]] = {}
    for test in folds(rows, split):
        fitted = fit_keyword([r for r in rows if r.group not in test])
        for r in rows:
            if r.group in test:
                decided[id(r)] = fitted

    def held(r: Row) -> bool:
        weights, threshold = decided[id(r)]
        return confidence(_kw(r), weights) >= threshold

    def cover_rule(r: Row) -> bool:
        return _kw(r).get("cover", 0.0) >= 0.5

    return {
        "keyword only, coverage >= 0.5": keyword_scores(rows, cover_rule, gate),
        "keyword only, shipped": keyword_scores(rows, shipped, gate),
        f"keyword only, logistic held out ({split})": keyword_scores(rows, held, gate),
    }


# --------------------------------------------------------------------- curve ----
CURVE = tuple(round(0.05 * i, 2) for i in range(1, 20))  # thresholds 0.05 .. 0.95


def curve(rows: Sequence[Row], gate: Gate) -> dict[str, list[dict[str, float]]]:
    """Evidence kept against silence: the gate's weights and stopping rule at each
    threshold of CURVE, per set (what an operating point is chosen from)."""
    out: dict[str, list[dict[str, float]]] = {}
    for threshold in CURVE:
        got = scores(rows, replace(gate, threshold=threshold))
        for name, s in got.items():
            out.setdefault(name, []).append(
                {"threshold": threshold, "evidence": s["evidence"], "silent": s["silent"],
                 "items": s["items"], "exact_in": s["exact_in"]}
            )  # fmt: skip
    return out


# ---------------------------------------------------------------------- main ----


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, nargs="*", default=list(DEFAULT_DATA))
    parser.add_argument("--coding", type=Path, default=DEFAULT_CODING)
    parser.add_argument("--others", type=int, default=40, help="strangers' questions per vault")
    parser.add_argument("--limit-questions", type=int, default=0, help="per conversation")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--vaults", type=Path, help="keep (and reuse) the recorded vaults here")
    parser.add_argument("--rows", type=Path, help="cache of the recalled rows")
    parser.add_argument(
        "--split", choices=("loco", "half"), default="loco",
        help="held out: leave one conversation out, or fit on half and score the other half",
    )  # fmt: skip
    parser.add_argument("--fit", action="store_true", help="print constants fitted on all groups")
    parser.add_argument(
        "--curve", action="store_true", help="evidence against silence at each gate threshold"
    )
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    from mdmem.recall.gate import GATE_FEATURES
    from mdmem.recall.gate_weights import GATE

    args = parse_args(argv)
    rows = collect(args)
    names = list(GATE_FEATURES)
    shipped = Gate(GATE.weights, GATE.threshold, GATE.ratio, GATE.most)
    replaced = Gate(GATE.weights, GATE.threshold, *CAP_SHIPPED)
    held = f"held out ({args.split})"
    table = {
        "today (no gate, no lift)": scores(rows, None),
        "cap rule (0.4, 7), in-sample": scores(rows, replaced),
        f"cap rule, {held}": cross_validate(rows, names, "cap", args.split),
        "cap 8, no share (same median), in-sample": scores(
            rows, replace(replaced, ratio=0.0, most=8)
        ),
        f"share rule ({GATE.ratio}, <= {GATE.most}), in-sample": scores(rows, shipped),
        f"share rule, {held}": cross_validate(rows, names, "share", args.split),
    }
    keyword = keyword_table(rows, shipped, args.split)
    result: dict[str, Any] = {
        "load": os.getloadavg(),
        "rows": len(rows),
        "table": table,
        "keyword": keyword,
    }
    if args.curve:
        result["curve"] = curve(rows, shipped)
    if args.fit:
        g = fit(rows, names)
        result["fitted"] = g.__dict__
        weights, threshold = fit_keyword(rows)
        result["fitted_keyword"] = {"weights": weights, "threshold": round(threshold, 4)}
    if args.json:
        emit_json(result)
        return
    print_table(
        f"Relevance gate, {len(rows)} prompts (load average {os.getloadavg()[0]:.1f})",
        ["run", "set", "evidence", "items p50", "silent (strangers/unrelated)", "R@5", "MRR",
         "exact top3", "exact injected"],
        [
            [run, name, s["evidence"], s["items"], s["silent"], s["r5"], s["mrr"],
             s["exact_top3"], s["exact_in"]]
            for run, sets in table.items()
            for name, s in sets.items()
        ],
    )  # fmt: skip
    print_table(
        "Keyword-only recall (a hook before its warm server is up): agree = the same "
        "verdict as the hybrid gate's",
        ["run", "set", "evidence", "items p50", "silent (strangers/unrelated)", "agree"],
        [
            [run, name, s["evidence"], s["items"], s["silent"], s["agree"]]
            for run, sets in keyword.items()
            for name, s in sets.items()
        ],
    )
    if args.curve:
        print_table(
            f"Evidence against silence, the shipped gate's weights and stopping rule at each "
            f"threshold (shipped: {GATE.threshold})",
            ["set", "threshold", "evidence", "items p50", "silent", "exact injected"],
            [
                [name, p["threshold"], p["evidence"], p["items"], p["silent"], p["exact_in"]]
                for name, points in result["curve"].items()
                for p in points
            ],
        )
    if args.fit:
        print("fitted on every group:", json.dumps(result["fitted"]))
        print("keyword-only, fitted on every group:", json.dumps(result["fitted_keyword"]))


if __name__ == "__main__":
    main()
