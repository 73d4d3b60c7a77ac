"""Importance 1-10 (OAK): set by the writer or consolidation, capped by origin,
editable by hand, a signal in recall's scores and a small effect on ranking and retention."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main
from mdmem.mcp.tools import Toolset
from mdmem.memory.consolidation.lifecycle import anonymize_retired
from mdmem.store.importance import origin_of_tools

from ..conftest import git, written


def _line_of(vault: Vault, memory_id: str) -> str:
    block = vault.admin.store.block(memory_id)
    return (vault.root / block.path).read_text(encoding="utf-8").splitlines()[block.line_start - 1]


def _stored(vault: Vault, memory_id: str) -> str:
    return written(vault, memory_id)


def test_the_writer_sets_importance_and_origin_caps_it(vault: Vault) -> None:
    high = vault.remember("The release branch is cut every second Thursday.", importance=8)
    assert "[importance:: 8]" in _stored(vault, high.id)
    capped = vault.remember("The parser module looks too long.", importance=9, origin="planning")
    line = _stored(vault, capped.id)
    assert "[importance:: 5]" in line and "[origin_type:: planning]" in line
    hit = vault.recall("release branch second Thursday").items[0]
    assert hit.id == high.id and hit.scores["importance"] == 8.0
    plain = vault.remember("The cafeteria opens at eight.")
    assert "importance" not in vault.recall("cafeteria opens").items[0].scores
    assert "importance" not in _stored(vault, plain.id)

    for bad in (0, 11, True, 2.5, "high"):
        with pytest.raises(InvalidInputError):
            vault.remember(f"Bad importance {bad!r} here.", importance=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        vault.remember("Origin must be known.", importance=3, origin="daydream")
    with pytest.raises(InvalidInputError, match="importance="):
        vault.remember("Fields can't bypass the cap.", fields=[("importance", "10")])


def test_importance_moves_ranking_a_little_and_only_where_it_is_set(vault: Vault) -> None:
    # Two scopes, so neither retires the other as its newer version.
    a = vault.remember("Alpha team meets on Monday in room A.", scope="project:a")
    b = vault.remember("Alpha team meets on Monday in room B.", scope="project:b")
    base = {h.id: h.score for h in vault.recall("alpha team meets monday room")}
    assert set(base) == {a.id, b.id}

    def order() -> list[str]:
        return [h.id for h in vault.recall("alpha team meets monday room")][:2]

    vault.admin.commit_human_edits()
    for low, high in ((a, b), (b, a)):
        for memory, level in ((low, 1), (high, 10)):
            path = vault.root / memory.path
            text = path.read_text(encoding="utf-8")
            line = _line_of(vault, memory.id)
            edited = line.replace(" ^", f" [importance:: {level}] ^", 1)
            if "[importance::" in line:
                edited = line.split(" [importance::")[0] + f" [importance:: {level}] ^{memory.id}"
            path.write_text(text.replace(line, edited), encoding="utf-8")
        assert order() == [high.id, low.id]
    scores = {h.id: h for h in vault.recall("alpha team meets monday room")}
    # Small: a 10 is at most 10 % above what it scored without the field.
    assert scores[a.id].score <= base[a.id] * 1.1 + 1e-6
    assert scores[a.id].scores["importance"] == 10.0


def test_a_hand_edit_of_importance_is_the_persons_and_recall_reads_it(vault: Vault) -> None:
    fact = vault.remember("Backups run at midnight.", importance=3)
    path = vault.root / "MEMORY.md"
    path.write_text(
        # A field typed on the line wins over the one kept beside it.
        path.read_text(encoding="utf-8").replace(f" ^{fact.id}", f" [importance:: 9] ^{fact.id}"),
        encoding="utf-8",
    )
    vault.admin.commit_human_edits()
    author = git(vault.root, "log", "-1", "--format=%an")
    assert author != vault.settings.agent  # committed as the human
    assert vault.recall("backups midnight").items[0].scores["importance"] == 9.0
    assert vault.get(fact.id).text == "Backups run at midnight."


def test_consolidation_sets_importance_capped_by_the_sessions_origin(vault: Vault) -> None:
    assert origin_of_tools(["grep", "read_file", "grep"]) == "investigation"
    assert origin_of_tools(["read_file"] * 9 + ["edit_file"]) == "planning"
    assert origin_of_tools(["edit_file", "write_file", "read_file"]) == "implementation"
    assert origin_of_tools([]) == "mixed"

    looked = vault.session("look-1", contact="ann")
    looked.record_tool_output("grep", "src/app.py:12: TODO tabs")
    looked.record_tool_output("read_file", "def main(): pass")
    looked.record("user", "I prefer tabs over spaces in every file.")
    chat = vault.session("chat-1", contact="ben")
    chat.record("user", "I prefer green tea in the afternoon.")
    result = vault.consolidate()
    by_text = {m.text: m for m in result.facts}
    tabs = next(m for t, m in by_text.items() if "tabs" in t)
    tea = next(m for t, m in by_text.items() if "green tea" in t)
    assert tabs.kind == tea.kind == "preference"
    assert "[importance:: 5]" in _stored(vault, tabs.id)  # 6 for a preference, capped
    assert "[origin_type:: investigation]" in _stored(vault, tabs.id)
    assert "[importance:: 6]" in _stored(vault, tea.id)
    assert "[origin_type::" not in _stored(vault, tea.id)  # a chat has no tool calls to judge by


def test_retention_keeps_an_important_retired_memory_twice_as_long(vault: Vault) -> None:
    vital = vault.remember("The vault key ceremony needs two officers.", importance=9)
    minor = vault.remember("The snack drawer is on the left.", importance=2)
    vault.resolve(vital.id)
    vault.resolve(minor.id)
    # `updated` is a date (midnight): days of 3 leave a day of room either side.
    later = datetime.now(UTC) + timedelta(days=4)
    report = anonymize_retired(vault.admin.store, 3, apply=True, now=later)
    assert {m.id for m in report.memories} == {minor.id}
    assert "two officers" in (vault.root / "MEMORY.earlier.md").read_text(encoding="utf-8")
    report = anonymize_retired(vault.admin.store, 3, apply=True, now=later + timedelta(days=3))
    assert {m.id for m in report.memories} == {vital.id}


def test_importance_from_the_cli_and_the_tools(vault: Vault) -> None:
    out = CliRunner().invoke(
        main,
        ["--vault", str(vault.root), "remember", "Ship on Fridays.", "--importance", "7", "--json"],
    )
    assert out.exit_code == 0, out.output
    assert "[importance:: 7]" in _stored(vault, json.loads(out.output)["id"])
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "remember", "Nope.", "--importance", "12"]
    )
    assert out.exit_code != 0 and "1 to 10" in out.output
    tools = Toolset(vault)
    stored = tools.dispatch("remember", {"content": "Deploys need two approvals.", "importance": 9})
    assert "[importance:: 9]" in _stored(vault, stored["id"])
    refused = tools.dispatch("remember", {"content": "Too much.", "importance": 11})
    assert refused["error"]["type"] == "invalid_arguments"
