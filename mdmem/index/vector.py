"""The semantic half of recall: a FAISS sidecar of block embeddings.

:class:`VectorIndex` keeps normalised vectors in an inner-product FAISS index
(so scores are cosines) and maps FAISS' int64 ids to block ids. Index, id map
and settings live in ONE file written atomically (temp file, fsync,
``os.replace``), so a crash can never pair a new index with an old id map.
:class:`EmbeddingCache` remembers embeddings by (model, content hash), so
moving, renaming or re-tagging a block never pays for a new embedding.

Both are derived caches in the state directory, outside the vault; damage
raises :class:`~mdmem.errors.IndexError_` so the caller can rebuild.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import struct
import tempfile
import threading
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdmem.errors import DimensionMismatchError, IndexError_, InvalidInputError, Spelled
from mdmem.files.health import open_sqlite, quick_check

__all__ = ["HNSW_THRESHOLD", "EmbeddingCache", "VectorIndex"]

INDEX_FILE = "vectors.mdvec"
_MAGIC = b"MDMEMVEC"
_FORMAT = 1
# magic, format, meta length, index length, crc32 of meta+index
_HEADER = struct.Struct("<8sIQQI")
_IO_CHUNK = 1 << 20

#: Above this many vectors a rebuild with ``hnsw=None`` switches to HNSW.
HNSW_THRESHOLD = 100_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 40
HNSW_EF_SEARCH = 96
# HNSW cannot remove vectors cheaply: deleted ones stay as tombstones that
# searches skip, until they exceed this share of the index and it is rebuilt.
TOMBSTONE_REBUILD_RATIO = 0.2
# With an ``allowed`` set this small, exact scoring of just those vectors beats
# steering a graph search through a sparse filter.
_EXACT_ALLOWED_MAX = 4096


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as e:  # pragma: no cover - a core dependency
        raise IndexError_("the vector index needs FAISS: pip install faiss-cpu") from e
    return faiss


@contextlib.contextmanager
def _one_omp_thread(faiss: Any) -> Iterator[None]:
    """Run one FAISS call on a single OpenMP thread.

    One query gains nothing from OpenMP's threads, and on a small machine
    their spin-waiting competes with the BLAS threads of the query
    embedding: recall p50 in a 10k vault on two cores went from ~28 to
    ~16 ms. The process-wide setting is restored afterwards, so bulk
    additions and a host application's own FAISS work keep their threads.
    """
    before = faiss.omp_get_max_threads()
    if before <= 1:
        yield
        return
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # a zero vector stays zero instead of becoming NaN
    return np.ascontiguousarray(v / norms, dtype=np.float32)


def _stream_crc(f: Any) -> tuple[int, int]:
    """(bytes, crc32) of the rest of ``f``, read in chunks."""
    crc = size = 0
    while chunk := f.read(_IO_CHUNK):
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
    return size, crc


class _CrcWriter:
    """A file sink that keeps the running length and crc32 of what it wrote."""

    def __init__(self, f: Any, crc: int) -> None:
        self._f = f
        self.crc = crc
        self.size = 0

    def write(self, data: bytes) -> int:
        self._f.write(data)
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return len(data)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform lets you open a dir
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class VectorIndex:
    """Block-id keyed vectors with cosine search.

    Loads ``directory/vectors.mdvec`` if present. A stored index built for
    another *model* is not loaded: the index starts empty, ``stale_model`` is
    True and ``stored_model`` names the old model, so the caller re-embeds
    everything (or calls :meth:`reset`). Same model but another *dim* raises
    :class:`DimensionMismatchError`. Nothing reaches disk until :meth:`save`.

    ``hnsw``: True/False force the index kind; None keeps what is stored, and
    :meth:`rebuild` then picks HNSW above :data:`HNSW_THRESHOLD` vectors.
    Not safe for concurrent writers in several processes (the caller holds
    the vault lock); :meth:`reload_if_changed` lets readers catch up.
    """

    def __init__(
        self,
        directory: Path,
        *,
        dim: int,
        model: str,
        hnsw: bool | None = None,
        ef_search: int = HNSW_EF_SEARCH,
    ) -> None:
        self._faiss = _faiss()
        if dim <= 0:
            raise InvalidInputError(f"vector dimension must be positive, not {dim}")
        self.directory = Path(directory)
        self.path = self.directory / INDEX_FILE
        self.dim = dim
        self.model = model
        self.ef_search = ef_search
        self.stale_model = False
        self.stored_model: str | None = None
        self._hnsw_wanted = hnsw
        self._lock = threading.RLock()
        self._stat: tuple[int, int, int] | None = None
        self._reset_state(hnsw=bool(hnsw))
        if self.path.exists():
            self._load()
            if hnsw is not None and hnsw != self.is_hnsw and not self.stale_model:
                self.rebuild(hnsw=hnsw)

    # -- state ---------------------------------------------------------------

    def _new_index(self, hnsw: bool) -> Any:
        faiss = self._faiss
        if hnsw:
            inner = faiss.IndexHNSWFlat(self.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            inner.hnsw.efSearch = self.ef_search
        else:
            inner = faiss.IndexFlatIP(self.dim)
        return faiss.IndexIDMap2(inner)

    def _reset_state(self, *, hnsw: bool) -> None:
        self.is_hnsw = hnsw
        self._index: Any = self._new_index(hnsw)
        self._next_id = 0
        self._fid_of: dict[str, int] = {}
        self._bid_of: dict[int, str] = {}
        self._tombstones: set[int] = set()

    def reset(self, dim: int, model: str) -> None:
        """Empty the index for a new embedding model (and maybe a new size).

        The file on disk is replaced at the next :meth:`save`.
        """
        with self._lock:
            if dim <= 0:
                raise InvalidInputError(f"vector dimension must be positive, not {dim}")
            self.dim = dim
            self.model = model
            self.stale_model = False
            self.stored_model = None
            self._reset_state(hnsw=bool(self._hnsw_wanted))

    # -- persistence ---------------------------------------------------------

    def _file_stat(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _load(self) -> None:
        # Streamed in chunks (checksum first, then FAISS reads from the file):
        # reading the whole file and deserialising it held two copies of
        # every vector at once, ~300 MB of peak at 100k MiniLM vectors.
        stat = self._file_stat()
        where = f"vector index {self.path}"
        try:
            with open(self.path, "rb") as f:
                head = f.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    raise IndexError_(f"{where} is truncated; rebuild it")
                magic, fmt, meta_len, index_len, crc = _HEADER.unpack(head)
                if magic != _MAGIC:
                    raise IndexError_(f"{where} is not an mdmem vector index; rebuild it")
                if fmt != _FORMAT:
                    raise IndexError_(
                        f"{where} has format {fmt}, this mdmem reads {_FORMAT}; rebuild it"
                    )
                if _stream_crc(f) != (meta_len + index_len, crc):
                    raise IndexError_(f"{where} is damaged (checksum); rebuild it")
                f.seek(_HEADER.size)
                meta_bytes = f.read(meta_len)
                self._load_body(f, meta_bytes, stat, where)
        except OSError as e:
            raise IndexError_(f"vector index {self.path} is unreadable: {e}") from e

    def _load_body(
        self, f: Any, meta_bytes: bytes, stat: tuple[int, int, int] | None, where: str
    ) -> None:
        faiss = self._faiss
        try:
            meta = json.loads(meta_bytes.decode("utf-8"))
            stored_dim = int(meta["dim"])
            stored_model = str(meta["model"])
            kind = str(meta["kind"])
            fids = [int(x) for x in meta["fids"]]
            bids = [str(x) for x in meta["bids"]]
            tombstones = {int(x) for x in meta.get("tombstones", [])}
            next_id = int(meta["next_id"])
        except (ValueError, KeyError, TypeError) as e:
            raise IndexError_(f"{where} has unreadable metadata; rebuild it") from e
        if stored_model != self.model:
            self.stale_model = True
            self.stored_model = stored_model
            self._stat = stat
            return
        if stored_dim != self.dim:
            raise DimensionMismatchError.naming(
                f"{where} holds {stored_dim}-d vectors for model {stored_model!r}, "
                f"but {self.dim}-d were configured; re-embed (",
                Spelled("vault.reindex(full=True)", "mdmem reindex --full"),
                ") or fix the config",
            )
        try:
            index = faiss.read_index(faiss.PyCallbackIOReader(f.read, _IO_CHUNK))
        except Exception as e:  # faiss raises RuntimeError with C++ text
            raise IndexError_(f"{where} could not be read by FAISS ({e}); rebuild it") from e
        if index.d != self.dim or len(fids) != len(bids):
            raise IndexError_(f"{where} is inconsistent; rebuild it")
        if index.ntotal != len(fids) + len(tombstones):
            raise IndexError_(f"{where} id map does not match its vectors; rebuild it")
        # read_index already returns the concrete class; wrapping it again
        # with downcast_index would leave the owner to be freed.
        self._index = index
        self.is_hnsw = kind == "hnsw"
        if self.is_hnsw:
            faiss.downcast_index(self._index.index).hnsw.efSearch = self.ef_search
        self._fid_of = dict(zip(bids, fids, strict=True))
        self._bid_of = dict(zip(fids, bids, strict=True))
        self._tombstones = tombstones
        self._next_id = next_id
        self._stat = stat

    def save(self) -> None:
        """Write the index atomically: temp file in the same directory, fsync,
        ``os.replace``. A crash at any point leaves the previous file whole.

        FAISS streams into the file (no in-memory copy of the index); the
        header with lengths and checksum is filled in last."""
        with self._lock:
            faiss = self._faiss
            fids = list(self._bid_of)
            meta = {
                "dim": self.dim,
                "model": self.model,
                "kind": "hnsw" if self.is_hnsw else "flat",
                "next_id": self._next_id,
                "fids": fids,
                "bids": [self._bid_of[f] for f in fids],
                "tombstones": sorted(self._tombstones),
            }
            meta_bytes = json.dumps(meta, separators=(",", ":")).encode("utf-8")
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                fd, tmp_name = tempfile.mkstemp(
                    prefix=f".{INDEX_FILE}.", suffix=".tmp", dir=self.directory
                )
            except OSError as e:
                raise IndexError_(f"cannot save vector index in {self.directory}: {e}") from e
            tmp = Path(tmp_name)
            try:
                with os.fdopen(fd, "w+b") as f:
                    f.write(b"\0" * _HEADER.size)
                    f.write(meta_bytes)
                    sink = _CrcWriter(f, zlib.crc32(meta_bytes))
                    faiss.write_index(self._index, faiss.PyCallbackIOWriter(sink.write, _IO_CHUNK))
                    f.seek(0)
                    f.write(_HEADER.pack(_MAGIC, _FORMAT, len(meta_bytes), sink.size, sink.crc))
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException as e:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                if isinstance(e, OSError):
                    raise IndexError_(f"cannot save vector index {self.path}: {e}") from e
                raise
            _fsync_dir(self.directory)
            self._stat = self._file_stat()

    def reload_if_changed(self) -> bool:
        """Reload from disk if another process saved since we loaded or saved.

        Returns True when a reload happened. Unsaved changes here are dropped.
        """
        with self._lock:
            stat = self._file_stat()
            if stat is None or stat == self._stat:
                return False
            self.stale_model = False
            self.stored_model = None
            self._reset_state(hnsw=bool(self._hnsw_wanted))
            self._load()
            return True

    # -- writing -------------------------------------------------------------

    def _check(self, vectors: np.ndarray, n: int | None = None) -> np.ndarray:
        arr = np.asarray(vectors)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise DimensionMismatchError(
                f"vectors of shape {tuple(np.shape(vectors))} offered to a {self.dim}-d "
                f"index (model {self.model!r})"
            )
        if n is not None and arr.shape[0] != n:
            raise InvalidInputError(f"{n} ids but {arr.shape[0]} vectors")
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError("vectors contain NaN or infinity")
        return _normalise(arr)

    def _drop(self, fids: list[int]) -> None:
        if not fids:
            return
        for fid in fids:
            del self._bid_of[fid]
        if self.is_hnsw:
            self._tombstones.update(fids)
        else:
            self._index.remove_ids(np.asarray(fids, dtype=np.int64))

    def upsert(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add or replace the vectors of these block ids (one row per id)."""
        with self._lock:
            ids = list(ids)
            arr = self._check(vectors, len(ids))
            if not ids:
                return
            # The last vector wins when an id repeats within the batch.
            last: dict[str, int] = {bid: i for i, bid in enumerate(ids)}
            if len(last) != len(ids):
                keep = sorted(last.values())
                ids = [ids[i] for i in keep]
                arr = arr[keep]
            old = [self._fid_of.pop(bid) for bid in ids if bid in self._fid_of]
            self._drop(old)
            new = np.arange(self._next_id, self._next_id + len(ids), dtype=np.int64)
            self._next_id += len(ids)
            self._index.add_with_ids(arr, new)
            for bid, fid in zip(ids, new.tolist(), strict=True):
                self._fid_of[bid] = fid
                self._bid_of[fid] = bid
            self._maybe_compact()

    def delete(self, ids: Iterable[str]) -> None:
        """Remove these block ids (unknown ids are ignored)."""
        with self._lock:
            fids = [self._fid_of.pop(bid) for bid in ids if bid in self._fid_of]
            self._drop(fids)
            self._maybe_compact()

    def _maybe_compact(self) -> None:
        total = self._index.ntotal
        if self._tombstones and len(self._tombstones) > TOMBSTONE_REBUILD_RATIO * total:
            self.rebuild(hnsw=self.is_hnsw)

    def _live_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        faiss = self._faiss
        total = self._index.ntotal
        if total == 0:
            return np.empty((0, self.dim), dtype=np.float32), np.empty(0, dtype=np.int64)
        all_fids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        vecs = self._index.index.reconstruct_n(0, total)
        mask = np.fromiter((f in self._bid_of for f in all_fids.tolist()), bool, len(all_fids))
        return np.ascontiguousarray(vecs[mask]), all_fids[mask]

    def rebuild(self, *, hnsw: bool | None = None) -> None:
        """Re-create the FAISS index from the live vectors, dropping tombstones.

        ``hnsw=None`` uses the constructor's choice, or when that was None
        too, HNSW above :data:`HNSW_THRESHOLD` vectors. Call it after a full
        re-embed so a large vault gets the graph index.
        """
        with self._lock:
            if hnsw is None:
                hnsw = self._hnsw_wanted
            if hnsw is None:
                hnsw = len(self._bid_of) > HNSW_THRESHOLD
            vecs, fids = self._live_vectors()
            index = self._new_index(hnsw)
            if len(fids):
                index.add_with_ids(vecs, fids)
            self._index = index
            self.is_hnsw = hnsw
            self._tombstones = set()

    # -- reading -------------------------------------------------------------

    def search(
        self,
        vector: np.ndarray,
        k: int,
        *,
        allowed: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """``(block id, cosine)`` pairs for the ``k`` nearest vectors, best first.

        ``allowed`` restricts the answer to those block ids (None: no
        restriction; empty: nothing).
        """
        with self._lock:
            q = self._check(vector)
            if q.shape[0] != 1:
                raise InvalidInputError("search takes one query vector")
            if k <= 0 or not self._bid_of:
                return []
            faiss = self._faiss
            params: Any = None
            keep: list[Any] = []  # selectors must outlive the search call
            if allowed is not None:
                fids = [self._fid_of[b] for b in allowed if b in self._fid_of]
                if not fids:
                    return []
                if len(fids) <= _EXACT_ALLOWED_MAX and (
                    self.is_hnsw or len(fids) * 8 < len(self._bid_of)
                ):
                    return self._exact(q, fids, k)
                sel = faiss.IDSelectorBatch(np.asarray(fids, dtype=np.int64))
                keep.append(sel)
                k = min(k, len(fids))
            elif self._tombstones:
                inner = faiss.IDSelectorBatch(np.asarray(sorted(self._tombstones), dtype=np.int64))
                sel = faiss.IDSelectorNot(inner)
                keep.extend((inner, sel))
            else:
                sel = None
            k = min(k, len(self._bid_of))
            if self.is_hnsw:
                params = faiss.SearchParametersHNSW(sel=sel, efSearch=max(self.ef_search, k))
            elif sel is not None:
                params = faiss.SearchParameters(sel=sel)
            with _one_omp_thread(faiss):
                scores, labels = self._index.search(q, k, params=params)
            out: list[tuple[str, float]] = []
            for fid, score in zip(labels[0].tolist(), scores[0].tolist(), strict=True):
                bid = self._bid_of.get(fid) if fid >= 0 else None
                if bid is not None:
                    out.append((bid, float(score)))
            return out

    def _exact(self, q: np.ndarray, fids: list[int], k: int) -> list[tuple[str, float]]:
        vecs = np.vstack([self._index.reconstruct(f) for f in fids]).astype(np.float32)
        scores = vecs @ q[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self._bid_of[fids[i]], float(scores[i])) for i in order.tolist()]

    def vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored (normalised) vectors of those ids that are present."""
        with self._lock:
            return {
                b: np.asarray(self._index.reconstruct(self._fid_of[b]), dtype=np.float32)
                for b in ids
                if b in self._fid_of
            }

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._fid_of)

    def __len__(self) -> int:
        return len(self._fid_of)

    @property
    def stored_vectors(self) -> int:
        """How many vectors the FAISS index holds: the live ones (``len()``)
        plus deleted ones an HNSW index keeps as tombstones until a rebuild."""
        return int(self._index.ntotal)

    def __contains__(self, block_id: object) -> bool:
        return block_id in self._fid_of


class EmbeddingCache:
    """Embeddings keyed by (model, content hash) in a SQLite file (WAL mode).

    Re-tagging, moving or renaming a block keeps its content hash, so the
    indexer finds its vector here instead of calling the embedder again.
    Safe to share between threads and processes.
    """

    def __init__(self, path: Path, *, timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        # A damaged file is set aside and started again, one that cannot be
        # written is kept in memory (``problem``): the cache only saves work.
        opened = open_sqlite(
            self.path, self._setup, what="embedding cache", timeout=timeout, isolation_level=None
        )
        self._db = opened.db
        self.problem = opened.problem
        self.recovered = opened.recovered

    @staticmethod
    def _setup(db: sqlite3.Connection) -> None:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings ("
            " model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL,"
            " vec BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
        )

    def check(self) -> str | None:
        """SQLite's own consistency check: None when fine, else the first complaint."""
        with self._lock:
            return quick_check(self._db)

    def get_many(self, model: str, content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of those hashes that are present, keyed by hash."""
        out: dict[str, np.ndarray] = {}
        hashes = list(dict.fromkeys(content_hashes))
        try:
            with self._lock:
                for start in range(0, len(hashes), 500):
                    chunk = hashes[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._db.execute(
                        "SELECT hash, dim, vec FROM embeddings"
                        f" WHERE model = ? AND hash IN ({marks})",
                        [model, *chunk],
                    ).fetchall()
                    for h, dim, blob in rows:
                        vec = np.frombuffer(blob, dtype=np.float32)
                        if vec.shape[0] == dim:
                            out[h] = vec.copy()
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e
        return out

    def put_many(self, model: str, items: Mapping[str, np.ndarray]) -> None:
        """Store vectors by content hash (replacing any cached for that model)."""
        rows = []
        for h, vec in items.items():
            arr = np.ascontiguousarray(vec, dtype=np.float32).reshape(-1)
            rows.append((model, h, int(arr.shape[0]), arr.tobytes()))
        if not rows:
            return
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings (model, hash, dim, vec)"
                        " VALUES (?, ?, ?, ?)",
                        rows,
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e

    def delete_model(self, model: str) -> int:
        """Forget every vector of ``model``; returns how many were removed."""
        try:
            with self._lock:
                cur = self._db.execute("DELETE FROM embeddings WHERE model = ?", (model,))
                return int(cur.rowcount)
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e

    def __len__(self) -> int:
        try:
            with self._lock:
                (n,) = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
