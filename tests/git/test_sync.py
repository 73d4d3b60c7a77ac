"""mdmem sync: real bare remote + two clones, union logs, ledger merges, real conflicts."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import ConfigError, GitError, Vault
from mdmem.cli import main
from mdmem.errors import ConflictError
from mdmem.files.blocks import parse
from mdmem.files.textfile import decode
from mdmem.git.merge_driver import merge_texts
from mdmem.git.sync import sync

from ..conftest import git
from ..secret_samples import FORMATS

WHEN = datetime(2026, 1, 15, 10, 0)
DAILY = "daily/2026-01-15.md"
MARKERS = ("<<<<<<<", ">>>>>>>", "\n=======\n")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    return bare


@pytest.fixture
def pair(tmp_path: Path, remote: Path) -> tuple[Vault, Vault]:
    a = Vault.init(tmp_path / "a", agent="agent-a")
    git(a.root, "remote", "add", "origin", str(remote))
    first = sync(a.admin.store)
    assert first.ok and first.pushed == 1 and first.pulled == 0
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "b"))
    b = Vault.open(tmp_path / "b", agent="agent-b")
    return a, b


def memory_ids(vault: Vault, rel: str) -> list[str]:
    parsed = parse(rel, decode((vault.root / rel).read_bytes()))
    return [b.id for b in parsed.blocks if b.is_memory]


def head(vault: Vault) -> str:
    return git(vault.root, "rev-parse", "HEAD").strip()


def assert_clean(vault: Vault) -> None:
    assert git(vault.root, "status", "--porcelain") == ""
    assert not (vault.root / ".git" / "rebase-merge").exists()


# ------------------------------------------------------------------ basics ----


def test_no_remote_is_a_clear_error(vault: Vault) -> None:
    with pytest.raises(ConfigError, match="no git remote 'origin'"):
        sync(vault.admin.store)


def test_unreachable_remote_leaves_the_vault_as_it_was(vault: Vault, tmp_path: Path) -> None:
    git(vault.root, "remote", "add", "origin", str(tmp_path / "missing.git"))
    vault.remember("Something local")
    before = head(vault)
    with pytest.raises(GitError, match="fetch"):
        sync(vault.admin.store)
    assert head(vault) == before
    assert_clean(vault)


def test_a_clone_pulls_what_the_other_pushed(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    fact = a.remember("The staging server is called blue-falcon", kind="world")
    pushed = sync(a.admin.store)
    assert (pushed.pulled, pushed.pushed) == (0, 1)
    pulled = sync(b.admin.store)
    assert pulled.ok and (pulled.pulled, pulled.pushed) == (1, 0)
    assert [(c.status, c.path) for c in pulled.changed_paths] == [("M", "WORLD.md")]
    assert b.get(fact.id).text == "The staging server is called blue-falcon"
    assert head(a) == head(b)
    # the rebase kept the agent as author of its commit
    assert git(b.root, "log", "-1", "--format=%an <%ae>") == "agent-a <agent-a@agents.mdmem>\n"


def test_pull_only_does_not_push(pair: tuple[Vault, Vault], remote: Path) -> None:
    a, _b = pair
    before = git(remote, "rev-parse", "main")
    a.remember("Local only for now")
    result = sync(a.admin.store, push=False)
    assert result.ok and result.pushed == 0
    assert git(remote, "rev-parse", "main") == before


def test_pending_human_edits_are_committed_and_pushed(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    with (a.root / "notes.md").open("w") as handle:
        handle.write("# Notes\n\nA human wrote this.\n")
    sync(a.admin.store)
    sync(b.admin.store)
    assert (b.root / "notes.md").read_text() == "# Notes\n\nA human wrote this.\n"
    author = git(b.root, "log", "-1", "--format=%ae", "--", "notes.md").strip()
    assert not author.endswith("@agents.mdmem")


def test_a_secret_typed_by_hand_is_never_pushed(pair: tuple[Vault, Vault], remote: Path) -> None:
    token = next(s for s in FORMATS if s.name == "GitLab token")
    a, b = pair
    b.remember("The user prefers metric units.")
    sync(b.admin.store)
    a.remember("Deploys happen on Fridays.")
    (a.root / "notes.md").write_text(f"# Notes\n\nThe CI token: {token.text}\n")
    with pytest.raises(ConflictError, match=r"notes.md line 3 \(GitLab token\).*remove it"):
        sync(a.admin.store)  # a pull needs a clean tree: the file keeps what git lacks
    everything = git(remote, "log", "--all", "-p")
    assert not any(f in everything for f in token.fragments)
    (a.root / "notes.md").write_text("# Notes\n\nThe CI token is in the password manager.\n")
    assert sync(a.admin.store).ok
    assert_clean(a)


# ------------------------------------------------------------------ merges ----


def test_both_clones_create_the_same_daily_log(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    # Same day, same minute, same category: the case git's union driver gets wrong.
    ma = a.log("Agent A looked at the logs", when=WHEN)
    mb = b.log("Agent B rotated the keys", when=WHEN)
    sync(a.admin.store)
    result = sync(b.admin.store)
    assert result.ok and result.pulled == 1 and result.pushed == 1
    sync(a.admin.store)
    text = (b.root / DAILY).read_text()
    assert not any(marker in text for marker in MARKERS)
    assert text.count("# Daily log 2026-01-15") == 1
    assert sorted(memory_ids(b, DAILY)) == sorted([ma.id, mb.id])
    assert (a.root / DAILY).read_text() == text
    assert b.get(ma.id).text == "Agent A looked at the logs"


@pytest.mark.slow
def test_two_clones_append_100_entries_each_and_all_survive(pair: tuple[Vault, Vault]) -> None:
    """The issue's check: 2 x 100 daily-log entries, synced in turns, none lost."""
    a, b = pair
    written: set[str] = set()
    for round_ in range(10):
        for n in range(10):
            written.add(a.log(f"A entry {round_}-{n}", when=WHEN).id)
            written.add(b.log(f"B entry {round_}-{n}", when=WHEN).id)
        assert sync(a.admin.store).ok
        assert sync(b.admin.store).ok
    assert sync(a.admin.store).ok
    assert len(written) == 200
    for vault in (a, b):
        text = (vault.root / DAILY).read_text()
        assert not any(marker in text for marker in MARKERS)
        ids = memory_ids(vault, DAILY)
        assert len(ids) == len(set(ids)) == 200
        assert set(ids) == written
        assert_clean(vault)
    assert (a.root / DAILY).read_text() == (b.root / DAILY).read_text()
    assert head(a) == head(b)
    for memory_id in list(written)[:5]:
        assert b.get(memory_id).kind == "log"


