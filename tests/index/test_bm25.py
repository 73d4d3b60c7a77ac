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
        kind="fact",
        tags=(rng.choice(WORDS),),
        scope="",
        status="active",
        created=datetime(2026, 1, 1, tzinfo=UTC),
        updated=None,
        content_hash=str(i),
    )


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
    for _ in range(25):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        query += f" unique{rng.randrange(0, 900, 5)}"
        scored.clear()
        fast = index.search(query, limit=30, statuses=None)  # no filter: the fast path
        assert scored == ["ok"], "fast path fell back"
        # A filter (every block is active) sends the same query to Whoosh itself.
        slow = index.search(query, limit=30, statuses=("active",))
        assert scored == ["ok"], "the filtered search did not run in Whoosh"
        assert {i for i, _ in fast} & {b.id for b in blocks[:40]} == set()
        fast_scores = dict(fast)
        for doc_id, score in slow:
            if doc_id in fast_scores:
                assert fast_scores[doc_id] == pytest.approx(score, rel=1e-4)
        assert [s for _, s in fast] == pytest.approx([s for _, s in slow], rel=1e-4)
