"""Retrieval quality on LoCoMo: does recall find the dialog turns that answer a question?

Usage: python bench/locomo.py [--data FILE ...] [--embedder minilm|hash] [--json]
                              [--record memories|session|both]
                              [--consolidate none|extractive|llm]
                              [--modes keyword,vector,hybrid] [--no-loco]
                              [--only ID,ID] [--checkpoint FILE]
                              [--limit-conversations N] [--limit-questions N]
                              [--failures N] [--text-style said|plain|dated|reply]
                              [--speaker field|tag|none] [--no-threads]
                              [--query-style raw|keywords|keywords-nonames]
                              [--fusion rrf|blend] [--rows DIR]
       python bench/locomo.py --report RUN.json [RUN2.json ...] [--json]
           (the tables of saved --json runs; several runs over disjoint
           conversations, e.g. made in parallel with --only, are merged)

Each conversation is recorded into a fresh vault, once per recording way
(``--record``, default ``both``; see bench/locomo_record.py):

* ``memories``: ``remember(text, kind="fact", fields=[("speaker", name)],
  created=session_date)`` for every turn, inside one ``vault.batch()``;
* ``session``: one ``vault.session()`` per dialog session and
  ``record("user", text, event_id=dia_id, speaker=name, when=session_date)``
  per turn, as an agent host records chat.

The text is the dialog line as the LoCoMo paper writes it (``Caroline said,
"…" and shared a photo of …``). Every question is then recalled once per mode
(keyword only, vector only, hybrid; ``--modes``) with k=25 and scored against
the annotated evidence turns:

* R@k: the LoCoMo paper's fractional recall, |top-k ∩ evidence| / |evidence|;
* all@5: 1 when every evidence turn is in the top 5;
* MRR: 1 / rank of the first evidence turn (0 if none in the top 25);
* p50: the median latency of one recall (the first recall of a vault, which
  loads the model and opens the indexes, is left out).

Tables: headline and per category for each way and mode, per conversation
(hybrid: R@1/5/10, MRR, p50 and R@5 of each category, so a gain that only
fits one conversation's phrasing shows), and ``--json`` prints the same
numbers as one object.

The headline averages categories 1, 2 and 4 (multi-hop, temporal,
single-hop); category 3 (open-domain) is reported separately and 5
(adversarial) is left out. Malformed evidence ids are repaired, ids of turns
that do not exist are dropped, and questions left without evidence are
skipped; all three are counted. ``--failures N`` prints headline questions
where hybrid recall put no evidence turn in its top 5, with the evidence and
what came back instead.

``--consolidate extractive|llm`` consolidates each conversation's session
entries after the first round of questions (``llm``: a scripted model behind
the real local OpenAI-protocol server, deterministic) and asks the questions
again (hybrid). A hit on a fact or episode counts for the evidence turns it
was derived from; the table shows R@5 without and with consolidation, under
two creditings (``narrow``: only linked turns the hit's text restates;
``links``: every turn the episode summarised) and ``copies@5``, the hits of
the top 5 that repeat what a better-placed hit already stood for.
Consolidation reads session entries, so it applies to ``--record session``.

The leave-one-conversation-out line (re-ranking weights fitted on all other
conversations, scored on the held-out one) comes from ``bench/rerank_fit.py``
when it exists; see :func:`loco_line`.

Levers an agent host controls (defaults measure recall as shipped, with the
host recording who said each turn): ``--text-style`` how a turn is written
(``reply`` adds the question it answers); ``--speaker`` how the speaker is
recorded: ``field`` (default, ``[speaker:: Caroline]``, which makes the turns
a conversation for recall's people and thread signals, see
mdmem.recall.conversation), ``tag`` (``#caroline``, memories only) or
``none``; ``--query-style`` how the question is turned into a recall query
(``keywords`` drops question words). ``--no-threads`` sets the thread weights
to 0 (the ablation of that signal).

The data sets are read from ``--data`` (default ``<repo>/../shared/bench-data/
locomo-dev.json`` and ``realtalk-dev.json``, the real-chat dev set; never
copied into the repository). Each file gets its own tables; with several,
the leave-one-conversation-out line runs once over all their conversations
and is printed per data set and category (``--rows DIR`` caches its
recorded rows, see bench/rerank_fit.py). Our own short-turn chat set,
``bench/data/shortchat.json``, is in the same format (see
bench/data/README.md): a smoke test, not a fitting target.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir
from locomo_data import (
    CATEGORY_NAMES,
    HEADLINE_CATEGORIES,
    Conversation,
    Question,
    copies_at_k,
    covered_recall_at_k,
    covered_reciprocal_rank,
    load,
    mean,
    memory_text,
    rewrite_query,
)
from locomo_record import CREDITS, RECORD_WAYS, Credit, Ingested, consolidate, ingest, scripted_llm

_BENCH_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"
# LoCoMo dev and the real-chat dev set (REALTALK): each reported on its own.
DEFAULT_DATA = (_BENCH_DATA / "locomo-dev.json", _BENCH_DATA / "realtalk-dev.json")
MODES = ("keyword", "vector", "hybrid")
DEPTH = 25
METRICS = ("R@1", "R@5", "R@10", "R@25", "all@5", "MRR")
CONV_METRICS = ("R@1", "R@5", "R@10", "MRR")
# Knobs of [recall] that would hide what retrieval itself finds: every turn of
# a conversation is old and equally "recent", and a floor drops candidates the
# metric should still see at rank 11-25. Only fields the installed
# RecallSettings has are applied (and printed). Tag boost and the thread
# weights stay as shipped (--no-threads zeroes the latter).
RECALL_OVERRIDES: dict[str, Any] = {
    "recency_weight": 0.0,
    "min_relevance": 0.0,
    "min_vector": -1.0,
    "rerank": False,
}
REFERENCE = (
    "plain pipeline measured before: R@5 = 0.57, MRR = 0.46 (headline); "
    "each signal alone 0.46-0.50; targets: hybrid beats both single signals and R@5 >= 0.70"
)


@dataclass
class Scored:
    """One question's outcome under every mode (or crediting, after consolidation)."""

    conversation: str
    question: Question
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)  # label -> metric
    ranked: dict[str, list[str]] = field(default_factory=dict)  # label -> memory ids
    copies: dict[str, int] = field(default_factory=dict)  # label -> copies@5


