"""What a host sends is made safe before the hook kit keeps it."""

from __future__ import annotations

from mdmem.memory.capture.hostdata import host_session_id, safe_record
from mdmem.memory.capture.sessions import validate_session_id
from tests.secret_samples import FORMATS

TOKEN = next(s for s in FORMATS if s.name == "GitLab token")


def test_an_ordinary_host_session_id_reads_as_sent() -> None:
    sid = host_session_id("claude-code", "3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b")
    assert sid == "claude-code-3f1c2a9e-5b7d-4e8f-9a0b-1c2d3e4f5a6b"


def test_a_session_id_holding_a_secret_becomes_a_stable_stand_in() -> None:
    first = host_session_id("codex", TOKEN.text)
    assert first == host_session_id("codex", TOKEN.text)
    assert first.startswith("codex-redacted-")
    assert not any(fragment in first for fragment in TOKEN.fragments)
    assert validate_session_id(first) == first


def test_any_id_becomes_a_valid_session_id() -> None:
    for raw in ("", "../../etc/passwd", "a b/c\\d", "x" * 500, "...", "ünïcode"):
        sid = host_session_id("cursor", raw)
        assert validate_session_id(sid) == sid


def test_a_record_keeps_its_shape_with_secrets_out_of_keys_and_values() -> None:
    record = {"session": TOKEN.text, TOKEN.text: [1, TOKEN.text], "ok": "plain"}
    safe = safe_record(record)
    text = repr(safe)
    assert not any(fragment in text for fragment in TOKEN.fragments)
    assert safe["ok"] == "plain" and len(safe) == 3
