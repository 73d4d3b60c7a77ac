"""Sessions: chat messages and tool outputs recorded as markdown entries."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    ScopeDeniedError,
    SecretRefusedError,
)
from mdmem.memory.capture.sessions import TOOL_OUTPUT_DIR, validate_session_id

from ..conftest import git, kept_fields


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def test_record_writes_one_entry_per_turn_with_fields(vault: Vault) -> None:
    s = vault.session("tg-123", source="telegram", contact="telegram:123")
    before = commits(vault.root)
    m = s.record("user", "How do I deploy to production?", event_id="msg-1")
    a = s.record("assistant", "Run `make deploy` from the main branch.\n\n- then check the logs")
    assert commits(vault.root) == before + 2  # one commit per record
    assert m.was_new and m.kind == "chat_message" and m.path == "sessions/tg-123.md"
    block = vault.admin.store.block(m.id)
    assert dict(block.fields) == {
        "role": "user",
        "source": "telegram",
        "contact": "telegram:123",
        "event": "msg-1",
    }
    assert vault.get(a.id).text.startswith("Run `make deploy`")
    text = (vault.root / m.path).read_text()
    assert text.startswith("---\nsession: tg-123\nsource: telegram\ncontact: telegram:123\n")
    assert "# Session tg-123" in text
    # A transcript: the day's heading, then who said what when; the fields beside it.
    assert re.search(r"^## \d{4}-\d\d-\d\d$", text, re.MULTILINE)
    assert re.search(
        rf"^\*\*user\*\* \(\d\d:\d\d\): How do I deploy to production\? \^{m.id}$",
        text,
        re.MULTILINE,
    )
    assert re.search(r"^### assistant \(\d\d:\d\d\)$", text, re.MULTILINE)  # a list inside
    assert "[role::" not in text
    assert kept_fields(vault.root, m.path)[m.id]["source"] == "telegram"
    subject = git(vault.root, "log", "-1", "--format=%B")
    assert (
        subject.startswith("record assistant: Run `make deploy`") and "Session: tg-123" in subject
    )
    assert [e.id for e in s.entries()] == [m.id, a.id]


def test_everything_recorded_is_recallable_by_kind(vault: Vault) -> None:
    s = vault.session("s1")
    s.record("user", "The billing service returns error 502 on Mondays.")
    s.record_tool_output("http_get", "GET /billing -> 502 Bad Gateway from the billing service")
    msgs = vault.recall("billing service error", kinds=["chat_message"])
    tools = vault.recall("billing service error", kinds=["tool_output"])
    assert [h.kind for h in msgs.items] == ["chat_message"]
    assert [h.kind for h in tools.items] == ["tool_output"]
    assert vault.get(tools.items[0].id).field("tool") == "http_get"


def test_same_event_id_is_dropped(vault: Vault) -> None:
    s = vault.session("s1", source="telegram", contact="telegram:9")
    first = s.record("user", "hello there", event_id="upd-77")
    before = commits(vault.root)
    again = s.record("user", "hello there (edited by the platform)", event_id="upd-77")
    assert not again.was_new and again.id == first.id
    assert commits(vault.root) == before
    # The same event id seen by another session of the same source within the window.
    other = vault.session("s2", source="telegram", contact="telegram:9")
    assert not other.record("user", "whatever", event_id="upd-77").was_new
    # Another source may reuse the number.
    assert vault.session("s3", source="whatsapp").record("user", "hi", event_id="upd-77").was_new


def test_an_old_event_id_in_another_session_file_is_dropped(vault: Vault) -> None:
    day_ago = datetime.now(UTC) - timedelta(days=1)
    first = vault.session("s-old", source="telegram").record(
        "user", "hello from yesterday", event_id="upd-12", when=day_ago
    )
    # Age the file past the window too, as if written yesterday.
    path = vault.root / first.path
    stamp = day_ago.timestamp()
    os.utime(path, (stamp, stamp))
    vault.admin.refresh()
    before = commits(vault.root)
    again = vault.session("s-new", source="telegram").record(
        "user", "hello from yesterday", event_id="upd-12"
    )
    assert not again.was_new and again.id == first.id
    assert commits(vault.root) == before
    # The index follows edits: once the old entry is gone, the id is free again.
    vault.forget(first.id)
    assert (
        vault.session("s-new", source="telegram")
        .record("user", "hello again", event_id="upd-12")
        .was_new
    )


def test_same_content_within_five_minutes_is_dropped(vault: Vault) -> None:
    s = vault.session("s1", source="telegram", contact="telegram:9")
    first = s.record("user", "Ship it!")
    assert s.record("user", "  ship it ").id == first.id  # same content, normalised
    # A different contact, or the assistant saying it, is another event.
    other = vault.session("s1-b", source="telegram", contact="telegram:10")
    assert other.record("user", "Ship it!").was_new
    # Older than the window: recorded again.
    old = vault.session("s-old", source="cli", contact="c")
    long_ago = datetime.now(UTC) - timedelta(minutes=6)
    old.record("user", "Same words again", when=long_ago)
    assert old.record("user", "Same words again").was_new
    recent = vault.session("s-new", source="cli", contact="c")
    recent.record("user", "Fresh words", when=datetime.now(UTC) - timedelta(minutes=4))
    assert not recent.record("user", "Fresh words").was_new


def test_small_tool_output_is_fenced_in_the_session(vault: Vault) -> None:
    s = vault.session("s1")
    out = "## not a heading\n```\ncode\n```\nend"
    m = s.record_tool_output("shell", out)
    assert m.kind == "tool_output"
    block = vault.admin.store.block(m.id)
    assert block.field("tool") == "shell" and block.field("tout") is None
    assert "## not a heading" in block.text and "````" in block.text  # longer fence
    # The entry did not swallow or split anything: one more record parses cleanly.
    nxt = s.record("user", "thanks")
    assert vault.get(nxt.id).text == "thanks"


def test_large_tool_output_keeps_a_preview_and_a_key(vault: Vault) -> None:
    s = vault.session("s1", contact="ops")
    payload = "".join(f"row {i}: value\r\n" for i in range(2000)) + "TAILMARKER  \n```x"
    before = commits(vault.root)
    m = s.record_tool_output("sql", payload)
    assert commits(vault.root) == before + 1  # entry and full output in one commit
    block = vault.admin.store.block(m.id)
    key = block.field("tout")
    assert key is not None and re.fullmatch(r"tout_[0-9a-f]{20}", key)
    assert block.field("chars") == str(len(payload))
    assert len(block.text) < 1_500 and key in block.text and "TAILMARKER" not in block.text
    assert vault.sessions.read_tool_output(key) == payload  # byte for byte, CRLF and all
    changed = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == [
        "sessions/.fields/s1.md.jsonl",
        "sessions/s1.md",
        f"{TOOL_OUTPUT_DIR}/{key}.md",
    ]
    # The full text is not indexed (the preview is): nothing finds the tail.
    assert vault.recall("TAILMARKER", mode="keyword").items == []
    assert not any(p.startswith(TOOL_OUTPUT_DIR) for p in vault.admin.store.catalog.files)
    vault.reindex(full=True)
    assert not any(p.startswith(TOOL_OUTPUT_DIR) for p in vault.admin.store.catalog.files)
    assert vault.recall("row value", kinds=["tool_output"]).items[0].id == m.id
    # The same output again reuses the stored file.
    m2 = s.record_tool_output("sql", payload)
    assert vault.get(m2.id).field("tout") == key


def test_read_tool_output_errors_and_scope(tmp_path: Path, vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        vault.sessions.read_tool_output("../../etc/passwd")
    with pytest.raises(MemoryNotFoundError):
        vault.sessions.read_tool_output("tout_" + "0" * 20)
    s = vault.session("p1", scope="project:alpha")
    assert s.path == "scopes/project/alpha/sessions/p1.md"
    m = s.record_tool_output("ls", "x" * 5000)
    key = vault.get(m.id).field("tout")
    assert key is not None and m.scope == "project:alpha"
    assert vault.sessions.read_tool_output(key, scope="project:alpha") == "x" * 5000
    with pytest.raises(ScopeDeniedError):
        vault.sessions.read_tool_output(key, scope="project:beta")


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "a b", ".hidden", "x" * 200, "ok.md", "a..b"])
def test_session_ids_must_be_safe_slugs(vault: Vault, bad: str) -> None:
    with pytest.raises(InvalidInputError):
        vault.session(bad)


def test_validate_session_id_accepts_common_ids() -> None:
    for good in ("tg-123", "2026-01-05_chat", "A1.b2", "uuid-8f14e45f"):
        assert validate_session_id(good) == good


def test_bad_roles_tools_and_secrets_are_refused(vault: Vault) -> None:
    s = vault.session("s1", contact="c")
    with pytest.raises(InvalidInputError):
        s.record("narrator", "hi")
    with pytest.raises(InvalidInputError):
        s.record_tool_output("bad tool!", "x")
    with pytest.raises(InvalidInputError):
        vault.session("s1", contact="bad [contact]")
    leaked = "config: password = hunter2hunter2"
    with pytest.raises(SecretRefusedError):
        s.record_tool_output("cat", leaked)
    m = s.record_tool_output("cat", leaked, secrets="redact")
    assert "hunter2" not in (vault.root / m.path).read_text()


def test_odd_event_ids_become_a_stable_digest(vault: Vault) -> None:
    s = vault.session("s1")
    m = s.record("user", "one", event_id="weird [id]\n(with) stuff")
    event = vault.get(m.id).field("event")
    assert event is not None and event.startswith("sha1-")
    assert not s.record("user", "two", event_id="weird [id]\n(with) stuff").was_new
