"""``export_jsonl`` and the round trip export → import into a fresh vault."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from mdmem import Vault
from mdmem.models import Hit

_SYSTEM = {"created", "kind", "event", "status", "by"}


def _fill(vault: Vault) -> None:
    with vault.batch("seed"):
        vault.remember("The user prefers metric units.", kind="preference", tags=["units"])
        vault.remember(
            "Deploys go out on Tuesdays.",
            tags=["ops"],
            scope="project:web",
            fields=[("owner", "ana")],
            created="2024-02-01T10:00:00+00:00",
        )
        vault.remember("The staging database is db-2.", kind="world")
        vault.remember("We chose Postgres over SQLite.", kind="decision", tags=["db"])
    old = vault.remember("The launch is in April.")
    vault.resolve(old.id)
    vault.log("Rotated the on-call roster.", category="Ops")
    vault.journal("I should ask before deleting branches.")
    vault.learn("Git", "Rebase keeps history linear.")
    chat = vault.session("team-chat", source="slack")
    chat.record(
        "user",
        "Lunch is at noon on Friday.",
        "ev-1",
        speaker="Ana",
        when=datetime(2024, 5, 3, 9, 0, tzinfo=UTC),
    )
    chat.record(
        "assistant", "Noted, Friday noon.", "ev-2", when=datetime(2024, 5, 3, 9, 1, tzinfo=UTC)
    )
    vault.session("plain").record("user", "A session without a source [status:: resolved].")
    ops = vault.session("ops", source="cli", contact="telegram:42", scope="project:web")
    ops.record("user", "Is the build green?", "o-1", when=datetime(2024, 5, 3, 10, 0, tzinfo=UTC))
    ops.record_tool_output(
        "pytest", "12 passed in 0.3s", when=datetime(2024, 5, 3, 10, 1, tzinfo=UTC)
    )
    big = "".join(f"compiling unit {i}\n" for i in range(3000))
    ops.record_tool_output("make", big, when=datetime(2024, 5, 3, 10, 2, tzinfo=UTC))


def _export(vault: Vault) -> list[dict]:
    out = io.StringIO()
    count = vault.library.export(out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(rows) == count
    return rows


def _key(row: dict) -> tuple:
    return (row["kind"], row["scope"], row["text"])


def _meta(row: dict) -> dict:
    fields = sorted((k, v) for k, v in row["fields"] if k not in _SYSTEM)
    return {
        "status": row["status"],
        "tags": sorted(row["tags"]),
        "fields": fields,
        "session": row.get("session"),
        "role": row.get("role"),
        "source": row.get("source"),
        "speaker": row.get("speaker"),
        "contact": row.get("contact"),
        "output": row.get("output"),
        "path": row["path"],
        "heading": row["heading"] if row["kind"] in ("learning",) else None,
    }


def test_export_rows_carry_metadata(vault: Vault) -> None:
    _fill(vault)
    rows = {r["text"]: r for r in _export(vault)}
    deploy = rows["Deploys go out on Tuesdays. #ops"]
    assert deploy["scope"] == "project:web" and deploy["tags"] == ["ops"]
    assert ["owner", "ana"] in deploy["fields"]
    assert deploy["created"] == "2024-02-01T10:00:00+00:00"
    assert rows["The launch is in April."]["status"] == "resolved"
    lunch = rows["Lunch is at noon on Friday."]
    assert (lunch["session"], lunch["role"], lunch["source"], lunch["event"]) == (
        "team-chat",
        "user",
        "slack",
        "ev-1",
    )
    assert lunch["created"] == "2024-05-03T09:00:00+00:00"
    assert {"id", "kind", "path", "line", "updated"} <= set(deploy)
    outputs = {r["tool"]: r for r in rows.values() if r["kind"] == "tool_output"}
    assert outputs["pytest"]["output"] == "12 passed in 0.3s"
    assert outputs["make"]["output"].startswith("compiling unit 0\n")
    assert len(outputs["make"]["output"]) > len(
        outputs["make"]["text"]
    )  # the whole, not the preview
    assert outputs["make"]["scope"] == "project:web" and outputs["make"]["contact"] == "telegram:42"


def _matches(hits: list[Hit]) -> list[str]:
    """The hits that match the query, in order: those scoring at least a tenth
    of the best. Weaker ones (a date word of the index-only context, "Friday"
    for a lunch query) may swap places with the keyword index's statistics,
    which an import does not reproduce byte for byte (new ids, an explicit
    ``created`` field on each memory)."""
    best = max((h.score for h in hits), default=0.0)
    return [h.text for h in hits if h.score >= best / 10]


def test_round_trip_into_a_fresh_vault(vault: Vault, tmp_path: Path) -> None:
    _fill(vault)
    rows = _export(vault)
    dump = tmp_path / "export.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fresh = Vault.init(tmp_path / "fresh", agent="test-agent")
    report = fresh.library.import_(dump)
    assert report.refused == 0, report.refusals
    assert report.added == len(rows)
    again = _export(fresh)
    before = {_key(r): _meta(r) for r in rows}
    after = {_key(r): _meta(r) for r in again}
    assert after == before
    dates = {_key(r): r["created"] for r in rows if r["kind"] in ("fact", "chat_message")}
    assert {_key(r): r["created"] for r in again if _key(r) in dates} == dates
    for query in ("deploy day", "Friday lunch", "database choice", "units"):
        want = _matches(vault.recall(query, k=3).items)
        got = _matches(fresh.recall(query, k=3).items)
        assert want and got == want, query
    # Importing the export again adds nothing.
    assert fresh.library.import_(dump).added == 0
    assert len(_export(fresh)) == len(rows)


def test_export_reports_progress(vault: Vault) -> None:
    _fill(vault)
    seen: list[tuple[str, int, int]] = []
    count = vault.library.export(io.StringIO(), progress=lambda *a: seen.append(a))
    assert seen[0] == ("export", 0, count) and seen[-1] == ("export", count, count)


def test_import_of_an_export_keeps_its_statuses(vault: Vault, tmp_path: Path) -> None:
    # Two active memories on one subject (a person typed the second by hand):
    # auto-resolve would retire the older one if they were remembered anew.
    vault.remember("The launch is on May 12.")
    memory_md = vault.root / "MEMORY.md"
    hand = "- The launch is on May 19. ^m-01hhand00000000000000000000\n"
    memory_md.write_text(memory_md.read_text() + hand)
    vault.admin.commit_human_edits()
    rows = _export(vault)
    assert sorted(r["status"] for r in rows) == ["active", "active"]
    fresh = Vault.init(tmp_path / "fresh", agent="test-agent")
    # One row a file: the second import meets the first's memory in the vault.
    for n, row in enumerate(rows):
        part = tmp_path / f"part{n}.jsonl"
        part.write_text(json.dumps(row) + "\n")
        fresh.library.import_(part)
    assert sorted(r["status"] for r in _export(fresh)) == ["active", "active"]
