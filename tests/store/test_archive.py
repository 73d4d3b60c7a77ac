"""Archive (OAK): a reversible status that hides a memory without retiring it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main
from mdmem.errors import HumanNoteError
from mdmem.mcp.tools import ALL_TOOLS, Toolset

from ..conftest import git


def test_archive_hides_from_recall_and_lists_and_unarchive_brings_it_back(vault: Vault) -> None:
    kept = vault.remember("The staging server is called bluebird.")
    old = vault.remember("The staging database password rotates on Mondays.")
    assert old.id in {h.id for h in vault.recall("staging database Mondays")}

    archived = vault.archive(old.id)

    assert archived.status == "archived"
    # Out of the reading flow, not removed: the line is in MEMORY.md's archive,
    # its status beside it.
    assert "rotates on Mondays" not in (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert archived.path == "MEMORY.earlier.md"
    assert f"rotates on Mondays. ^{old.id}" in (vault.root / archived.path).read_text("utf-8")
    record = (vault.root / ".fields/MEMORY.earlier.md.jsonl").read_text("utf-8")
    assert json.loads(record.splitlines()[-1])["status"] == "archived"
    assert old.id not in {h.id for h in vault.recall("staging database Mondays")}
    assert old.id not in {m.id for m in vault.library.list(statuses="active")}
    assert kept.id in {m.id for m in vault.library.list(statuses="active")}
    # Still there for whoever asks for inactive memories.
    found = vault.recall("staging database Mondays", include_inactive=True)
    assert old.id in {h.id for h in found}
    assert "Op: archive" in git(vault.root, "log", "-1", "--format=%B")
    # History shows the archived version, then the active one again.
    restored = vault.unarchive(old.id)
    assert restored.status == "active" and restored.path == "MEMORY.md"
    assert f"rotates on Mondays. ^{old.id}" in (vault.root / "MEMORY.md").read_text("utf-8")
    assert old.id not in (vault.root / "MEMORY.earlier.md").read_text(encoding="utf-8")
    assert [v.status for v in vault.history(old.id)] == ["active", "archived", "active"]
    assert old.id in {h.id for h in vault.recall("staging database Mondays")}


def test_archive_is_not_retirement_and_refuses_what_it_cannot_undo(vault: Vault) -> None:
    fact = vault.remember("The office plant needs water on Fridays.")
    vault.resolve(fact.id)
    with pytest.raises(InvalidInputError, match="resolved"):
        vault.archive(fact.id)  # unarchive would bring back a resolved memory
    other = vault.remember("Lunch is at noon on weekdays.")
    with pytest.raises(InvalidInputError, match="active"):
        vault.unarchive(other.id)
    vault.archive(other.id)
    # Retention redacts retired memories; an archived one is not retired.
    report = vault.admin.retention(days=0, apply=True)
    assert other.id not in {m.id for m in report.memories}
    assert "Lunch is at noon" in (vault.root / "MEMORY.earlier.md").read_text(encoding="utf-8")
    note = vault.root / "notes" / "n.md"
    note.parent.mkdir()
    note.write_text("# N\n\n## Plans\n\nPaint the fence in May.\n", encoding="utf-8")
    vault.admin.commit_human_edits()
    with pytest.raises(HumanNoteError):
        vault.archive("notes/n.md#Plans")


def test_archive_from_the_cli_and_the_tools(vault: Vault) -> None:
    fact = vault.remember("The build cache lives on the second disk.")
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(vault.root), "archive", fact.id, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["status"] == "archived"
    out = runner.invoke(main, ["--vault", str(vault.root), "unarchive", fact.id])
    assert out.exit_code == 0 and "active" in out.output

    assert {"archive", "unarchive"} <= set(ALL_TOOLS)
    tools = Toolset(vault, tools=ALL_TOOLS)
    assert tools.dispatch("archive", {"memory_id": fact.id}) == {
        "id": fact.id,
        "status": "archived",
    }
    assert tools.dispatch("recall", {"query": "build cache second disk"})["items"] == []
    assert tools.dispatch("unarchive", {"memory_id": fact.id})["status"] == "active"
    scoped = vault.remember("Bob's locker is 12.", scope="user:bob")
    denied = Toolset(vault, ["root"], tools=ALL_TOOLS).dispatch("archive", {"memory_id": scoped.id})
    assert denied["error"]["type"] == "scope_denied"
    assert vault.get(scoped.id).status == "active"


def test_an_archived_memory_is_left_out_of_lists_until_asked_for(vault: Vault) -> None:
    kept = vault.remember("The office plant needs water on Fridays.")
    hidden = vault.remember("The VPN certificate rotates on Mondays.")
    vault.archive(hidden.id)
    assert [m.id for m in vault.library.list()] == [kept.id]
    assert [m.id for m in vault.library.list(statuses="archived")] == [hidden.id]
    both = vault.library.list(statuses=["active", "archived"])
    assert {m.id for m in both} == {kept.id, hidden.id}
