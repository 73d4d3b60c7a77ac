"""KeywordIndex against a real Whoosh index in tmp_path."""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from mdmem.errors import IndexError_, LockTimeoutError
from mdmem.index.keyword import KeywordIndex
from mdmem.models import Block

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def block(
    bid: str,
    text: str,
    *,
    kind: str = "fact",
    tags: tuple[str, ...] = (),
    scope: str = "",
    status: str = "active",
    created: datetime = T0,
    heading: str = "",
    path: str = "MEMORY.md",
) -> Block:
    return Block(
        id=bid,
        path=path,
        line_start=1,
        line_end=1,
        heading=heading,
        text=text,
        kind=kind,
        tags=tags,
        scope=scope,
        status=status,
        created=created,
        updated=None,
        content_hash=f"h-{bid}",
    )


@pytest.fixture
def ix(tmp_path: Path) -> Iterator[KeywordIndex]:
    index = KeywordIndex(tmp_path / "kw")
    index.add_many(
        [
            block("m-1", "We deploy the API server every Friday.", tags=("ops",)),
            block("m-2", "The user prefers metric units.", kind="preference", scope="user:alice"),
            block(
                "m-3",
                "Database migration failed with a timeout.",
                kind="bug_fix",
                tags=("project/alpha",),
                scope="project:alpha",
                created=T0 + timedelta(days=10),
            ),
            block(
                "m-4",
                "Old deployment checklist lives in the wiki.",
                status="superseded",
                created=T0 + timedelta(days=20),
            ),
            block(
                "m-5",
                "Coffee order: flat white, no sugar.",
                kind="preference",
                tags=("coffee",),
                created=T0 + timedelta(days=30),
            ),
        ]
    )
    yield index
    index.close()


def ids(results: list[tuple[str, float]]) -> list[str]:
    return [r[0] for r in results]


def test_create_add_search(ix: KeywordIndex) -> None:
    assert len(ix) == 5
    assert ix.ids() == {"m-1", "m-2", "m-3", "m-4", "m-5"}
    res = ix.search("metric units")
    assert ids(res) == ["m-2"]
    assert res[0][1] > 0


def test_stemming_matches_word_forms(ix: KeywordIndex) -> None:
    assert "m-1" in ids(ix.search("deploys"))
    assert "m-1" in ids(ix.search("deploying servers"))
    assert "m-3" in ids(ix.search("migrations"))
    assert "m-4" in ids(ix.search("deployments", statuses=None))


def test_scores_sorted_best_first(ix: KeywordIndex) -> None:
    res = ix.search("deploy server friday")
    scores = [s for _, s in res]
    assert scores == sorted(scores, reverse=True)
    assert res[0][0] == "m-1"


def test_tag_words_score(ix: KeywordIndex) -> None:
    # "ops" only appears as a tag; "alpha" only as a nested tag segment.
    assert ids(ix.search("ops")) == ["m-1"]
    assert ids(ix.search("alpha")) == ["m-3"]
    # A tag match outranks the same word in passing text.
    ix.upsert([block("m-6", "ops people drink coffee too, ops ops", kind="note")])
    ix.upsert([block("m-7", "an entry", tags=("coffee",))])
    top = ids(ix.search("coffee"))
    assert top.index("m-5") < top.index("m-6")


def test_heading_and_path_are_searchable(tmp_path: Path) -> None:
    with KeywordIndex(tmp_path / "kw") as ix:
        ix.upsert(
            [
                block("s-1", "plain words here", heading="Kubernetes cluster", path="notes/a.md"),
                block("s-2", "other words", path="projects/zephyr.md"),
            ]
        )
        assert ids(ix.search("kubernetes")) == ["s-1"]
        assert ids(ix.search("zephyr")) == ["s-2"]


def test_status_filter_defaults_to_active(ix: KeywordIndex) -> None:
    assert "m-4" not in ids(ix.search("deployment checklist"))
    assert ids(ix.search("deployment checklist", statuses=None))[0] == "m-4"
    assert ids(ix.search("checklist", statuses=("superseded",))) == ["m-4"]
    assert ix.search("checklist", statuses=("resolved",)) == []


