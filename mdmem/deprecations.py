"""Names of the 0.0.x :class:`~mdmem.vault.Vault` that moved to desks in 0.1.0.

Each old name still answers until its removal version: ``Vault.__getattr__``
calls :func:`answer`, which warns (``DeprecationWarning``, naming the new
place and the removal version, from :data:`MOVED`, an
:class:`~mdmem.aliases.AliasTable` like every alias table) and hands back
the new verb, adapted where its shape changed (:data:`_ADAPT`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from typing import Any

from mdmem.aliases import Alias, AliasTable
from mdmem.memory.library import documents
from mdmem.memory.library.export import row_of
from mdmem.models import STATUSES, Memory

__all__ = ["ARGUMENTS", "MOVED", "answer"]


def _path(dotted: str) -> Callable[[Any], Any]:
    def follow(vault: Any) -> Any:
        value: Any = vault
        for part in dotted.split("."):
            value = getattr(value, part)
        return value

    return follow


def _helper(module: str, name: str) -> Callable[[Any], Any]:
    # Helpers over a vault sit above it (mdmem.agent); imported when an old
    # script asks, never by the vault itself.
    return lambda vault: functools.partial(getattr(importlib.import_module(module), name), vault)


def _memories(vault: Any) -> Callable[..., list[Memory]]:
    def memories(*, include_inactive: bool = True) -> list[Memory]:
        return vault.library.list(statuses=STATUSES if include_inactive else "active")

    return memories


def _list_rows(vault: Any) -> Callable[..., list[dict[str, Any]]]:
    def list_memories(**filters: Any) -> list[dict[str, Any]]:
        filters.setdefault("limit", 50)
        block_of = vault.admin.store.block
        reading = vault.reading()
        return [row_of(block_of(m.id), reading.shown) for m in reading.list(**filters)]

    return list_memories


def _steps(vault: Any) -> Callable[..., Any]:
    steps = importlib.import_module("mdmem.agent.steps")

    def compact_steps(history: Any, llm: Any = None) -> Any:
        return steps.compact_steps(history, llm if llm is not None else vault.llm)

    return compact_steps


def _ingest_one(vault: Any) -> Callable[..., Any]:
    # One file as before (a folder was an error then): not library.ingest's expansion.
    return functools.partial(documents.ingest, vault.admin.store)


# Every public name of the 0.0.x Vault that moved: where it went, and how to
# reach it from a vault.
_MOVED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    **{
        old: (f"vault.{new}", _path(new))
        for old, new in {
            "state_dir": "admin.state_dir",
            "refresh": "admin.refresh",
            "commit_human_edits": "admin.commit_human_edits",
            "doctor": "admin.doctor",
            "watch": "admin.watch",
            "cleanup": "admin.cleanup",
            "cleanup_due": "admin.cleanup_due",
            "anonymize_retired": "admin.retention",
            "diff": "git.changes",
            "changes": "git.changes",
            "mark_seen": "git.mark_seen",
            "blame": "git.blame",
            "provenance": "git.provenance",
            "sync": "git.sync",
            "reviews": "git.reviews",
            "review": "git.review",
            "merge_review": "git.merge_review",
            "reject_review": "git.reject_review",
            "undo": "git.undo",
            "purge": "git.purge",
            "read_tool_output": "sessions.read_tool_output",
            "summarize_session": "sessions.summarize",
            "resolve_session": "sessions.resolve",
            "capture_tool_results": "sessions.capture_tool_results",
            "flush": "sessions.flush",
            "flush_reminder": "sessions.flush_reminder",
            "consolidate_stale": "sessions.consolidate_stale",
            "pending": "sessions.pending",
            "action": "sessions.action",
            "ingest_many": "library.ingest",
            "import_": "library.import_",
            "export_jsonl": "library.export",
            "show": "library.show",
            "feedback": "usefulness.feedback",
            "usefulness_of": "usefulness.get",
            "resolver": "_parts.resolver",
            "recaller": "_recaller",
        }.items()
    },
    # The store and its parts are the Vault's insides: what a script did with them
    # is done through public verbs, named here, or not at all (still answered, the
    # same objects, until the removal version).
    "store": ("the Vault's verbs and its desks (no public store)", _path("admin.store")),
    "catalog": (
        "vault.library.list and vault.get (no public catalog)",
        _path("admin.store.catalog"),
    ),
    "indexer": ("vault.reindex (no public indexer)", _path("admin.store.indexer")),
    "ingest": ("vault.library.ingest (a list of results)", _ingest_one),
    "block": ("vault.get", _path("_store.block")),
    "memories": ("vault.library.list", _memories),
    "list_memories": ("vault.library.list", _list_rows),
    "llm_client": ("vault.llm", lambda vault: lambda: vault.llm),
    "agent": ("vault.settings.agent", lambda vault: vault.settings.agent),
    "prompt_context": (
        "mdmem.prompt_context(vault, ...)",
        _helper("mdmem.agent.prompt", "prompt_context"),
    ),
    "compact_steps": ("mdmem.agent.steps.compact_steps(steps, vault.llm)", _steps),
}

MOVED = AliasTable(
    "Vault attributes", {old: Alias(f"Vault.{old}", new) for old, (new, _) in _MOVED.items()}
)
_ADAPT: dict[str, Callable[[Any], Any]] = {old: adapt for old, (_, adapt) in _MOVED.items()}


def answer(vault: Any, name: str) -> Any:
    """The 0.0.x attribute ``name`` of ``vault``, with its warning (KeyError: not an old name)."""
    adapt = _ADAPT[name]
    MOVED[name].warn(stacklevel=3)  # past this call and Vault.__getattr__: the user's line
    return adapt(vault)


# Arguments of a contract verb that moved to a desk verb.
ARGUMENTS = AliasTable(
    "Vault arguments",
    {"forget(purge=True)": Alias("Vault.forget(purge=True)", "vault.git.purge(id, confirm=True)")},
)


def forget_with_purge(vault: Any, memory_id: str, *, confirm: bool) -> Memory:
    """``vault.forget(id, purge=True)`` of 0.0.x: the purge desk's verb, with its warning."""
    ARGUMENTS["forget(purge=True)"].warn(stacklevel=3)
    memory: Memory = vault.get(memory_id)
    vault.git.purge(memory_id, confirm=confirm)
    return dataclasses.replace(memory, was_new=False)
