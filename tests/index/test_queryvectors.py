"""Recent query vectors, kept in memory: the same vector again, without a forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from mdmem import Vault
from mdmem.index.queryvectors import MAX_TEXT_CHARS, QueryVectors


def vec(x: float) -> np.ndarray:
    return np.full(4, x, dtype=np.float32)


def test_least_recently_used_goes_first() -> None:
    cache = QueryVectors(capacity=2)
    cache.put("m", "a", vec(1))
    cache.put("m", "b", vec(2))
    assert cache.get("m", "a") is not None  # "a" is now the most recent
    cache.put("m", "c", vec(3))
    assert cache.get("m", "b") is None
    assert cache.get("m", "a")[0] == 1 and cache.get("m", "c")[0] == 3
    assert cache.get("other-model", "a") is None  # keyed by model too
    assert len(cache) == 2


def test_a_caller_cannot_change_what_the_next_one_gets() -> None:
    cache = QueryVectors()
    original = vec(1)
    cache.put("m", "q", original)
    original[0] = 9  # the caller's own array: not the kept one
    got = cache.get("m", "q")
    assert got is not None and got[0] == 1
    with pytest.raises(ValueError):
        got[0] = 5


def test_long_texts_and_a_zero_capacity_keep_nothing() -> None:
    cache = QueryVectors()
    cache.put("m", "x" * (MAX_TEXT_CHARS + 1), vec(1))
    assert len(cache) == 0
    off = QueryVectors(capacity=0)
    off.put("m", "q", vec(1))
    assert off.get("m", "q") is None


def test_a_repeated_recall_query_is_not_embedded_again(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("We deploy the shop service to fly.io in the ams region.")
    service = vault.admin.store.embedding
    embedder = service.embedder
    assert embedder is not None
    calls: list[str] = []
    embed_query = embedder.embed_query

    def counted(text: str) -> np.ndarray:
        calls.append(text)
        return embed_query(text)

    monkeypatch.setattr(embedder, "embed_query", counted)
    first = [h.id for h in vault.recall("where do we deploy the shop", k=3).items]
    again = [h.id for h in vault.recall("where do we deploy the shop", k=3).items]
    assert first == again and first
    assert len(calls) <= 1  # the first may have been embedded with the refresh
    assert np.array_equal(
        service.embed_query("where do we deploy the shop"),
        embed_query("where do we deploy the shop"),
    )
