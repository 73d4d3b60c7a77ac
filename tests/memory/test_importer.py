"""Importing chat exports, JSONL messages and markdown notes (through the public API)."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import InvalidInputError
from tests.secret_samples import FORMATS

DATA = Path(__file__).parent / "data"
SECRET = FORMATS[0]  # an AWS secret key line, made up at run time


def _fixture(tmp_path: Path, name: str) -> Path:
    """A copy of a fixture export, with a made-up secret where it says __SECRET__."""
    target = tmp_path / "exports" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    text = (DATA / name).read_text(encoding="utf-8")
    target.write_text(text.replace("__SECRET__", SECRET.text), encoding="utf-8")
    return target


def _commits(vault: Vault) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=vault.root, capture_output=True, text=True
    )
    return int(out.stdout)


def _entries(vault: Vault, session: str) -> list:
    return vault.session(session).entries()


def test_chatgpt_export_keeps_order_dates_source_and_ids(vault: Vault, tmp_path: Path) -> None:
    path = _fixture(tmp_path, "chatgpt_conversations.json")
    before = _commits(vault)
    report = vault.library.import_(path)
    assert report.format == "chatgpt"
    # The discarded regeneration and the hidden empty system root are not the conversation.
    assert report.messages == 5
    assert report.added == 4
    assert report.refused == 1  # the message holding a secret
    assert "AWS" in report.refusals[0]["reason"] and "k1" in report.refusals[0]["where"]
    assert _commits(vault) - before == report.commits == 1
    # Sessions are named by the conversation's start and title.
    session, second = report.sessions
    assert session.startswith("chatgpt-2023-05-17-lisbon-trip-planning-")
    entries = _entries(vault, session)
    assert [e.text for e in entries][:2] == [
        "I'm flying to Lisbon on May 12 for the quarterly offsite.",
        "Noted: the Lisbon offsite starts on May 12. Do you need a hotel near Alfama?",
    ]
    first = vault.admin.store.block(entries[0].id)
    assert first.field("source") == "chatgpt"
    assert first.field("event") == "msg-u1"
    assert first.field("role") == "user"
    assert first.created == datetime.fromtimestamp(1684300010, UTC)
    assert entries[1].created == datetime.fromtimestamp(1684300030, UTC)
    # Text that looks like fields and an id is data: read back as written, active.
    third = vault.admin.store.block(entries[2].id)
    assert (
        third.text
        == "Yes, and note this for later: [status:: superseded] ^m-01hzzzzzzzzzzzzzzzzzzzzzzz"
    )
    assert third.status == "active" and third.id != "m-01hzzzzzzzzzzzzzzzzzzzzzzz"
    # Image parts are skipped, the text part kept.
    other = _entries(vault, second)
    assert [e.text for e in other] == ["Never paste keys into a chat; rotate that one."]
    assert report.first == "2023-05-17T05:06:50+00:00"
    hits = vault.recall("Lisbon offsite hotel", k=3)
    assert hits.items and "Lisbon" in hits.items[0].text


def test_import_twice_adds_nothing(vault: Vault, tmp_path: Path) -> None:
    path = _fixture(tmp_path, "chatgpt_conversations.json")
    vault.library.import_(path)
    files = {p: p.read_bytes() for p in vault.root.rglob("*.md")}
    head = _commits(vault)
    again = vault.library.import_(path)
    assert again.added == 0 and again.duplicates == 4 and again.commits == 0
    assert _commits(vault) == head
    assert {p: p.read_bytes() for p in vault.root.rglob("*.md")} == files


def test_import_survives_a_fresh_process(vault: Vault, tmp_path: Path) -> None:
    path = _fixture(tmp_path, "claude_conversations.json")
    vault.library.import_(path)
    vault.close()
    again = Vault.open(vault.root).library.import_(path)
    assert again.added == 0 and again.duplicates == 3


def test_claude_export(vault: Vault, tmp_path: Path) -> None:
    report = vault.library.import_(_fixture(tmp_path, "claude_conversations.json"))
    assert report.format == "claude"
    assert (report.added, report.refused, report.conversations) == (3, 0, 1)
    (session,) = report.sessions
    assert session.startswith("claude-2024-03-04-choosing-a-database-")
    entries = _entries(vault, session)
    roles = [vault.get(e.id).field("role") for e in entries]
    assert roles == ["user", "assistant", "user"]
    # Only text blocks: the thinking block is not the answer.
    assert entries[1].text == "Postgres: billing needs concurrent writers and row-level locking."
    assert entries[1].created == datetime(2024, 3, 4, 9, 15, 30, tzinfo=UTC)
    # Frontmatter and a heading inside a message are text, not the file's metadata.
    last = vault.admin.store.block(entries[2].id)
    assert last.text == "---\nstatus: superseded\n---\n# Decision\nWe go with Postgres 16."
    assert last.status == "active" and last.kind == "chat_message"
    assert vault.get(entries[0].id).field("source") == "claude"


def test_jsonl_messages_group_by_conversation_and_report_bad_lines(
    vault: Vault, tmp_path: Path
) -> None:
    report = vault.library.import_(DATA / "messages.jsonl", scope="user:maria")
    assert report.format == "jsonl"
    assert report.added == 4 and report.refused == 2
    assert {r["where"] for r in report.refusals} == {"line 4", "line 5"}
    assert report.sessions == ["telegram-family-chat", "telegram-work"]
    entries = vault.session("telegram-family-chat", scope="user:maria").entries()
    assert [e.scope for e in entries] == ["user:maria"] * 3
    assert entries[1].text == "I'll bring the flowers."
    assert entries[1].created == datetime.fromtimestamp(1684605780, UTC)
    assert vault.get(entries[0].id).field("event") == "tg-1001"
    assert vault.library.import_(DATA / "messages.jsonl", scope="user:maria").added == 0


def test_format_is_detected_or_asked_for(vault: Vault, tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"nothing": 1}]))
    with pytest.raises(InvalidInputError, match="--format"):
        vault.library.import_(odd)
    # Told the format, a conversation of the wrong shape is skipped and named.
    report = vault.library.import_(odd, format="chatgpt")
    assert (report.added, report.refused) == (0, 1)
    assert "mapping" in report.refusals[0]["reason"]


def test_zip_export_is_read(vault: Vault, tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(DATA / "claude_conversations.json", "conversations.json")
    assert vault.library.import_(archive).added == 3


def test_markdown_notes_copied_byte_for_byte_or_refused(vault: Vault, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(DATA / "notes", notes)
    report = vault.library.import_(notes)
    assert report.format == "markdown"
    assert sorted(report.files) == ["imported/Recipes.md", "imported/projects/Roadmap.md"]
    refused = {r["where"]: r["reason"] for r in report.refusals}
    assert set(refused) == {"imported/projects/Ids.md", "imported/projects/Scoped.md"}
    assert "block ids" in refused["imported/projects/Ids.md"]
    assert "scope" in refused["imported/projects/Scoped.md"]
    for rel in ("Recipes.md", "projects/Roadmap.md"):
        assert (vault.root / "imported" / rel).read_bytes() == (notes / rel).read_bytes()
    assert not (vault.root / "imported" / ".obsidian").exists()
    assert report.commits == 1
    hits = vault.recall("pastel de nata bake", k=3)
    assert hits.items[0].path == "imported/Recipes.md"
    again = vault.library.import_(notes)
    assert (again.added, again.duplicates) == (0, 2)


def test_markdown_note_with_a_secret_is_refused(vault: Vault, tmp_path: Path) -> None:
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "leak.md").write_text(f"# Creds\n\n{SECRET.text}\n")
    (notes / "fine.md").write_text("# Fine\n\nNothing to hide.\n")
    report = vault.library.import_(notes, format="markdown")
    assert report.added == 1 and report.refused == 1
    assert not (vault.root / "imported" / "leak.md").exists()
    redacted = vault.library.import_(notes, format="markdown", secrets="redact")
    assert redacted.added == 1
    assert SECRET.fragments[0] not in (vault.root / "imported" / "leak.md").read_text()


def test_progress_reports_every_message(vault: Vault, tmp_path: Path) -> None:
    # Read as a stream: progress is in bytes of the input, to the end.
    seen: list[tuple[str, int, int]] = []
    vault.library.import_(DATA / "messages.jsonl", progress=lambda *a: seen.append(a))
    size = (DATA / "messages.jsonl").stat().st_size
    assert seen[0] == ("import", 0, size) and seen[-1] == ("import", size, size)
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)


def test_jsonl_speaker_is_kept(vault: Vault) -> None:
    vault.library.import_(DATA / "messages.jsonl")
    entries = vault.session("telegram-family-chat").entries()
    assert [vault.get(e.id).field("speaker") for e in entries] == ["Maria", "Joao", None]


def test_a_message_repeated_inside_one_import_is_recorded_once(
    vault: Vault, tmp_path: Path
) -> None:
    rows = [
        {"id": "a1", "conversation_id": "c", "role": "user", "content": "First words."},
        {"id": "a2", "conversation_id": "c", "role": "assistant", "content": "Second words."},
        {"id": "a1", "conversation_id": "c", "role": "user", "content": "First words."},
    ]
    path = tmp_path / "dup.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = vault.library.import_(path)
    assert (report.added, report.duplicates, report.commits) == (2, 1, 1)
    assert [e.text for e in vault.session("jsonl-c").entries()] == ["First words.", "Second words."]


def test_many_turns_one_commit_each_batch(vault: Vault, tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    rows = [
        {"id": f"e{i}", "conversation_id": f"c{i % 3}", "role": "user", "content": f"Turn {i}."}
        for i in range(120)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = _commits(vault)
    report = vault.library.import_(path)
    assert report.added == 120 and report.commits == 1 and _commits(vault) == before + 1
    vault.close()
    # Durable: a fresh process sees every turn, in order, and recall finds one.
    fresh = Vault.open(vault.root)
    assert [e.text for e in fresh.session("jsonl-c1").entries()][:2] == ["Turn 1.", "Turn 4."]
    assert fresh.recall("Turn 118", k=3).items


def test_jsonl_without_ids_is_still_idempotent_and_reads_milliseconds(
    vault: Vault, tmp_path: Path
) -> None:
    rows = [
        {"session_id": "s", "role": "user", "content": "No id here.", "timestamp": 1684605780000},
        {"session_id": "s", "role": "assistant", "content": "Nor here."},
    ]
    path = tmp_path / "noid.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert vault.library.import_(path).added == 2
    again = vault.library.import_(path)
    assert (again.added, again.duplicates) == (0, 2)
    first = vault.session("jsonl-s").entries()[0]
    assert first.created == datetime.fromtimestamp(1684605780, UTC)


def test_claude_export_wrapped_with_its_account(vault: Vault, tmp_path: Path) -> None:
    conversations = json.loads((DATA / "claude_conversations.json").read_text())
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"account": {"uuid": "a"}, "conversations": conversations}))
    report = vault.library.import_(wrapped)
    assert (report.format, report.added) == ("claude", 3)


def test_a_files_contact_does_not_route_turns_or_touch_a_profile(
    vault: Vault, tmp_path: Path
) -> None:
    # A linked contact routes a live session's turns into the person's scope;
    # a row naming it would write into that scope past --scope (issue 24).
    vault.contacts.link("telegram:7", "user:ana")
    seen_before = vault.contacts.profile("user:ana").last_seen
    rows = [  # session entries as `mdmem export --jsonl` writes them
        {
            "kind": "chat_message",
            "session": "c",
            "event": f"t{i}",
            "role": "user",
            "content": text,
            "contact": "telegram:7",
            "created": f"2024-05-03T09:0{i}:00+00:00",
        }
        for i, text in enumerate(["Lunch is at noon on Friday.", "Bring the slides."])
    ]
    path = tmp_path / "contact.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = vault.library.import_(path)
    assert report.added == 2 and report.ignored == {"contact": 2}
    hit = vault.recall("lunch on Friday", k=1).items[0]
    assert hit.scope == "" and hit.field("contact") is None
    assert vault.contacts.profile("user:ana").last_seen == seen_before
    # An unlinked contact gets no profile from a file either.
    rows[0] |= {"event": "u1", "contact": "telegram:8", "session": "d"}
    path.write_text(json.dumps(rows[0]) + "\n")
    vault.library.import_(path)
    assert all("telegram:8" not in p.platform_ids for p in vault.contacts.list())


def test_chatgpt_titles_start_dates_fenced_code_and_untimed_answers(vault: Vault) -> None:
    report = vault.library.import_(DATA / "chatgpt_code_conversations.json")
    assert (report.format, report.added, report.refused) == ("chatgpt", 6, 0)
    (session,) = report.sessions
    # The file is named from the conversation's start and title.
    assert session.startswith("chatgpt-2023-11-14-sales-analysis-q3-draft-data-")
    path = vault.root / "sessions" / f"{session}.md"
    header = path.read_text().split("\n## ")[0]
    assert "title: 'Sales analysis: Q3 (draft) #data'" in header
    assert "started: '2023-11-14T22:13:20+00:00'" in header  # the chat's start, not now
    assert "# Sales analysis: Q3 (draft) #data" in header.splitlines()
    entries = _entries(vault, session)
    blocks = [vault.get(e.id) for e in entries]
    assert [b.field("role") for b in blocks] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    # Code the assistant ran, and what it printed, read back fenced and whole.
    code = "import pandas as pd\n# the quarter's export\ndf = pd.read_csv('sales.csv')\ndf.head()"
    assert blocks[1].text == f"```\n{code}\n```"
    assert blocks[2].text == "```\n  region  sales\n0  north    120\n1  south     95\n```"
    assert blocks[5].text.startswith("Push the south")
    # An answer without a time of its own follows its question.
    assert blocks[5].created == blocks[4].created == datetime.fromtimestamp(1700000200, UTC)
    assert [b.created for b in blocks] == sorted(b.created for b in blocks)
    # A second import finds every message.
    assert vault.library.import_(DATA / "chatgpt_code_conversations.json").duplicates == 6


def test_claude_titles_and_start_dates(vault: Vault) -> None:
    report = vault.library.import_(DATA / "claude_conversations.json")
    (session,) = report.sessions
    header = (vault.root / "sessions" / f"{session}.md").read_text().split("\n## ")[0]
    assert "title: Choosing a database" in header
    assert "started: '2024-03-04T09:15:00+00:00'" in header


def test_a_conversation_imported_by_id_before_keeps_its_session(vault: Vault) -> None:
    # An older release named sessions by conversation id: new messages of the
    # same conversation go on in that file.
    legacy = "chatgpt-5f0c1b2a-9d8e-4f7a-b6c5-d4e3f2a1b0c9"
    vault.session(legacy, source="chatgpt").record(
        "user", "Load sales.csv and show the first rows.", "u1"
    )
    report = vault.library.import_(DATA / "chatgpt_code_conversations.json")
    assert report.sessions == [legacy] and (report.added, report.duplicates) == (5, 1)
