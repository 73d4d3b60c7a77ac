"""Recall answers while a part is missing, says ``degraded`` and why, and heals.

The embedder is a real local OpenAI-protocol server that is stopped (the
port refuses connections) and started again on the same port.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.errors import IndexError_
from mdmem.index.keyword import KeywordIndex
from mdmem.testing import ScriptedOpenAIServer


def ids(result: Any) -> list[str]:
    return [h.id for h in result.items]


def broken(*args: Any, **kwargs: Any) -> None:
    raise IndexError_("keyword index at /state/keyword is unreadable (damaged segment)")


def no_space(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def embed_server() -> Any:
    srv = ScriptedOpenAIServer(embed_dim=8).start()
    yield srv
    srv.stop()


def remote_vault(tmp_path: Path, srv: ScriptedOpenAIServer) -> Vault:
    # The endpoint comes from the caller (trusted), not from the vault's toml.
    embedder = {"provider": "openai", "base_url": srv.base_url, "model": "e", "dim": 8}
    return Vault.init(tmp_path / "vault", agent="a", embedder=embedder)


def test_embedder_down_degrades_to_keywords_and_writes_go_on(
    tmp_path: Path, embed_server: ScriptedOpenAIServer
) -> None:
    vault = remote_vault(tmp_path, embed_server)
    first = vault.remember("The ferry leaves the harbour at noon")
    embed_server.stop()  # connection refused from now on

    result = vault.recall("ferry harbour")
    assert ids(result) == [first.id]
    assert result.degraded and "embedder unavailable" in (result.degraded_reason or "")
    started = time.monotonic()
    second = vault.remember("The lighthouse keeper feeds the gulls")
    assert time.monotonic() - started < 5  # the failed endpoint is not asked again and again
    assert vault.get(second.id).text == second.text
    assert ids(vault.recall("lighthouse gulls")) == [second.id]
    status = vault.status().index
    assert not status["fresh"] and status["missing_vectors"] >= 1
    assert any("embedder unavailable" in p for p in status["problems"])


def test_vectors_are_filled_in_once_the_embedder_answers_again(
    tmp_path: Path, embed_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = remote_vault(tmp_path, embed_server)
    vault.remember("The ferry leaves the harbour at noon")
    embed_server.stop()
    written = vault.remember("The lighthouse keeper feeds the gulls")
    assert vault.recall("lighthouse gulls").degraded

    embed_server.start()  # same port
    monkeypatch.setattr("mdmem.files.health.RETRY_SECONDS", 0.0)  # no waiting out the rest period
    result = vault.recall("lighthouse gulls")
    assert not result.degraded and result.degraded_reason is None
    assert written.id in ids(result)
    stats = vault.admin.store.indexer.stats()
    assert stats.vectors == stats.blocks and stats.missing_vectors == 0
    assert written.id in ids(vault.recall("lighthouse gulls", mode="vector"))
    assert vault.status().index["fresh"]


def test_an_embedder_down_at_open_does_not_stop_the_vault(
    tmp_path: Path, embed_server: ScriptedOpenAIServer
) -> None:
    vault = remote_vault(tmp_path, embed_server)
    m = vault.remember("Cormorants dry their wings in the sun")
    vault.close()
    embed_server.stop()
    url = f"http://127.0.0.1:{embed_server.port}/v1"  # refuses connections now
    # No dimension configured: opening the vectors would ask the server.
    reopened = Vault.open(
        vault.root, embedder={"provider": "openai", "base_url": url, "model": "e"}
    )
    result = reopened.recall("cormorants wings")
    assert ids(result) == [m.id] and result.degraded
    assert reopened.remember("Terns migrate very far").was_new


def test_an_unreadable_keyword_index_falls_back_to_vectors(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = vault.remember("Octopuses have three hearts")
    monkeypatch.setattr(KeywordIndex, "search", broken)
    result = vault.recall("octopuses three hearts")
    assert ids(result)[:1] == [m.id]
    assert result.degraded and "keyword index unusable" in (result.degraded_reason or "")
    assert all(h.scores.get("keyword") is None for h in result.items)


def test_without_keyword_index_or_vectors_recall_scans_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "none")
    vault = Vault.init(tmp_path / "vault", agent="a")
    m = vault.remember("Octopuses have three hearts")
    vault.remember("Starfish can regrow their arms")
    monkeypatch.setattr(KeywordIndex, "search", broken)
    result = vault.recall("how many hearts do octopuses have")
    assert ids(result)[:1] == [m.id]
    assert result.degraded and "scanning" in (result.degraded_reason or "")
    assert ids(vault.recall("octopus hearts", mode="keyword"))[:1] == [m.id]


def test_a_corrupt_usefulness_file_does_not_fail_recall(vault: Vault) -> None:
    m = vault.remember("Sloths move slowly to save energy")
    vault.recall("sloths")
    vault.close()
    useful = vault.admin.state_dir / "usefulness.sqlite"
    useful.write_bytes(os.urandom(8192))
    for side in ("-wal", "-shm"):
        Path(f"{useful}{side}").unlink(missing_ok=True)

    fresh = Vault.open(vault.root, recall={"trust_weight": 0.2})
    assert ids(fresh.recall("sloths slowly")) == [m.id]
    assert fresh.usefulness.feedback(m.id, helpful=True).helpful == 1
    assert fresh.usefulness.get(m.id).helpful == 1


def test_a_usefulness_file_deleted_under_an_open_vault(vault: Vault) -> None:
    m = vault.remember("Sloths move slowly to save energy")
    vault.recall("sloths")
    vault.usefulness.feedback(m.id, helpful=True)
    for path in vault.admin.state_dir.glob("usefulness.sqlite*"):
        path.unlink()
    assert ids(vault.recall("sloths slowly")) == [m.id]
    assert vault.usefulness.feedback(m.id, helpful=True).helpful == 1  # a new file, counted again
    assert (vault.admin.state_dir / "usefulness.sqlite").exists()


def test_recall_and_remember_after_the_state_dir_is_deleted(vault: Vault) -> None:
    m = vault.remember("Penguins huddle to keep warm")
    vault.recall("penguins")
    shutil.rmtree(vault.admin.state_dir)
    result = vault.recall("penguins huddle warm")
    assert ids(result) == [m.id] and not result.degraded
    new = vault.remember("Emperor penguins breed in winter")
    assert new.id in ids(vault.recall("emperor penguins breed winter"))


def test_time_travel_on_a_full_disk_scans_the_old_files(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = vault.remember("The office moved to Leeds")
    sha = vault.git.head()
    vault.forget(old.id)
    monkeypatch.setattr(KeywordIndex, "create", no_space)
    result = vault.recall("office Leeds", as_of=sha)
    assert ids(result) == [old.id] and result.degraded
    assert "snapshot not built" in (result.degraded_reason or "")
    assert not any((vault.admin.state_dir / "asof").glob("*/keyword"))


def test_time_travel_with_the_embedder_down_is_keyword_only(
    tmp_path: Path, embed_server: ScriptedOpenAIServer
) -> None:
    vault = remote_vault(tmp_path, embed_server)
    old = vault.remember("The office moved to Leeds")
    sha = vault.git.head()
    vault.forget(old.id)
    embed_server.stop()
    result = vault.recall("office Leeds", as_of=sha)
    assert ids(result) == [old.id] and result.degraded
    assert "Connection error" in (result.degraded_reason or "")
