"""``export_jsonl``: its rows and files, and the round trip export → restore into a fresh vault."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from mdmem import Vault
from mdmem.files.sidecar import is_sidecar
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


def _dump(vault: Vault) -> tuple[dict, list[dict], dict[str, str], dict]:
    """(header, memory rows, {path: text} of the file rows, trailer)."""
    out = io.StringIO()
    count = vault.library.export(out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    header, *body, trailer = lines
    rows = [r for r in body if "kind" in r]
    files = {r["file"]: r["text"] for r in body if "file" in r}
    assert len(rows) == count and len(rows) + len(files) == len(body)
    return header, rows, files, trailer


def _export(vault: Vault) -> list[dict]:
    return _dump(vault)[1]


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
    """The hits that match the query, in order: those with at least a tenth of
    the best relevance. Weaker ones (a date word of the index-only context,
    "Friday" for a lunch query) may swap places with the keyword index's
    statistics, which count the versions a vault's history indexed and
    deleted: a restored vault has the same files, not the same past."""
    best = max((h.scores.get("relevance", h.score) for h in hits), default=0.0)
    return [h.text for h in hits if h.scores.get("relevance", h.score) >= best / 10]


def test_export_has_a_header_its_files_and_a_trailer(vault: Vault) -> None:
    import hashlib

    _fill(vault)
    out = io.StringIO()
    vault.library.export(out)
    lines = out.getvalue().splitlines(keepends=True)
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])
    assert header["mdmem_export"] == 2 and header["vault"] == "vault" and header["head"]
    assert trailer["mdmem_export_end"] == 2 and trailer["rows"] == len(lines) - 1
    assert trailer["sha256"] == hashlib.sha256("".join(lines[:-1]).encode()).hexdigest()
    _, rows, files, _ = _dump(vault)
    assert trailer["memories"] == len(rows) and trailer["files"] == len(files)
    # The knowledge, not the settings: every file a memory lives in, the full
    # tool output, and none of mdmem.toml, .obsidian or templates.
    assert {r["path"] for r in rows} <= set(files)
    assert any(p.startswith("tool-outputs/") for p in files)
    # What mdmem knows of each line, beside its note, goes too: a restore needs it.
    assert {p for p in files if p.startswith(".")} == {".fields/MEMORY.md.jsonl"} or all(
        is_sidecar(p) for p in files if p.startswith(".")
    )
    assert ".fields/MEMORY.md.jsonl" in files
    assert not any(p.startswith("templates/") or p == "mdmem.toml" for p in files)
    assert files["MEMORY.md"] == (vault.root / "MEMORY.md").read_text()
    # mdmem's own frontmatter of a full tool output (`key: tout_…`) is no secret.
    for path, text in files.items():
        assert text == (vault.root / path).read_text(), path


def test_round_trip_into_a_fresh_vault(vault: Vault, tmp_path: Path) -> None:
    _fill(vault)
    _, rows, files, _ = _dump(vault)
    dump = tmp_path / "export.jsonl"
    with dump.open("w") as out:
        vault.library.export(out)
    fresh = Vault.init(tmp_path / "fresh", agent="test-agent")
    report = fresh.library.import_(dump, restore=True)
    assert report.refused == 0, report.refusals
    assert report.added == len(rows) and report.source_vault == "vault"
    _, again, again_files, _ = _dump(fresh)
    assert again == rows and again_files == files
    before = {_key(r): _meta(r) for r in rows}
    assert {_key(r): _meta(r) for r in again} == before
    for query in ("deploy day", "Friday lunch", "database choice", "units"):
        want = _matches(vault.recall(query, k=3).items)
        got = _matches(fresh.recall(query, k=3).items)
        assert want and got == want, query
    # Restoring the export again adds nothing.
    twice = fresh.library.import_(dump, restore=True)
    assert (twice.added, twice.duplicates, twice.commits) == (0, len(rows), 0)
    assert len(_export(fresh)) == len(rows)


def test_export_reports_progress(vault: Vault) -> None:
    _fill(vault)
    seen: list[tuple[str, int, int]] = []
    count = vault.library.export(io.StringIO(), progress=lambda *a: seen.append(a))
    rows = [s for s in seen if s[0] == "export"]
    assert rows[0] == ("export", 0, count) and rows[-1] == ("export", count, count)
    files = [s for s in seen if s[0] == "export files"]
    assert files[-1][1] == files[-1][2] > 0


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
    # One row a file, imported as untrusted rows: the second import meets the
    # first's memory in the vault, and a file's memory retires nothing.
    for n, row in enumerate(rows):
        part = tmp_path / f"part{n}.jsonl"
        part.write_text(json.dumps(row) + "\n")
        fresh.library.import_(part)
    assert sorted(r["status"] for r in _export(fresh)) == ["active", "active"]