def test_kind_filter(ix: KeywordIndex) -> None:
    assert set(ids(ix.search("user prefers coffee units", kinds=["preference"]))) == {"m-2", "m-5"}
    assert ix.search("metric units", kinds=["fact"]) == []


def test_tag_filter_exact_and_nested(ix: KeywordIndex) -> None:
    assert ids(ix.search("database migration timeout", tags=["project/alpha"])) == ["m-3"]
    assert ids(ix.search("database migration timeout", tags=["project"])) == ["m-3"]
    assert ids(ix.search("database migration", tags=["#Project/Alpha"])) == ["m-3"]
    assert ix.search("database migration", tags=["alpha"]) == []
    assert ix.search("deploy", tags=["coffee"]) == []


def test_scope_filter_root_and_named(ix: KeywordIndex) -> None:
    q = "deploy metric migration coffee"
    assert set(ids(ix.search(q, scopes=[""]))) == {"m-1", "m-5"}
    assert set(ids(ix.search(q, scopes=["user:alice"]))) == {"m-2"}
    assert set(ids(ix.search(q, scopes=["", "project:alpha"]))) == {"m-1", "m-3", "m-5"}
    assert set(ids(ix.search(q, scopes=None))) == {"m-1", "m-2", "m-3", "m-5"}


def test_empty_filter_collection_matches_nothing(ix: KeywordIndex) -> None:
    # An empty allowed-scope set must never widen into "everything".
    assert ix.search("deploy", scopes=[]) == []
    assert ix.search("deploy", kinds=()) == []


def test_repeated_filters_stay_correct(ix: KeywordIndex) -> None:
    # The second identical filter is served from a cached doc set; it must
    # agree with the first, stay empty when nothing passes, and follow writes.
    q = "deploy metric migration coffee"
    for _ in range(3):
        assert set(ids(ix.search(q, scopes=[""]))) == {"m-1", "m-5"}
        assert ix.search(q, scopes=["project:nobody"]) == []
        assert ix.search(q, kinds=["gotcha"]) == []
    ix.upsert([block("m-10", "coffee beans", scope="project:nobody")])
    for _ in range(3):
        assert ids(ix.search(q, scopes=["project:nobody"])) == ["m-10"]
        assert set(ids(ix.search(q, scopes=[""]))) == {"m-1", "m-5"}
    ix.delete(["m-5"])
    for _ in range(2):
        assert set(ids(ix.search(q, scopes=[""]))) == {"m-1"}


def test_date_ranges_match_a_brute_force_filter_to_the_minute(tmp_path: Path) -> None:
    # Dates are indexed to the minute in two tiers (the minute and ~71-minute
    # buckets): ranges whose ends fall inside a bucket, across buckets and
    # across years select exactly what a comparison of minutes selects.
    rng = random.Random(5)
    spans = [timedelta(seconds=1), timedelta(minutes=7), timedelta(hours=5), timedelta(days=400)]
    created = {
        f"m-{i}": T0 + rng.choice(spans) * rng.random() * rng.choice([1, -1]) for i in range(300)
    }
    index = KeywordIndex(tmp_path / "kw")
    index.add_many([block(bid, "sunflower field", created=when) for bid, when in created.items()])
    moments = sorted(created.values())

    def minute(when: datetime) -> datetime:
        return when.replace(second=0, microsecond=0)

    for _ in range(60):
        since, until = sorted(rng.sample(moments, 2))
        since -= timedelta(seconds=rng.choice([0, 1, 59]))
        expected = {
            bid for bid, when in created.items() if minute(since) <= minute(when) <= minute(until)
        }
        got = set(ids(index.search("sunflower", limit=400, since=since, until=until)))
        assert got == expected
        exact = {bid for bid, when in created.items() if since <= when <= until}
        assert exact <= got


