"""Project identities from repository files (mdmem/projects/identity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdmem.files.blocks import validate_scope
from mdmem.hookkit.policy import Policy, policy_from_json, policy_to_json
from mdmem.projects.identity import (
    ProjectIdentity,
    folder_identity,
    legacy_scope,
    normalise_remote,
    project_identity,
)
from tests.conftest import git


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:acme/api.git",
        "git@GitHub.com:Acme/API.git",
        "ssh://git@github.com/acme/api.git",
        "ssh://git@github.com:22/acme/api",
        "https://github.com/acme/api",
        "https://user:token@github.com/acme/api.git/",
        "git://github.com/acme/api",
        "  https://github.com//acme/api  ",
    ],
)
def test_spellings_of_one_remote_normalise_equal(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/api"


def test_different_remotes_stay_different() -> None:
    keys = {
        normalise_remote(u)
        for u in (
            "git@github.com:acme/api.git",
            "git@github.com:otherco/api.git",
            "git@gitlab.com:acme/api.git",
            "git@github.com:acme/api-v2.git",
        )
    }
    assert len(keys) == 4
    assert normalise_remote("/srv/git/api.git") == "file:/srv/git/api.git"
    assert normalise_remote("file:///srv/git/api/") == "file:/srv/git/api"
    assert normalise_remote("../api", "/work/repo") == "file:/work/api"
    assert normalise_remote("") is None


def test_a_scope_is_readable_valid_and_unique_per_key() -> None:
    a = ProjectIdentity("github.com/acme/api", "remote", "API", "/x")
    b = ProjectIdentity("github.com/otherco/api", "remote", "API", "/y")
    assert a.scope != b.scope and a.scope.startswith("project:api-")
    assert validate_scope(a.scope) == a.scope
    long = ProjectIdentity("k", "remote", "x" * 200 + "!", "/z")
    assert validate_scope(long.scope) == long.scope
    odd = ProjectIdentity("k", "remote", "...", "/z")
    assert validate_scope(odd.scope) == odd.scope


def test_the_recorded_id_is_read_from_a_worktree_too(tmp_path: Path) -> None:
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q")
    first = project_identity(repo)
    assert first is not None and first.source == "new id"
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
    )
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    again = project_identity(tmp_path / "wt")
    assert again is not None and (again.key, again.source) == (first.key, "git config")
    assert project_identity(tmp_path / "wt", record=False) == again
    assert legacy_scope(repo) == "project:app"


def test_without_recording_a_remote_less_repository_is_its_path(tmp_path: Path) -> None:
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q")
    found = project_identity(repo, record=False)
    assert found is not None and (found.key, found.source) == (f"path:{repo}", "path")
    assert "projectid" not in (repo / ".git" / "config").read_text()


def test_outside_a_repository_there_is_no_identity_but_a_folder_may_have_one(
    tmp_path: Path,
) -> None:
    assert project_identity(tmp_path) is None and legacy_scope(tmp_path) is None
    assert project_identity("relative/path") is None
    a, b = folder_identity(tmp_path / "a" / "notes"), folder_identity(tmp_path / "b" / "notes")
    assert a.scope != b.scope and a.source == "folder"


def test_a_policy_with_an_identity_survives_json() -> None:
    policy = Policy(
        scope="project:api-0123456789ab",
        identity="github.com/acme/api",
        identity_from="remote",
        legacy_scope="project:api",
        also_reads=("project:api",),
    )
    assert policy_from_json(policy_to_json(policy)) == policy


def _remote_less(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    return root


def test_a_copied_repository_notices_and_takes_an_id_of_its_own(tmp_path: Path) -> None:
    """`cp -r` of a remote-less repository copies its git config, recorded id
    included: the copy notices (the place the id was recorded for is not its
    own) and records a new id, so two clients' captures never meet."""
    import shutil

    from mdmem.hookkit.policy import resolve_policy

    original = _remote_less(tmp_path / "app")
    first = project_identity(original)
    assert first is not None and first.source == "new id"
    copy = tmp_path / "app-copy"
    shutil.copytree(original, copy, symlinks=True)
    assert git(copy, "config", "--get", "mdmem.projectid") == git(
        original, "config", "--get", "mdmem.projectid"
    )
    policy = resolve_policy(str(copy))
    assert policy.identity_from == "new id (copied)"
    assert policy.identity != first.key and policy.scope != first.scope
    assert any("is a copy of the repository at" in note for note in policy.notes)
    # Told once: from then on the copy is a project of its own, and so is the original.
    again = project_identity(copy)
    assert again is not None and again.source == "git config"
    assert again.key == policy.identity
    kept = project_identity(original)
    assert kept is not None and (kept.key, kept.source) == (first.key, "git config")
    # Without recording, a copy is not given its old id either.
    other = tmp_path / "app-copy-2"
    shutil.copytree(original, other, symlinks=True)
    unrecorded = project_identity(other, record=False)
    assert unrecorded is not None and unrecorded.key != first.key


def test_a_repository_moved_on_the_same_disk_keeps_its_id(tmp_path: Path) -> None:
    original = _remote_less(tmp_path / "app")
    first = project_identity(original)
    assert first is not None
    moved = tmp_path / "elsewhere" / "app"
    moved.parent.mkdir()
    original.rename(moved)
    again = project_identity(moved)
    assert again is not None and (again.key, again.source) == (first.key, "git config")
    assert git(moved, "config", "--get", "mdmem.projectpath").strip() == str(
        (moved / ".git").resolve()
    )


def test_an_id_recorded_before_places_were_kept_still_holds(tmp_path: Path) -> None:
    repo = _remote_less(tmp_path / "app")
    git(repo, "config", "mdmem.projectid", "0123456789abcdef")  # an older mdmem's record
    found = project_identity(repo)
    assert found is not None and (found.key, found.source) == ("id:0123456789abcdef", "git config")
    assert git(repo, "config", "--get", "mdmem.projectstore").strip()