@dataclass
class ConvRun:
    sample_id: str
    way: str
    turns: int
    memories: int
    ingest_s: float
    commits: str
    recall_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    consolidation: dict[str, Any] | None = None


@dataclass
class WayRun:
    """Everything measured for one recording way."""

    scored: list[Scored] = field(default_factory=list)
    consolidated: list[Scored] = field(default_factory=list)
    runs: list[ConvRun] = field(default_factory=list)


def score(ranked: Sequence[frozenset[str]], evidence: set[str]) -> dict[str, float]:
    """Metrics of one ranking; each hit stands for the set of dialog turns it is credited with."""
    return {
        "R@1": covered_recall_at_k(ranked, evidence, 1),
        "R@5": covered_recall_at_k(ranked, evidence, 5),
        "R@10": covered_recall_at_k(ranked, evidence, 10),
        "R@25": covered_recall_at_k(ranked, evidence, 25),
        "all@5": 1.0 if covered_recall_at_k(ranked, evidence, 5) == 1.0 else 0.0,
        "MRR": covered_reciprocal_rank(ranked, evidence, DEPTH),
    }


def recall_overrides(fusion: str | None = None, threads: bool = True) -> dict[str, Any]:
    from mdmem.config import RecallSettings

    known = {f.name for f in fields(RecallSettings)}
    wanted = {**RECALL_OVERRIDES, **({"fusion": fusion} if fusion else {})}
    if not threads:
        wanted |= {"thread_reply_weight": 0.0, "thread_continuation_weight": 0.0}
    return {k: v for k, v in wanted.items() if k in known}


