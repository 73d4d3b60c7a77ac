"""The neighbour and coverage features: what the turns around a candidate add."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from mdmem import Vault
from mdmem.models import Block
from mdmem.recall.conversation import FileOrder
from mdmem.recall.neighbours import Neighbourhood
from tests.recall.test_conversation import turn as conversation_turn

T0 = datetime(2023, 1, 20, 13, 0, tzinfo=UTC)


def turn(n: int, text: str, speaker: str | None = "Jon") -> Block:
    return conversation_turn(n, text, speaker, path="sessions/s.md", at=T0)


def words(text: str) -> frozenset[str]:
    return frozenset(w.strip(".,!?").lower() for w in text.split())


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


BLOCKS = [
    turn(1, "Lost my job as a banker yesterday"),
    turn(2, "So sorry! What will you do now?", "Gina"),
    turn(3, "Starting a dance studio"),
    turn(4, "The deploy runs on Tuesdays", None),
]
VECTORS = {
    BLOCKS[0].id: unit(1, 0, 0),
    BLOCKS[1].id: unit(0, 1, 0),
    BLOCKS[2].id: unit(0.6, 0.8, 0),
    BLOCKS[3].id: unit(0, 0, 1),
}


def hood(query_terms: Iterable[str], query_vec: np.ndarray | None) -> Neighbourhood:
    asked: list[list[str]] = []

    def vectors_of(ids: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(ids)
        asked.append(wanted)
        return {i: VECTORS[i] for i in wanted if i in VECTORS}

    found = Neighbourhood(
        FileOrder(lambda p: BLOCKS, set),
        query_terms=frozenset(query_terms),
        terms_of=words,
        query_vec=query_vec,
        vectors_of=vectors_of,
    )
    found.asked = asked  # type: ignore[attr-defined]
    return found


def test_coverage_counts_the_query_terms_a_turn_and_its_neighbours_hold() -> None:
    features = hood({"banker", "dance"}, None).features(BLOCKS)
    # The middle turn holds neither word; with both neighbours it holds both.
    assert features[BLOCKS[1].id][1] == 1.0
    assert features[BLOCKS[0].id][1] == 0.5  # its only neighbour has neither
    assert features[BLOCKS[2].id][1] == 0.5
    assert features[BLOCKS[3].id] == (0.0, 0.0)  # not a turn: its own words, none asked
    assert all(n == 0.0 for n, _ in features.values())  # no query vector, no cosine


def test_neighbour_is_the_best_cosine_of_the_turns_around() -> None:
    found = hood(set(), unit(1, 0, 0))
    features = found.features(BLOCKS)
    assert features[BLOCKS[1].id][0] == pytest.approx(1.0)  # turn 1 is the query's direction
    assert features[BLOCKS[2].id][0] == pytest.approx(0.0)  # turn 2 is orthogonal
    assert features[BLOCKS[0].id][0] == pytest.approx(0.0)
    assert features[BLOCKS[3].id] == (0.0, 0.0)
    # A second call asks only for vectors not already scored.
    found.features(BLOCKS[:2])
    assert found.asked[-1] == []  # type: ignore[attr-defined]


def test_negative_cosines_count_as_zero() -> None:
    features = hood(set(), unit(-1, 0, 0)).features(BLOCKS[1:2])
    assert features[BLOCKS[1].id][0] == 0.0


def test_recall_reports_both_features_of_a_reply(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="t")
    session = vault.session("chat-1")
    session.record("user", "Lost my job as a banker yesterday.", speaker="Jon", when=T0)
    reply = session.record("user", "Oh no! What now?", speaker="Gina", when=T0)
    session.record("user", "I am opening a dance studio.", speaker="Jon", when=T0)
    for i in range(4):
        vault.remember(f"Unrelated note {i} about the weather in Lisbon.")
    hits = vault.recall("banker who opens a dance studio", k=10).items
    by_id = {h.id: h.scores for h in hits}
    assert reply.id in by_id
    assert by_id[reply.id]["f_coverage"] == pytest.approx(1.0)
    assert by_id[reply.id]["f_neighbour"] > 0.0
    vault.close()


def test_a_memory_without_turns_around_stands_for_itself() -> None:
    # A fact is not ranked below turns for lacking neighbours: its own
    # cosine and words count.
    features = hood({"deploy", "tuesdays"}, unit(0, 0, 1)).features(BLOCKS[3:])
    assert features[BLOCKS[3].id][0] == pytest.approx(1.0)
    assert features[BLOCKS[3].id][1] == 1.0


def test_a_tool_output_is_nobodys_neighbour() -> None:
    output = replace(BLOCKS[1], kind="tool_output", text="banker dance " * 50)
    blocks = [BLOCKS[0], output, BLOCKS[2]]
    found = Neighbourhood(
        FileOrder(lambda p: blocks, set),
        query_terms=frozenset({"banker", "dance"}),
        terms_of=words,
        query_vec=None,
        vectors_of=None,
    )
    features = found.features(blocks)
    # The turns either side see past it to nothing; it sees only itself.
    assert features[BLOCKS[0].id][1] == 0.5
    assert features[BLOCKS[2].id][1] == 0.5
    assert features[output.id][1] == 1.0
