"""VectorIndex and EmbeddingCache against real FAISS and SQLite in tmp_path."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from mdmem.errors import DimensionMismatchError, IndexError_, InvalidInputError
from mdmem.index.vector import INDEX_FILE, EmbeddingCache, VectorIndex

DIM = 32


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def ids_of(res: list[tuple[str, float]]) -> list[str]:
    return [r[0] for r in res]


def tolerance(vi: VectorIndex) -> float:
    """How far a stored vector's cosine may be from exact: 8-bit codes when approximate."""
    return 1e-2 if vi.is_approximate else 1e-5


@pytest.mark.parametrize("approximate", [False, True])
def test_upsert_search_delete(
    tmp_path: Path, rng: np.random.Generator, approximate: bool
) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m", approximate=approximate, background=False)
    x = unit(rng, 200)
    vi.upsert([f"b{i}" for i in range(200)], x)
    assert vi.is_approximate is approximate
    assert len(vi) == 200 and vi.ids() == {f"b{i}" for i in range(200)}
    res = vi.search(x[7], 5)
    assert res[0][0] == "b7"
    assert res[0][1] == pytest.approx(1.0, abs=tolerance(vi))
    scores = [s for _, s in res]
    assert scores == sorted(scores, reverse=True)
    # Scores are cosines even when the query is not normalised.
    assert vi.search(x[7] * 10, 1)[0][1] == pytest.approx(1.0, abs=tolerance(vi))

    vi.delete(["b7", "unknown"])
    assert "b7" not in ids_of(vi.search(x[7], 10))
    assert len(vi) == 199

    # Upsert moves an id to a new vector and drops the old one.
    vi.upsert(["b8"], x[9:10])
    top = vi.search(x[9], 2)
    assert set(ids_of(top)) == {"b8", "b9"}
    assert "b8" not in ids_of(vi.search(x[8], 5))
    assert len(vi) == 199


