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
