"""A note with no date of its own is dated by when git first recorded it.

Real git in temp repositories, commits made at fixed past dates; dates are
read through the public API (a recall hit's ``created``).
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from mdmem import Vault
from mdmem.files.blocks import UNDATED
from mdmem.git.purge import purge
from mdmem.store.gitdates import CACHE_NAME, GitDates
from mdmem.store.gitstore import GitStore
from tests.conftest import HUMAN_ENV

QUERY = "release checklist"


def commit_at(root: Path, when: str, *paths: str, message: str = "notes") -> None:
    """Commit ``paths`` as a person, authored and committed at ``when``."""
    env = {**os.environ, **HUMAN_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    for args in (["add", "-A", "--", *paths], ["commit", "-q", "--no-verify", "-m", message]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def note(title: str = "Release") -> str:
    return f"# {title}\n\nThe release checklist lives in the ops wiki.\n"


def dated(vault: Vault) -> dict[str, datetime]:
    hits = vault.recall(QUERY, k=20, mode="keyword").items
    return {h.path: h.created for h in hits}


def day(value: datetime) -> str:
    return value.date().isoformat()


def cache_of(vault: Vault) -> Path:
    return Path(vault.admin.state_dir) / CACHE_NAME


def test_an_undated_note_reads_as_the_day_git_first_recorded_it(vault: Vault) -> None:
    write(vault.root, "notes/plan.md", note())
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes/plan.md")
    # Edited later: still the day it was first recorded.
    write(vault.root, "notes/plan.md", note() + "\nAnd the rollback plan.\n")
    commit_at(vault.root, "2025-01-09T10:00:00Z", "notes/plan.md")
    hits = vault.recall(QUERY, k=20, mode="keyword").items
    plan = next(h for h in hits if h.path == "notes/plan.md")
    assert day(plan.created) == "2024-03-05"
    assert "recency" in plan.scores  # a known date: recall weighs it


def test_its_own_date_wins_over_git(vault: Vault) -> None:
    write(vault.root, "notes/dated.md", "---\ncreated: 2023-02-01\n---\n" + note())
    write(vault.root, "journal/2022-07-14.md", note("Thursday"))
    write(vault.root, "notes/plain.md", note("Plain"))
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes", "journal")
    dates = dated(vault)
    assert day(dates["notes/dated.md"]) == "2023-02-01"  # frontmatter
    assert day(dates["journal/2022-07-14.md"]) == "2022-07-14"  # daily-note name
    assert day(dates["notes/plain.md"]) == "2024-03-05"  # git


def test_an_uncommitted_note_is_undated_until_committed(vault: Vault) -> None:
    write(vault.root, "inbox.md", note("Inbox"))
    hits = {h.path: h for h in vault.recall(QUERY, k=20, mode="keyword").items}
    assert hits["inbox.md"].created == UNDATED  # its mtime is no date
    assert "recency" not in hits["inbox.md"].scores
    commit_at(vault.root, "2024-06-01T08:00:00Z", "inbox.md")
    # The file did not change, HEAD did: the note is read and indexed again.
    assert day(dated(vault)["inbox.md"]) == "2024-06-01"


def test_an_as_of_recall_dates_notes_the_same_way(vault: Vault) -> None:
    write(vault.root, "notes/plan.md", note())
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes/plan.md")
    write(vault.root, "notes/later.md", note("Later"))
    commit_at(vault.root, "2024-04-01T10:00:00Z", "notes/later.md")
    dated(vault)  # the live catalog reads the history
    hits = vault.recall(QUERY, k=20, mode="keyword", as_of="2024-03-20").items
    by_path = {h.path: h.created for h in hits}
    assert day(by_path["notes/plan.md"]) == "2024-03-05"
    assert "notes/later.md" not in by_path


def test_memory_lines_keep_their_own_dates(vault: Vault) -> None:
    # MEMORY.md is dated by git (the vault's first commit); its lines by themselves.
    memory = vault.remember("The release checklist needs sign-off", created="2021-04-02")
    assert day(dated(vault)["MEMORY.md"]) == "2021-04-02"
    assert day(vault.get(memory.id).created) == "2021-04-02"


def test_a_renamed_note_keeps_its_first_date(vault: Vault) -> None:
    write(vault.root, "notes/draft.md", note())
    commit_at(vault.root, "2024-01-10T10:00:00Z", "notes/draft.md")
    subprocess.run(["git", "mv", "notes/draft.md", "notes/final.md"], cwd=vault.root, check=True)
    commit_at(vault.root, "2024-09-10T10:00:00Z", "notes")
    assert day(dated(vault)["notes/final.md"]) == "2024-01-10"


def test_an_adopted_folder_is_not_dated_by_the_adoption(tmp_path: Path) -> None:
    folder = tmp_path / "obsidian"
    write(folder, "ideas.md", note("Ideas"))
    write(folder, "daily/2023-05-06.md", note("Saturday"))
    with Vault.init(folder, agent="test-agent", author="Ada Human <ada@example.org>") as vault:
        dates = dated(vault)
        assert dates["ideas.md"] == UNDATED  # the adoption commit is not when it was written
        assert day(dates["daily/2023-05-06.md"]) == "2023-05-06"
        write(vault.root, "later.md", note("Later"))
        commit_at(vault.root, "2024-02-02T10:00:00Z", "later.md")
        assert day(dated(vault)["later.md"]) == "2024-02-02"


def test_a_deleted_or_damaged_cache_is_built_again(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "vault", agent="test-agent")
    write(vault.root, "notes/plan.md", note())
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes/plan.md")
    assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"
    cache = cache_of(vault)
    assert json.loads(cache.read_text())["dates"]["notes/plan.md"]
    vault.close()
    cache.unlink()
    with Vault.open(tmp_path / "vault", agent="test-agent") as vault:
        assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"
        assert cache.exists()
    cache.write_text("{not json", encoding="utf-8")
    with Vault.open(tmp_path / "vault", agent="test-agent") as vault:
        assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"
    assert json.loads(cache.read_text())["dates"]["notes/plan.md"]


def test_rewritten_history_is_read_again(vault: Vault) -> None:
    write(vault.root, "notes/plan.md", note())
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes/plan.md")
    assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"
    # The commit is redone at another date: the old HEAD is no ancestor now.
    env = {**os.environ, **HUMAN_ENV, "GIT_COMMITTER_DATE": "2023-11-11T10:00:00Z"}
    subprocess.run(
        ["git", "commit", "-q", "--amend", "--no-edit", "--date=2023-11-11T10:00:00Z"],
        cwd=vault.root,
        check=True,
        env=env,
    )
    assert day(dated(vault)["notes/plan.md"]) == "2023-11-11"
    # Rewound past the note's commit: no history dates it, so it is unknown.
    subprocess.run(["git", "reset", "-q", "--soft", "HEAD~1"], cwd=vault.root, check=True)
    assert dated(vault)["notes/plan.md"] == UNDATED


def test_purged_history_rebuilds_the_map(vault: Vault) -> None:
    secret = vault.remember("The release checklist door code is 1234")
    write(vault.root, "notes/plan.md", note())
    commit_at(vault.root, "2024-03-05T10:00:00Z", "notes/plan.md")
    assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"
    old_head = json.loads(cache_of(vault).read_text())["head"]
    purge(vault.admin.store, secret.id, confirm=True)  # every later commit gets a new sha
    assert day(dated(vault)["notes/plan.md"]) == "2024-03-05"  # author dates survive
    assert json.loads(cache_of(vault).read_text())["head"] != old_head


# ------------------------------------------------------------- the map --


def git_dates(tmp_path: Path) -> tuple[Path, GitDates]:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    return root, GitDates(GitStore(root), tmp_path / "state")


def test_the_map_updates_incrementally(tmp_path: Path) -> None:
    root, dates = git_dates(tmp_path)
    assert dates.update() is None  # no commits yet: nothing dated
    write(root, "a.md", "a\n")
    write(root, "img.png", "not a note\n")
    commit_at(root, "2024-01-01T00:00:00Z", ".")
    assert dates.update() is None  # from no commits: built from scratch
    assert dates.date_of("a.md") == datetime(2024, 1, 1, tzinfo=UTC)
    assert dates.date_of("img.png") is None
    assert dates.update() == set()  # HEAD unchanged: no git at all
    write(root, "b.md", "b\n")
    write(root, "a.md", "a, edited\n")
    commit_at(root, "2024-02-01T00:00:00Z", ".")
    assert dates.update() == {"b.md"}
    assert dates.date_of("a.md") == datetime(2024, 1, 1, tzinfo=UTC)
    # A new process reads the cache: the first answer is "compare everything".
    again = GitDates(GitStore(root), tmp_path / "state")
    assert again.update() is None
    assert again.date_of("b.md") == datetime(2024, 2, 1, tzinfo=UTC)


def test_an_adoption_commit_dates_nothing(tmp_path: Path) -> None:
    root, dates = git_dates(tmp_path)
    write(root, "old.md", "old\n")
    commit_at(root, "2024-01-01T00:00:00Z", ".", message="adopt: the files\n\nOp: adopt")
    subprocess.run(["git", "mv", "old.md", "renamed.md"], cwd=root, check=True)
    write(root, "new.md", "new\n")
    commit_at(root, "2024-05-01T00:00:00Z", ".")
    dates.update()
    assert dates.date_of("old.md") is None
    assert dates.date_of("renamed.md") is None  # still the adopted note
    assert dates.date_of("new.md") == datetime(2024, 5, 1, tzinfo=UTC)
