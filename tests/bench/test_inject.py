"""bench/inject.py: the prompt-submit hook run as a host runs it; the relevance cut calibrated."""

from __future__ import annotations

import io
import json
import tempfile
from contextlib import redirect_stdout
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mdmem.models import Hit
from tests.bench.scripts import load_bench
from tests.bench.test_locomo_bench import TINY

inject = load_bench("inject")


def two_chats(tmp_path: Path) -> Path:
    other = json.loads(json.dumps(TINY))
    other["sample_id"] = "tiny-2"
    conv = other["conversation"]
    conv["speaker_a"], conv["speaker_b"] = "Zed", "Ymir"
    for n in (1, 2):
        for turn in conv[f"session_{n}"]:
            turn["speaker"] = {"Quorra": "Zed", "Brannigan": "Ymir"}[turn["speaker"]]
            turn["text"] = "Spreadsheets " + turn["text"].lower()
    other["qa"] = [
        {"question": "Which river did Ymir kayak down?", "evidence": ["D1:2"], "category": 4},
    ]
    path = tmp_path / "two.json"
    path.write_text(json.dumps([TINY, other]), encoding="utf-8")
    return path


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("MDMEM_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def _cited(context: str) -> list[str]:
    return inject._CITED.findall(context)


def test_asked_counts_evidence_by_citation_and_by_whole_text() -> None:
    asked = inject.Asked(
        "locomo",
        "c",
        1,
        True,
        ["m-a", "m-b"],
        {"m-a": "short", "m-b": "a long text " * 40},
        ["m-a", "m-b"],
        "- short (MEMORY.md#^m-a)\n- a long text a long te… (MEMORY.md#^m-b)",
    )
    assert asked.evidence_share() == 1.0
    assert asked.evidence_share(whole_text=True) == 0.5


def test_questions_about_other_people_come_from_the_next_conversation() -> None:
    convs = inject.load(Path(inject.__file__).parent.parent / "bench" / "data" / "shortchat.json")
    others = inject.others_for(convs, len(convs) - 1, 3)
    assert [q.question for q in others] == [q.question for q in inject.questions(convs[0], 3)]
    assert inject.others_for(convs[:1], 0, 3) == []


@pytest.mark.slow
def test_the_hook_runs_as_a_host_runs_it(scratch: Path) -> None:
    data = two_chats(scratch)
    # MiniLM, as shipped: recall's relevance gate is fitted on its scores.
    args = inject.parse_args(["--data", str(data), "--others", "1"])
    asked = inject.measure(args)
    own = [a for a in asked if a.own]
    assert len(own) == 4 and len([a for a in asked if not a.own]) == 2
    # Each injected memory cites its id; at most as many as the hook asks recall for.
    for a in own:
        assert a.cited == _cited(a.context) and len(a.cited) <= inject.HOOK_K
    kayak = next(a for a in asked if not a.own and "kayak" in a.question)
    assert kayak.cited == [] and kayak.context == ""  # Ymir is nobody this vault knows
    assert all(a.ms > 0 for a in asked)
    sets = inject.summary(asked)
    assert sets["two"]["questions"] == 4 and 0 < sets["two"]["evidence"] <= 1
    assert sets["two"]["items_median"] >= 1


def test_calibration_scores_every_cut_and_puts_those_meeting_the_targets_first(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hits(*pairs: tuple[str, float, float]) -> list[dict[str, Any]]:
        return [{"id": i, "score": s, "vector": v, "chars": 80} for i, s, v in pairs]

    kept = [
        # Own questions: the evidence is the best hit, the rest is weak noise.
        inject.Kept("set", "a", True, ["m-1"], hits(("m-1", 0.9, 0.7), ("m-2", 0.3, 0.2))),
        inject.Kept("set", "a", True, ["m-3"], hits(("m-3", 0.8, 0.6), ("m-4", 0.2, 0.1))),
        # A question about other people: only weak matches.
        inject.Kept("set", "b", False, [], hits(("m-5", 0.5, 0.15), ("m-6", 0.4, 0.1))),
    ]
    assert inject.evaluate(kept, inject.RelevanceCut())["set"] == {
        "evidence": 1.0,
        "items_median": 2.0,
        "others_nothing": 0.0,
    }
    cut = inject.RelevanceCut(gate=0.6, ratio=0.5)
    assert inject.evaluate(kept, cut)["set"] == {
        "evidence": 1.0,
        "items_median": 1.0,
        "others_nothing": 1.0,
    }
    monkeypatch.setattr(inject, "GRID", {"gate": (0.0, 0.6), "floor": (0.0,), "ratio": (0.0, 0.5),
                                         "max_items": (8,)})  # fmt: skip
    result = inject.calibrate(kept)
    best = result["best"][0]
    assert best["meets"] and best["cut"]["gate"] == 0.6 and best["evidence"] == 1.0
    assert [r["meets"] for r in result["best"]] == [True, True, False, False]


def hit(memory_id: str, score: float, cosine: float | None) -> Hit:
    return Hit(
        id=memory_id,
        path="MEMORY.md",
        line_start=1,
        line_end=1,
        heading="",
        text=memory_id,
        kind="fact",
        tags=(),
        status="active",
        created=datetime(2024, 1, 1, tzinfo=UTC),
        score=score,
        scores={"vector": cosine} if cosine is not None else {},
    )


HITS = [hit("m-a", 0.9, 0.6), hit("m-b", 0.7, 0.4), hit("m-c", 0.3, None), hit("m-d", 0.2, 0.1)]


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


def test_no_cut_keeps_every_hit_in_order() -> None:
    assert ids(inject.relevant(HITS, inject.RelevanceCut())) == ["m-a", "m-b", "m-c", "m-d"]
    assert inject.relevant([], inject.RelevanceCut(gate=0.9)) == []


def test_the_gate_asks_for_one_hit_that_matches_well() -> None:
    assert inject.relevant(HITS, inject.RelevanceCut(gate=0.91)) == []
    assert ids(inject.relevant(HITS, inject.RelevanceCut(gate=0.9))) == ["m-a", "m-b", "m-c", "m-d"]


def test_recency_orders_but_does_not_make_a_memory_relevant() -> None:
    new = replace(hit("m-new", 0.8, 0.5), scores={"vector": 0.5, "recency": 1.0})
    old = replace(hit("m-old", 0.6, 0.5), scores={"vector": 0.5, "recency": 0.0})
    # 0.8 of which 0.3 is recency: 0.5 against the gate.
    cut = inject.RelevanceCut
    assert inject.relevant([new, old], cut(gate=0.55), recency_weight=0.3) == []
    both = ["m-new", "m-old"]
    assert ids(inject.relevant([new, old], cut(gate=0.5), recency_weight=0.3)) == both
    assert ids(inject.relevant([new, old], cut(ratio=0.9), recency_weight=0.3)) == both


def test_floor_ratio_and_count() -> None:
    cut = inject.RelevanceCut
    assert ids(inject.relevant(HITS, cut(floor=0.3))) == ["m-a", "m-b", "m-c"]
    assert ids(inject.relevant(HITS, cut(ratio=0.75))) == ["m-a", "m-b"]  # 0.7 >= 0.675
    assert ids(inject.relevant(HITS, cut(max_items=1))) == ["m-a"]


def test_the_packing_stops_at_the_token_budget() -> None:
    many = [{"id": f"m-{i}", "score": 1.0, "vector": 0.9, "chars": 400} for i in range(20)]
    ids = inject.packed(many, inject.RelevanceCut(max_items=20))
    # 800 tokens of ~4 characters: the title and note, then 7 lines of 400.
    assert len(ids) == 7


def test_calibrate_prints_a_table(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = [inject.Kept("set", "a", True, ["m-1"], [{"id": "m-1", "score": 0.9, "vector": 0.7,
                                                     "chars": 50}])]  # fmt: skip
    monkeypatch.setattr(inject, "kept_rows", lambda args: kept)
    monkeypatch.setattr(inject, "GRID", {"gate": (0.0,), "floor": (0.0,), "ratio": (0.0,),
                                         "max_items": (8,)})  # fmt: skip
    out = io.StringIO()
    data = two_chats(scratch)
    with redirect_stdout(out):
        inject.main(["--calibrate", "--data", str(data)])
    assert "Relevance cuts" in out.getvalue() and "| set " in out.getvalue()
