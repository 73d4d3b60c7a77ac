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

import collections
import contextlib
import json
import logging
import sqlite3
import struct
import threading
import time
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdmem.atomicfile import atomic_file
from mdmem.errors import DimensionMismatchError, IndexError_, InvalidInputError, Spelled
from mdmem.files.health import open_sqlite, quick_check
from mdmem.index import ann

__all__ = ["EXACT_MAX", "EmbeddingCache", "VectorIndex"]

INDEX_FILE = "vectors.mdvec"
_MAGIC = b"MDMEMVEC"
# 2: exact (flat) or IVF over 8-bit codes; ids stored packed. Format 1 (flat or
# HNSW) is rebuilt from the embedding cache.
_FORMAT = 2
# magic, format, meta length, index length, crc32 of meta+index
_HEADER = struct.Struct("<8sIQQI")
_IO_CHUNK = 1 << 20

#: Above this many vectors the index is approximate (see :mod:`mdmem.index.ann`).
EXACT_MAX = ann.EXACT_MAX
# With an ``allowed`` set this small, exact scoring of just those vectors beats
# steering an approximate search through a sparse filter.
_EXACT_ALLOWED_MAX = 4096
# A background build reads the old index this many vectors at a time, each
# read under the lock, so a recall waits for one chunk at most.
_BUILD_CHUNK = 8192
# Switching back to exact only well below EXACT_MAX, so a vault that hovers
# around it does not rebuild back and forth.
_EXACT_AGAIN = 0.5

log = logging.getLogger("mdmem")


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


