"""One hit per fact after consolidation; bookkeeping never; no hit rides in on a thread."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem import Vault


def _launch_chat(vault: Vault) -> None:
    s = vault.session("chat1", contact="ana")
    at = [datetime(2026, 5, 1, 10, m, tzinfo=UTC) for m in range(4)]
    s.record("user", "We should plan the product launch soon.", when=at[0])
    s.record("assistant", "Sure, what date are you thinking?", when=at[1])
    s.record("user", "Launch is May 12. I prefer morning meetings for the launch team.", when=at[2])
    s.record("assistant", "Noted, May 12 it is.", when=at[3])


@pytest.fixture
def consolidated(tmp_path: Path) -> Vault:
    vault = Vault.init(tmp_path / "v", agent="t")
    _launch_chat(vault)
    result = vault.consolidate(force=True)
    assert result.episodes and result.facts  # an episode, a fact, a daily-log line
    return vault


def test_after_consolidation_the_direct_answer_is_the_top_hit_once(consolidated: Vault) -> None:
    hits = consolidated.recall("when is the launch", k=5).items
    assert hits[0].text.startswith("Launch is May 12")
    texts = [h.text for h in hits]
    # No bookkeeping: the daily-log announcement and the episode's link list.
    assert not any(t.startswith("Consolidated ") for t in texts)
    assert not any(h.heading == "Sources" for h in hits)
    # The episode, its Facts section and the fact are reachable from the turn,
    # not hits of their own.
    top = hits[0]
    assert any(d.endswith("#Facts") for d in top.derived)
    episode = consolidated.recall("launch", k=20, kinds=["episode"]).items
    assert episode == [] or episode[0].id in top.derived
    assert all(h.kind != "episode" for h in hits)


def test_top_five_holds_no_two_copies_of_one_fact(consolidated: Vault) -> None:
    hits = consolidated.recall("morning meetings launch team", k=5).items
    seen: set[str] = set()
    for h in hits:
        family = {h.id, *h.sources, *h.derived}
        assert not family & seen, f"{h.id} repeats a piece already shown"
        seen |= family
    assert sum("morning meetings" in h.text for h in hits) == 1


def test_bookkeeping_is_never_a_hit_even_when_it_matches_best(consolidated: Vault) -> None:
    hits = consolidated.recall("Consolidated session entries", k=10).items
    assert not any(h.kind == "log" and h.text.startswith("Consolidated ") for h in hits)
    assert not any(h.heading == "Sources" for h in hits)


def test_a_thread_reply_unlike_the_query_does_not_ride_in(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="t")
    s = vault.session("s1")
    s.record("user", "What is the capital of Portugal and its famous tram line?")
    big = "\n".join(f"row {i}: 0x{i * 7919:08x} ok" for i in range(1200))
    out = s.record_tool_output("dump", big)
    hits = vault.recall("capital of Portugal tram", k=10).items
    assert hits, "the question itself is found"
    assert out.id not in [h.id for h in hits]


def test_a_fact_is_one_piece_with_the_turn_it_names_not_one_sharing_its_words(
    tmp_path: Path,
) -> None:
    vault = Vault.init(tmp_path / "v", agent="t")
    s = vault.session("chat2", contact="bo")
    other = s.record("user", "Morning meetings for the launch team are tiring, honestly.")
    said = s.record("user", "I prefer morning meetings for the launch team.")
    result = vault.consolidate(force=True)
    fact = next(m for m in result.facts if "prefers morning meetings" in m.text)
    assert vault.get(fact.id).field("sources") == f"^{said.id}"

    hits = vault.recall("tiring honestly prefers", k=10).items

    families = [{h.id, *h.sources, *h.derived} for h in hits]
    mine = next(f for f in families if fact.id in f)
    assert said.id in mine and other.id not in mine
    assert any(other.id in f and fact.id not in f for f in families)
