"""Table tests of the pure ranking functions in mdmem.recall.ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mdmem.errors import InvalidInputError
from mdmem.recall.ranking import (
    Candidate,
    final_score,
    fuse_blend,
    fuse_rrf,
    passes_floor,
    recency,
    tag_boost,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def by_id(cands: list[Candidate]) -> dict[str, Candidate]:
    return {c.id: c for c in cands}


# -- RRF ---------------------------------------------------------------------


def test_rrf_top_of_both_lists_is_one() -> None:
    out = fuse_rrf([("a", 9.0), ("b", 5.0)], [("a", 0.9), ("c", 0.5)])
    assert [c.id for c in out] == ["a", "b", "c"]
    assert out[0].relevance == pytest.approx(1.0)
    a = out[0]
    assert (a.keyword, a.vector, a.keyword_rank, a.vector_rank) == (9.0, 0.9, 1, 1)


@pytest.mark.parametrize(
    ("keyword", "vector", "expected"),
    [
        # id: relevance = sum(1/(60+rank)) / (2/61)
        ([("a", 3.0)], [("b", 0.8)], {"a": 0.5, "b": 0.5}),
        ([("a", 3.0), ("b", 2.0)], [("b", 0.8)], {"a": 0.5, "b": (1 / 62 + 1 / 61) / (2 / 61)}),
        # keyword-only (degraded): normalised over the one list supplied
        ([("a", 3.0), ("b", 1.0)], [], {"a": 1.0, "b": 61 / 62}),
        ([], [("x", 0.2)], {"x": 1.0}),
        ([], [], {}),
    ],
)
def test_rrf_table(
    keyword: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    expected: dict[str, float],
) -> None:
    out = by_id(fuse_rrf(keyword, vector))
    assert set(out) == set(expected)
    for cid, rel in expected.items():
        assert out[cid].relevance == pytest.approx(rel)


def test_rrf_weights_and_k() -> None:
    out = by_id(fuse_rrf([("a", 1.0)], [("b", 1.0)], weights=(2.0, 1.0), k=0))
    # best attainable = 2/1 + 1/1 = 3
    assert out["a"].relevance == pytest.approx(2 / 3)
    assert out["b"].relevance == pytest.approx(1 / 3)
    with pytest.raises(InvalidInputError):
        fuse_rrf([("a", 1.0)], [], weights=(0.0, 0.0))
    with pytest.raises(InvalidInputError):
        fuse_rrf([("a", 1.0)], [], k=-1)


def test_rrf_relevance_bounded_and_sorted() -> None:
    kw = [(f"k{i}", 10.0 - i) for i in range(30)] + [(f"s{i}", 1.0) for i in range(10)]
    vec = [(f"s{i}", 0.9 - i / 100) for i in range(10)] + [(f"v{i}", 0.3) for i in range(30)]
    out = fuse_rrf(kw, vec)
    rels = [c.relevance for c in out]
    assert rels == sorted(rels, reverse=True)
    assert all(0.0 <= r <= 1.0 for r in rels)
    # In both lists beats either list alone at similar ranks.
    assert out[0].id == "s0"


def test_rrf_duplicate_id_keeps_first_rank() -> None:
    out = by_id(fuse_rrf([("a", 5.0), ("a", 1.0)], []))
    assert out["a"].keyword_rank == 1 and out["a"].keyword == 5.0


def test_rrf_ties_are_deterministic() -> None:
    a = fuse_rrf([("b", 1.0)], [("a", 1.0)])
    b = fuse_rrf([("b", 1.0)], [("a", 1.0)])
    assert [c.id for c in a] == [c.id for c in b] == ["a", "b"]


# -- blend -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keyword", "vector", "kwargs", "expected"),
    [
        # max-norm: bm25/max, cosine clipped, mean of the two
        ([("a", 10.0), ("b", 5.0)], [("a", 0.8), ("c", 0.6)], {}, {"a": 0.9, "b": 0.25, "c": 0.3}),
        # negative cosine adds nothing
        ([], [("a", -0.4), ("b", 0.7)], {}, {"a": 0.0, "b": 0.7}),
        # minmax: last keyword hit gets 0
        (
            [("a", 10.0), ("b", 6.0), ("c", 2.0)],
            [],
            {"keyword_norm": "minmax"},
            {"a": 1.0, "b": 0.5, "c": 0.0},
        ),
        # minmax with a single hit
        ([("a", 3.0)], [], {"keyword_norm": "minmax"}, {"a": 1.0}),
        # weights
        ([("a", 4.0)], [("a", 0.5)], {"weights": (0.25, 0.75)}, {"a": 0.25 + 0.375}),
        # cosine above 1 (float error) clipped
        ([], [("a", 1.0000002)], {}, {"a": 1.0}),
    ],
)
def test_blend_table(
    keyword: list[tuple[str, float]],
    vector: list[tuple[str, float]],
    kwargs: dict[str, object],
    expected: dict[str, float],
) -> None:
    out = by_id(fuse_blend(keyword, vector, **kwargs))  # type: ignore[arg-type]
    assert set(out) == set(expected)
    for cid, rel in expected.items():
        assert out[cid].relevance == pytest.approx(rel)


def test_blend_keeps_magnitude_unlike_rrf() -> None:
    # A weak best vector match stays weak in the blend, not in RRF.
    assert fuse_blend([], [("a", 0.2)])[0].relevance == pytest.approx(0.2)
    assert fuse_rrf([], [("a", 0.2)])[0].relevance == pytest.approx(1.0)


def test_blend_rejects_unknown_norm() -> None:
    with pytest.raises(InvalidInputError):
        fuse_blend([("a", 1.0)], [], keyword_norm="zscore")


# -- recency -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("age", "half_life", "expected"),
    [
        (timedelta(0), 30.0, 1.0),
        (timedelta(days=30), 30.0, 0.5),
        (timedelta(days=90), 30.0, 0.25),
        (timedelta(days=7), 7.0, 0.5),
        (timedelta(hours=12), 30.0, 1 / (1 + 0.5 / 30)),
        (-timedelta(days=3), 30.0, 1.0),  # clock skew: from the future
    ],
)
def test_recency_table(age: timedelta, half_life: float, expected: float) -> None:
    assert recency(NOW - age, NOW, half_life_days=half_life) == pytest.approx(expected)


def test_recency_naive_is_utc_and_bad_half_life() -> None:
    naive = (NOW - timedelta(days=30)).replace(tzinfo=None)
    assert recency(naive, NOW) == pytest.approx(0.5)
    with pytest.raises(InvalidInputError):
        recency(NOW, NOW, half_life_days=0)


# -- tag boost ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "tags", "expected"),
    [
        ("how do we deploy", ["deploy"], 0.1),
        ("recent deploys", ["deploy"], 0.1),
        ("the deploy", ["deploys"], 0.1),
        ("boxes in the attic", ["box"], 0.1),
        ("Kubernetes outage", ["#kubernetes"], 0.1),
        ("KUBERNETES", ["Kubernetes"], 0.1),
        ("alpha launch", ["project/alpha"], 0.1),
        ("project news", ["project/alpha"], 0.1),
        ("machine learning basics", ["machine-learning"], 0.1),
        ("machine parts", ["machine-learning"], 0.0),
        ("bug fix list", ["bug_fix"], 0.1),
        ("unrelated words", ["deploy", "ops"], 0.0),
        ("", ["deploy"], 0.0),
        ("deploy", [], 0.0),
        ("glass", ["glas"], 0.0),  # no stripping of "ss"
        ("deploy ops", ["deploy", "ops"], 0.1),  # once per memory, not per tag
    ],
)
def test_tag_boost_table(query: str, tags: list[str], expected: float) -> None:
    assert tag_boost(query, tags) == pytest.approx(expected)


def test_tag_boost_custom_amount() -> None:
    assert tag_boost("deploy", ["deploy"], boost=0.25) == 0.25


# -- final score -------------------------------------------------------------


@pytest.mark.parametrize(
    ("relevance", "kwargs", "expected"),
    [
        (0.8, {"recency_value": 1.0}, 0.8 * 0.7 + 0.3),
        (0.8, {"recency_value": 0.5}, 0.8 * 0.7 + 0.15),
        (0.8, {"recency_value": 0.5, "recency_weight": 0.0}, 0.8),
        (0.8, {"recency_value": None}, 0.8),
        (0.8, {"recency_value": 0.5, "boost": 0.1}, 0.56 + 0.15 + 0.1),
        # operator_use holographic: 0.5 relevance / 0.3 trust / 0.2 recency
        (
            0.6,
            {"recency_value": 0.5, "recency_weight": 0.2, "trust": 0.9, "trust_weight": 0.3},
            0.6 * 0.5 + 0.9 * 0.3 + 0.5 * 0.2,
        ),
        # trust unknown: its weight goes back to relevance
        (0.6, {"recency_value": 0.5, "recency_weight": 0.2, "trust_weight": 0.3}, 0.48 + 0.1),
        # trust given but weight 0: ignored
        (0.6, {"recency_value": None, "trust": 0.0}, 0.6),
    ],
)
def test_final_score_table(relevance: float, kwargs: dict[str, object], expected: float) -> None:
    assert final_score(relevance, **kwargs) == pytest.approx(expected)  # type: ignore[arg-type]


def test_final_score_recency_breaks_ties_but_not_big_gaps() -> None:
    new = final_score(0.6, recency_value=recency(NOW, NOW))
    old = final_score(0.6, recency_value=recency(NOW - timedelta(days=60), NOW))
    assert new > old
    strong_old = final_score(1.0, recency_value=recency(NOW - timedelta(days=365), NOW))
    weak_new = final_score(0.3, recency_value=1.0)
    assert strong_old > weak_new


def test_final_score_rejects_bad_weights() -> None:
    with pytest.raises(InvalidInputError):
        final_score(0.5, recency_value=0.5, recency_weight=0.8, trust=0.5, trust_weight=0.3)
    with pytest.raises(InvalidInputError):
        final_score(0.5, recency_value=0.5, recency_weight=-0.1)


# -- floor -------------------------------------------------------------------


def cand(relevance: float, keyword: float | None, vector: float | None) -> Candidate:
    return Candidate("x", relevance, keyword, vector, 1 if keyword else None, 1 if vector else None)


@pytest.mark.parametrize(
    ("candidate", "min_relevance", "min_vector", "expected"),
    [
        (cand(0.9, 3.0, None), 0.5, 0.5, True),  # keyword match, relevant
        (cand(0.4, 3.0, 0.9), 0.5, 0.5, False),  # below min_relevance
        (cand(0.9, None, 0.7), 0.5, 0.5, True),  # vector only, cosine ok
        (cand(1.0, None, 0.3), 0.5, 0.5, False),  # vector only, cosine too low
        (cand(1.0, None, 0.3), 0.5, None, True),  # no cosine gate
        (cand(0.6, None, 0.5), 0.6, 0.5, True),  # boundaries inclusive
        (cand(0.0, None, None), 0.0, 0.5, False),
    ],
)
def test_passes_floor_table(
    candidate: Candidate, min_relevance: float, min_vector: float | None, expected: bool
) -> None:
    assert passes_floor(candidate, min_relevance=min_relevance, min_vector=min_vector) is expected


def test_unrelated_query_returns_nothing_end_to_end() -> None:
    # The shape recall gives an off-topic question: no keyword hits, low cosines.
    cands = fuse_rrf([], [("a", 0.21), ("b", 0.18), ("c", 0.15)])
    kept = [c for c in cands if passes_floor(c, min_relevance=0.0, min_vector=0.5)]
    assert kept == []
    blend = fuse_blend([], [("a", 0.21), ("b", 0.18)])
    assert [c for c in blend if passes_floor(c, min_relevance=0.3)] == []
