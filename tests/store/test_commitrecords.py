"""Commit records: what the writer's commits did, so history questions skip the diff."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.git.history import Changes, changes_after
from mdmem.store.commitrecords import CommitRecord, Side, read_records
from mdmem.store.memories import MemoryStore

from ..conftest import git


def head(vault: Vault) -> str:
    return git(vault.root, "rev-parse", "HEAD").strip()


def every_kind_of_write(vault: Vault) -> dict[str, str]:
    """Remember, log, supersede, resolve, forget, a batch and a person's edit."""
    tea = vault.remember("The user drinks tea")
    logged = vault.log("Looked into the flaky test", category="Research")
    coffee = vault.supersede(tea.id, "The user drinks coffee")
    bug = vault.remember("Login fails on Safari", kind="bug_fix")
    vault.resolve(bug.id)
    temp = vault.remember("A temporary note")
    vault.forget(temp.id)
    with vault.batch("import") as b:
        first = b.remember("Batch fact one", scope="project:garden")
        b.remember("Batch fact two")
        b.forget(coffee.id)
    kept = vault.remember("The office opens at 9")
    path = vault.root / "MEMORY.md"
    path.write_text(path.read_text().replace("opens at 9", "opens at 8"))
    git(vault.root, "commit", "-qam", "fix opening hour", human=True)
    return {
        "tea": tea.id,
        "logged": logged.id,
        "coffee": coffee.id,
        "bug": bug.id,
        "temp": temp.id,
        "first": first.id,
        "kept": kept.id,
    }


def both_ways(store: MemoryStore, base: str) -> tuple[Changes, Changes]:
    return changes_after(store, base, "x"), changes_after(store, base, "x", records=False)


def test_each_agent_commit_keeps_what_it_did_to_which_memories(vault: Vault) -> None:
    tea = vault.remember("The user drinks tea")
    added = head(vault)
    coffee = vault.supersede(tea.id, "The user drinks coffee")
    superseded = head(vault)
    vault.forget(coffee.id)
    forgot = head(vault)
    found = read_records(vault.admin.state_dir, [added, superseded, forgot])
    assert found[added] == CommitRecord({tea.id: Side("MEMORY.md", "active")}, {})
    assert found[superseded].plus == {
        coffee.id: Side("MEMORY.md", "active"),
        # Retired: out of the reading flow, into MEMORY.md's archive.
        tea.id: Side("MEMORY.earlier.md", "superseded", coffee.id),
    }
    assert found[superseded].minus == {tea.id: Side("MEMORY.md", "active")}
    assert found[forgot].plus == {}
    assert found[forgot].minus == {coffee.id: Side("MEMORY.md", "active")}


def test_changes_from_records_are_what_the_diff_says(vault: Vault) -> None:
    start = head(vault)
    ids = every_kind_of_write(vault)
    recorded, diffed = both_ways(vault.admin.store, start)
    assert recorded == diffed
    assert {c.id for c in recorded.remembered} >= {ids["logged"], ids["bug"], ids["first"]}
    assert [f.id for f in recorded.forgotten] == [ids["temp"], ids["coffee"]]
    assert [(s.old_id, s.new_id) for s in recorded.superseded] == [(ids["tea"], ids["coffee"])]
    assert [h.memory_ids for h in recorded.human_edits] == [(ids["kept"],)]


def test_only_commits_without_a_record_are_diffed(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = head(vault)
    every_kind_of_write(vault)
    human = head(vault)
    store = vault.admin.store
    diffed: list[str] = []
    real = store.git.run_bytes

    def spy(*args: str, input: bytes | None = None, **kw: object) -> bytes:
        if "-p" in args:
            diffed.extend((input or b"").decode().split())
        return real(*args, input=input, **kw)  # type: ignore[arg-type]

    store.refresh()  # the catalog's dates from git history catch up: not this test's git
    monkeypatch.setattr(store.git, "run_bytes", spy)
    monkeypatch.setattr(store.git, "run", lambda *a, **k: pytest.fail(f"git {a}"))
    changes_after(store, start, "x")
    assert diffed == [human]  # the person's commit alone; the agent's were recorded


def test_a_lost_or_damaged_record_is_diffed_instead(vault: Vault) -> None:
    start = head(vault)
    every_kind_of_write(vault)
    store = vault.admin.store
    expected = changes_after(store, start, "x", records=False)
    db = sqlite3.connect(vault.admin.state_dir / "commits.sqlite")
    with db:
        db.execute('UPDATE records SET body=\'{"v": 1, "plus": 7}\' WHERE rowid % 2 = 0')
        db.execute("DELETE FROM records WHERE rowid % 3 = 0")
    db.close()
    assert changes_after(store, start, "x") == expected
    (vault.admin.state_dir / "commits.sqlite").write_bytes(b"not a database" * 100)
    assert changes_after(store, start, "x") == expected


def test_commits_pulled_from_another_clone_are_diffed(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "here", agent="here")
    vault.remember("A fact from here")
    git(tmp_path, "clone", "-q", str(vault.root), str(tmp_path / "there"))
    other = Vault.open(tmp_path / "there", agent="there")
    start = head(vault)
    made = [other.remember(f"Fact {n} from there") for n in range(3)]
    other.forget(made[0].id)
    other.close()
    git(vault.root, "pull", "-q", "--ff-only", str(tmp_path / "there"), "HEAD")
    recorded, diffed = both_ways(vault.admin.store, start)
    assert recorded == diffed
    assert [c.id for c in recorded.remembered] == [m.id for m in made[1:]]
    assert [c.id for c in recorded.forgotten] == [made[0].id]


def test_records_hold_no_memory_text(vault: Vault) -> None:
    tea = vault.remember("The user drinks oolong tea at dawn")
    vault.forget(tea.id)
    data = (vault.admin.state_dir / "commits.sqlite").read_bytes()
    for extra in vault.admin.state_dir.glob("commits.sqlite-*"):
        data += extra.read_bytes()
    assert tea.id.encode() in data
    assert b"oolong" not in data


def test_a_purge_drops_the_records_that_name_what_it_removed(vault: Vault) -> None:
    secret = vault.remember("The door code is 4711")
    kept = vault.remember("The office opens at 9")
    assert secret.id.encode() in (vault.admin.state_dir / "commits.sqlite").read_bytes()
    vault.git.purge(secret.id, confirm=True)
    leftovers = list(vault.admin.state_dir.glob("commits.sqlite*"))
    assert all(secret.id.encode() not in p.read_bytes() for p in leftovers)
    later = vault.remember("The office closes at 5")
    found = changes_after(vault.admin.store, None, "x")
    assert {c.id for c in found.remembered} >= {kept.id, later.id}
    assert secret.id not in {c.id for c in found.remembered}
    assert read_records(vault.admin.state_dir, [head(vault)])  # new writes record again