def test_date_range_filter(ix: KeywordIndex) -> None:
    q = "deploy metric migration coffee deployment"
    got = set(ids(ix.search(q, statuses=None, since=T0 + timedelta(days=5))))
    assert got == {"m-3", "m-4", "m-5"}
    got = set(ids(ix.search(q, statuses=None, until=T0 + timedelta(days=10))))
    assert got == {"m-1", "m-2", "m-3"}  # until is inclusive
    got = set(
        ids(
            ix.search(q, statuses=None, since=T0 + timedelta(days=5), until=T0 + timedelta(days=25))
        )
    )
    assert got == {"m-3", "m-4"}
    # Bounds in another timezone are compared as instants, not wall-clock times:
    # 04:00+05:00 is 23:00 UTC the day before m-3 was created.
    plus5 = timezone(timedelta(hours=5))
    assert "m-3" in ids(ix.search(q, since=datetime(2025, 1, 11, 4, 0, tzinfo=plus5)))
    assert "m-3" not in ids(ix.search(q, since=datetime(2025, 1, 11, 6, 0, tzinfo=plus5)))


def test_upsert_replaces_and_delete_removes(ix: KeywordIndex) -> None:
    ix.upsert([block("m-1", "We now release on Mondays.")])
    assert len(ix) == 5
    assert "m-1" not in ids(ix.search("friday"))
    assert ids(ix.search("mondays")) == ["m-1"]
    ix.upsert([block("m-8", "brand new fact about gardening"), block("m-9", "gardening again")])
    assert set(ids(ix.search("gardening"))) == {"m-8", "m-9"}
    ix.delete(["m-8", "m-9", "never-existed"])
    assert ix.search("gardening") == []
    assert ix.ids() == {"m-1", "m-2", "m-3", "m-4", "m-5"}


@pytest.mark.parametrize(
    "query",
    [
        'deploy "server',
        "deploy:server",
        "title:(deploy OR",
        "AND",
        "NOT deploy",
        "deploy AND OR NOT",
        "*",
        "depl*",
        "?",
        "[a TO z]",
        "{}[]()^~!\\/",
        "deploy^5",
        "~~~ ### @@@",
        "déploy café naïve",
        "部署 サーバー 🚀",
        "\x00\x01 control",
        "'); DROP TABLE memories; --",
        "a" * 5000,
        "",
        "   ",
    ],
)
def test_special_characters_never_raise(ix: KeywordIndex, query: str) -> None:
    res = ix.search(query)
    assert isinstance(res, list)


def test_query_syntax_is_literal(ix: KeywordIndex) -> None:
    # "NOT deploy" is two words, not an exclusion; "kind:fact" is not a field query.
    assert "m-1" in ids(ix.search("NOT deploy"))
    assert ids(ix.search("kind:preference metric")) == ["m-2"]


def test_stopword_only_query_returns_nothing(ix: KeywordIndex) -> None:
    assert ix.search("the of and a to is") == []
    assert ix.search("?!") == []


def test_accents_folded(tmp_path: Path) -> None:
    with KeywordIndex(tmp_path / "kw") as ix:
        ix.upsert([block("c-1", "Meet at the café near the station")])
        assert ids(ix.search("cafe")) == ["c-1"]
        assert ids(ix.search("CAFÉ")) == ["c-1"]


def test_bulk_add_with_progress(tmp_path: Path) -> None:
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
    ]
    blocks = [
        block(
            f"b-{i}",
            f"{words[i % 10]} {words[(i * 7) % 10]} entry number{i}",
            kind=("fact", "log")[i % 2],
            created=T0 + timedelta(minutes=i),
        )
        for i in range(3000)
    ]
    seen: list[int] = []
    with KeywordIndex.create(tmp_path / "kw") as ix:
        n = ix.add_many(iter(blocks), bulk=True, progress=seen.append)
        assert n == 3000
        assert len(ix) == 3000
        assert ix.ids() == {b.id for b in blocks}
        assert seen and seen[-1] == 3000
        assert seen == sorted(seen)
        assert ids(ix.search("number1234")) == ["b-1234"]
        assert len(ix.search("alpha", limit=5000, kinds=["fact"])) == 300
    # Persisted across reopen.
    with KeywordIndex(tmp_path / "kw") as again:
        assert len(again) == 3000
        assert ids(again.search("number2999")) == ["b-2999"]


