"""The numpy BM25F scorer returns Whoosh's own scores, across segments and deletions."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mdmem.index.bm25 import FastScorer
from mdmem.index.keyword import KeywordIndex
from mdmem.models import Block

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "deploy",
    "cluster",
    "staging",
    "search",
    "billing",
    "lisbon",
    "osaka",
    "queue",
    "cache",
]


def _block(i: int, rng: random.Random) -> Block:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
    if i % 5 == 0:
        # A word of one block: its posting list is inlined in the term entry.
        text += f" unique{i}"
    return Block(
        id=f"m-{i:012d}",
        path="MEMORY.md" if i % 3 else f"notes/n{i}.md",
        line_start=i + 1,
        line_end=i + 1,
        heading=rng.choice(["Memory", "Deploys", "Search"]),
        text=text,
        kind=rng.choice(["fact", "fact", "decision", "event"]),
        tags=(rng.choice(WORDS), rng.choice(["project/alpha", "project/beta", "Deploy"])),
        scope=rng.choice(["", "", "ops", "team"]),
        status=rng.choice(["active", "active", "active", "superseded", "archived"]),
        created=datetime(2026, 1 + i % 12, 1 + i % 28, i % 24, tzinfo=UTC),
        updated=None,
        content_hash=str(i),
    )


def _filters(rng: random.Random) -> dict[str, Any]:
    """One random filter of every kind a search takes (None: that one is off)."""
    return {
        "kinds": rng.choice([None, ("fact",), ("decision", "event"), ()]),
        "tags": rng.choice([None, ("project",), ("project/alpha", "cache"), ("#Deploy",)]),
        "scopes": rng.choice([None, ("",), ("ops",), ("", "ops")]),
        "statuses": rng.choice([None, ("active",), ("superseded", "archived")]),
        "since": rng.choice([None, datetime(2026, 3, 1, tzinfo=UTC)]),
        "until": rng.choice([None, datetime(2026, 6, 1, 12, 30, tzinfo=UTC)]),
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_fast_scores_equal_whoosh(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored: list[str] = []  # one entry per FastScorer.search call: how it ended
    real_search = FastScorer.search

    def counted(self: FastScorer, *args: Any, **kwargs: Any) -> Any:
        try:
            result = real_search(self, *args, **kwargs)
        except Exception:
            scored.append("raised")  # the index then falls back to Whoosh for good
            raise
        scored.append("ok")
        return result

    monkeypatch.setattr(FastScorer, "search", counted)
    rng = random.Random(seed)
    index = KeywordIndex(tmp_path / "kw")
    blocks = [_block(i, rng) for i in range(900)]
    index.add_many(blocks[:600])
    index.upsert(blocks[600:700])  # a second segment
    index.delete([b.id for b in blocks[:40]])  # deletions in the first
    index.upsert([_block(i, rng) for i in range(700, 900)])  # a third
    whoosh = KeywordIndex(tmp_path / "kw", fast_scoring=False)
    filtered = 0
    for _ in range(60):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        query += f" unique{rng.randrange(0, 900, 5)}"
        filters = _filters(rng)
        # An empty filter matches nothing before any scoring.
        ran = [] if () in filters.values() else ["ok"]
        for _repeat in range(2):  # the second asks the filter's cached mask
            scored.clear()
            fast = index.search(query, limit=30, **filters)
            assert scored == ran, "the fast path did not score this search"
            slow = whoosh.search(query, limit=30, **filters)
            assert scored == ran, "the reference ran the fast path"
            assert {i for i, _ in fast} & {b.id for b in blocks[:40]} == set()
            fast_scores = dict(fast)
            for doc_id, score in slow:
                if doc_id in fast_scores:
                    assert fast_scores[doc_id] == pytest.approx(score, rel=1e-4)
            assert [s for _, s in fast] == pytest.approx([s for _, s in slow], rel=1e-4)
        filtered += bool(slow) and any(v is not None for v in filters.values())
    assert filtered >= 10, "too few filtered searches found anything to compare"
