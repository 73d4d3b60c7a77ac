"""The approximate half of the vector index: an IVF index over 8-bit codes.

Below :data:`EXACT_MAX` vectors the vector index is exact (a flat scan,
~0.14 µs a vector on one core: 7 ms at 50k). Above it, a flat scan grows
linearly (14 ms at 100k, 140 ms at 1M) and holds every vector as float32
(1.5 GB at 1M MiniLM vectors), so the index becomes an inverted file
(``IndexIVFScalarQuantizer``): vectors are clustered around ``nlist``
centroids, stored as 8-bit codes (a quarter of the memory: 384 MB at 1M),
and a query scans only the ``nprobe`` lists nearest to it.

Chosen by measurement on embedding-like vectors (``bench/scale.py``, synthetic
MiniLM-calibrated vectors at 100k, recall@10 against the exact flat scan):

* IVF-SQ8, nlist 1,264: nprobe 64 0.957 in 1.0 ms, nprobe 128 0.981 in 1.2 ms;
* HNSW-SQ8 M=32: efSearch 128 0.912 in 0.75 ms, 256 0.969 in 1.2 ms, and a
  build three times slower (32 s against 6 s) that cannot delete a vector;
* HNSW-Flat M=32 (the index before): 0.974 at efSearch 256, 1.5 GB at 1M;
* the 8-bit codes alone (a flat scan of them) cap recall@10 at 0.99.

``nprobe`` is not a constant: it is measured. The index keeps the last
real query vectors it was asked (:data:`RETUNE_QUERIES`); once it has seen
enough, :func:`retune` (in the background) picks the smallest ``nprobe``
whose recall@10 against an exhaustive scan reaches :data:`RECALL_TARGET`,
and does so again every :data:`RETUNE_EVERY` queries. Before that,
:func:`build` measures probe queries made from stored vectors while it
streams them in, and, since those are easier than real queries, probes at
least an eighth of the lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "EXACT_MAX",
    "RECALL_TARGET",
    "AnnParams",
    "build",
    "nlist_for",
    "retrain_due",
]

#: Up to this many vectors the index is an exact flat scan.
EXACT_MAX = 50_000
#: recall@10 against the exact answer that the tuned nprobe must reach.
RECALL_TARGET = 0.985
# An index trained on n vectors is re-trained (in the background) past this
# multiple of n: its lists grow long and a query scans too much.
RETRAIN_GROWTH = 4.0
#: Real queries kept for tuning, and how many must arrive before a (re)tune.
RETUNE_QUERIES = 256
RETUNE_FIRST = 64
RETUNE_EVERY = 4096
_NPROBES = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
_PROBE_QUERIES = 96
_PROBE_K = 10
# The cosine between a real query and its best match (MiniLM, measured in
# bench/scale.py's calibration): probe queries are moved that far from a vector.
_PROBE_COSINE = 0.55
_TRAIN_PER_LIST = 40  # k-means wants ~40 points per centroid
_TRAIN_MAX = 200_000


@dataclass(frozen=True)
class AnnParams:
    """How an approximate index was built, kept in the index file's metadata."""

    nlist: int
    nprobe: int
    trained_on: int  # vectors in the index when it was trained
    recall: float  # measured recall@10 at ``nprobe`` (against the exact answer)
    queries: int = 0  # real queries it was tuned on (0: probe queries, see tune)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnnParams:
        return cls(
            nlist=int(data["nlist"]),
            nprobe=int(data["nprobe"]),
            trained_on=int(data["trained_on"]),
            recall=float(data["recall"]),
            queries=int(data.get("queries", 0)),
        )