def test_bulk_add_over_existing_docs_replaces(ix: KeywordIndex) -> None:
    n = ix.add_many([block("m-1", "rewritten text zebra"), block("m-9", "zebra too")], bulk=True)
    assert n == 2
    assert len(ix) == 6
    assert set(ids(ix.search("zebra"))) == {"m-1", "m-9"}
    assert ix.search("friday") == []


def test_non_bulk_progress_reports_final_count(tmp_path: Path) -> None:
    seen: list[int] = []
    with KeywordIndex(tmp_path / "kw") as ix:
        ix.add_many((block(f"p-{i}", f"text {i}") for i in range(1200)), progress=seen.append)
        assert seen[-1] == 1200 and len(ix) == 1200


def test_reopen_persists(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    with KeywordIndex(d) as ix:
        ix.upsert([block("r-1", "persistent memory about sailing")])
    with KeywordIndex(d) as ix:
        assert ids(ix.search("sailing")) == ["r-1"]


def test_create_wipes_but_spares_foreign_files(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    with KeywordIndex(d) as ix:
        ix.upsert([block("r-1", "persistent memory about sailing")])
    (d / "notes.txt").write_text("not ours")
    with KeywordIndex.create(d) as ix:
        assert len(ix) == 0
        assert ix.search("sailing") == []
    assert (d / "notes.txt").read_text() == "not ours"


def test_sees_commits_from_another_instance(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    with KeywordIndex(d) as reader, KeywordIndex(d) as writer:
        assert reader.search("kayak") == []
        writer.upsert([block("x-1", "kayak trip in june")])
        assert ids(reader.search("kayak")) == ["x-1"]


def test_another_instances_merge_does_not_resurrect_documents(tmp_path: Path) -> None:
    """Another process merges segments and deletes documents while this one
    holds a searcher: the next search sees exactly the new commit (Whoosh's
    own Searcher.refresh would bring the merged-away segments back)."""
    d = tmp_path / "kw"
    with KeywordIndex(d) as reader, KeywordIndex(d) as writer:
        for i in range(4):  # four commits, four segments
            writer.upsert([block(f"x-{i}", f"kayak trip number {i}")])
        assert sorted(ids(reader.search("kayak", limit=20))) == ["x-0", "x-1", "x-2", "x-3"]
        writer.delete(["x-0"])
        from whoosh import index as windex

        with windex.open_dir(str(d), indexname="MAIN").writer() as w:  # merge every segment
            w.optimize = True
        assert sorted(ids(reader.search("kayak", limit=20))) == ["x-1", "x-2", "x-3"]
        assert len(reader) == 3


def test_a_commit_reopens_only_the_segments_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem.index import whoosh_compat

    reopened: list[tuple[dict[Any, Any], dict[Any, Any]]] = []
    real = whoosh_compat.reopened_searcher

    def leaves(searcher: Any) -> dict[Any, Any]:
        return {r.segment().segment_id(): r for r, _ in searcher.reader().leaf_readers()}

    def spy(ix: Any, old: Any) -> Any:  # the searcher the index reopens after a commit
        was = leaves(old)
        new = real(ix, old)
        reopened.append((was, leaves(new)))
        return new

    monkeypatch.setattr(whoosh_compat, "reopened_searcher", spy)
    index = KeywordIndex(tmp_path / "kw")
    index.add_many([block(f"a-{i}", f"alpha number {i}") for i in range(50)])
    index.search("alpha")
    reopened.clear()
    index.upsert([block("b-1", "beta arrives")])  # a new small segment
    assert ids(index.search("beta")) == ["b-1"]
    [(before, after)] = reopened
    assert len(after) == len(before) + 1
    assert all(after[segid] is reader for segid, reader in before.items())
    index.delete(["a-3"])  # a deletion in the first segment: its reader is reopened
    assert "a-3" not in ids(index.search("alpha", limit=100))
    assert len(ids(index.search("alpha", limit=100))) == 49


def test_version_mismatch_raises(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    KeywordIndex(d).close()
    (d / "mdmem-keyword.json").write_text(json.dumps({"schema_version": 999}))
    with pytest.raises(IndexError_, match="schema version"):
        KeywordIndex(d)
    # create() is the way out.
    with KeywordIndex.create(d) as ix:
        assert len(ix) == 0


def test_missing_version_file_raises(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    KeywordIndex(d).close()
    (d / "mdmem-keyword.json").unlink()
    with pytest.raises(IndexError_):
        KeywordIndex(d)


def _populated(d: Path) -> None:
    with KeywordIndex(d) as ix:
        ix.add_many(block(f"c-{i}", f"corruption test document {i} deploy") for i in range(200))


@pytest.mark.parametrize(
    "damage",
    [
        "truncate_segment",
        "garbage_segment",
        "empty_segment",
        "remove_segment",
        "remove_toc",
        "truncate_toc",
        "garbage_toc",
    ],
)
def test_corrupted_directory_raises_index_error(tmp_path: Path, damage: str) -> None:
    d = tmp_path / "kw"
    _populated(d)
    seg = sorted(d.glob("*.seg"))[0]
    toc = sorted(d.glob("*.toc"))[0]
    data = seg.read_bytes()
    if damage == "truncate_segment":
        seg.write_bytes(data[: len(data) // 2])
    elif damage == "garbage_segment":
        seg.write_bytes(os.urandom(len(data)))
    elif damage == "empty_segment":
        seg.write_bytes(b"")
    elif damage == "remove_segment":
        seg.unlink()
    elif damage == "remove_toc":
        toc.unlink()
    elif damage == "truncate_toc":
        toc.write_bytes(toc.read_bytes()[:20])
    elif damage == "garbage_toc":
        toc.write_bytes(os.urandom(200))
    with pytest.raises(IndexError_):
        ix = KeywordIndex(d)
        ix.search("corruption deploy")
        ix.ids()


def test_corruption_after_open_raises_index_error(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    _populated(d)
    ix = KeywordIndex(d)
    for seg in d.glob("*.seg"):
        seg.unlink()
    for toc in d.glob("*.toc"):
        toc.write_bytes(b"garbage")
    with pytest.raises(IndexError_):
        ix.search("corruption deploy")
        ix.search("document")


def test_lock_timeout(tmp_path: Path) -> None:
    d = tmp_path / "kw"
    with KeywordIndex(d, lock_timeout=0.3) as ix:
        from whoosh import index as windex

        held = windex.open_dir(str(d), indexname="MAIN").writer()
        try:
            with pytest.raises(LockTimeoutError):
                ix.upsert([block("l-1", "locked out")])
        finally:
            held.cancel()
        ix.upsert([block("l-1", "no longer locked out")])
        assert ids(ix.search("locked")) == ["l-1"]


def test_bulk_uses_multiprocess_writer_without_fallback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the bulk writer runs single-process by design")
    with (
        caplog.at_level("WARNING", logger="mdmem.index.keyword"),
        KeywordIndex(tmp_path / "kw") as ix,
    ):
        assert ix.add_many((block(f"b-{i}", f"bulk {i}") for i in range(600)), bulk=True) == 600
        assert len(ix) == 600
    assert "retrying with one process" not in caplog.text


def test_bulk_falls_back_when_processes_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import multiprocessing

    def refuse(self: object) -> None:
        raise OSError("fork refused by the sandbox")

    monkeypatch.setattr(multiprocessing.Process, "start", refuse)
    seen: list[int] = []
    gen = (block(f"f-{i}", f"fallback doc {i}") for i in range(700))
    with (
        caplog.at_level("WARNING", logger="mdmem.index.keyword"),
        KeywordIndex(tmp_path / "kw") as ix,
    ):
        assert ix.add_many(gen, bulk=True, progress=seen.append) == 700
        assert len(ix) == 700
        assert ix.ids() == {f"f-{i}" for i in range(700)}
        assert ids(ix.search("699")) == ["f-699"]
        # The lock was released: ordinary writes still work.
        ix.upsert([block("after", "after the fallback")])
        assert ids(ix.search("after")) == ["after"]
    assert seen[-1] == 700
    assert "retrying with one process" in caplog.text


@pytest.mark.parametrize("mode", ["add", "bulk", "upsert"])
def test_error_in_callers_blocks_propagates_and_commits_nothing(
    ix: KeywordIndex, mode: str
) -> None:
    def broken() -> Iterator[Block]:
        for i in range(250):
            yield block(f"g-{i}", f"generated {i}")
        raise ValueError("parser blew up")

    with pytest.raises(ValueError, match="parser blew up"):
        if mode == "upsert":
            ix.upsert(broken())
        else:
            ix.add_many(broken(), bulk=mode == "bulk")
    assert len(ix) == 5
    assert ix.search("generated") == []
    ix.upsert([block("g-ok", "generated after the failure")])  # lock released
    assert ids(ix.search("generated")) == ["g-ok"]


def _no_sub_writers_left() -> bool:
    import multiprocessing

    return not multiprocessing.active_children()


def test_stream_commits_what_was_fed_and_what_was_not(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw")
    index.add_many([block("m-0", "an older kestrel note")])
    stream = index.open_stream()
    if stream is None:
        pytest.skip("one core: no multiprocess stream")
    fed = [block(f"m-{i}", f"kestrel sighting number {i}") for i in range(1, 300)]
    stream.feed(fed)
    late = [block(f"m-{i}", f"kestrel sighting number {i}") for i in range(300, 320)]
    assert stream.finish(fed + late)
    assert not stream.active and _no_sub_writers_left()
    assert len(index) == 320
    assert set(ids(index.search("kestrel", limit=400))) == {f"m-{i}" for i in range(320)}


def test_stream_gives_up_when_a_fed_block_changed_or_vanished(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw")
    stream = index.open_stream()
    if stream is None:
        pytest.skip("one core: no multiprocess stream")
    others = [block(f"m-{i}", f"a grebe, number {i}") for i in range(3, 300)]  # sub-writers run
    stream.feed([block("m-1", "heron by the lake"), block("m-2", "heron in the reeds"), *others])
    # m-1's text changed after it was fed, m-2 is gone: nothing may be committed.
    assert not stream.finish([block("m-1", "heron by the river"), *others])
    assert len(index) == 0 and _no_sub_writers_left()
    index.add_new([block("m-1", "heron by the river")])  # the caller's ordinary path
    assert ids(index.search("heron river")) == ["m-1"]


def test_another_write_cancels_the_stream_instead_of_waiting_for_its_lock(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw", lock_timeout=1)
    stream = index.open_stream()
    if stream is None:
        pytest.skip("one core: no multiprocess stream")
    stream.feed([block(f"m-{i}", "osprey over the bay") for i in range(3, 300)])
    index.upsert([block("m-2", "osprey nest on the mast")])
    assert not stream.active and _no_sub_writers_left()
    assert not stream.finish([block(f"m-{i}", "osprey over the bay") for i in range(3, 300)])
    assert ids(index.search("osprey")) == ["m-2"]
    index.close()


_STREAMING_WRITER = """
import multiprocessing, sys, time
import mdmem.store.writer as writer_module
from mdmem import Vault
writer_module.STREAM_AFTER = 50
vault = Vault.init(sys.argv[1], agent="killed")
with vault.batch("import"):
    for i in range(400):
        vault.remember(f"Lapwing sighting {i}")
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_sub_writers_die_with_a_killed_writer(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    env = dict(os.environ, MDMEM_EMBEDDER_PROVIDER="none")
    proc = subprocess.Popen(
        [sys.executable, "-c", _STREAMING_WRITER, str(tmp_path / "vault")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    sub_writers = [int(pid) for pid in proc.stdout.readline().split()]
    assert sub_writers, "the batch did not stream"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def running(pid: int) -> bool:  # a zombie waiting to be reaped is not running
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(running(p) for p in sub_writers):
        time.sleep(0.05)
    left = [p for p in sub_writers if running(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
