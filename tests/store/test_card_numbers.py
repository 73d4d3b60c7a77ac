"""A card number (with its expiry and security code) through every door that
took one in: a memory, a chat turn, a tool output, an import, a session's
summary and the prompt. Refused, or redacted under ``secrets="redact"``, like
keys and passwords in the same text; in no file, git object or state file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mdmem import Vault, prompt_context
from mdmem.errors import SecretRefusedError
from tests.secret_samples import FORMATS

CARD = next(s for s in FORMATS if s.kind == "card number")
NUMBER = CARD.fragments[0]
CODE = CARD.fragments[-1].split()[-1]
TEXT = CARD.text  # "paid with card 4… exp 12/29 cvv 123 for the hotel"


def _stored(vault: Vault) -> bytes:
    """Every vault file, every git object (uncompressed) and the state dir."""
    out = [p.read_bytes() for p in vault.root.rglob("*") if p.is_file() and ".git" not in p.parts]
    out.append(
        subprocess.run(
            ["git", "cat-file", "--batch-all-objects", "--batch"],
            cwd=vault.root,
            capture_output=True,
            check=True,
        ).stdout
    )
    out += [p.read_bytes() for p in vault.admin.state_dir.rglob("*") if p.is_file()]
    return b"\n".join(out)


def _leaked(vault: Vault) -> list[str]:
    stored = _stored(vault)
    pieces = [NUMBER, *CARD.fragments[1:-1], f"cvv {CODE}"]
    return [p for p in pieces if p.encode() in stored]


def test_every_door_refuses_a_card_by_default(vault: Vault) -> None:
    session = vault.session("chat-1", source="test")
    doors = [
        lambda: vault.remember(TEXT),
        lambda: vault.log(TEXT),
        lambda: session.record("user", TEXT),
        lambda: session.record_tool_output("Bash", f"$ pay\n{TEXT}\nok"),
    ]
    for door in doors:
        with pytest.raises(SecretRefusedError, match="card number"):
            door()
    assert _leaked(vault) == []


def test_redacted_everywhere_and_the_rest_kept(vault: Vault, tmp_path: Path) -> None:
    session = vault.session("chat-1", source="test")
    turn = session.record("user", f"I booked the room; {TEXT}", secrets="redact")
    assert "[REDACTED:card number]" in turn.text and "[REDACTED:card security code]" in turn.text
    assert "booked the room" in turn.text and "exp 12/29" in turn.text
    tool = session.record_tool_output("Bash", f"$ pay\n{TEXT}\nok", secrets="redact")
    assert "[REDACTED:card number]" in vault.get(tool.id).text
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"id": "r1", "session_id": "imported", "role": "user", "content": TEXT}) + "\n",
        encoding="utf-8",
    )
    report = vault.library.import_(rows, secrets="redact")
    assert report.added == 1
    # The session's summary (extractive: no model configured) is written from the
    # stored turns, and the prompt from what is stored: neither has the card.
    vault.sessions.summarize("chat-1")
    vault.consolidate()
    prompt = prompt_context(vault, "hotel room booking payment").render()
    assert NUMBER not in prompt and f"cvv {CODE}" not in prompt
    assert _leaked(vault) == []


def test_an_import_refuses_the_row_and_keeps_the_others(vault: Vault, tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    lines = [
        {"id": "r1", "session_id": "imported", "role": "user", "content": "The hotel is booked."},
        {"id": "r2", "session_id": "imported", "role": "user", "content": TEXT},
    ]
    rows.write_text("\n".join(json.dumps(row) for row in lines) + "\n", encoding="utf-8")
    report = vault.library.import_(rows)
    assert (report.added, report.refused) == (1, 1)
    assert "card number" in report.refusals[0]["reason"]
    assert _leaked(vault) == []
