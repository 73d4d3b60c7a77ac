"""A per-message ``speaker`` on session turns: group chats where several people talk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from mdmem import Vault
from mdmem.errors import InvalidInputError


def _read_back(vault: Vault, memory_id: str) -> dict[str, object]:
    """The entry as a fresh process reads it from the markdown alone."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from mdmem import Vault\n"
        "v = Vault.open(Path(sys.argv[1]))\n"
        "b = v.admin.store.block(sys.argv[2])\n"
        "print(json.dumps({'text': b.text, 'fields': b.fields}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(vault.root), memory_id],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ},
    ).stdout
    data: dict[str, object] = json.loads(out)
    return data


def test_speaker_is_kept_as_a_field_beside_the_contact(vault: Vault) -> None:
    s = vault.session("group-1", source="telegram", contact="telegram:-100")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    m = s.record("user", "Anyone up for hiking?", event_id="D1:1", speaker="Ann Lee", when=when)
    assert m.field("speaker") == "Ann Lee"
    assert ("contact", "telegram:-100") in m.fields
    assert [k for k, _ in vault.get(m.id).fields] == [
        "role",
        "source",
        "contact",
        "speaker",
        "created",
        "event",
    ]
    back = _read_back(vault, m.id)
    assert back["text"] == "Anyone up for hiking?"
    assert ["speaker", "Ann Lee"] in back["fields"]  # type: ignore[operator]
    # The recalled hit carries it too, so a host can say who said it.
    hit = vault.recall("hiking", k=3).items[0]
    assert hit.id == m.id and hit.field("speaker") == "Ann Lee"


def test_without_a_speaker_nothing_changes(vault: Vault) -> None:
    m = vault.session("s1", contact="c").record("user", "plain turn")
    assert m.field("speaker") is None
    assert dict(vault.get(m.id).fields) == {"role": "user", "contact": "c"}


def test_text_that_looks_like_a_speaker_field_stays_text(vault: Vault) -> None:
    s = vault.session("s1")
    text = "Bob wrote [speaker:: Mallory] and (speaker:: Eve) here"
    m = s.record("user", text, speaker="Ann")
    block = vault.admin.store.block(m.id)
    assert block.field("speaker") == "Ann" and block.text == text
    back = _read_back(vault, m.id)
    assert back["text"] == text
    assert [f for f in back["fields"] if f[0] == "speaker"] == [["speaker", "Ann"]]  # type: ignore[attr-defined]
    # Text alone never sets a speaker either.
    plain = s.record("user", "[speaker:: Mallory]")
    assert vault.get(plain.id).field("speaker") is None


def test_two_people_saying_the_same_thing_are_two_turns(vault: Vault) -> None:
    s = vault.session("group", source="whatsapp", contact="family")
    first = s.record("user", "Yes, that was the one!", speaker="Ann")
    second = s.record("user", "Yes, that was the one!", speaker="Bob")
    assert first.was_new and second.was_new and first.id != second.id
    # The same person repeating it within the window is still a duplicate.
    again = s.record("user", "Yes, that was the one!", speaker="Bob")
    assert not again.was_new and again.id == second.id


@pytest.mark.parametrize(
    "bad",
    ["", " Ann", "Ann ", "Ann [x]", "Ann (x)", "Ann\nLee", "a" * 201, 42, "Ann\x00"],
)
def test_a_speaker_that_cannot_be_stored_faithfully_is_refused(vault: Vault, bad: object) -> None:
    s = vault.session("s1")
    with pytest.raises(InvalidInputError) as err:
        s.record("user", "hello", speaker=bad)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)
    assert s.entries() == []


def test_unusual_but_faithful_speakers_read_back_byte_identical(vault: Vault) -> None:
    s = vault.session("s1")
    for name in ("Zoë O'Brien", "李雷", "user:alice", "Ann  Lee", "@bob_99"):
        m = s.record("user", f"hi from {name}", speaker=name)
        assert vault.get(m.id).field("speaker") == name
        back = _read_back(vault, m.id)
        assert ["speaker", name] in back["fields"]  # type: ignore[operator]