def test_two_agents_remembering_different_facts_merge(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    fa = a.remember("The user lives in Lisbon")
    fb = b.remember("The user's cat is called Miso")
    sync(a.admin.store)
    result = sync(b.admin.store)
    assert result.ok
    sync(a.admin.store)
    for vault in (a, b):
        text = (vault.root / "MEMORY.md").read_text()
        assert not any(marker in text for marker in MARKERS)
        assert set(memory_ids(vault, "MEMORY.md")) == {fa.id, fb.id}
    assert (a.root / "MEMORY.md").read_text() == (b.root / "MEMORY.md").read_text()


def test_resolve_on_one_side_and_append_on_the_other(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    shared = a.log("Deploy is blocked on review", when=WHEN)
    sync(a.admin.store)
    sync(b.admin.store)
    a.resolve(shared.id)
    later = b.log("Another entry after it", when=WHEN)
    sync(a.admin.store)
    assert sync(b.admin.store).ok
    assert b.get(shared.id).status == "resolved"
    assert b.get(later.id).text == "Another entry after it"


# -------------------------------------------------------------- conflicts ----


def _edit_line(vault: Vault, old: str, new: str) -> None:
    path = vault.root / "MEMORY.md"
    path.write_text(path.read_text().replace(old, new))


def test_a_real_conflict_is_reported_with_both_versions(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    fact = a.remember("The office opens at 9")
    sync(a.admin.store)
    sync(b.admin.store)
    _edit_line(a, "opens at 9", "opens at 8")  # a person on machine A
    assert sync(a.admin.store).ok
    _edit_line(b, "opens at 9", "opens at 10")  # another person on machine B
    result = sync(b.admin.store)
    assert not result.ok
    assert [c.path for c in result.conflicts] == ["MEMORY.md"]
    conflict = result.conflicts[0]
    assert conflict.ours is not None and "opens at 10" in conflict.ours
    assert conflict.theirs is not None and "opens at 8" in conflict.theirs
    assert conflict.base is not None and "opens at 9" in conflict.base
    # nothing lost, nothing half-done: B is exactly as before the sync (its edit committed)
    assert (result.pulled, result.pushed) == (0, 0)
    assert result.old_head == result.new_head == head(b)
    assert "opens at 10" in (b.root / "MEMORY.md").read_text()
    assert not any(marker in (b.root / "MEMORY.md").read_text() for marker in MARKERS)
    assert_clean(b)
    assert b.get(fact.id).text == "The office opens at 10"
    # the human's edit is committed on B as the human, not lost
    assert not git(b.root, "log", "-1", "--format=%ae").strip().endswith("@agents.mdmem")


def test_the_cli_prints_conflicting_paths_and_exits_non_zero(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    a.remember("The office opens at 9")
    sync(a.admin.store)
    sync(b.admin.store)
    _edit_line(a, "opens at 9", "opens at 8")
    sync(a.admin.store)
    _edit_line(b, "opens at 9", "opens at 10")
    runner = CliRunner()
    result = runner.invoke(main, ["--vault", str(b.root), "git", "sync"])
    assert result.exit_code == 3
    assert "MEMORY.md" in result.output
    as_json = runner.invoke(main, ["--vault", str(b.root), "git", "sync", "--json"])
    assert as_json.exit_code == 3
    data = json.loads(as_json.stdout)
    assert data["conflicts"][0]["path"] == "MEMORY.md"
    assert "opens at 8" in data["conflicts"][0]["theirs"]


def test_cli_sync_json_shape(pair: tuple[Vault, Vault]) -> None:
    a, b = pair
    a.remember("CLI sync works")
    result = CliRunner().invoke(main, ["--vault", str(a.root), "git", "sync", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {
        "remote", "branch", "pulled", "pushed", "conflicts", "changed_paths",
        "old_head", "new_head", "forced",
    }  # fmt: skip
    assert data["pushed"] == 1 and data["conflicts"] == []
    text = CliRunner().invoke(main, ["--vault", str(b.root), "git", "sync"])
    assert text.exit_code == 0 and "pulled 1" in text.output and "M MEMORY.md" in text.output


# ------------------------------------------------------------ merge driver ----


def test_merge_keeps_entries_with_identical_headings() -> None:
    base = ""
    ours = (
        "# Daily log\n\n## 10:00 · Note\nfoo ^m-0000000001\n\n## 10:00 · Note\nfoo2 ^m-0000000003\n"
    )
    theirs = "# Daily log\n\n## 10:00 · Note\nbar ^m-0000000002\n"
    merged = merge_texts(base, ours, theirs, "daily/2026-01-15.md")
    assert merged == ours + "\n## 10:00 · Note\nbar ^m-0000000002\n"


def test_merge_refuses_when_one_block_changed_on_both_sides() -> None:
    base = "# Memory\n\n- a ^m-0000000001\n"
    ours = "# Memory\n\n- a, said ours ^m-0000000001\n"
    theirs = "# Memory\n\n- a, said theirs ^m-0000000001\n"
    assert merge_texts(base, ours, theirs, "MEMORY.md", "default") is None
    assert merge_texts(base, ours, theirs, "daily/x.md", "union") is None


def test_merge_respects_a_one_sided_removal_and_keeps_both_additions() -> None:
    base = "# Memory\n\n- old ^m-0000000001\n- keep ^m-0000000002\n"
    ours = "# Memory\n\n- keep ^m-0000000002\n- mine ^m-0000000003\n"
    theirs = "# Memory\n\n- old ^m-0000000001\n- keep ^m-0000000002\n- yours ^m-0000000004\n"
    merged = merge_texts(base, ours, theirs, "MEMORY.md", "default")
    assert (
        merged == "# Memory\n\n- keep ^m-0000000002\n- mine ^m-0000000003\n- yours ^m-0000000004\n"
    )


def test_ledger_merge_refuses_when_both_sides_changed_free_text() -> None:
    base = "# Memory\n\nIntro.\n\n- a ^m-0000000001\n"
    ours = "# Memory\n\nIntro, by ours.\n\n- a ^m-0000000001\n- b ^m-0000000002\n"
    theirs = "# Memory\n\nIntro, by theirs.\n\n- a ^m-0000000001\n- c ^m-0000000003\n"
    assert merge_texts(base, ours, theirs, "MEMORY.md", "default") is None


# ---------------------------------------------------------- races, failures ----


def test_a_push_race_is_retried(
    pair: tuple[Vault, Vault], tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "c"))
    c = Vault.open(tmp_path / "c", agent="agent-c")
    real_execute = a.admin.store.git.execute
    calls = []

    def fetch_then_someone_pushes(*args: str, **kwargs: Any) -> tuple[int, str, str]:
        result = real_execute(*args, **kwargs)
        if args[0] != "fetch":
            return result
        calls.append(args)
        if len(calls) == 1:  # C pushes between A's fetch and A's push
            c.remember("C got there first")
            assert sync(c.admin.store).ok
        return result

    monkeypatch.setattr(a.admin.store.git, "execute", fetch_then_someone_pushes)
    mine = a.remember("A pushes second")
    result = sync(a.admin.store)
    assert result.ok and len(calls) == 2 and result.pulled == 1 and result.pushed == 1
    monkeypatch.undo()
    sync(b.admin.store)
    texts = {m.text for m in b.library.list()}
    assert {"C got there first", "A pushes second"} <= texts
    assert b.get(mine.id).text == "A pushes second"


def test_a_failed_push_puts_the_pulled_commits_back(
    pair: tuple[Vault, Vault], remote: Path
) -> None:
    a, b = pair
    a.remember("From A")
    sync(a.admin.store)
    b.remember("From B")
    before = head(b)
    before_text = (b.root / "MEMORY.md").read_text()
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'closed for maintenance' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(GitError, match="push"):
        sync(b.admin.store)
    assert head(b) == before
    assert (b.root / "MEMORY.md").read_text() == before_text
    assert_clean(b)
    hook.unlink()
    assert sync(b.admin.store).ok
