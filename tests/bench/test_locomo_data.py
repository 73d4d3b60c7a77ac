"""bench/locomo_data.py: LoCoMo loading, evidence repair and retrieval metrics."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.bench.scripts import load_bench

ld = load_bench("locomo_data", as_name="_bench_locomo_data")


def _sample(**overrides: Any) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_2_date_time": "10:04 am on 19 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "Back from Paris."},
                {
                    "speaker": "Ann",
                    "dia_id": "D2:2",
                    "text": "Look at  my\nnew dog!",
                    "img_url": ["http://example.org/x.jpg"],
                    "blip_caption": "a photo of a puppy on a couch",
                },
            ],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob!"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "I'm flying to Paris tomorrow."},
            ],
            # LoCoMo files list dates for sessions that have no turns.
            "session_3_date_time": "4:10 pm on 26 October, 2023",
        },
        "qa": [
            {
                "question": "Where did Bob fly?",
                "answer": "Paris",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {"question": "When?", "answer": 2023, "evidence": ["D1:2; D2:1"], "category": 2},
            {"question": "Pet?", "answer": "dog", "evidence": ["D:2:2", "D9:9"], "category": 1},
            {
                "question": "Unanswerable?",
                "adversarial_answer": "x",
                "evidence": ["D"],
                "category": 5,
            },
        ],
    }
    sample.update(overrides)
    return sample


# ---------------------------------------------------------------- dates --


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:06 am on 11 November, 2022", datetime(2022, 11, 11, 0, 6, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("9:05 AM on 3 Sept 2023", datetime(2023, 9, 3, 9, 5, tzinfo=UTC)),
        ("10:04 a.m. on 19 June, 2023", datetime(2023, 6, 19, 10, 4, tzinfo=UTC)),
        ("29.12.2023, 22:42:04", datetime(2023, 12, 29, 22, 42, 4, tzinfo=UTC)),
        ("06.01.2024, 16:43:00", datetime(2024, 1, 6, 16, 43, tzinfo=UTC)),
    ],
)
def test_parse_session_datetime(text: str, expected: datetime) -> None:
    assert ld.parse_session_datetime(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "yesterday",
        "13:00 pm on 8 May, 2023",
        "1:00 pm on 31 February, 2023",
        "1:00 pm on 8 Maytember, 2023",
        "31.02.2024, 10:00:00",
        "29.12.2023",
    ],
)
def test_parse_session_datetime_rejects_garbage(text: str | None) -> None:
    assert ld.parse_session_datetime(text) is None


# ------------------------------------------------------------- evidence --


KNOWN = {"D1:3", "D8:6", "D9:17", "D11:26", "D30:5"}


@pytest.mark.parametrize(
    ("raw", "ids", "fixed", "dropped"),
    [
        (["D1:3"], ("D1:3",), 0, 0),
        (["D8:6; D9:17"], ("D8:6", "D9:17"), 1, 0),
        (["D:11:26"], ("D11:26",), 1, 0),
        (["D30:05"], ("D30:5",), 1, 0),
        ([" D1:3 "], ("D1:3",), 0, 0),  # surrounding blanks are not a slip
        (["D"], (), 0, 1),  # unreadable
        (["D10:19"], (), 0, 1),  # no such turn
        (["D1:3", "D1:3"], ("D1:3",), 0, 0),  # duplicates collapse
        (["D9:17", "D8:6,D1:3"], ("D9:17", "D8:6", "D1:3"), 1, 0),  # order kept
        (["D8:6; D99:1"], ("D8:6",), 1, 1),
        ([], (), 0, 0),
    ],
)
def test_normalise_evidence(raw: list[str], ids: tuple[str, ...], fixed: int, dropped: int) -> None:
    fix = ld.normalise_evidence(raw, KNOWN)
    assert (fix.ids, fix.fixed, fix.dropped) == (ids, fixed, dropped)


# -------------------------------------------------------------- loading --


def test_conversation_turns_are_in_session_order_with_dates() -> None:
    [conv] = ld.conversations_from(_sample())
    assert conv.sample_id == "conv-x"
    assert (conv.speaker_a, conv.speaker_b) == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert conv.turns[0].when == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.turns[3].when == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)
    assert conv.turns[3].session == 2
    assert conv.turns[3].caption == "a photo of a puppy on a couch"
    assert conv.turns[0].caption is None
    assert conv.turn("D2:1").speaker == "Bob"


def test_questions_get_repaired_evidence_and_counts() -> None:
    [conv] = ld.conversations_from(_sample())
    by_q = {q.question: q for q in conv.questions}
    assert by_q["Where did Bob fly?"].evidence == ("D1:2",)
    assert by_q["When?"].evidence == ("D1:2", "D2:1")
    assert by_q["When?"].answer == "2023"  # numbers become text
    assert by_q["Pet?"].evidence == ("D2:2",)  # D9:9 does not exist
    assert by_q["Pet?"].raw_evidence == ("D:2:2", "D9:9")
    assert by_q["Unanswerable?"].evidence == ()
    assert by_q["Unanswerable?"].answer == "x"  # adversarial_answer as fallback
    assert by_q["Unanswerable?"].category == 5
    assert (conv.evidence_fixed, conv.evidence_dropped) == (2, 2)


def test_single_sample_list_and_file_all_load(tmp_path: Path) -> None:
    single = ld.conversations_from(_sample())
    many = ld.conversations_from([_sample(), _sample(sample_id="conv-y")])
    assert len(single) == 1
    assert [c.sample_id for c in many] == ["conv-x", "conv-y"]
    path = tmp_path / "data.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    assert ld.load(path) == single


def test_missing_sample_id_gets_a_positional_one() -> None:
    sample = _sample()
    del sample["sample_id"]
    [conv] = ld.conversations_from([sample])
    assert conv.sample_id == "conv-0"


@pytest.mark.parametrize("bad", [42, "text", [{"qa": []}]])
def test_malformed_data_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ValueError):
        ld.conversations_from(bad)


# --------------------------------------------------------- memory text --


def test_memory_text_styles() -> None:
    [conv] = ld.conversations_from(_sample())
    dog = conv.turn("D2:2")
    assert ld.memory_text(dog) == (
        'Ann said, "Look at my new dog!" and shared a photo of a puppy on a couch.'
    )
    assert ld.memory_text(conv.turn("D1:1")) == 'Ann said, "Hi Bob!"'
    assert (
        ld.memory_text(dog, "plain") == "Look at my new dog! [shared a photo of a puppy on a couch]"
    )
    assert ld.memory_text(conv.turn("D1:2"), "dated") == (
        '[8 May 2023] Bob said, "I\'m flying to Paris tomorrow."'
    )
    with pytest.raises(ValueError):
        ld.memory_text(dog, "poem")


# ------------------------------------------------------------- metrics --


RANKED = ["a", "b", "c", "d", "e", "f"]


@pytest.mark.parametrize(
    ("evidence", "k", "expected"),
    [
        ({"a"}, 1, 1.0),
        ({"b"}, 1, 0.0),
        ({"a", "e"}, 1, 0.5),
        ({"a", "e"}, 5, 1.0),
        ({"a", "z"}, 5, 0.5),  # z never retrieved
        ({"b", "c", "z"}, 25, 2 / 3),
    ],
)
def test_recall_at_k_is_fractional(evidence: set[str], k: int, expected: float) -> None:
    assert ld.recall_at_k(RANKED, evidence, k) == pytest.approx(expected)


def test_all_at_k_needs_every_item() -> None:
    assert ld.all_at_k(RANKED, {"a", "e"}, 5) == 1.0
    assert ld.all_at_k(RANKED, {"a", "f"}, 5) == 0.0


@pytest.mark.parametrize(
    ("evidence", "k", "expected"),
    [({"a"}, 25, 1.0), ({"c", "f"}, 25, 1 / 3), ({"f"}, 5, 0.0), ({"z"}, 25, 0.0)],
)
def test_reciprocal_rank(evidence: set[str], k: int, expected: float) -> None:
    assert ld.reciprocal_rank(RANKED, evidence, k) == pytest.approx(expected)


def test_metrics_refuse_empty_evidence() -> None:
    with pytest.raises(ValueError):
        ld.recall_at_k(RANKED, set(), 5)


def test_mean() -> None:
    assert ld.mean([1.0, 0.0, 0.5]) == pytest.approx(0.5)
    assert ld.mean([]) != ld.mean([])  # nan for no questions


def test_reply_style_carries_the_question_it_answers() -> None:
    [conv] = ld.conversations_from(_sample())
    hi, flying = conv.turn("D1:1"), conv.turn("D1:2")
    asked = ld.Turn("D1:1", "Ann", "Hi Bob! Busy week. Where are you off to?", 1, hi.when)
    assert ld.memory_text(flying, "reply", previous=asked) == (
        'Bob said, "I\'m flying to Paris tomorrow." (replying to Ann: "Where are you off to?")'
    )
    # No question before it, no previous turn, or a turn of another session: plain "said".
    assert ld.memory_text(flying, "reply", previous=hi) == ld.memory_text(flying)
    assert ld.memory_text(flying, "reply") == ld.memory_text(flying)
    back = conv.turn("D2:1")
    assert ld.memory_text(back, "reply", previous=asked) == ld.memory_text(back)


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        ("raw", "When did Melanie's kids paint a sunrise?"),
        ("keywords", "Melanie's kids paint a sunrise"),
        ("keywords-nonames", "kids paint a sunrise"),
    ],
)
def test_rewrite_query(style: str, expected: str) -> None:
    question = "When did Melanie's kids paint a sunrise?"
    assert ld.rewrite_query(question, style, names=("Melanie", "Caroline")) == expected


def test_rewrite_query_never_empties_the_question() -> None:
    assert ld.rewrite_query("Who did?", "keywords") == "Who did?"
    with pytest.raises(ValueError):
        ld.rewrite_query("x", "shout")