def test_search_k_larger_than_index_and_empty(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    assert vi.search(unit(rng, 1)[0], 5) == []
    vi.upsert(["a", "b"], unit(rng, 2))
    assert len(vi.search(unit(rng, 1)[0], 50)) == 2
    assert vi.search(unit(rng, 1)[0], 0) == []


def test_duplicate_ids_in_one_batch_last_wins(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    x = unit(rng, 2)
    vi.upsert(["a", "a"], x)
    assert len(vi) == 1
    assert vi.search(x[1], 1)[0] == ("a", pytest.approx(1.0, abs=1e-5))


@pytest.mark.parametrize("approximate", [False, True])
def test_save_and_reload(tmp_path: Path, rng: np.random.Generator, approximate: bool) -> None:
    x = unit(rng, 100)
    vi = VectorIndex(tmp_path, dim=DIM, model="m", approximate=approximate, background=False)
    vi.upsert([f"b{i}" for i in range(100)], x)
    vi.delete(["b3"])
    vi.save()
    again = VectorIndex(tmp_path, dim=DIM, model="m", approximate=approximate)
    assert again.is_approximate is approximate
    assert again.params == vi.params
    assert again.ids() == vi.ids()
    assert again.search(x[5], 3) == vi.search(x[5], 3)
    assert "b3" not in ids_of(again.search(x[3], 5))
    # New ids after reload do not collide with old ones.
    again.upsert(["new"], x[3:4])
    assert again.search(x[3], 1)[0][0] == "new"
    assert again.search(x[5], 1)[0][0] == "b5"


def test_atomic_save_leaves_no_temp_files(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert(["a"], unit(rng, 1))
    vi.save()
    vi.upsert(["b"], unit(rng, 1))
    vi.save()
    assert [p.name for p in tmp_path.iterdir()] == [INDEX_FILE]


def test_crash_before_replace_keeps_old_index(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = unit(rng, 3)
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert(["a", "b"], x[:2])
    vi.save()
    before = (tmp_path / INDEX_FILE).read_bytes()

    vi.upsert(["c"], x[2:])
    vi.delete(["a"])

    def crash(src: object, dst: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(IndexError_):
        vi.save()
    monkeypatch.undo()

    assert (tmp_path / INDEX_FILE).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [INDEX_FILE]
    old = VectorIndex(tmp_path, dim=DIM, model="m")
    assert old.ids() == {"a", "b"}
    # The in-memory index is untouched and saves fine once the disk recovers.
    vi.save()
    assert VectorIndex(tmp_path, dim=DIM, model="m").ids() == {"b", "c"}


def test_dimension_mismatch(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    with pytest.raises(DimensionMismatchError):
        vi.upsert(["a"], unit(rng, 1, dim=DIM + 1))
    with pytest.raises(DimensionMismatchError):
        vi.search(unit(rng, 1, dim=8)[0], 3)
    with pytest.raises(InvalidInputError):
        vi.upsert(["a", "b"], unit(rng, 1))
    with pytest.raises(InvalidInputError):
        vi.upsert(["a"], np.full((1, DIM), np.nan, dtype=np.float32))
    vi.upsert(["a"], unit(rng, 1))
    vi.save()
    # Same model, another size: an error, never a silent empty result.
    with pytest.raises(DimensionMismatchError):
        VectorIndex(tmp_path, dim=DIM * 2, model="m")


def test_model_change_marks_stale(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="old-model")
    vi.upsert(["a", "b"], unit(rng, 2))
    vi.save()
    # Another model, even of another size, is "re-embed", not an error.
    new = VectorIndex(tmp_path, dim=DIM * 2, model="new-model")
    assert new.stale_model is True
    assert new.stored_model == "old-model"
    assert len(new) == 0 and new.ids() == set()
    new.reset(DIM * 2, "new-model")
    assert new.stale_model is False
    new.upsert(["a"], unit(rng, 1, dim=DIM * 2))
    new.save()
    again = VectorIndex(tmp_path, dim=DIM * 2, model="new-model")
    assert not again.stale_model and again.ids() == {"a"}


def test_reset_to_new_dim(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert(["a"], unit(rng, 1))
    vi.reset(8, "small")
    assert (vi.dim, vi.model, len(vi)) == (8, "small", 0)
    vi.upsert(["a"], unit(rng, 1, dim=8))
    assert vi.search(unit(rng, 1, dim=8)[0], 1)[0][0] == "a"


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncate", "flip_byte", "empty", "bad_magic"],
)
def test_corrupt_file_raises_index_error(
    tmp_path: Path, rng: np.random.Generator, damage: str
) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert([f"b{i}" for i in range(50)], unit(rng, 50))
    vi.save()
    f = tmp_path / INDEX_FILE
    data = bytearray(f.read_bytes())
    if damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    elif damage == "truncate":
        data = data[: len(data) - 100]
    elif damage == "flip_byte":
        data[len(data) // 2] ^= 0x5A
    elif damage == "empty":
        data = bytearray()
    elif damage == "bad_magic":
        data[:8] = b"NOTMDMEM"
    f.write_bytes(bytes(data))
    with pytest.raises(IndexError_):
        VectorIndex(tmp_path, dim=DIM, model="m")


@pytest.mark.parametrize("approximate", [False, True])
def test_allowed_filter(tmp_path: Path, rng: np.random.Generator, approximate: bool) -> None:
    n = 3000
    x = unit(rng, n)
    vi = VectorIndex(tmp_path, dim=DIM, model="m", approximate=approximate, background=False)
    ids = [f"b{i}" for i in range(n)]
    vi.upsert(ids, x)
    q = x[0]
    exact = x @ q

    def truth(allowed: list[int], k: int) -> list[str]:
        order = sorted(allowed, key=lambda i: -exact[i])[:k]
        return [ids[i] for i in order]

    small = [5, 17, 900, 2999, 0]
    res = vi.search(q, 3, allowed=[ids[i] for i in small] + ["not-there"])
    assert ids_of(res) == truth(small, 3)
    assert res[0][1] == pytest.approx(1.0, abs=tolerance(vi))

    large = list(range(1, n, 2))  # half the index: the selector path
    res = vi.search(q, 10, allowed=[ids[i] for i in large])
    assert set(ids_of(res)) <= {ids[i] for i in large}
    got = set(ids_of(res))
    assert len(got & set(truth(large, 10))) >= 9

    assert vi.search(q, 5, allowed=[]) == []
    assert vi.search(q, 5, allowed=["nope"]) == []
    vi.delete([ids[5]])
    assert ids[5] not in ids_of(vi.search(q, 5, allowed=[ids[i] for i in small]))


def test_approximate_deletes_are_real(tmp_path: Path, rng: np.random.Generator) -> None:
    x = unit(rng, 1000)
    vi = VectorIndex(tmp_path, dim=DIM, model="m", approximate=True, background=False)
    ids = [f"b{i}" for i in range(1000)]
    vi.upsert(ids, x)
    vi.delete(ids[:150])
    assert vi.stored_vectors == 850 == len(vi)
    for i in range(150):
        assert ids[i] not in ids_of(vi.search(x[i], 3))
    vi.save()
    reloaded = VectorIndex(tmp_path, dim=DIM, model="m", approximate=True)
    assert len(reloaded) == 850 and ids[0] not in ids_of(reloaded.search(x[0], 3))
    assert reloaded.search(x[400], 1)[0][0] == ids[400]
    # Updates land in the trained index: the moved id is found at its new place.
    reloaded.upsert([ids[400]], x[0:1])
    assert reloaded.search(x[0], 1)[0][0] == ids[400]


def test_rebuild_switches_kind(tmp_path: Path, rng: np.random.Generator) -> None:
    x = unit(rng, 500)
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert([f"b{i}" for i in range(500)], x)
    assert not vi.is_approximate
    vi.rebuild(approximate=True)
    assert vi.is_approximate and len(vi) == 500
    assert vi.params is not None and vi.params.recall >= 0.985
    assert vi.search(x[42], 1)[0][0] == "b42"
    vi.rebuild()  # auto: 500 is far below the threshold
    assert not vi.is_approximate
    vi.save()
    forced = VectorIndex(tmp_path, dim=DIM, model="m", approximate=True, background=False)
    assert forced.is_approximate and forced.search(x[42], 1)[0][0] == "b42"


def test_the_kind_switches_at_the_threshold(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem.index import vector as vector_index

    monkeypatch.setattr(vector_index, "EXACT_MAX", 400)
    x = unit(rng, 1000)
    vi = VectorIndex(tmp_path, dim=DIM, model="m", background=False)
    vi.upsert([f"b{i}" for i in range(400)], x[:400])
    assert not vi.is_approximate  # at the threshold: still exact
    vi.upsert(["b400"], x[400:401])
    assert vi.is_approximate and len(vi) == 401
    # Back to exact only well below it (no flapping around the threshold).
    vi.delete([f"b{i}" for i in range(200)])
    assert vi.is_approximate
    vi.delete([f"b{i}" for i in range(200, 250)])
    assert not vi.is_approximate and len(vi) == 151
    # The exact index holds the vectors as the 8-bit codes gave them back.
    assert vi.search(x[300], 1)[0] == ("b300", pytest.approx(1.0, abs=1e-2))


def test_a_background_build_does_not_block_search_and_keeps_writes(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem.index import ann
    from mdmem.index import vector as vector_index

    monkeypatch.setattr(vector_index, "EXACT_MAX", 1000)
    monkeypatch.setattr(vector_index, "_BUILD_CHUNK", 100)
    x = unit(rng, 1500)
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    vi.upsert([f"b{i}" for i in range(1000)], x[:1000])
    # Hold the build between two chunks, to search and write while it runs.
    inside, release = threading.Event(), threading.Event()
    real_build = ann.build

    def slow_build(*args: object, **kwargs: object) -> object:
        chunks = args[4]

        def held() -> object:
            for n, chunk in enumerate(chunks):  # type: ignore[attr-defined]
                if n == 3:
                    inside.set()
                    assert release.wait(30)
                yield chunk

        return real_build(*args[:4], held(), **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ann, "build", slow_build)
    vi.upsert(["b1000"], x[1000:1001])  # crosses the threshold: the build starts
    assert inside.wait(30) and vi.building and not vi.is_approximate
    # Searches answer from the exact index meanwhile, writes go on too.
    assert vi.search(x[5], 1)[0] == ("b5", pytest.approx(1.0, abs=1e-5))
    vi.upsert([f"b{i}" for i in range(1001, 1200)], x[1001:1200])
    vi.delete(["b7", "b1100"])
    vi.upsert(["b8"], x[1300:1301])  # moves b8
    release.set()
    assert vi.wait_for_build(30)
    assert vi.is_approximate and len(vi) == 1198 == vi.stored_vectors
    assert vi.search(x[1150], 1)[0][0] == "b1150"
    assert vi.search(x[1300], 1)[0][0] == "b8"
    assert "b7" not in ids_of(vi.search(x[7], 5))
    assert "b1100" not in ids_of(vi.search(x[1100], 5))
    # The swap saved the new index: another process loads it approximate.
    assert VectorIndex(tmp_path, dim=DIM, model="m").is_approximate


def test_reload_if_changed(tmp_path: Path, rng: np.random.Generator) -> None:
    x = unit(rng, 2)
    a = VectorIndex(tmp_path, dim=DIM, model="m")
    b = VectorIndex(tmp_path, dim=DIM, model="m")
    assert not b.reload_if_changed()
    a.upsert(["one"], x[:1])
    a.save()
    assert b.reload_if_changed()
    assert b.ids() == {"one"}
    assert not b.reload_if_changed()


def test_thread_safe_concurrent_use(tmp_path: Path, rng: np.random.Generator) -> None:
    vi = VectorIndex(tmp_path, dim=DIM, model="m")
    x = unit(rng, 400)
    errors: list[BaseException] = []

    def writer(start: int) -> None:
        try:
            for i in range(start, start + 100):
                vi.upsert([f"b{i}"], x[i : i + 1])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def reader() -> None:
        try:
            for i in range(200):
                vi.search(x[i], 5)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(s,)) for s in (0, 100, 200, 300)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(vi) == 400


@pytest.mark.slow
def test_approximate_recall_vs_exact(tmp_path: Path) -> None:
    # Embedding-like random vectors: a random 24-d latent space projected to
    # 384-d plus noise. Sentence embeddings have low intrinsic dimension; an
    # isotropic Gaussian in 384-d has none (every point is almost equally far
    # from every other), so it would test nothing that recall ever sees.
    rng = np.random.default_rng(7)
    n, dim, latent, k = 20_000, 384, 24, 10
    proj = rng.standard_normal((latent, dim))

    def sample(m: int) -> np.ndarray:
        x = rng.standard_normal((m, latent)) @ proj + 0.3 * rng.standard_normal((m, dim))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    x, queries = sample(n), sample(200)
    ids = [f"b{i}" for i in range(n)]
    flat = VectorIndex(tmp_path / "flat", dim=dim, model="m", approximate=False)
    approx = VectorIndex(tmp_path / "ivf", dim=dim, model="m", approximate=True, background=False)
    flat.upsert(ids, x)
    approx.upsert(ids, x)
    assert approx.is_approximate and not flat.is_approximate
    hits = 0
    for q in queries:
        truth = set(ids_of(flat.search(q, k)))
        hits += len(truth & set(ids_of(approx.search(q, k))))
    assert hits / (k * len(queries)) >= 0.97


# -- embedding cache ---------------------------------------------------------


def test_cache_roundtrip(tmp_path: Path, rng: np.random.Generator) -> None:
    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    x = unit(rng, 3)
    cache.put_many("m", {"h1": x[0], "h2": x[1]})
    got = cache.get_many("m", ["h1", "h2", "missing"])
    assert set(got) == {"h1", "h2"}
    np.testing.assert_array_equal(got["h1"], x[0])
    assert got["h1"].dtype == np.float32
    assert len(cache) == 2
    cache.put_many("m", {"h1": x[2]})  # replace
    np.testing.assert_array_equal(cache.get_many("m", ["h1"])["h1"], x[2])
    assert len(cache) == 2
    cache.close()
    reopened = EmbeddingCache(tmp_path / "emb.sqlite")
    np.testing.assert_array_equal(reopened.get_many("m", ["h2"])["h2"], x[1])
    mode = sqlite3.connect(tmp_path / "emb.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode[0] == "wal"
    reopened.close()


def test_cache_models_are_separate(tmp_path: Path, rng: np.random.Generator) -> None:
    with EmbeddingCache(tmp_path / "emb.sqlite") as cache:
        cache.put_many("model-a", {"h": unit(rng, 1)[0]})
        cache.put_many("model-b", {"h": unit(rng, 1, dim=8)[0]})
        assert cache.get_many("model-a", ["h"])["h"].shape == (DIM,)
        assert cache.get_many("model-b", ["h"])["h"].shape == (8,)
        assert cache.get_many("model-c", ["h"]) == {}
        assert len(cache) == 2


def test_cache_many_hashes_and_empty(tmp_path: Path, rng: np.random.Generator) -> None:
    with EmbeddingCache(tmp_path / "emb.sqlite") as cache:
        x = unit(rng, 1200)
        cache.put_many("m", {f"h{i}": x[i] for i in range(1200)})
        got = cache.get_many("m", [f"h{i}" for i in range(1300)])  # > SQLite's param chunk
        assert len(got) == 1200
        np.testing.assert_array_equal(got["h1100"], x[1100])
        assert cache.get_many("m", []) == {}
        cache.put_many("m", {})


def test_cache_shared_between_connections(tmp_path: Path, rng: np.random.Generator) -> None:
    a = EmbeddingCache(tmp_path / "emb.sqlite")
    b = EmbeddingCache(tmp_path / "emb.sqlite")
    a.put_many("m", {"h": unit(rng, 1)[0]})
    assert set(b.get_many("m", ["h"])) == {"h"}
    a.close()
    b.close()


def test_cache_corrupt_file_is_set_aside_and_started_again(tmp_path: Path) -> None:
    # A derived file heals: the damaged copy is kept aside, the cache works empty.
    path = tmp_path / "emb.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    cache = EmbeddingCache(path)
    assert cache.recovered is not None and cache.problem is None
    assert cache.get_many("m", ["h"]) == {}
    cache.put_many("m", {"h": np.ones(4, dtype=np.float32)})
    assert set(cache.get_many("m", ["h"])) == {"h"}
    assert (tmp_path / "emb.sqlite.corrupt").read_bytes().startswith(b"this is not")
    cache.close()


def test_a_full_reindex_picks_the_index_kind_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem import Vault
    from mdmem.index import vector as vector_index

    vault = Vault.init(tmp_path / "v")  # embedder.approximate = auto
    for i in range(12):
        vault.remember(f"Fact number {i} about the harbour ferries")
    vectors = vault.admin.store.indexer.vectors
    assert vectors is not None and not vectors.is_approximate
    monkeypatch.setattr(vector_index, "EXACT_MAX", 10)
    vault.reindex(full=True)
    assert vectors.is_approximate and len(vectors) == 12
    assert vault.recall("harbour ferries number 7", mode="vector").items
    vault.close()
    reopened = Vault.open(tmp_path / "v")
    assert (
        reopened.admin.store.indexer.vectors is not None
        and reopened.admin.store.indexer.vectors.is_approximate
    )
    reopened.close()


def test_a_search_runs_on_one_omp_thread_and_restores_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    seen: list[int] = []
    index = VectorIndex(tmp_path / "vec", dim=4, model="m")
    index.upsert(["m-a", "m-b"], np.eye(4, dtype=np.float32)[:2])
    # The FAISS index a VectorIndex searches: a flat index wrapped in an id map.
    real_search = faiss.IndexIDMap2.search
    faiss.omp_set_num_threads(2)
    before = faiss.omp_get_max_threads()  # 1 where FAISS was built without OpenMP

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(faiss.omp_get_max_threads())
        return real_search(*args, **kwargs)

    monkeypatch.setattr(faiss.IndexIDMap2, "search", spy)
    assert [b for b, _ in index.search(np.eye(4, dtype=np.float32)[:1], 1)] == ["m-a"]
    assert seen == [1] and faiss.omp_get_max_threads() == before


def test_cache_of_the_first_layout_is_moved_over(tmp_path: Path, rng: np.random.Generator) -> None:
    # The first cache table was WITHOUT ROWID (a vector on an overflow page of
    # its own, 3x the disk): its rows are kept, in the new table.
    path = tmp_path / "emb.sqlite"
    x = unit(rng, 2)
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL,"
            " dim INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
        )
        db.executemany(
            "INSERT INTO embeddings VALUES (?, ?, ?, ?)",
            [("m", f"h{i}", DIM, x[i].tobytes()) for i in range(2)],
        )
    with EmbeddingCache(path) as cache:
        got = cache.get_many("m", ["h0", "h1"])
        np.testing.assert_array_equal(got["h1"], x[1])
        assert len(cache) == 2
    with sqlite3.connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "embeddings" not in tables


def test_nprobe_is_retuned_on_real_queries(
    tmp_path: Path, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mdmem.index import ann

    monkeypatch.setattr(ann, "RETUNE_FIRST", 20)
    x = unit(rng, 2000)
    vi = VectorIndex(tmp_path, dim=DIM, model="m", approximate=True, background=False)
    vi.upsert([f"b{i}" for i in range(2000)], x)
    vi.save()
    assert vi.params is not None and vi.params.queries == 0
    for q in unit(rng, 20):
        vi.search(q, 10)
    assert vi.wait_for_build(30)
    assert vi.params is not None and vi.params.queries == 20
    assert vi.params.recall >= ann.RECALL_TARGET
    # Saved: the next process starts with the measured nprobe.
    assert VectorIndex(tmp_path, dim=DIM, model="m", approximate=True).params == vi.params