def recall_kwargs_for(
    vault: Any, modes: Sequence[str] = MODES
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per-mode keyword arguments for ``vault.recall``, and notes on what was missing."""
    params = inspect.signature(vault.recall).parameters
    notes: list[str] = []
    base: dict[str, Any] = {"k": DEPTH}
    if "include_inactive" in params:
        base["include_inactive"] = True
    if "mode" not in params:
        notes.append("Vault.recall has no `mode` parameter: only hybrid was measured")
        return {"hybrid": base}, notes
    return {mode: {**base, "mode": mode} for mode in modes}, notes


def open_vault(
    conv: Conversation, root: Path, args: argparse.Namespace, llm: dict[str, Any]
) -> Any:
    from mdmem import Vault

    extra: dict[str, Any] = {"llm": llm} if llm else {}
    return Vault.init(
        root / conv.sample_id,
        agent="locomo-bench",
        secrets="off",  # chat text is not ours to refuse; the guard is not under test
        embedder={"provider": args.embedder},
        recall=recall_overrides(args.fusion, not args.no_threads),
        # The "without consolidation" round must be without it.
        consolidation={"auto": False},
        **extra,
    )


def turn_texts(conv: Conversation, style: str) -> list[str]:
    previous = [None, *conv.turns[:-1]]
    return [memory_text(t, style, p) for t, p in zip(conv.turns, previous, strict=True)]


def ask(
    conv: Conversation,
    ing: Ingested,
    kwargs: dict[str, dict[str, Any]],
    args: argparse.Namespace,
    crun: ConvRun,
    credits: Sequence[str] = (),
) -> list[Scored]:
    """Recall every scored question of ``conv``; ``credits`` labels the
    consolidated round (hybrid only, one score per crediting)."""
    vault = ing.vault
    credit = Credit(vault, ing)
    out: list[Scored] = []
    # The first recall pays one-off costs (loading the model, opening the
    # indexes); keep it out of the latency sample.
    vault.recall("warm up", **kwargs[next(iter(kwargs))])
    for q in questions_of(conv, args):
        if q.category == 5 or not q.evidence:
            continue
        evidence = set(q.evidence)
        item = Scored(conv.sample_id, q)
        query = rewrite_query(q.question, args.query_style, (conv.speaker_a, conv.speaker_b))
        for mode, kw in kwargs.items():
            t0 = time.perf_counter()
            result = vault.recall(query, **kw)
            crun.recall_ms["consolidated" if credits else mode].append(
                (time.perf_counter() - t0) * 1000
            )
            for label in credits or (mode,):
                ranked = [credit.of(h, label if credits else "narrow") for h in result.items]
                item.ranked[label] = [h.id for h in result.items]
                item.metrics[label] = score(ranked, evidence)
                item.copies[label] = copies_at_k(ranked, 5)
        out.append(item)
    return out


def questions_of(conv: Conversation, args: argparse.Namespace) -> list[Question]:
    questions = list(conv.questions)
    return questions[: args.limit_questions] if args.limit_questions else questions


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure one data file (``args.data``: a path, or a list holding one)."""
    if isinstance(args.data, list):
        if len(args.data) != 1:
            raise ValueError("run() measures one data file; run_sets() several")
        args = argparse.Namespace(**{**vars(args), "data": args.data[0]})
    convs = load(args.data)
    if args.only:
        wanted = set(args.only.split(","))
        convs = [c for c in convs if c.sample_id in wanted]
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    ways = RECORD_WAYS if args.record == "both" else (args.record,)
    modes = tuple(args.modes)
    base = scratch_dir("mdmem-bench-locomo-")

    by_way = {way: WayRun() for way in ways}
    counts: dict[str, Any] = defaultdict(int)
    notes: list[str] = []
    texts: dict[tuple[str, str, str], str] = {}  # (way, conversation, memory id) -> text
    dia_of: dict[tuple[str, str, str], list[str]] = {}
    if args.consolidate != "none" and "memories" in ways:
        notes.append("consolidation folds session entries: the memories way has none to fold")
    if args.speaker == "tag" and "session" in ways:
        notes.append("--speaker tag: the session API has no tags, its turns carry no speaker")
    with scripted_llm(args.consolidate) as llm:
        for n, conv in enumerate(convs, start=1):
            print(f"[{n}/{len(convs)}] {conv.sample_id}: {len(conv.turns)} turns", file=sys.stderr)
            counts["conversations"] += 1
            counts["turns"] += len(conv.turns)
            counts["evidence_ids_fixed"] += conv.evidence_fixed
            counts["evidence_ids_dropped"] += conv.evidence_dropped
            for q in questions_of(conv, args):
                counts["questions"] += 1
                counts["excluded_adversarial"] += q.category == 5
                counts["skipped_no_evidence"] += q.category != 5 and not q.evidence
            lines = turn_texts(conv, args.text_style)
            for way in ways:
                vault = open_vault(conv, base / way, args, llm)
                start = time.perf_counter()
                ing = ingest(vault, conv, way, lines, speaker=args.speaker)
                ingest_s = time.perf_counter() - start
                if way == "session" and ing.commits == "one per turn":
                    note = "session API: one commit per turn (record cannot join a batch yet)"
                    if note not in notes:
                        notes.append(note)
                kwargs, missing = recall_kwargs_for(vault, modes)
                notes.extend(x for x in missing if x not in notes)
                counts[f"memories_{way}"] += len(set(ing.turn_ids.values()))
                for turn in conv.turns:
                    key = (way, conv.sample_id, ing.turn_ids[turn.dia_id])
                    texts[key] = ing.texts[turn.dia_id]
                    dia_of.setdefault(key, []).append(turn.dia_id)
                crun = ConvRun(
                    conv.sample_id,
                    way,
                    len(conv.turns),
                    len(set(ing.turn_ids.values())),
                    ingest_s,
                    ing.commits,
                )
                by_way[way].runs.append(crun)
                by_way[way].scored += ask(conv, ing, kwargs, args, crun)
                if args.consolidate != "none" and way == "session":
                    crun.consolidation = consolidate(vault, args.consolidate)
                    hybrid = {"hybrid": kwargs.get("hybrid", next(iter(kwargs.values())))}
                    by_way[way].consolidated += ask(conv, ing, hybrid, args, crun, CREDITS)
                vault.close()
            if args.checkpoint is not None:
                # A long run (the session way with MiniLM on a busy machine
                # takes minutes per conversation) leaves what it has measured.
                partial = assemble(args, convs, ways, modes, by_way, counts, notes, texts, dia_of)
                args.checkpoint.write_text(json.dumps(partial, indent=2, default=str) + "\n")

    res = assemble(args, convs, ways, modes, by_way, counts, notes, texts, dia_of)
    res["loco"] = loco_line(args, ways, [args.data]) if args.loco else None
    return res


def run_sets(args: argparse.Namespace) -> dict[str, Any]:
    """Each ``--data`` file measured on its own (one result each, in ``sets``),
    and one leave-one-conversation-out line over all their conversations."""
    files: list[Path] = list(args.data)
    sets = [run(argparse.Namespace(**{**vars(args), "data": p, "loco": False})) for p in files]
    for one in sets:
        one["loco"] = {}  # the joint line below stands for every set
    ways = RECORD_WAYS if args.record == "both" else (args.record,)
    return {"sets": sets, "loco": loco_line(args, ways, files) if args.loco else None}


def assemble(
    args: argparse.Namespace,
    convs: Sequence[Conversation],
    ways: Sequence[str],
    modes: Sequence[str],
    by_way: dict[str, WayRun],
    counts: dict[str, Any],
    notes: list[str],
    texts: dict[tuple[str, str, str], str],
    dia_of: dict[tuple[str, str, str], list[str]],
) -> dict[str, Any]:
    """The result object (what --json prints) from what has been measured so far."""
    out_ways: dict[str, Any] = {}
    for way, wr in by_way.items():
        out_ways[way] = summarise(wr, modes)
        out_ways[way]["failures"] = failures(wr, convs, args.failures, way, texts, dia_of)
        out_ways[way]["raw"] = raw_of(wr)
    # Every way asks the same questions: count them once.
    scored = by_way[ways[0]].scored
    by_cat: dict[int, int] = defaultdict(int)
    for s in scored:
        by_cat[s.question.category] += 1
    return {
        "data": str(args.data),
        "embedder": args.embedder,
        "record": list(ways),
        "modes": list(modes),
        "consolidate": args.consolidate,
        "text_style": args.text_style,
        "speaker": args.speaker,
        "threads": not args.no_threads,
        "query_style": args.query_style,
        "recall_overrides": recall_overrides(args.fusion, not args.no_threads),
        "notes": notes,
        "counts": {
            **counts,
            "scored": len(scored),
            "headline": sum(1 for s in scored if s.question.category in HEADLINE_CATEGORIES),
            "by_category": {c: by_cat[c] for c in sorted(by_cat)},
        },
        "ways": out_ways,
        "loco": None,
        "reference": REFERENCE,
    }


def raw_of(wr: WayRun) -> dict[str, Any]:
    """Per-question scores and per-conversation latencies: what --report needs to
    merge runs made in parallel (one conversation each) into one table."""

    def rows(items: list[Scored]) -> list[dict[str, Any]]:
        return [
            {
                "conversation": s.conversation,
                "category": s.question.category,
                "metrics": s.metrics,
                "copies": s.copies,
            }
            for s in items
        ]

    return {
        "scored": rows(wr.scored),
        "consolidated": rows(wr.consolidated),
        "runs": [
            {
                "sample_id": r.sample_id,
                "way": r.way,
                "turns": r.turns,
                "memories": r.memories,
                "ingest_s": r.ingest_s,
                "commits": r.commits,
                "recall_ms": dict(r.recall_ms),
                "consolidation": r.consolidation,
            }
            for r in wr.runs
        ],
    }


def merge(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result from runs over disjoint conversations (``--only``), re-aggregated
    from their per-question scores, as if it had been one run."""
    if len(results) == 1:
        return dict(results[0])
    first = results[0]
    ways = list(dict.fromkeys(w for r in results for w in r["ways"]))
    modes = first["modes"]
    out = {k: v for k, v in first.items() if k not in ("ways", "counts", "notes")}
    out["record"] = ways
    out["data"] = ", ".join(dict.fromkeys(str(r["data"]) for r in results))
    out["notes"] = list(dict.fromkeys(n for r in results for n in r["notes"]))
    out["loco"] = next((r["loco"] for r in results if r.get("loco")), None)
    counts: dict[str, Any] = defaultdict(int)
    for r in results:
        for k, v in r["counts"].items():
            if k not in ("scored", "headline", "by_category") and isinstance(v, int | float):
                counts[k] += v
    out_ways: dict[str, Any] = {}
    for way in ways:
        wr = WayRun()
        fails: list[dict[str, Any]] = []
        for r in results:
            if way not in r["ways"]:
                continue
            raw = r["ways"][way].get("raw")
            if raw is None:
                raise SystemExit(f"{r['data']}: no per-question scores (run with this version)")
            wr.scored += [_scored(x) for x in raw["scored"]]
            wr.consolidated += [_scored(x) for x in raw["consolidated"]]
            wr.runs += [_conv_run(x) for x in raw["runs"]]
            fails += r["ways"][way].get("failures", [])
        out_ways[way] = summarise(wr, modes)
        out_ways[way]["failures"] = fails
        out_ways[way]["raw"] = raw_of(wr)
    scored = [x for x in out_ways[ways[0]]["raw"]["scored"]]
    by_cat: dict[int, int] = defaultdict(int)
    for x in scored:
        by_cat[int(x["category"])] += 1
    out["counts"] = {
        **counts,
        "scored": len(scored),
        "headline": sum(1 for x in scored if x["category"] in HEADLINE_CATEGORIES),
        "by_category": {c: by_cat[c] for c in sorted(by_cat)},
    }
    out["ways"] = out_ways
    return out


def _scored(row: dict[str, Any]) -> Scored:
    question = Question("", "", int(row["category"]), (), ())
    return Scored(row["conversation"], question, row["metrics"], {}, row.get("copies", {}))


def _conv_run(row: dict[str, Any]) -> ConvRun:
    run = ConvRun(
        row["sample_id"],
        row["way"],
        row["turns"],
        row["memories"],
        row["ingest_s"],
        row["commits"],
        consolidation=row.get("consolidation"),
    )
    for mode, values in row["recall_ms"].items():
        run.recall_ms[mode] = list(values)
    return run


def _agg(items: list[Scored], labels: Sequence[str], keys: Sequence[str] = METRICS) -> Any:
    return {m: {k: mean(s.metrics[m][k] for s in items) for k in keys} for m in labels}


def summarise(wr: WayRun, modes: Sequence[str]) -> dict[str, Any]:
    """Headline, per category, per conversation, timing and consolidation of one way."""
    headline = [s for s in wr.scored if s.question.category in HEADLINE_CATEGORIES]
    by_cat: dict[int, list[Scored]] = defaultdict(list)
    for s in wr.scored:
        by_cat[s.question.category].append(s)
    conv_rows: list[dict[str, Any]] = []
    for r in wr.runs:
        mine = [s for s in wr.scored if s.conversation == r.sample_id]
        head = [s for s in mine if s.question.category in HEADLINE_CATEGORIES]
        row: dict[str, Any] = {
            "conversation": r.sample_id,
            "questions": len(head),
            "hybrid": _agg(head, ["hybrid"], CONV_METRICS)["hybrid"] if "hybrid" in modes else {},
            "p50_ms": median(r.recall_ms.get("hybrid", [])),
            "R@5_by_category": {
                c: mean(s.metrics["hybrid"]["R@5"] for s in mine if s.question.category == c)
                for c in sorted({s.question.category for s in mine})
            }
            if "hybrid" in modes
            else {},
        }
        conv_rows.append(row)
    out: dict[str, Any] = {
        "headline": _agg(headline, modes),
        "by_category": {c: _agg(by_cat[c], modes) for c in sorted(by_cat)},
        "by_conversation": conv_rows,
        "recall_ms_p50": {
            m: median([x for r in wr.runs for x in r.recall_ms.get(m, [])]) for m in modes
        },
        "timing": [
            {
                "conversation": r.sample_id,
                "turns": r.turns,
                "memories": r.memories,
                "ingest_s": r.ingest_s,
                "commits": r.commits,
                "recall_ms_p50": {m: median(v) for m, v in r.recall_ms.items()},
            }
            for r in wr.runs
        ],
    }
    if wr.consolidated:
        out["consolidation"] = consolidation_summary(wr)
    return out


def consolidation_summary(wr: WayRun) -> dict[str, Any]:
    """R@5 / MRR / copies@5 before and after consolidation, overall and per conversation."""

    def block(before: list[Scored], after: list[Scored]) -> dict[str, Any]:
        hb = [s for s in before if s.question.category in HEADLINE_CATEGORIES]
        ha = [s for s in after if s.question.category in HEADLINE_CATEGORIES]
        res: dict[str, Any] = {
            "questions": len(ha),
            "without": {
                "R@5": mean(s.metrics["hybrid"]["R@5"] for s in hb),
                "MRR": mean(s.metrics["hybrid"]["MRR"] for s in hb),
                "copies@5": mean(s.copies["hybrid"] for s in hb),
            },
        }
        for credit in CREDITS:
            res[credit] = {
                "R@5": mean(s.metrics[credit]["R@5"] for s in ha),
                "MRR": mean(s.metrics[credit]["MRR"] for s in ha),
                "copies@5": mean(s.copies[credit] for s in ha),
            }
        return res

    per_conv = []
    for r in wr.runs:
        before = [s for s in wr.scored if s.conversation == r.sample_id]
        after = [s for s in wr.consolidated if s.conversation == r.sample_id]
        per_conv.append(
            {
                "conversation": r.sample_id,
                **block(before, after),
                "run": r.consolidation,
                "p50_ms": median(r.recall_ms.get("consolidated", [])),
            }
        )
    return {"all": block(wr.scored, wr.consolidated), "by_conversation": per_conv}


def failures(
    wr: WayRun,
    convs: Sequence[Conversation],
    n: int,
    way: str,
    texts: dict[tuple[str, str, str], str],
    dia_of: dict[tuple[str, str, str], list[str]],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not n:
        return out
    headline = [s for s in wr.scored if s.question.category in HEADLINE_CATEGORIES]
    misses = [s for s in headline if "hybrid" in s.metrics and s.metrics["hybrid"]["R@5"] == 0]
    for s in misses[:n]:
        conv = next(c for c in convs if c.sample_id == s.conversation)
        ids_of = {
            d: m for (w, c, m), ds in dia_of.items() if w == way and c == conv.sample_id for d in ds
        }
        rank_of = {
            m: next(
                (
                    i
                    for i, mid in enumerate(ranked, 1)
                    if set(dia_of.get((way, s.conversation, mid), [])) & set(s.question.evidence)
                ),
                None,
            )
            for m, ranked in s.ranked.items()
        }
        out.append(
            {
                "way": way,
                "conversation": s.conversation,
                "category": s.question.category,
                "question": s.question.question,
                "answer": s.question.answer,
                "first_evidence_rank": rank_of,
                "evidence": [
                    {
                        "dia_id": e,
                        "date": _day(conv.turn(e).when),
                        "text": texts.get((way, s.conversation, ids_of.get(e, "")), "?"),
                    }
                    for e in s.question.evidence
                ],
                "top3": [
                    {
                        "dia_id": ",".join(dia_of.get((way, s.conversation, mid), ["?"])),
                        "text": texts.get((way, s.conversation, mid), mid),
                    }
                    for mid in s.ranked["hybrid"][:3]
                ],
            }
        )
    return out


def loco_line(
    args: argparse.Namespace, ways: Sequence[str], files: Sequence[Path]
) -> dict[str, Any] | None:
    """The leave-one-conversation-out line, from ``bench/rerank_fit.py`` when it exists.

    The hook's contract: ``rerank_fit.leave_one_conversation_out(files:
    list[Path], *, embedder: str, record: str, rows: Path | None) -> dict``
    fits the re-ranking weights on all conversations of ``files`` but one,
    scores the held-out one, repeats for each, and returns the held-out means
    ``{"R@1", "R@5", "R@10", "MRR"}`` of the headline questions (optionally
    ``"folds"``, ``"by_category_R@5"`` and ``"by_dataset"``). The in-fold
    numbers are not what this line reports. Returns None when the module is
    absent.
    """
    try:
        import rerank_fit  # type: ignore[import-not-found]
    except ModuleNotFoundError as exc:
        if exc.name != "rerank_fit":
            return {"error": f"bench/rerank_fit.py could not be imported: {exc}"}
        return None
    fit = getattr(rerank_fit, "leave_one_conversation_out", None)
    if fit is None:
        return {"error": "bench/rerank_fit.py has no leave_one_conversation_out()"}
    out: dict[str, Any] = {}
    for way in ways:
        try:
            line = fit(list(files), embedder=args.embedder, record=way, rows=args.rows)
            out[way] = dict(line)
        except Exception as exc:  # a broken fit must not lose the tables above
            out[way] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when is not None else ""


def _cat(c: Any) -> str:
    return f"{c} {CATEGORY_NAMES.get(int(c), '?')}"


def report(res: dict[str, Any]) -> None:
    modes = res["modes"]
    c = res["counts"]
    cats = c["by_category"]
    print(
        f"LoCoMo retrieval: {res['data']}  embedder={res['embedder']}  "
        f"record={','.join(res['record'])}  text={res['text_style']}  speaker={res['speaker']}  "
        f"threads={res['threads']}  query={res['query_style']}  "
        f"consolidate={res['consolidate']}\nrecall overrides={res['recall_overrides']}"
    )
    for note in res["notes"]:
        print(f"NOTE: {note}")
    ways = res["ways"]
    print_table(
        f"Headline: categories 1, 2, 4 ({c['headline']} questions), k={DEPTH}",
        ["record", "mode", *METRICS, "p50 ms"],
        [
            [w, m, *(r["headline"][m][k] for k in METRICS), r["recall_ms_p50"][m]]
            for w, r in ways.items()
            for m in modes
        ],
    )
    print(f"reference: {res['reference']}")

    rows = []
    for w, r in ways.items():
        for cat, agg in r["by_category"].items():
            name = _cat(cat)
            for m in modes:
                rows.append([w, name, cats.get(cat, ""), m, *(agg[m][k] for k in METRICS)])
                name = ""
    print_table("Per category", ["record", "category", "n", "mode", *METRICS], rows)
    if any(int(k) == 3 for k in cats):
        print("(category 3, open-domain, is not part of the headline)")

    if "hybrid" in modes:
        cat_ids = sorted({int(k) for k in cats})
        rows = []
        for w, r in ways.items():
            for row in r["by_conversation"]:
                by_cat = {int(k): v for k, v in row["R@5_by_category"].items()}
                rows.append(
                    [
                        w,
                        row["conversation"],
                        row["questions"],
                        *(row["hybrid"][k] for k in CONV_METRICS),
                        row["p50_ms"],
                        *(by_cat.get(k, float("nan")) for k in cat_ids),
                    ]
                )
        print_table(
            "Per conversation (hybrid; R@1/5/10 and MRR over categories 1, 2, 4)",
            [
                "record",
                "conversation",
                "n",
                *CONV_METRICS,
                "p50 ms",
                *(f"R@5 {CATEGORY_NAMES.get(k, k)}" for k in cat_ids),
            ],
            rows,
        )

    for w, r in ways.items():
        if "consolidation" not in r:
            continue
        cons = r["consolidation"]
        rows = []
        for row in [*cons["by_conversation"], {"conversation": "all", **cons["all"]}]:
            run = row.get("run") or {}
            rows.append(
                [
                    row["conversation"],
                    row["questions"],
                    row["without"]["R@5"],
                    row["narrow"]["R@5"],
                    row["links"]["R@5"],
                    row["without"]["MRR"],
                    row["narrow"]["MRR"],
                    row["without"]["copies@5"],
                    row["narrow"]["copies@5"],
                    f"{run.get('episodes', '')}/{run.get('facts', '')}" if run else "",
                ]
            )
        print_table(
            f"Consolidation ({res['consolidate']}, record={w}): hybrid, categories 1, 2, 4",
            [
                "conversation",
                "n",
                "R@5 without",
                "R@5 with (narrow)",
                "R@5 with (links)",
                "MRR without",
                "MRR with",
                "copies@5 without",
                "copies@5 with",
                "episodes/facts",
            ],
            rows,
        )
    if res.get("loco") != {}:  # {}: the line is printed once for several sets
        report_loco(res.get("loco"))

    print_table(
        "Questions",
        ["count", "value"],
        [
            ["conversations", c.get("conversations", 0)],
            ["dialog turns", c.get("turns", 0)],
            *([f"memories ({w})", c.get(f"memories_{w}", 0)] for w in res["record"]),
            ["questions in file", c.get("questions", 0)],
            ["excluded: category 5 adversarial", c.get("excluded_adversarial", 0)],
            ["skipped: no evidence after repair", c.get("skipped_no_evidence", 0)],
            ["scored (headline + category 3)", c.get("scored", 0)],
            ["evidence ids repaired", c.get("evidence_ids_fixed", 0)],
            ["evidence ids dropped (unreadable/absent)", c.get("evidence_ids_dropped", 0)],
        ],
    )

    print_table(
        "Timing",
        [
            "record",
            "conversation",
            "turns",
            "ingest s",
            "turns/s",
            "commits",
            *(f"{m} ms p50" for m in modes),
        ],
        [
            [
                w,
                t["conversation"],
                t["turns"],
                t["ingest_s"],
                t["turns"] / t["ingest_s"] if t["ingest_s"] else 0.0,
                t["commits"],
                *(t["recall_ms_p50"].get(m, float("nan")) for m in modes),
            ]
            for w, r in ways.items()
            for t in r["timing"]
        ],
    )

    for r in ways.values():
        for f in r["failures"]:
            print(
                f"\n--- miss [{f['way']} {f['conversation']} cat {f['category']}] {f['question']}"
                f"\n    answer: {f['answer']}"
                f"\n    first evidence rank: {f['first_evidence_rank']}"
            )
            for e in f["evidence"]:
                print(f"    evidence {e['dia_id']} ({e['date']}): {e['text']}")
            for i, t in enumerate(f["top3"], 1):
                print(f"    hybrid #{i} {t['dia_id']}: {t['text']}")


def report_loco(loco: dict[str, Any] | None) -> None:
    if loco is None:
        print("\nleave-one-conversation-out: not run (no bench/rerank_fit.py, or --no-loco)")
    elif "error" in loco:
        print(f"\nleave-one-conversation-out: {loco['error']}")
    else:
        for w, line in loco.items():
            if "error" in line:
                print(f"\nleave-one-conversation-out ({w}): {line['error']}")
                continue
            print_loco(w, line)


def print_loco(way: str, line: dict[str, Any]) -> None:
    """The held-out line of one recording way: overall, per category, per data set."""
    nums = "  ".join(f"{k} {line[k]:.3f}" for k in CONV_METRICS if k in line)
    print(f"\nleave-one-conversation-out ({way}, held-out folds): {nums}")
    cats = line.get("by_category_R@5") or {}
    if cats:
        print("   R@5 by category: " + "  ".join(f"{_cat(c)} {v:.3f}" for c, v in cats.items()))
    for name, d in (line.get("by_dataset") or {}).items():
        by_cat = "  ".join(
            f"{_cat(c)} R@5 {v:.3f} MRR {d['by_category_MRR'][c]:.3f}"
            for c, v in d.get("by_category_R@5", {}).items()
        )
        print(f"   {name}: R@5 {d['R@5']:.3f}  MRR {d['MRR']:.3f}   {by_cat}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=list(DEFAULT_DATA),
        help="LoCoMo-format files, each reported on its own (default: LoCoMo and REALTALK dev)",
    )
    parser.add_argument(
        "--rows",
        type=Path,
        metavar="DIR",
        help="cache of the leave-one-out line's recorded rows (bench/rerank_fit.py --rows)",
    )
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--record", choices=(*RECORD_WAYS, "both"), default="both")
    parser.add_argument("--consolidate", choices=("none", "extractive", "llm"), default="none")
    parser.add_argument(
        "--modes",
        type=_modes,
        default=MODES,
        help="comma-separated subset of keyword,vector,hybrid (default: all three)",
    )
    parser.add_argument(
        "--no-loco", dest="loco", action="store_false", help="skip the leave-one-out line"
    )
    parser.add_argument(
        "--only", default="", metavar="IDS", help="comma-separated sample ids to run (default all)"
    )
    parser.add_argument("--limit-conversations", type=int, default=0)
    parser.add_argument("--limit-questions", type=int, default=0, help="per conversation")
    parser.add_argument("--failures", type=int, default=0, metavar="N")
    parser.add_argument("--text-style", choices=("said", "plain", "dated", "reply"), default="said")
    parser.add_argument("--speaker", choices=("field", "tag", "none"), default="field")
    parser.add_argument("--no-threads", action="store_true")
    parser.add_argument(
        "--fusion", choices=("rrf", "blend"), default=None, help="[recall] fusion (default: as set)"
    )
    parser.add_argument(
        "--query-style", choices=("raw", "keywords", "keywords-nonames"), default="raw"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="JSON",
        help="after each conversation, write the results so far to this file",
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the tables of saved --json runs (several: runs over disjoint "
        "conversations, merged from their per-question scores)",
    )
    args = parser.parse_args(argv)
    if args.report is not None:
        return args
    for path in args.data:
        if not path.is_file():
            parser.error(f"no data file at {path} (pass --data FILE)")
    if args.rows is not None:
        args.rows.mkdir(parents=True, exist_ok=True)
    if args.consolidate != "none" and "hybrid" not in args.modes:
        parser.error("--consolidate compares hybrid recall: keep hybrid in --modes")
    return args


def _modes(value: str) -> tuple[str, ...]:
    wanted = tuple(m.strip() for m in value.split(",") if m.strip())
    bad = [m for m in wanted if m not in MODES]
    if bad or not wanted:
        raise argparse.ArgumentTypeError(f"modes are a subset of {','.join(MODES)}")
    return tuple(m for m in MODES if m in wanted)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report is not None:
        saved = [json.loads(p.read_text(encoding="utf-8")) for p in args.report]
        merged = merge(saved)
        if args.json:
            emit_json(merged)
        else:
            report(merged)
        return
    if len(args.data) == 1:
        res = run(args)
        if args.json:
            emit_json(res)
        else:
            report(res)
        return
    both = run_sets(args)
    if args.json:
        emit_json(both)
        return
    for one in both["sets"]:
        print(f"\n======== {one['data']} ========")
        report(one)
    print(f"\n======== leave-one-conversation-out over {len(args.data)} data sets ========")
    report_loco(both["loco"])


if __name__ == "__main__":
    main()