class VectorIndex:
    """Block-id keyed vectors with cosine search.

    Loads ``directory/vectors.mdvec`` if present. A stored index built for
    another *model* is not loaded: the index starts empty, ``stale_model`` is
    True and ``stored_model`` names the old model, so the caller re-embeds
    everything (or calls :meth:`reset`). Same model but another *dim* raises
    :class:`DimensionMismatchError`. Nothing reaches disk until :meth:`save`.

    ``approximate``: True/False force the index kind; None (auto) keeps an
    exact flat index up to :data:`EXACT_MAX` vectors and an IVF index over
    8-bit codes above (:mod:`mdmem.index.ann`). An auto switch, and the
    re-training of an IVF index that outgrew its lists, run in a background
    thread: searches and writes go on meanwhile against the old index, and
    the writes are replayed on the new one before it takes over (then it is
    saved). ``background=False`` builds in the calling thread instead.
    Not safe for concurrent writers in several processes (the caller holds
    the vault lock); :meth:`reload_if_changed` lets readers catch up.
    """

    def __init__(
        self,
        directory: Path,
        *,
        dim: int,
        model: str,
        approximate: bool | None = None,
        background: bool = True,
    ) -> None:
        self._faiss = _faiss()
        if dim <= 0:
            raise InvalidInputError(f"vector dimension must be positive, not {dim}")
        self.directory = Path(directory)
        self.path = self.directory / INDEX_FILE
        self.dim = dim
        self.model = model
        self.stale_model = False
        self.stored_model: str | None = None
        self._wanted = approximate
        self._background = background
        self._lock = threading.RLock()
        self._stat: tuple[int, int, int] | None = None
        # A background build: its thread, and the writes made while it runs
        # (("add", ids, vectors) / ("remove", ids)), replayed before the swap.
        self._builder: threading.Thread | None = None
        self._replay: list[tuple[str, np.ndarray, np.ndarray | None]] | None = None
        self._build_error: str | None = None
        self._closed = False
        self._held = 0  # >0 inside bulk(): no automatic switch
        # The last real queries, to measure nprobe on (ann.retune).
        self._recent: collections.deque[np.ndarray] = collections.deque(
            maxlen=ann.RETUNE_QUERIES
        )
        self._since_tune = 0
        self._tuner: threading.Thread | None = None
        self._reset_state()
        if self.path.exists():
            self._load()
            if not self.stale_model:
                self._maybe_switch()

    # -- state ---------------------------------------------------------------

    def _reset_state(self) -> None:
        self.params: ann.AnnParams | None = None
        # Even a forced approximate index starts exact: there is nothing to
        # train on yet. The first vectors make it approximate (_maybe_switch).
        self._index: Any = self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(self.dim))
        self._next_id = 0
        self._fid_of: dict[str, int] = {}
        self._bid_of: dict[int, str] = {}

    @property
    def is_approximate(self) -> bool:
        return self.params is not None

    def reset(self, dim: int, model: str) -> None:
        """Empty the index for a new embedding model (and maybe a new size).

        An approximate index of the same model and size keeps its training
        (centroids and code ranges), so a rebuild that re-adds every vector
        streams them straight into it. The file on disk is replaced at the
        next :meth:`save`.
        """
        with self._lock:
            if dim <= 0:
                raise InvalidInputError(f"vector dimension must be positive, not {dim}")
            self._abandon_build()
            keep = self.params is not None and dim == self.dim and model == self.model
            self.dim = dim
            self.model = model
            self.stale_model = False
            self.stored_model = None
            if keep:
                self._index.reset()
                self._next_id = 0
                self._fid_of = {}
                self._bid_of = {}
            else:
                self._reset_state()

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
            fids = np.frombuffer(bytes.fromhex(meta["fids"]), dtype="<i8").tolist()
            bids = meta["bids"].split("\n") if meta["bids"] else []
            next_id = int(meta["next_id"])
            params = ann.AnnParams.from_json(meta["ann"]) if kind == "ivf" else None
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
        if index.d != self.dim or len(fids) != len(bids) or index.ntotal != len(fids):
            raise IndexError_(f"{where} id map does not match its vectors; rebuild it")
        # read_index already returns the concrete class; wrapping it again
        # with downcast_index would leave the owner to be freed.
        self._index = index
        self.params = params
        self._fid_of = dict(zip(bids, fids, strict=True))
        self._bid_of = dict(zip(fids, bids, strict=True))
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
            meta: dict[str, Any] = {
                "dim": self.dim,
                "model": self.model,
                "kind": "ivf" if self.params is not None else "flat",
                "next_id": self._next_id,
                # Ids as raw little-endian int64 and block ids one a line: a
                # JSON list of a million ints took a second to read back.
                "fids": np.asarray(fids, dtype="<i8").tobytes().hex(),
                "bids": "\n".join(self._bid_of[f] for f in fids),
            }
            if self.params is not None:
                meta["ann"] = self.params.to_json()
            meta_bytes = json.dumps(meta, separators=(",", ":")).encode("utf-8")
            try:
                with atomic_file(self.path) as f:
                    f.write(b"\0" * _HEADER.size)
                    f.write(meta_bytes)
                    sink = _CrcWriter(f, zlib.crc32(meta_bytes))
                    faiss.write_index(self._index, faiss.PyCallbackIOWriter(sink.write, _IO_CHUNK))
                    f.seek(0)
                    f.write(_HEADER.pack(_MAGIC, _FORMAT, len(meta_bytes), sink.size, sink.crc))
            except OSError as e:
                raise IndexError_(f"cannot save vector index {self.path}: {e}") from e
            self._stat = self._file_stat()

    def reload_if_changed(self) -> bool:
        """Reload from disk if another process saved since we loaded or saved.

        Returns True when a reload happened. Unsaved changes here are dropped.
        """
        with self._lock:
            stat = self._file_stat()
            if stat is None or stat == self._stat:
                return False
            self._abandon_build()
            self.stale_model = False
            self.stored_model = None
            self._reset_state()
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
        gone = np.asarray(fids, dtype=np.int64)
        self._index.remove_ids(gone)
        if self._replay is not None:
            self._replay.append(("remove", gone, None))

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
            if self._replay is not None:
                self._replay.append(("add", new, arr))
            for bid, fid in zip(ids, new.tolist(), strict=True):
                self._fid_of[bid] = fid
                self._bid_of[fid] = bid
            self._maybe_switch()

    def delete(self, ids: Iterable[str]) -> None:
        """Remove these block ids (unknown ids are ignored)."""
        with self._lock:
            fids = [self._fid_of.pop(bid) for bid in ids if bid in self._fid_of]
            self._drop(fids)
            self._maybe_switch()

    def _kind_wanted(self) -> bool:
        """Whether the index should be approximate at its present size."""
        if self._wanted is not None:
            return self._wanted
        live = len(self._bid_of)
        if self.params is not None:
            return live > EXACT_MAX * _EXACT_AGAIN
        return live > EXACT_MAX

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes to come (a rebuild, a large import): no kind switch or
        re-training until the end, where one runs (in this thread) if due."""
        with self._lock:
            self._held += 1
        try:
            yield
        finally:
            with self._lock:
                self._held -= 1
                if not self._held and self._due() is not None:
                    self.rebuild()

    def _due(self) -> bool | None:
        """The kind to rebuild as, when the size calls for the other kind or
        for more lists; None when the index is right as it is."""
        if not self._bid_of:
            return None
        approximate = self._kind_wanted()
        due = approximate != self.is_approximate or (
            self.params is not None and ann.retrain_due(self.params, len(self._bid_of))
        )
        return approximate if due else None

    def _maybe_switch(self) -> None:
        """Start a rebuild when the size calls for it (see :meth:`_due`)."""
        if self._held or self.building:
            return
        approximate = self._due()
        if approximate is None:
            return
        if self._background:
            self._start_build(approximate)
        else:
            self.rebuild(approximate=approximate)

    # -- building ------------------------------------------------------------

    @property
    def building(self) -> bool:
        """True while a background build runs (searches use the old index)."""
        builder = self._builder
        return builder is not None and builder.is_alive()

    def wait_for_build(self, timeout: float | None = None) -> bool:
        """Wait for a background build (and an nprobe re-tune); True when
        neither runs any more."""
        for thread in (self._builder, self._tuner):
            if thread is not None:
                thread.join(timeout)
        tuner = self._tuner
        return not self.building and not (tuner is not None and tuner.is_alive())

    def _abandon_build(self) -> None:
        # The builder finds _replay reset (or another list) and drops its work.
        self._replay = None
        self._builder = None

    def close(self) -> None:
        """Stop using the index: a background build still running is dropped
        (the next process that opens the index starts it again)."""
        with self._lock:
            self._closed = True
            self._abandon_build()

    def _read(self, fids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The stored vectors of those ``fids`` still present (call with the lock)."""
        present = np.asarray([f for f in fids if f in self._bid_of], dtype=np.int64)
        if not len(present):
            return np.empty((0, self.dim), dtype=np.float32), present
        vecs = self._index.reconstruct_batch(present)
        return np.ascontiguousarray(vecs, dtype=np.float32), present

    def _chunks(self, fids: list[int], locked: bool) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(fids), _BUILD_CHUNK):
            part = fids[start : start + _BUILD_CHUNK]
            if locked:
                yield self._read(part)
            else:
                with self._lock:
                    got = self._read(part)
                yield got

    def _sample(self, fids: list[int], locked: bool) -> np.ndarray:
        rng = np.random.default_rng(len(fids))
        size = min(len(fids), ann.nlist_for(len(fids)) * 80, 200_000)
        picks = sorted(rng.choice(len(fids), size=size, replace=False).tolist())
        wanted = [fids[i] for i in picks]
        parts = [vecs for vecs, _ids in self._chunks(wanted, locked)]
        return np.concatenate(parts) if parts else np.empty((0, self.dim), dtype=np.float32)

    def _build(self, approximate: bool, fids: list[int], *, locked: bool) -> Any:
        """A new FAISS index (and its parameters) holding the vectors of ``fids``."""
        faiss = self._faiss
        if not approximate or not fids:
            index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
            for vecs, ids in self._chunks(fids, locked):
                index.add_with_ids(vecs, ids)
            return index, None, None
        sample = self._sample(fids, locked)
        index, params, truth = ann.build(
            faiss, self.dim, len(fids), sample, self._chunks(fids, locked)
        )
        return index, params, truth

    def rebuild(self, *, approximate: bool | None = None) -> None:
        """Re-create the FAISS index from the live vectors, in this thread.

        ``approximate=None`` uses the constructor's choice, or when that was
        None too, the size (:data:`EXACT_MAX`). Call it after a full
        re-embed so a large vault gets the approximate index.
        """
        with self._lock:
            self._abandon_build()
            if approximate is None:
                approximate = self._kind_wanted()
            fids = list(self._bid_of)
            index, params, truth = self._build(approximate, fids, locked=True)
            if params is not None:
                params = ann.tune(self._faiss, index, params, truth)
            self._index = index
            self.params = params

    def _start_build(self, approximate: bool) -> None:
        if self._closed:
            return
        self._replay = []
        self._build_error = None
        builder = threading.Thread(
            target=self._build_in_background,
            args=(approximate, self._replay),
            name="mdmem-vector-build",
            daemon=True,
        )
        self._builder = builder
        builder.start()

    def _build_in_background(
        self, approximate: bool, replay: list[tuple[str, np.ndarray, np.ndarray | None]]
    ) -> None:
        started = time.monotonic()
        try:
            with self._lock:
                fids = list(self._bid_of)
            index, params, truth = self._build(approximate, fids, locked=False)
            with self._lock:
                if self._replay is not replay:
                    return  # reset, reloaded or closed meanwhile
                self._apply_replay(index, replay, truth)
                if params is not None:
                    params = ann.tune(self._faiss, index, params, truth)
                self._index = index
                self.params = params
                self._replay = None
                if not self._closed:
                    self.save()
            log.info(
                "vector index rebuilt as %s in %.1fs (%d vectors%s)",
                "approximate" if params else "exact",
                time.monotonic() - started,
                len(fids),
                f", nprobe {params.nprobe}, recall@10 {params.recall:.3f}" if params else "",
            )
        except Exception as exc:  # a failed build leaves the old index serving
            self._build_error = f"vector index rebuild failed: {exc!r}"
            log.warning("%s; the current index keeps serving", self._build_error)
            with self._lock:
                if self._replay is replay:
                    self._replay = None

    @staticmethod
    def _apply_replay(
        index: Any,
        replay: list[tuple[str, np.ndarray, np.ndarray | None]],
        truth: Any,
    ) -> None:
        """Writes made while the new index was built, in their order."""
        for op, fids, vecs in replay:
            if op == "remove":
                index.remove_ids(fids)
                if truth is not None:
                    truth.forget(fids.tolist())
            else:
                assert vecs is not None
                index.add_with_ids(vecs, fids)
                if truth is not None:
                    truth.add(vecs, fids)

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
            sel = None
            if allowed is not None:
                fids = [self._fid_of[b] for b in allowed if b in self._fid_of]
                if not fids:
                    return []
                if len(fids) <= _EXACT_ALLOWED_MAX and (
                    self.is_approximate or len(fids) * 8 < len(self._bid_of)
                ):
                    return self._exact(q, fids, k)
                sel = faiss.IDSelectorBatch(np.asarray(fids, dtype=np.int64))
                keep.append(sel)
                k = min(k, len(fids))
            k = min(k, len(self._bid_of))
            if self.params is not None:
                # A filter leaves fewer candidates per list: probe more of them.
                nprobe = self.params.nprobe * (2 if sel is not None else 1)
                params = faiss.SearchParametersIVF(sel=sel, nprobe=min(nprobe, self.params.nlist))
            elif sel is not None:
                params = faiss.SearchParameters(sel=sel)
            with _one_omp_thread(faiss):
                scores, labels = self._index.search(q, k, params=params)
            if self.params is not None and sel is None:
                self._note_query(q[0])
            out: list[tuple[str, float]] = []
            for fid, score in zip(labels[0].tolist(), scores[0].tolist(), strict=True):
                bid = self._bid_of.get(fid) if fid >= 0 else None
                if bid is not None:
                    out.append((bid, float(score)))
            return out

    def _note_query(self, q: np.ndarray) -> None:
        """Keep a real query; start a re-tune of nprobe when enough arrived."""
        self._recent.append(q.copy())
        self._since_tune += 1
        params = self.params
        assert params is not None
        due = self._since_tune >= (ann.RETUNE_FIRST if not params.queries else ann.RETUNE_EVERY)
        tuner = self._tuner
        if not due or self.building or (tuner is not None and tuner.is_alive()) or self._closed:
            return
        self._since_tune = 0
        self._tuner = threading.Thread(
            target=self._retune, args=(np.stack(self._recent),), name="mdmem-nprobe", daemon=True
        )
        self._tuner.start()

    def _retune(self, queries: np.ndarray) -> None:
        with self._lock:
            index, params = self._index, self.params
        if params is None:
            return
        try:
            tuned = ann.retune(self._faiss, index, params, queries, self._lock)
        except Exception as exc:  # the old nprobe keeps serving
            log.warning("vector index: nprobe not re-tuned (%r)", exc)
            return
        with self._lock:
            if self._index is not index or self._closed:
                return  # rebuilt or closed meanwhile
            self.params = tuned
            if self.path.exists():
                # Saved, so the next process starts with it (best effort).
                with contextlib.suppress(IndexError_):
                    self.save()
        log.info(
            "vector index: nprobe %d -> %d (recall@10 %.3f on %d queries)",
            params.nprobe,
            tuned.nprobe,
            tuned.recall,
            tuned.queries,
        )

    def _exact(self, q: np.ndarray, fids: list[int], k: int) -> list[tuple[str, float]]:
        vecs, present = self._read(fids)
        scores = vecs @ q[0]
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self._bid_of[int(present[i])], float(scores[i])) for i in order.tolist()]

    def vectors(self, ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored (normalised) vectors of those ids that are present
        (decoded from 8-bit codes in an approximate index)."""
        with self._lock:
            wanted = [b for b in ids if b in self._fid_of]
            vecs, _present = self._read([self._fid_of[b] for b in wanted])
            return {b: vecs[i] for i, b in enumerate(wanted)}

    def ids(self) -> set[str]:
        with self._lock:
            return set(self._fid_of)

    def __len__(self) -> int:
        return len(self._fid_of)

    @property
    def stored_vectors(self) -> int:
        """How many vectors the FAISS index holds (``len()``: deletions are real)."""
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
        # A rowid table: its leaves hold a 1.5 KB vector in the row itself.
        # The first version was WITHOUT ROWID, whose rows spill anything over
        # ~1 KB to an overflow page of its own: 4.6 KB on disk per MiniLM
        # vector instead of 1.6 KB. Its rows are moved over once.
        db.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL, vec BLOB NOT NULL)"
        )
        db.execute("CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, hash)")
        old = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'"
        ).fetchone()
        if old is not None:
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT OR IGNORE INTO vectors (model, hash, dim, vec)"
                " SELECT model, hash, dim, vec FROM embeddings"
            )
            db.execute("DROP TABLE embeddings")
            db.execute("COMMIT")
            db.execute("VACUUM")

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
                        "SELECT hash, dim, vec FROM vectors"
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
                        "INSERT OR REPLACE INTO vectors (model, hash, dim, vec)"
                        " VALUES (?, ?, ?, ?)",
                        rows,
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e

    def keep_only(self, content_hashes: Collection[str]) -> int:
        """Forget every vector whose hash is not in ``content_hashes``, leaving no trace.

        Returns how many left. A purge calls this: a key is the hash of a
        text, so a row kept for a purged text would confirm a guess of it;
        VACUUM and a truncated WAL take the deleted rows' pages with them.
        """
        keep = set(content_hashes)
        try:
            with self._lock:
                hashes = [h for (h,) in self._db.execute("SELECT DISTINCT hash FROM vectors")]
                gone = [h for h in hashes if h not in keep]
                for start in range(0, len(gone), 500):
                    chunk = gone[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    self._db.execute(f"DELETE FROM vectors WHERE hash IN ({marks})", chunk)
                self._db.execute("VACUUM")
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                return len(gone)
        except sqlite3.DatabaseError as e:
            raise IndexError_(f"embedding cache {self.path} is unusable ({e}); delete it") from e

    def __len__(self) -> int:
        try:
            with self._lock:
                (n,) = self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()
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
