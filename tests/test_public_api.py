"""The public surface: what ``mdmem`` exports, what a Vault lists, and the names of 0.0.x.

The exported names are pinned (httpx's test_exported_members): adding or
dropping one is a decision, not an accident. Every pre-0.1 Vault name and
import path still answers, with a DeprecationWarning naming its new place.
"""

from __future__ import annotations

import importlib
import io
import re
import sys
import warnings
from pathlib import Path

import click
import pytest

import mdmem
from mdmem import Vault
from mdmem.cli import main
from mdmem.cli.context import MOVED_COMMANDS
from mdmem.deprecations import MOVED

EXPORTED = {
    "KINDS",
    "STATUSES",
    "USE_CONFIGURED_LLM",
    "Block",
    "ConfigError",
    "ConflictError",
    "DimensionMismatchError",
    "DuplicateIdError",
    "EmbedderError",
    "GitError",
    "Hit",
    "HumanNoteError",
    "IndexError_",
    "InvalidInputError",
    "LLMClient",
    "LLMError",
    "LLMNotConfiguredError",
    "LLMResponseError",
    "LockTimeoutError",
    "MdmemError",
    "Memory",
    "MemoryHooks",
    "MemoryNotFoundError",
    "PathOutsideVaultError",
    "PromptContext",
    "Recall",
    "ScopeDeniedError",
    "SecretRefusedError",
    "Session",
    "Toolset",
    "Vault",
    "VaultExistsError",
    "VaultFileError",
    "VaultNotFoundError",
    "VaultStatus",
    "Version",
    "__version__",
    "compact_with_vault",
    "prompt_context",
}

# The table of contents: the contract verbs, the desks, three properties.
VAULT_NAMES = {
    *("init", "open", "close", "remember", "log", "journal", "learn", "get", "forget"),
    *("supersede", "resolve", "archive", "unarchive", "recall", "context", "batch"),
    *("consolidate", "reflect", "reindex", "history", "status", "session", "reading"),
    *("sessions", "git", "admin", "library", "contacts", "usefulness"),
    *("root", "settings", "llm"),
}

OLD_PATHS = {
    "mdmem.store.textfile": "mdmem.files.textfile",
    "mdmem.store.blocks": "mdmem.files.blocks",
    "mdmem.store.escape": "mdmem.files.escape",
    "mdmem.store.ids": "mdmem.files.ids",
    "mdmem.store.people": "mdmem.files.people",
    "mdmem.store.catalog": "mdmem.files.catalog",
    "mdmem.store.changefeed": "mdmem.files.changefeed",
    "mdmem.index.manifest": "mdmem.files.manifest",
    "mdmem.index.health": "mdmem.files.health",
    "mdmem.memory.llm": "mdmem.providers.llm",
    "mdmem.index.embedders": "mdmem.providers.embedders",
    "mdmem.index.minilm": "mdmem.providers.minilm",
    "mdmem.index.registry": "mdmem.providers.registry",
    "mdmem.memory.llm_rerank": "mdmem.recall.llm_rerank",
}


def test_exports_are_exactly_the_intended_names() -> None:
    assert set(mdmem.__all__) == EXPORTED
    for name in mdmem.__all__:
        assert getattr(mdmem, name) is not None


def test_the_door_classes_come_from_mdmem() -> None:
    from mdmem import MemoryHooks, Toolset
    from mdmem.agent.hooks import MemoryHooks as HooksHome
    from mdmem.mcp.tools import Toolset as ToolsetHome

    assert Toolset is ToolsetHome and MemoryHooks is HooksHome


def test_a_vault_is_a_table_of_contents(vault: Vault) -> None:
    public = {n for n in dir(vault) if not n.startswith("_")}
    assert public == VAULT_NAMES
    assert len(public) <= 33  # the contract verbs, reading (the one read view), six desks
    # Every desk is its own small class, not the vault again.
    for desk in ("sessions", "git", "admin", "library", "contacts", "usefulness"):
        assert not isinstance(getattr(vault, desk), Vault)


def test_every_moved_name_answers_with_a_warning_naming_its_new_place(vault: Vault) -> None:
    for name, alias in MOVED.items():
        with pytest.warns(
            DeprecationWarning, match=re.escape(f"Vault.{name} is deprecated")
        ) as record:
            value = getattr(vault, name)
        assert value is not None, name
        assert str(record[0].message) == (
            f"Vault.{name} is deprecated and is removed in {alias.removal}: use {alias.new}"
        )
        assert record[0].filename == __file__  # the warning points at the caller's line


def test_a_misspelt_name_is_still_an_attribute_error(vault: Vault) -> None:
    with pytest.raises(AttributeError, match="rememberr"):
        vault.rememberr  # noqa: B018


def test_a_script_written_against_the_old_verbs_still_runs(vault: Vault, tmp_path: Path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Deploys\n\nDeploys go out on Tuesdays after the standup.\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = vault.remember("The user prefers metric units.", kind="preference")
        assert vault.block(m.id).id == m.id
        assert m.id in {x.id for x in vault.memories()}
        assert [r["id"] for r in vault.list_memories(kinds=["preference"])] == [m.id]
        assert vault.ingest(doc).chunks
        assert vault.show(m.id).memory["id"] == m.id
        assert vault.feedback(m.id, True).helpful == 1
        assert vault.usefulness_of(m.id).helpful == 1
        assert vault.changes().remembered
        assert vault.diff("2000-01-01").remembered
        vault.mark_seen()
        assert vault.doctor().ok
        assert vault.refresh() == []
        assert vault.state_dir.is_dir()
        assert vault.llm_client() is None
        out = io.StringIO()
        assert vault.export_jsonl(out) >= 2
        session = vault.session("s1")
        session.record("user", "I moved to Porto last spring.")
        assert vault.summarize_session("s1") is not None
        assert "Porto" in vault.prompt_context("where does the user live").render()
        assert not vault.compact_steps([f"step {i}" for i in range(3)]).compacted
        assert vault.git.head()
        assert vault.pending.push("hello").text == "hello"
    moved = {str(w.message).split(" is deprecated")[0] for w in caught}
    assert {"Vault.block", "Vault.memories", "Vault.ingest", "Vault.prompt_context"} <= moved
    assert all(issubclass(w.category, DeprecationWarning) for w in caught)


def test_none_means_no_model_and_the_default_means_the_configured_one(vault: Vault) -> None:
    session = vault.session("s2")
    session.record("user", "We agreed to ship on Friday.")
    result = vault.consolidate(llm=None)  # no model: the extractive summariser
    assert result.episodes and result.model == "extractive"


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_old_import_paths_are_the_new_modules(old: str) -> None:
    sys.modules.pop(old, None)
    message = f"{old} is deprecated and is removed in 0.2.0: use {OLD_PATHS[old]}"
    with pytest.warns(DeprecationWarning, match=re.escape(message)):
        module = importlib.import_module(old)
    assert module is importlib.import_module(OLD_PATHS[old])


def test_moved_commands_still_run_and_stay_out_of_help() -> None:
    ctx = click.Context(main)
    listed = set(main.list_commands(ctx))
    for old, (group, sub) in MOVED_COMMANDS.items():
        assert old not in listed, old
        grouped = main.get_command(ctx, group)
        assert isinstance(grouped, click.Group)
        assert main.get_command(ctx, old) is grouped.get_command(ctx, sub), old
