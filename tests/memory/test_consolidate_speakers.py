"""Consolidation that knows who spoke: a contact's words never become the user's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mdmem import Vault
from mdmem.memory.capture import extractive
from mdmem.testing import ScriptedOpenAIServer
from tests.conftest import kept_fields
from tests.llm_fakes import FakeModel, data_blocks, llm_vault, system_of

FILE_FORMAT = Path(__file__).resolve().parents[2] / "docs" / "file-format.md"


def _group_chat(vault: Vault) -> dict[str, str]:
    s = vault.session("group-1", source="telegram", contact="telegram:-100")
    ids = {
        "ana": s.record("user", "I prefer green tea in the morning.", speaker="Ana").id,
        "bruno": s.record("user", "Also, my manager is Joao.", speaker="Bruno").id,
        "owner": s.record("user", "I prefer dark mode in every editor.").id,
        "bot": s.record("assistant", "Noted, all of it.").id,
    }
    return ids


def _line_of(vault: Vault, text: str) -> str:
    """``file: line [key:: value]…``: the line and the fields kept beside it."""
    for name in ("MEMORY.md", "USER.md"):
        kept = kept_fields(vault.root, name)
        for line in (vault.root / name).read_text().splitlines():
            if text in line:
                memory_id = line.rsplit("^", 1)[-1].strip()
                fields = kept.get(memory_id, {})
                return " ".join([f"{name}: {line}", *(f"[{k}:: {v}]" for k, v in fields.items())])
    raise AssertionError(f"{text!r} is in no ledger file")


def test_a_group_chat_files_each_statement_under_who_said_it(vault: Vault) -> None:
    ids = _group_chat(vault)
    vault.contacts.link("telegram:555", "user:ana", display_name="Ana")

    result = vault.consolidate()

    user_md = (vault.root / "USER.md").read_text()
    assert "Ana" not in user_md and "green tea" not in user_md and "Joao" not in user_md
    # The user's own preference (a turn without a speaker) is theirs, as before.
    assert "The user prefers dark mode in every editor." in user_md
    ana = _line_of(vault, "Ana prefers green tea in the morning.")
    assert ana.startswith("MEMORY.md: ") and "[kind:: preference]" in ana
    assert f"[sources:: ^{ids['ana']}]" in ana and "[speaker:: Ana]" in ana
    bruno = _line_of(vault, "Bruno's manager is Joao.")
    assert f"[sources:: ^{ids['bruno']}]" in bruno and "[speaker:: Bruno]" in bruno
    # Ana's profile lists what she said (by id: no copied text).
    fact = next(m for m in result.facts if m.text.startswith("Ana prefers"))
    assert fact.id in vault.contacts.profile("user:ana").facts


def test_the_model_is_shown_who_spoke_and_cannot_move_a_contact_into_user_md(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    seen: list[str] = []

    def consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        seen.append(blocks["entries"])
        return {
            "summary": "Ana and Bruno talked about tea and work.",
            "facts": [
                # Cites Ana's entry but calls her "user": the entry decides.
                {"text": "The user prefers green tea.", "speaker": "user", "sources": [1]},
                {"text": "Bruno's manager is Joao.", "speaker": "Bruno", "sources": ["#2"]},
                # Cites nothing in a chat with named speakers: nobody's.
                {"text": "Someone likes oolong.", "speaker": "user", "sources": []},
                {"text": "Ana waters the plants.", "speaker": "Ana"},
                "A plain string fact from an older model.",
            ],
            "pending": [],
            "preferences": [{"text": "The user likes dark mode.", "sources": [3]}],
            "tone": "friendly",
            "confidence": 0.8,
        }

    model.consolidate = consolidate
    vault = llm_vault(tmp_path, server)
    ids = _group_chat(vault)

    vault.consolidate()

    (entries,) = seen
    assert "] #1 Ana (user): I prefer green tea" in entries
    assert "] #3 user: I prefer dark mode" in entries
    request = next(r for r in server.chat_requests() if "consolidator" in system_of(r["body"]))
    assert "sources" in system_of(request["body"]) and data_blocks(request["body"])
    user_md = (vault.root / "USER.md").read_text()
    assert "green tea" not in user_md and "oolong" not in user_md and "Joao" not in user_md
    assert "The user likes dark mode." in user_md  # entry 3: the session's user
    green = _line_of(vault, "The user prefers green tea.")
    assert green.startswith("MEMORY.md") and "[speaker:: Ana]" in green
    assert f"[sources:: ^{ids['ana']}]" in green
    assert "[speaker:: Bruno]" in _line_of(vault, "Bruno's manager is Joao.")
    oolong = _line_of(vault, "Someone likes oolong.")
    assert "speaker::" not in oolong and "sources::" not in oolong
    assert "[speaker:: Ana]" in _line_of(vault, "Ana waters the plants.")
    plain = _line_of(vault, "A plain string fact from an older model.")
    assert plain.startswith("MEMORY.md") and "sources::" not in plain  # its episode's sources


def test_tool_output_bookkeeping_never_reaches_titles_or_summaries(vault: Vault) -> None:
    s = vault.session("tools-2")
    s.record("user", "Run the migration script please.")
    payload = "\n".join(f"migrated table number {i}" for i in range(900))
    entry = s.record_tool_output("bash", payload)
    assert "more characters; full output" in vault.get(entry.id).text
    s.record("assistant", "The migration finished for every table.")

    (episode,) = vault.consolidate().episodes
    summary = vault.sessions.summarize("tools-2")

    note = (vault.root / episode.path).read_text()
    daily = next((vault.root / "daily").glob("*.md")).read_text()
    assert summary is not None
    for text in (note, daily, summary.text, episode.path):
        assert "more characters" not in text and "tout_" not in text
        assert "read_tool_output" not in text


def _readme_examples() -> list[str]:
    """The explicit statements the file-format reference says the extractive summariser keeps."""
    text = " ".join(FILE_FORMAT.read_text(encoding="utf-8").split())
    listed = re.search(r"keeps only explicit statements \(([^)]*)\)", text)
    assert listed is not None, "docs/file-format.md lists no explicit statements"
    return re.findall(r'"([^"]+)"', listed.group(1))


def test_every_extractive_pattern_the_docs_list_works() -> None:
    examples = _readme_examples()
    assert len(examples) >= 6, examples
    for example in examples:
        said = example.replace("…", "").strip()
        found = extractive.explicit_facts([("user", said)])
        assert len(found) == 1, (example, found)
        assert found[0].text.startswith(("The user", "The ")), found
        # The same words from a named group-chat member are theirs.
        theirs = extractive.explicit_facts([("user", said)], speakers=["Ana"])
        assert theirs and "user" not in theirs[0].text.casefold(), theirs


def test_statements_inside_a_longer_message_are_found() -> None:
    said = "Oh and by the way, my manager is Joao. My name is Bob and I live in Porto."
    found = [f.text for f in extractive.explicit_facts([("user", said)])]
    assert found == [
        "The user's manager is Joao.",
        "The user's name is Bob.",
        "The user lives in Porto.",
    ]


def test_extractive_overview_ends_every_turn_with_punctuation() -> None:
    text = extractive.summarize(
        [("user", "my bank pin is four four"), ("user", "I prefer dark mode in every editor")]
    )
    assert text == "my bank pin is four four. I prefer dark mode in every editor."
