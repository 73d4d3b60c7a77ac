"""A cross-encoder re-ranker, read from a directory the user names (optional).

The offline default ranks with MiniLM and the fitted feature re-ranker; a
model that reads the query and a memory *together* judges "does this answer
it" better, and a user who has one can plug it in::

    # mdmem.toml or the user's config (both settings are sensitive: a tracked
    # file can't set them alone, since a model folder can carry code)
    [recall]
    reranker = "cross-encoder"
    reranker_model = "/home/me/models/ms-marco-MiniLM-L-6-v2"
    reranker_top = 20

The folder is read as it is; nothing is ever downloaded:

* ``model.onnx`` and ``tokenizer.json``: run by ``onnxruntime`` (the optional
  ``onnx`` extra: ``pip install 'mdmem[onnx]'``) with the ``tokenizers``
  package mdmem already uses; the model's inputs are fed by name
  (``input_ids``, ``attention_mask``, ``token_type_ids`` when it has them),
  and a memory's score is its last logit (one logit for MS MARCO-style
  models; the "relevant" class of a two-class one);
* otherwise a sentence-transformers ``CrossEncoder`` folder (``config.json``
  and weights; the ``st`` extra), loaded with ``local_files_only``.

It is registered as the built-in ``cross-encoder`` provider of the
``mdmem.rerankers`` entry point group (:mod:`mdmem.providers.registry`): like
any reranker it is an object with ``rerank(query, texts) -> scores``, and
:mod:`mdmem.recall.model_rerank` puts recall's top hits in its order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mdmem.config import Settings
from mdmem.errors import ConfigError

__all__ = ["MAX_TOKENS", "CrossEncoderReranker", "cross_encoder_provider"]

MAX_TOKENS = 512  # query and memory together, truncated (BERT-size models)
_BATCH = 16


class _Backend(Protocol):
    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class _Onnx:
    """``model.onnx`` + ``tokenizer.json``, run by onnxruntime on the CPU."""

    def __init__(self, folder: Path) -> None:
        try:
            import onnxruntime
        except ImportError:
            raise ConfigError(
                f"{folder} holds an ONNX model: install onnxruntime (pip install 'mdmem[onnx]')"
            ) from None
        from tokenizers import Tokenizer

        tokenizer_file = folder / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise ConfigError(f"{folder} has model.onnx but no tokenizer.json beside it")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._session: Any = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), providers=["CPUExecutionProvider"]
        )
        self._inputs = [i.name for i in self._session.get_inputs()]

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(pairs), _BATCH):
            chunk = pairs[start : start + _BATCH]
            encoded = self._tokenizer.encode_batch(list(chunk))
            arrays = {
                "input_ids": [e.ids for e in encoded],
                "attention_mask": [e.attention_mask for e in encoded],
                "token_type_ids": [e.type_ids for e in encoded],
            }
            feed = {name: np.asarray(arrays[name], dtype=np.int64) for name in self._inputs}
            logits = np.asarray(self._session.run(None, feed)[0], dtype=np.float64)
            out.extend(float(x) for x in logits.reshape(len(chunk), -1)[:, -1])
        return out


class _SentenceTransformers:
    """A sentence-transformers ``CrossEncoder`` folder (the ``st`` extra)."""

    def __init__(self, folder: Path) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ConfigError(
                f"{folder} is not an ONNX model (no model.onnx) and sentence-transformers "
                "is not installed (pip install 'mdmem[st]')"
            ) from None
        try:
            self._model = CrossEncoder(str(folder), max_length=MAX_TOKENS, local_files_only=True)
        except Exception as exc:  # a third-party loader: any failure is a config problem
            raise ConfigError(f"sentence-transformers could not load {folder}: {exc}") from None

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        scores = np.asarray(self._model.predict(list(pairs), batch_size=_BATCH), dtype=np.float64)
        return [float(x) for x in scores.reshape(len(pairs), -1)[:, -1]]


class CrossEncoderReranker:
    """``rerank(query, texts)``: one relevance score per text, higher is better."""

    def __init__(self, *, settings: Settings) -> None:
        name = settings.recall.reranker_model.strip()
        if not name:
            raise ConfigError(
                "the cross-encoder reranker needs [recall] reranker_model: a folder "
                "holding the model (model.onnx + tokenizer.json, or a sentence-transformers "
                "CrossEncoder)"
            )
        folder = Path(name).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"[recall] reranker_model {name!r} is not a folder")
        self.folder = folder
        self._backend: _Backend = (
            _Onnx(folder) if (folder / "model.onnx").is_file() else _SentenceTransformers(folder)
        )

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        scores = self._backend.score([(query, t) for t in texts])
        if len(scores) != len(texts) or not all(math.isfinite(s) for s in scores):
            raise ConfigError(f"the cross-encoder in {self.folder} gave unusable scores")
        return scores


def cross_encoder_provider(*, settings: Settings) -> CrossEncoderReranker:
    """The ``cross-encoder`` entry point of ``mdmem.rerankers``."""
    return CrossEncoderReranker(settings=settings)
