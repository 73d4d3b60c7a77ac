"""Provider packages that are broken or hostile: nothing escapes the MdmemError tree."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import ConfigError, EmbedderError, MdmemError
from mdmem.providers import registry
from mdmem.providers.embedders import make_embedder

BROKEN = """
import sys


def raises(model=None, **kwargs):
    raise RuntimeError("the GPU driver is missing")


def returns_none(model=None, **kwargs):
    return None


class BadShape:
    name = "badshape:v1"
    dim = 8

    def embed(self, texts):
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, text):
        return [float("nan")] * 8


def bad_shape(model=None, **kwargs):
    return BadShape()


class NotAClient:
    def __init__(self, config):
        self.model = config.model
"""

EXITS = "import sys\nsys.exit(3)\n"
BOOM = "raise ImportError('no module named torch_nightly')\n"


def install(site: Path, dist: str, entry_points: str, modules: dict[str, str]) -> None:
    for name, code in modules.items():
        (site / f"{name}.py").write_text(code)
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    install(
        root,
        "mdmem-broken",
        """
        [mdmem.embedders]
        raises = mdmem_broken:raises
        nothing = mdmem_broken:returns_none
        exits = mdmem_exits:make
        boom = mdmem_boom:make
        twice = mdmem_broken:raises
        badshape = mdmem_broken:bad_shape

        [mdmem.llms]
        notaclient = mdmem_broken:NotAClient
        """,
        {"mdmem_broken": BROKEN, "mdmem_exits": EXITS, "mdmem_boom": BOOM},
    )
    install(
        root,
        "mdmem-other",
        "[mdmem.embedders]\ntwice = mdmem_broken:returns_none\n"
        "evil\x1b[2J\x1b[31mname = mdmem_broken:raises\n",
        {},
    )
    monkeypatch.syspath_prepend(str(root))
    return root


def test_a_factory_that_raises_is_an_embedder_error(site: Path) -> None:
    with pytest.raises(EmbedderError, match=r"raises.*RuntimeError.*GPU driver"):
        make_embedder("raises")


def test_a_module_that_exits_or_fails_on_import_is_a_config_error(site: Path) -> None:
    with pytest.raises(ConfigError, match=r"exits.*failed to load.*SystemExit"):
        make_embedder("exits")
    with pytest.raises(ConfigError, match=r"boom.*failed to load.*no module named torch_nightly"):
        make_embedder("boom")


def test_a_factory_returning_the_wrong_thing_is_refused(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="not an Embedder"):
        make_embedder("nothing")
    monkeypatch.setenv("MDMEM_LLM_PROVIDER", "notaclient")
    monkeypatch.setenv("MDMEM_LLM_MODEL", "m")
    vault = Vault.init(tmp_path / "v")
    with pytest.raises(ConfigError, match=r"notaclient.*chat_json"):
        _ = vault.llm


def test_one_name_from_two_packages_is_not_settled_by_install_order(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mdmem"), pytest.raises(ConfigError) as info:
        registry.load("embedder", "twice")
    assert "mdmem-broken" in str(info.value) and "mdmem-other" in str(info.value)


def test_a_broken_embedder_leaves_the_vault_working_in_keyword_mode(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "raises")
    vault = Vault.init(tmp_path / "v")
    try:
        vault.remember("The release train leaves on Thursdays")
        result = vault.recall("release train")
    except MdmemError as exc:  # pragma: no cover - the failure this test guards against
        pytest.fail(f"a broken provider package broke the vault: {exc}")
    assert result.items and result.degraded


def test_vectors_of_the_wrong_shape_are_an_embedder_error_not_a_corrupt_index(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = make_embedder("badshape")
    with pytest.raises(EmbedderError, match="shape"):
        embedder.embed(["a", "b"])
    with pytest.raises(EmbedderError, match="finite"):
        embedder.embed_query("a")
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "badshape")
    vault = Vault.init(tmp_path / "v")
    vault.remember("The release train leaves on Thursdays")
    result = vault.recall("release train")
    assert result.items and result.degraded


def test_a_provider_name_with_escape_sequences_is_ignored(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mdmem"):
        names = registry.available("embedder")
    assert not [n for n in names if "evil" in n]
    with pytest.raises(ConfigError) as info:
        make_embedder("word2vec")
    assert "\x1b" not in str(info.value)
    assert "ignored" in caplog.text and "\x1b" not in caplog.text
