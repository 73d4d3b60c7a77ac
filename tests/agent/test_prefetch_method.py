"""prefetch_method = "recall" | "reflect" for the prompt assembly and the hooks' prefetch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.agent.hooks import MemoryHooks
from mdmem.agent.prompt import prompt_context
from mdmem.errors import ConfigError, InvalidInputError
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, llm_vault


def _synthesising(model: FakeModel) -> None:
    def answer(question: str, memories: str) -> dict[str, Any]:
        first = memories.split(" (", 1)[0].strip()
        return {"answer": "The user goes to Porto by train each month.", "citations": [first]}

    model.reflect = answer


def test_reflect_prefetch_injects_a_synthesis_citing_its_memories(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    _synthesising(model)
    vault = llm_vault(tmp_path, server, recall={"prefetch_method": "reflect"})
    train = vault.remember("The user travels by train to Porto every month.")

    hooks = MemoryHooks(vault, background=False)
    block = hooks.prefetch("how does the user travel to Porto")
    assert block.startswith("## Memory Synthesis")
    assert "Porto by train each month" in block and f"MEMORY.md#^{train.id}" in block

    context = prompt_context(vault, "how does the user travel to Porto")
    semantic = context["semantic"]
    assert semantic.title == "## Memory Synthesis" and semantic.ids == [train.id]
    assert "## Memory Synthesis" in context.render()
    assert model.calls["reflect"] == 2

    # Asked per call, "recall" wins over the vault's setting.
    plain = MemoryHooks(vault, background=False, prefetch_method="recall")
    assert plain.prefetch("how does the user travel to Porto").startswith("## Recalled Memory")
    listed = prompt_context(vault, "how does the user travel to Porto", prefetch_method="recall")
    assert listed["semantic"].title == "## Recalled Memory"
    assert model.calls["reflect"] == 2


def test_reflect_without_an_llm_falls_back_to_recall(vault: Vault) -> None:
    vault.remember("The user travels by train to Porto every month.")
    hooks = MemoryHooks(vault, background=False, prefetch_method="reflect")
    assert hooks.prefetch("how does the user travel").startswith("## Recalled Memory")
    context = prompt_context(vault, "how does the user travel", prefetch_method="reflect")
    assert context["semantic"].title == "## Recalled Memory" and context["semantic"].ids
    with pytest.raises(InvalidInputError):
        prompt_context(vault, "how does the user travel", prefetch_method="guess")


def test_the_setting_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="prefetch_method"):
        Vault.init(tmp_path / "v", recall={"prefetch_method": "dream"})


def test_the_setting_shows_in_mdmem_config(vault: Vault) -> None:
    import json

    from click.testing import CliRunner

    from mdmem.cli import main

    toml = vault.root / "mdmem.toml"
    toml.write_text(
        toml.read_text().replace('prefetch_method = "recall"', 'prefetch_method = "reflect"')
    )
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "admin", "config", "--show", "--json"]
    )
    assert out.exit_code == 0, out.output
    rows = {r["setting"]: r for r in json.loads(out.output)["settings"]}
    assert rows["recall.prefetch_method"]["value"] == "reflect"