def nlist_for(n: int) -> int:
    """Lists for ``n`` vectors: ~4·√n (a power of two), with enough points to train."""
    if n <= 0:
        return 1
    want = 2 ** round(math.log2(max(1.0, 4 * math.sqrt(n))))
    return max(1, min(want, 65_536, n // _TRAIN_PER_LIST or 1))


def retrain_due(params: AnnParams, live: int) -> bool:
    return live > RETRAIN_GROWTH * max(params.trained_on, 1)


def new_ivf(faiss: Any, dim: int, nlist: int) -> Any:
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.own_fields = True
    quantizer.this.disown()  # the IVF index frees it
    # Ten k-means rounds instead of 25: measured at 60k vectors, recall@10 of
    # real queries the same (0.971 at nprobe 64, 0.985 at 128) in half the
    # training time (42 s against 86 s on two loaded cores).
    index.cp.niter = 10
    # Ids map to their list entry so vectors can be read back and deleted.
    index.set_direct_map_type(faiss.DirectMap.Hashtable)
    return index


def _probe_queries(sample: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Stored vectors moved to :data:`_PROBE_COSINE` of themselves, in random directions."""
    picks = sample[rng.choice(len(sample), size=min(_PROBE_QUERIES, len(sample)), replace=False)]
    noise = rng.standard_normal(picks.shape).astype(np.float32)
    # Remove the part along the vector, so the angle is exactly the one wanted.
    noise -= (noise * picks).sum(axis=1, keepdims=True) * picks
    noise /= np.linalg.norm(noise, axis=1, keepdims=True) + 1e-12
    sine = math.sqrt(1 - _PROBE_COSINE**2)
    return np.ascontiguousarray(_PROBE_COSINE * picks + sine * noise, dtype=np.float32)


class _RunningTop:
    """The exact top k of some queries over vectors that arrive in chunks."""

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries = queries
        self.k = k
        self.scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        self.ids = np.full((len(queries), k), -1, dtype=np.int64)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        if not len(ids):
            return
        scores = self.queries @ vectors.T
        both = np.concatenate([self.scores, scores], axis=1)
        both_ids = np.concatenate([self.ids, np.broadcast_to(ids, scores.shape)], axis=1)
        top = np.argpartition(-both, self.k - 1, axis=1)[:, : self.k]
        self.scores = np.take_along_axis(both, top, axis=1)
        self.ids = np.take_along_axis(both_ids, top, axis=1)

    def forget(self, ids: Iterable[int]) -> None:
        gone = np.isin(self.ids, np.fromiter(ids, dtype=np.int64))
        self.scores[gone] = -np.inf
        self.ids[gone] = -1


def build(
    faiss: Any,
    dim: int,
    total: int,
    sample: np.ndarray,
    chunks: Iterable[tuple[np.ndarray, np.ndarray]],
    *,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> tuple[Any, AnnParams, _RunningTop]:
    """Train an IVF index on ``sample``, stream ``chunks`` of (vectors, ids) into it
    and measure its nprobe (see the module doc).

    Returns the index, its parameters and the probe queries' exact answer,
    which the caller keeps in step (:meth:`_RunningTop.add` / ``forget``)
    while it replays writes that arrived during a background build, then
    passes to :func:`tune`.
    """
    rng = np.random.default_rng(seed)
    nlist = nlist_for(total)
    index = new_ivf(faiss, dim, nlist)
    train = sample
    if len(train) > min(_TRAIN_MAX, nlist * _TRAIN_PER_LIST * 2):
        keep = rng.choice(len(train), size=min(_TRAIN_MAX, nlist * _TRAIN_PER_LIST * 2))
        train = train[np.sort(keep)]
    index.train(np.ascontiguousarray(train, dtype=np.float32))
    truth = _RunningTop(_probe_queries(sample, rng), _PROBE_K)
    added = 0
    for vectors, ids in chunks:
        if len(ids):
            index.add_with_ids(vectors, ids)
            truth.add(vectors, ids)
            added += len(ids)
            if progress is not None:
                progress(added)
    return index, AnnParams(nlist, 1, max(total, added, 1), 0.0), truth


def _smallest_nprobe(
    faiss: Any, index: Any, nlist: int, queries: np.ndarray, wanted: np.ndarray
) -> tuple[int, float]:
    """(nprobe, recall@k) of the smallest nprobe that finds ``wanted`` well enough."""
    valid = wanted >= 0
    best = (nlist, 0.0)
    for nprobe in [*(n for n in _NPROBES if n < nlist), nlist]:
        search = faiss.SearchParametersIVF(nprobe=nprobe)
        _scores, got = index.search(queries, wanted.shape[1], params=search)
        hits = sum(
            len(set(g.tolist()) & set(w[v].tolist()))
            for g, w, v in zip(got, wanted, valid, strict=True)
        )
        best = (nprobe, hits / max(1, int(valid.sum())))
        if best[1] >= RECALL_TARGET:
            break
    return best


def tune(faiss: Any, index: Any, params: AnnParams, truth: _RunningTop) -> AnnParams:
    """nprobe from the probe queries, before any real query was seen.

    Probe queries made from stored vectors are easier than real ones (on the
    bench's vectors they reach recall 0.99 at nprobe 4 where real queries
    need 128 of 1,024 lists), so until :func:`retune` measured real queries
    the index probes at least an eighth of its lists.
    """
    if not (truth.ids >= 0).any():
        return AnnParams(params.nlist, max(1, params.nlist // 8), params.trained_on, 1.0)
    nprobe, recall = _smallest_nprobe(faiss, index, params.nlist, truth.queries, truth.ids)
    nprobe = max(nprobe, min(params.nlist, max(1, params.nlist // 8)))
    return AnnParams(params.nlist, nprobe, params.trained_on, round(recall, 4))


def retune(
    faiss: Any, index: Any, params: AnnParams, queries: np.ndarray, locked: Any
) -> AnnParams:
    """nprobe measured on real queries (the last ones searched): the smallest
    whose recall@10 against an exhaustive scan of the same codes reaches the
    target. ``locked`` is a context manager held around each FAISS call."""
    with locked:
        _scores, wanted = index.search(
            queries, _PROBE_K, params=faiss.SearchParametersIVF(nprobe=params.nlist)
        )

    class _Locked:
        def search(self, q: np.ndarray, k: int, params: Any) -> Any:
            with locked:
                return index.search(q, k, params=params)

    nprobe, recall = _smallest_nprobe(faiss, _Locked(), params.nlist, queries, wanted)
    return AnnParams(params.nlist, nprobe, params.trained_on, round(recall, 4), len(queries))
