"""bench/locomo.py end to end on a tiny LoCoMo-format file: both recording ways,
the consolidation mode, the tables, --json, the leave-one-out hook, and scores
checked on cases whose right value is known by hand."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.bench.scripts import BENCH, load_bench

locomo = load_bench("locomo")
record = sys.modules["locomo_record"]
data = sys.modules["locomo_data"]

# Two people, two dated sessions. D1:3 is the only turn naming the zeppelin;
# D2:4 (the other evidence of the first question) shares no word with it
# and sits in another session, so keyword recall can find exactly one of the
# two: R@5 = 0.5, R@1 = 0.5, MRR = 1.0 for that question, by construction.
TINY: dict[str, Any] = {
    "sample_id": "tiny-1",
    "conversation": {
        "speaker_a": "Quorra",
        "speaker_b": "Brannigan",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Quorra", "dia_id": "D1:1", "text": "Hey! Long week here."},
            {"speaker": "Brannigan", "dia_id": "D1:2", "text": "Same. What kept you busy?"},
            {
                "speaker": "Quorra",
                "dia_id": "D1:3",
                "text": "I painted the model zeppelin a deep teal colour for the fair.",
            },
            {"speaker": "Brannigan", "dia_id": "D1:4", "text": "Nice, send a picture."},
            {
                "speaker": "Brannigan",
                "dia_id": "D1:5",
                "text": "My sister adopted a greyhound called Pickle last Tuesday.",
            },
        ],
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [
            {"speaker": "Brannigan", "dia_id": "D2:1", "text": "How did the fair go?"},
            {
                "speaker": "Quorra",
                "dia_id": "D2:2",
                "text": "The judges gave my entry second prize at the county fair!",
            },
            {"speaker": "Brannigan", "dia_id": "D2:3", "text": "Congrats, well deserved."},
            {"speaker": "Quorra", "dia_id": "D2:4", "text": "Thanks, I cried a little."},
            {
                "speaker": "Brannigan",
                "dia_id": "D2:5",
                "text": "Pickle the greyhound chewed through my garden hose.",
            },
        ],
    },
    "qa": [
        {
            "question": "What colour was the zeppelin?",
            "answer": "teal",
            "evidence": ["D1:3", "D2:4"],
            "category": 1,
        },
        {
            "question": "When did the greyhound get adopted?",
            "answer": "the Tuesday before 8 May 2023",
            "evidence": ["D1:5"],
            "category": 2,
        },
        {
            "question": "Which prize did the judges give?",
            "answer": "second prize",
            "evidence": ["D2:2"],
            "category": 4,
        },
        {
            "question": "Would Quorra enjoy a craft class?",
            "answer": "likely yes",
            "evidence": ["D1:3"],
            "category": 3,
        },
        {"question": "What did Quorra's cat eat?", "adversarial_answer": "x", "category": 5},
    ],
}


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The bench makes its vaults under a scratch dir: keep it inside the test's.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([TINY]), encoding="utf-8")
    return path


def _run(path: Path, *extra: str) -> dict[str, Any]:
    args = locomo.parse_args(["--data", str(path), "--embedder", "hash", "--no-loco", *extra])
    res: dict[str, Any] = locomo.run(args)
    return res


# ------------------------------------------------------------ hand scores --


def test_scores_on_a_hand_made_ranking() -> None:
    a, b, x = frozenset({"D1:1"}), frozenset({"D1:2"}), frozenset()
    ranked = [x, a, x, x, x, x, b]  # D1:1 at rank 2, D1:2 at rank 7
    got = locomo.score(ranked, {"D1:1", "D1:2"})
    assert got["R@1"] == 0.0
    assert got["R@5"] == 0.5
    assert got["R@10"] == 1.0
    assert got["all@5"] == 0.0
    assert got["MRR"] == 0.5


def test_a_derived_hit_counts_for_every_turn_it_stands_for() -> None:
    fact = frozenset({"D1:1", "D1:2"})  # a fact consolidated from two turns
    assert locomo.score([fact], {"D1:1", "D1:2", "D3:3"})["R@1"] == pytest.approx(2 / 3)
    assert data.covered_reciprocal_rank([frozenset(), fact], {"D1:2"}) == 0.5
    # The turn itself after the fact that already stood for it adds nothing.
    assert data.copies_at_k([fact, frozenset({"D1:1"}), frozenset(), frozenset({"D9:9"})]) == 1
    assert data.copies_at_k([frozenset(), frozenset()]) == 0  # misses are not copies


def test_overlap_narrows_a_fact_to_the_turns_it_restates() -> None:
    turn = 'Quorra said, "I painted the model zeppelin a deep teal colour for the fair."'
    assert record.overlaps("Quorra: I painted the model zeppelin a deep teal colour.", turn)
    assert not record.overlaps("Brannigan: Pickle chewed the garden hose.", turn)


# ------------------------------------------------------------- end to end --


def test_both_recording_ways_score_the_known_case_exactly(tiny: Path) -> None:
    checkpoint = tiny.parent / "partial.json"
    res = _run(tiny, "--modes", "keyword", "--checkpoint", str(checkpoint))
    # The checkpoint written after the (only) conversation holds the same scores.
    partial = json.loads(checkpoint.read_text(encoding="utf-8"))
    assert partial["ways"]["session"]["headline"] == res["ways"]["session"]["headline"]
    assert set(res["ways"]) == {"memories", "session"}
    assert res["counts"]["questions"] == 5
    assert res["counts"]["excluded_adversarial"] == 1
    assert res["counts"]["scored"] == 4 and res["counts"]["headline"] == 3
    for way in ("memories", "session"):
        cat1 = res["ways"][way]["by_category"][1]["keyword"]
        assert cat1["R@1"] == 0.5 and cat1["R@5"] == 0.5 and cat1["MRR"] == 1.0
        timing = res["ways"][way]["timing"]
        assert [t["turns"] for t in timing] == [10]
    assert res["counts"]["memories_session"] == 10


def test_session_way_records_through_the_session_api_with_speaker_and_date(
    tiny: Path, tmp_path: Path
) -> None:
    from mdmem import Vault

    conv = data.load(tiny)[0]
    vault = Vault.init(tmp_path / "v", agent="t", embedder={"provider": "hash"})
    lines = locomo.turn_texts(conv, "said")
    ing = record.ingest(vault, conv, "session", lines)
    block = vault.admin.store.block(ing.turn_ids["D2:2"])
    assert block.path == "sessions/tiny-1-s2.md"
    assert block.text == 'Quorra said, "The judges gave my entry second prize at the county fair!"'
    assert block.field("speaker") == "Quorra" and block.field("event") == "D2:2"
    assert block.created.date().isoformat() == "2023-06-19"
    assert block.kind == "chat_message"


def test_tables_and_json_have_the_same_numbers(tiny: Path) -> None:
    res = _run(tiny, "--modes", "keyword,hybrid", "--record", "memories")
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.report(res)
    text = out.getvalue()
    for title in ("Headline", "Per category", "Per conversation", "Timing"):
        assert title in text
    conv = res["ways"]["memories"]["by_conversation"][0]
    assert conv["conversation"] == "tiny-1" and conv["questions"] == 3
    assert set(conv["hybrid"]) == {"R@1", "R@5", "R@10", "MRR"}
    assert conv["p50_ms"] > 0
    assert set(conv["R@5_by_category"]) == {1, 2, 3, 4}
    row = next(x for x in text.splitlines() if x.startswith("| memories | tiny-1"))
    assert f"{conv['hybrid']['R@5']:.2f}" in row
    # --json prints the same object.
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.main(["--data", str(tiny), "--embedder", "hash", "--no-loco", "--json",
                     "--modes", "keyword,hybrid", "--record", "memories"])  # fmt: skip
    parsed = json.loads(out.getvalue())
    headline = parsed["ways"]["memories"]["headline"]["keyword"]
    assert headline["R@5"] == res["ways"]["memories"]["headline"]["keyword"]["R@5"]
    # --report prints the tables of a saved run, the same as the live run's.
    saved = tiny.parent / "run.json"
    saved.write_text(out.getvalue(), encoding="utf-8")
    again = io.StringIO()
    with redirect_stdout(again):
        locomo.main(["--report", str(saved)])
    replayed = next(x for x in again.getvalue().splitlines() if x.startswith("| memories | tiny-1"))
    # Same scores (the hash embedder is deterministic); only the latency differs.
    cells = [c.strip() for c in row.split("|")]
    assert [c.strip() for c in replayed.split("|")][:8] == cells[:8]


@pytest.mark.parametrize("mode", ["extractive", "llm"])
def test_consolidation_mode_scores_before_and_after(tiny: Path, mode: str) -> None:
    res = _run(tiny, "--record", "session", "--modes", "hybrid", "--consolidate", mode)
    cons = res["ways"]["session"]["consolidation"]
    run = cons["by_conversation"][0]["run"]
    assert run["entries"] == 10 and run["episodes"] >= 2  # one per dated session at least
    if mode == "llm":
        assert run["llm_requests"] >= 2 and run["facts"] >= 1
    for part in ("without", "narrow", "links"):
        assert 0.0 <= cons["all"][part]["R@5"] <= 1.0
    # Linking every summarised turn can only credit more than narrowing.
    assert cons["all"]["links"]["R@5"] >= cons["all"]["narrow"]["R@5"]
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.report(res)
    assert f"Consolidation ({mode}, record=session)" in out.getvalue()


def test_a_consolidated_fact_is_credited_with_its_source_turn(tiny: Path, tmp_path: Path) -> None:
    from mdmem import Vault

    conv = data.load(tiny)[0]
    with record.scripted_llm("llm") as llm:
        vault = Vault.init(
            tmp_path / "v",
            agent="t",
            embedder={"provider": "hash"},
            llm=llm,
            consolidation={"auto": False},
        )
        ing = record.ingest(vault, conv, "session", locomo.turn_texts(conv, "said"))
        record.consolidate(vault, "llm")
        hits = vault.recall("zeppelin teal colour", k=25, mode="keyword").items
    credit = record.Credit(vault, ing)
    derived = [h for h in hits if h.id not in ing.turn_ids.values()]
    assert derived, "consolidation wrote no fact or episode that recall finds"
    fact = next(h for h in derived if h.text.startswith("Quorra: I painted"))
    assert credit.of(fact, "narrow") == {"D1:3"}
    links = credit.of(fact, "links")
    # Recall's own provenance (hit.sources) names the turn the fact came from;
    # without it a fact is credited with every turn its episode summarised.
    assert "D1:3" in links and len(links) == (1 if fact.sources else 5)
    # The daily-log line announcing the consolidation stands for nothing.
    for h in hits:
        if h.path.startswith("daily/") or "Consolidated" in h.text:
            assert credit.of(h, "links") == frozenset()


def test_loco_hook_prints_the_held_out_line(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[Path], str, str, Path | None]] = []

    def leave_one_conversation_out(
        files: list[Path], *, embedder: str, record: str, rows: Path | None
    ) -> dict[str, Any]:
        seen.append((files, embedder, record, rows))
        return {
            "R@1": 0.5,
            "R@5": 0.875,
            "R@10": 0.9,
            "MRR": 0.7,
            "by_dataset": {
                "tiny": {"R@5": 0.875, "MRR": 0.7, "by_category_R@5": {1: 0.75},
                         "by_category_MRR": {1: 0.6}},
            },
        }  # fmt: skip

    fake = ModuleType("rerank_fit")
    fake.leave_one_conversation_out = leave_one_conversation_out  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rerank_fit", fake)
    args = locomo.parse_args(["--data", str(tiny), "--embedder", "hash", "--record", "memories",
                              "--modes", "keyword"])  # fmt: skip
    res = locomo.run(args)
    assert seen == [([tiny], "hash", "memories", None)]
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.report(res)
    assert "leave-one-conversation-out (memories, held-out folds): R@1 0.500  R@5 0.875" in (
        out.getvalue()
    )
    assert "tiny: R@5 0.875  MRR 0.700   1 multi-hop R@5 0.750 MRR 0.600" in out.getvalue()
    # Without the module the line says it was not run.
    monkeypatch.delitem(sys.modules, "rerank_fit")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p) != BENCH])
    assert locomo.loco_line(args, ["memories"], [tiny]) is None


def test_several_data_sets_are_reported_apart_with_one_joint_loco_line(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{**TINY, "sample_id": "other-1"}]), encoding="utf-8")
    seen: list[list[Path]] = []

    def leave_one_conversation_out(files: list[Path], **_: Any) -> dict[str, Any]:
        seen.append(files)
        return {"R@1": 0.5, "R@5": 0.5, "R@10": 0.5, "MRR": 0.5}

    fake = ModuleType("rerank_fit")
    fake.leave_one_conversation_out = leave_one_conversation_out  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rerank_fit", fake)
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.main(["--data", str(tiny), str(other), "--embedder", "hash",
                     "--record", "memories", "--modes", "keyword"])  # fmt: skip
    printed = out.getvalue()
    assert seen == [[tiny, other]]  # one line over both sets' conversations
    assert printed.count("Headline: categories 1, 2, 4") == 2
    assert f"======== {tiny} ========" in printed and f"======== {other} ========" in printed
    assert printed.count("leave-one-conversation-out (memories, held-out folds)") == 1


# ---------------------------------------------------------- our own set --


def test_shortchat_set_is_built_from_its_source_and_complete() -> None:
    # The committed JSON is what the source builds (no hand edits, no drift).
    subprocess.run(
        [sys.executable, str(BENCH / "data" / "build_shortchat.py"), "--check"], check=True
    )
    convs = data.load(BENCH / "data" / "shortchat.json")
    assert len(convs) == 6
    for conv in convs:
        assert 60 <= len(conv.turns) <= 120
        assert len({t.session for t in conv.turns}) >= 3
        assert conv.evidence_dropped == 0 and conv.evidence_fixed == 0
        cats = {q.category for q in conv.questions}
        assert cats == {1, 2, 3, 4}
        assert len(conv.questions) >= 25
        assert all(q.evidence for q in conv.questions)
        # Multi-hop questions really span several turns.
        assert all(len(q.evidence) >= 2 for q in conv.questions if q.category == 1)
    # Group chats: more than two people talk.
    assert sum(len({t.speaker for t in c.turns}) > 2 for c in convs) >= 3


def test_runs_over_disjoint_conversations_merge_into_the_one_run(tiny: Path) -> None:
    two = tiny.parent / "two.json"
    second = json.loads(json.dumps(TINY))
    second["sample_id"] = "tiny-2"
    second["qa"] = second["qa"][1:3]  # another mix, so a plain average would differ
    two.write_text(json.dumps([TINY, second]), encoding="utf-8")
    opts = ("--record", "memories", "--modes", "keyword")
    whole = _run(two, *opts)
    parts = [json.loads(json.dumps(_run(two, *opts, "--only", c), default=str)) for c in
             ("tiny-1", "tiny-2")]  # fmt: skip
    merged = locomo.merge(parts)
    for key in ("headline", "by_category"):
        got = json.loads(json.dumps(merged["ways"]["memories"][key]))
        assert got == json.loads(json.dumps(whole["ways"]["memories"][key]))
    assert merged["counts"]["scored"] == whole["counts"]["scored"] == 6
    assert [r["conversation"] for r in merged["ways"]["memories"]["by_conversation"]] == [
        "tiny-1",
        "tiny-2",
    ]
    # Through the command line: --report A B prints the merged tables.
    paths = []
    for i, part in enumerate(parts):
        paths.append(tiny.parent / f"part{i}.json")
        paths[-1].write_text(json.dumps(part), encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        locomo.main(["--report", *map(str, paths), "--json"])
    assert json.loads(out.getvalue())["counts"]["headline"] == whole["counts"]["headline"]
