"""The Whoosh speed-ups index and find exactly what plain Whoosh does."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from whoosh import index as whoosh_index
from whoosh import query as q
from whoosh.analysis import CompositeAnalyzer
from whoosh.formats import tokens

from mdmem.index import whoosh_compat
from mdmem.index.keyword import KeywordIndex, build_schema
from mdmem.index.whoosh_compat import (
    FoldingStemAnalyzer,
    cache_missing_length_columns,
    inlining_codec,
)
from mdmem.models import Block

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
    fresh = vars(FoldingStemAnalyzer()).keys()  # the attributes of an unused analyzer
    fused = FoldingStemAnalyzer()
    expected = _words(CompositeAnalyzer(*fused.items), "Running deployments", mode="index")
    assert _words(fused, "Running deployments", mode="index", boosts=True) == expected
    cache = [value for name, value in vars(fused).items() if name not in fresh]
    assert cache and all(cache)  # indexing left its stems in an attribute of its own
    restored = pickle.loads(pickle.dumps(fused))
    assert vars(restored).keys() == fresh  # ...which is not pickled
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
    ix = whoosh_index.create_in(str(directory), build_schema(), indexname="MAIN")
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
        assert any(b.term_info("text", f"w{i}").is_inlined() for i in range(260) if i != 3)
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


_OPEN_AND_SEARCH = """
import sys
from mdmem.index.keyword import KeywordIndex
with KeywordIndex(sys.argv[1]) as index:
    print(" ".join(block_id for block_id, _ in index.search("kayak fjords")))
"""


def test_an_index_from_the_old_module_layout_opens_without_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexes written before the subpackages pickled the analyzer as
    mdmem.whoosh_tuning.FoldingStemAnalyzer; a fresh process must unpickle
    that through its ordinary imports (whoosh_compat's alias)."""
    # Write the old path: pickle stores the class's __module__ (and checks
    # that it resolves, which the setitem makes true whatever the alias does).
    monkeypatch.setattr(FoldingStemAnalyzer, "__module__", "mdmem.whoosh_tuning")
    monkeypatch.setitem(sys.modules, "mdmem.whoosh_tuning", whoosh_compat)
    directory = tmp_path / "keyword"
    memory = Block(
        id="m-000000000001",
        path="MEMORY.md",
        line_start=1,
        line_end=1,
        heading="",
        text="Kayak trip to the fjords in June",
        kind="fact",
        tags=(),
        scope="",
        status="active",
        created=datetime(2025, 1, 1, tzinfo=UTC),
        updated=None,
        content_hash="0" * 32,
    )
    with KeywordIndex(directory) as index:
        index.add_many([memory])
    monkeypatch.undo()
    files = {p.name: p.read_bytes() for p in directory.iterdir()}
    tocs = [data for name, data in files.items() if name.endswith(".toc")]
    assert tocs and all(b"mdmem.whoosh_tuning" in toc for toc in tocs)
    assert not any(b"mdmem.index.whoosh_compat" in toc for toc in tocs)

    done = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_SEARCH, str(directory)],
        capture_output=True,
        text=True,
        env=dict(os.environ, MDMEM_EMBEDDER_PROVIDER="none"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [memory.id]
    # Opened and searched as it was: nothing rewritten, nothing rebuilt.
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == files


@pytest.mark.parametrize("data", [b"", b"one line\n", b"a\nbb\n\nccc", bytes(range(256)) * 40])
def test_a_view_file_reads_like_bytesio(data: bytes) -> None:
    import io

    from mdmem.index.whoosh_compat import _ViewFile

    rng = random.Random(len(data))
    view, ref = _ViewFile(memoryview(data)), io.BytesIO(data)
    assert list(_ViewFile(data)) == list(io.BytesIO(data))
    for _ in range(200):
        op = rng.choice(["read", "readline", "seek", "seek_end", "seek_cur", "readinto"])
        n = rng.randint(-1, len(data) + 3)
        if op == "read":
            assert view.read(n) == ref.read(n)
        elif op == "readline":
            assert view.readline(n) == ref.readline(n)
        elif op == "readinto":
            a, b = bytearray(max(n, 0)), bytearray(max(n, 0))
            assert view.readinto(a) == ref.readinto(b) and a == b
        elif op == "seek":
            assert view.seek(max(n, 0)) == ref.seek(max(n, 0))
        elif op == "seek_end":
            assert view.seek(-min(max(n, 0), len(data)), 2) == ref.seek(
                -min(max(n, 0), len(data)), 2
            )
        else:
            step = rng.randint(-view.tell(), 5)
            assert view.seek(step, 1) == ref.seek(step, 1)
        assert view.tell() == ref.tell()


def test_buffer_files_read_a_memory_map_in_place(tmp_path: Path) -> None:
    """A segment reader no longer copies its mapped files: an index opened
    after the patch answers as before, and its buffer files hold a view."""
    import mmap

    from whoosh.filedb.structfile import BufferFile

    from mdmem.index.whoosh_compat import _ViewFile, zero_copy_buffer_files

    zero_copy_buffer_files()
    zero_copy_buffer_files()  # applied once
    path = tmp_path / "blob"
    path.write_bytes(pickle.dumps({"x": list(range(1000))}) + b"tail")
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        part = view[: len(view) - 4]
        bf = BufferFile(part, name="blob")
        assert isinstance(bf.file, _ViewFile)
        assert bf.read_pickle() == {"x": list(range(1000))}
        assert bf.get(0, 2) == bytes(view[:2])
        bf.close()
        part.release()
        view.release()
    ix = KeywordIndex.create(tmp_path / "ix")
    blocks = [
        Block(
            id=f"m-{i:04d}",
            path="MEMORY.md",
            line_start=i + 1,
            line_end=i + 1,
            text=f"memory number {i} about {'deploys' if i % 3 else 'invoices'}",
            heading="",
            kind="fact",
            scope="",
            created=datetime(2026, 1, 1, tzinfo=UTC),
            tags=(),
            status="active",
            updated=None,
            content_hash=f"h{i}",
        )
        for i in range(300)
    ]
    ix.add_many(blocks)
    ix.upsert([blocks[3]])
    hits = ix.search("invoices", limit=500, statuses=None)
    assert sorted(hit[0] for hit in hits) == [f"m-{i:04d}" for i in range(0, 300, 3)]
    ix.close()
