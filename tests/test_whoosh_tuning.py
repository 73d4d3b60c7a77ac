"""The Whoosh speed-ups index and find exactly what plain Whoosh does."""

from __future__ import annotations

import pickle
import random
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from whoosh import index as whoosh_index
from whoosh import query as q
from whoosh.analysis import CompositeAnalyzer
from whoosh.formats import tokens

from mdmem.index.keyword import _schema
from mdmem.index.whoosh_compat import (
    FoldingStemAnalyzer,
    cache_missing_length_columns,
    inlining_codec,
)

ASCII_PIECES = [
    *"*abcdefghijklmnopqrstuvwxyzABCDEFGHIJNPSTWY  .,-_'0123456789\t\n",
    "the ",
    "running ",
    "e.g. ",
    "U.S.A ",
    "x" * 60,
    " a ",
    "AND ",
    "Is ",
    "deployments ",
]
UNICODE_PIECES = [
    *ASCII_PIECES,
    *"éÉçñüßſİıÅæ\u212a\u0301",
    *["café ", "naïve ", "Ελληνικά ", "日本語 "],
]


def _words(analyzer: Any, text: str, **kwargs: Any) -> list[str]:
    return [t.text for t in tokens(text, analyzer, kwargs)]


@pytest.mark.parametrize("pieces", [ASCII_PIECES, UNICODE_PIECES], ids=["ascii", "unicode"])
def test_indexing_words_are_the_chains(pieces: list[str]) -> None:
    fused = FoldingStemAnalyzer()
    chain = CompositeAnalyzer(*fused.items)
    rng = random.Random(7)
    seen = 0
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        expected = _words(chain, text, mode="index", boosts=True)
        assert _words(fused, text, mode="index", boosts=True) == expected, text
        seen += len(expected)
    assert seen > 5000


def test_other_calls_run_the_chain() -> None:
    fused = FoldingStemAnalyzer()
    chain = CompositeAnalyzer(*fused.items)
    text = "The Deployments of café services ran"
    for kwargs in ({"mode": "query"}, {"removestops": False}, {"positions": True}, {}):
        got = [(t.text, t.stopped) for t in fused(text, **kwargs)]
        assert got == [(t.text, t.stopped) for t in chain(text, **kwargs)]
    assert [t.text for t in fused(text, no_morph=True, mode="index")] == [
        "deployments",
        "cafe",
        "services",
        "ran",
    ]


def test_the_analyzer_pickles_without_its_stem_cache() -> None:
    fused = FoldingStemAnalyzer()
    expected = _words(CompositeAnalyzer(*fused.items), "Running deployments", mode="index")
    assert _words(fused, "Running deployments", mode="index", boosts=True) == expected
    assert fused.__dict__["_stems"]
    restored = pickle.loads(pickle.dumps(fused))
    assert "_stems" not in restored.__dict__
    assert restored == fused
    assert _words(restored, "Running deployments", mode="index", boosts=True) == expected


def _docs(n: int, rng: random.Random) -> list[dict[str, Any]]:
    vocab = ["deploy", "cluster", "billing", "lisbon", "queue", "cache", "search"]
    return [
        {
            "id": f"m-{i:012d}",
            "text": " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 8))) + f" w{i}",
            "path": "MEMORY",
            "kind": rng.choice(["fact", "preference"]),
            "scope": "<root>",
            "status": "active",
            "created": datetime(2026, 1, 1, 12, i % 60),
        }
        for i in range(n)
    ]


def _build(directory: Path, codec: Any, docs: list[dict[str, Any]]) -> Any:
    cache_missing_length_columns()
    directory.mkdir()
    ix = whoosh_index.create_in(str(directory), _schema(), indexname="MAIN")
    # Several small commits: Whoosh merges small segments as it goes, which
    # copies (inlined) postings from one segment to the next.
    for start in range(0, 240, 40):
        writer = ix.writer(codec=codec) if codec else ix.writer()
        for doc in docs[start : start + 40]:
            writer.add_document(**doc)
        writer.commit()
    writer = ix.writer(codec=codec) if codec else ix.writer()
    for doc in docs[240:260]:
        writer.update_document(**dict(doc, id=f"m-{int(doc['id'][2:]) - 100:012d}"))
    writer.delete_by_term("id", docs[3]["id"])
    writer.commit()
    return ix


def test_inlined_posting_lists_read_like_blocks(tmp_path: Path) -> None:
    docs = _docs(260, random.Random(3))
    plain = _build(tmp_path / "plain", None, docs)
    inlined = _build(tmp_path / "inlined", inlining_codec(), docs)
    with plain.reader() as a, inlined.reader() as b:
        assert list(a.iter_postings()) == list(b.iter_postings())
        assert sorted(a.all_stored_fields(), key=str) == sorted(b.all_stored_fields(), key=str)
        assert any(b.term_info("text", f"w{i}")._inlined for i in range(260) if i != 3)
    queries = [
        q.Term("text", "w17"),
        q.Or([q.Term("text", "w160"), q.Term("text", "bill"), q.Term("text", "w250")]),
        q.Term("id", docs[200]["id"]),
        q.And([q.Term("kind", "preference"), q.Term("text", "queue")]),
    ]
    for query in queries:
        with plain.searcher() as sa, inlined.searcher() as sb:
            ra = [(hit["id"], round(hit.score, 5)) for hit in sa.search(query, limit=None)]
            rb = [(hit["id"], round(hit.score, 5)) for hit in sb.search(query, limit=None)]
        assert ra == rb
        assert ra
