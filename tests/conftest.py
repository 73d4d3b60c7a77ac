"""Shared fixtures: every test gets its own state dir and a clean environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel

HUMAN_ENV = {
    "GIT_AUTHOR_NAME": "Ada Human",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Human",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the user's cache dir, vault, LLM or embedder settings."""
    for key in list(os.environ):
        if key.startswith(("MDMEM_", "OPENAI_")):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MDMEM_STATE_DIR", str(tmp_path / "_state"))
    # The user's own config (config.toml, trusted vaults) lives here, not in ~.
    monkeypatch.setenv("MDMEM_CONFIG_HOME", str(tmp_path / "_config"))
    # Fast deterministic embeddings unless a test asks for the real model.
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "hash")
    # A hook that finds no warm server starts one; a test starts its own when it wants one.
    monkeypatch.setenv("MDMEM_SERVER", "off")
    yield


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault.init(tmp_path / "vault", agent="test-agent")


def git(root: Path, *args: str, human: bool = False) -> str:
    env = {**os.environ, **(HUMAN_ENV if human else {})}
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env
    ).stdout


@pytest.fixture
def run_git() -> object:
    return git


@pytest.fixture
def model() -> FakeModel:
    """A deterministic model that understands mdmem's prompts (see tests/llm_fakes.py)."""
    return FakeModel()


@pytest.fixture
def server(model: FakeModel) -> Iterator[ScriptedOpenAIServer]:
    """A real local OpenAI-protocol server answering with ``model``."""
    with ScriptedOpenAIServer(responder=model) as srv:
        yield srv


def kept_fields(root: Path, note: str) -> dict[str, dict[str, str]]:
    """The fields kept beside a note's memories, read from its fields file on disk
    (mdmem.files.sidecar): what a person, git and a fresh process see."""
    from mdmem.files.sidecar import parse_records, resolve, sidecar_of

    path = root / sidecar_of(note)
    if not path.exists():
        return {}
    records, bad = parse_records(path.read_text(encoding="utf-8").splitlines())
    assert not bad, f"{path}: lines {bad} are not records"
    return {i: dict(fields) for i, fields in resolve(records).items()}


def written(vault: Vault, memory_id: str) -> str:
    """A memory's line as its file holds it, followed by the fields kept beside
    it as ``[key:: value]`` (the form older vaults kept on the line)."""
    block = vault.admin.store.block(memory_id)
    line = (vault.root / block.path).read_text(encoding="utf-8").splitlines()[block.line_end - 1]
    beside = kept_fields(vault.root, block.path).get(block.id, {})
    return " ".join([line, *(f"[{k}:: {v}]" for k, v in beside.items())])
