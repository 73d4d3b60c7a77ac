"""Purge follows the links copies record: a purged turn's text is nowhere afterwards.

Nowhere: not in a file of the vault, not in any git object (loose or packed,
reachable or not), not in a reflog, not in the state dir - after the turn was
consolidated (extractively or by a model), its fact superseded, its session
summarised and the vault exported into itself.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import PurgeIncompleteError
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, llm_vault

from ..conftest import git
from .test_purge import places_holding

SECRET = "Remember that the Harrowby safe code is 7741-Quorn."
NEEDLES = (b"7741-Quorn", b"Harrowby safe code", b"harrowby")


def _conversation(vault: Vault) -> dict[str, str]:
    s = vault.session("s1", source="cli", contact="alice")
    ids = {
        "hello": s.record("user", "Good morning, a few things for today.").id,
        "secret": s.record("user", SECRET).id,
        "pref": s.record("user", "I prefer dark mode in every editor.").id,
        "reply": s.record("assistant", "Noted, dark mode and the rest.").id,
        "boss": s.record("user", "Also, my manager is Joao.").id,
    }
    return ids


def _export_into_the_vault(vault: Vault) -> Path:
    out = vault.root / "exports" / "all.jsonl"
    out.parent.mkdir()
    with out.open("w", encoding="utf-8") as handle:
        vault.library.export(handle)
    git(vault.root, "add", "exports/all.jsonl", human=True)
    git(vault.root, "commit", "-q", "-m", "my export", human=True)
    return out


def _everywhere(vault: Vault) -> list[str]:
    return [place for needle in NEEDLES for place in places_holding(vault, needle)]


def test_a_purged_turn_is_nowhere_after_consolidation_supersede_summary_and_export(
    vault: Vault,
) -> None:
    ids = _conversation(vault)
    summary = vault.sessions.summarize("s1")
    result = vault.consolidate()
    facts = {m.text: m for m in result.facts}
    code = facts["The Harrowby safe code is 7741-Quorn."]
    joao = facts["The user's manager is Joao."]
    newer = vault.supersede(code.id, "The safe code changes every month.")
    export = _export_into_the_vault(vault)
    assert summary is not None and "7741-Quorn" in vault.get(summary.id).text
    assert len(_everywhere(vault)) > 5  # before: in the note, facts, log, export, objects...

    purged = vault.git.purge(ids["secret"], confirm=True)

    assert _everywhere(vault) == []
    assert code.id in purged.derived and summary.id in purged.regenerated
    # What the other turns said is all still there, written again where it was a copy.
    assert vault.get(joao.id).text == "The user's manager is Joao."
    assert "The user prefers dark mode in every editor." in (vault.root / "USER.md").read_text()
    assert vault.get(newer.id).text == "The safe code changes every month."
    assert "dark mode" in vault.get(result.episodes[0].id).text
    assert "Good morning" in vault.get(summary.id).text
    rows = export.read_text(encoding="utf-8")
    assert ids["secret"] not in rows and joao.id in rows and ids["pref"] in rows
    # The export still checks out: its trailer counts and digests the rows left.
    *lines, last = export.read_bytes().splitlines(keepends=True)
    trailer = json.loads(last)
    assert trailer["rows"] == len(lines)
    assert trailer["sha256"] == hashlib.sha256(b"".join(lines)).hexdigest()
    # The regenerated summary's row reads as the summary now does, fields too.
    row = next(r for r in map(json.loads, lines) if r.get("id") == summary.id)
    live = vault.admin.store.block(summary.id)
    assert row["text"] == live.text and [tuple(f) for f in row["fields"]] == list(live.fields)
    subprocess.run(["git", "fsck", "--strict"], cwd=vault.root, check=True, capture_output=True)
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_model_consolidation_is_written_again_without_the_turn(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    def consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        # A model quotes freely: the summary, a fact citing its entry, one citing none.
        return {
            "summary": "Alice said the Harrowby safe code is 7741-Quorn and likes dark mode.",
            "facts": [
                {"text": "The Harrowby safe code is 7741-Quorn.", "sources": [2]},
                {"text": "The user's manager is Joao.", "speaker": "user", "sources": [5]},
                "The Harrowby safe code was shared in chat.",
            ],
            "pending": ["Check the Harrowby safe code 7741-Quorn."],
            "preferences": [{"text": "The user prefers dark mode.", "sources": [3]}],
            "tone": "brisk",
            "confidence": 0.9,
        }

    model.consolidate = consolidate
    vault = llm_vault(tmp_path, server)
    ids = _conversation(vault)
    result = vault.consolidate()
    (episode,) = result.episodes
    by_text = {m.text: m for m in result.facts}

    purged = vault.git.purge(ids["secret"], confirm=True)

    assert _everywhere(vault) == []
    # Citing the turn, or citing nothing (its whole episode), goes with it;
    # a fact citing other entries stays.
    assert by_text["The Harrowby safe code is 7741-Quorn."].id in purged.derived
    assert by_text["The Harrowby safe code was shared in chat."].id in purged.derived
    assert vault.get(by_text["The user's manager is Joao."].id).text.endswith("Joao.")
    assert vault.get(by_text["The user prefers dark mode."].id)
    meta_path = vault.admin.store.catalog.path_of(episode.id)
    assert meta_path is not None
    note = (vault.root / meta_path).read_text()
    assert "model: extractive" in note and "tone:" not in note and "confidence:" not in note


def test_purge_names_a_place_it_could_not_clean(vault: Vault) -> None:
    ids = _conversation(vault)
    vault.consolidate()
    stray = vault.admin.state_dir / "someone-elses-cache.txt"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text(f"copied by hand: {SECRET}\n")

    with pytest.raises(PurgeIncompleteError, match=r"someone-elses-cache\.txt"):
        vault.git.purge(ids["secret"], confirm=True)

    # Everything it knew how to clean is clean.
    stray.unlink()
    assert _everywhere(vault) == []


def test_words_another_memory_says_are_left_to_it(vault: Vault) -> None:
    ids = _conversation(vault)
    other = vault.remember(f"Alice once said: {SECRET}")
    vault.consolidate()

    purged = vault.git.purge(ids["secret"], confirm=True)  # no PurgeIncompleteError

    assert other.id in purged.also_in and vault.get(other.id).text.endswith(SECRET)


def test_cli_purge_says_what_it_removed_and_wrote_again(vault: Vault) -> None:
    ids = _conversation(vault)
    vault.consolidate()

    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "purge", ids["secret"], "--yes"]
    )

    assert out.exit_code == 0, out.output
    assert "removed with it, made from it: m-" in out.output
    assert "written again from their other sources: m-" in out.output
