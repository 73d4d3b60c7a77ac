"""`mdmem init` on a folder that already has a life (an Obsidian vault, notes
under git): every setting kept, the person's files committed as theirs, their
uncommitted work never in an agent's commit, and a report of what was done."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError
from tests.conftest import git
from tests.secret_samples import FORMATS

TOKEN = next(s for s in FORMATS if s.name == "GitLab token")
APP = {
    "vimMode": True,
    "showLineNumber": True,
    "userIgnoreFilters": ["Archive/", "private/"],
    "attachmentFolderPath": "assets",
}
PERSON = "Bea Person <bea@example.org>"


def _obsidian_vault(root: Path) -> Path:
    """A person's Obsidian vault: settings, editor state, notes, a ledger file of their own."""
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text(json.dumps(APP, indent=2), encoding="utf-8")
    (root / ".obsidian" / "core-plugins.json").write_text('["file-explorer", "canvas"]')
    (root / ".obsidian" / "workspace.json").write_text('{"main": {"id": "editor state"}}')
    (root / "notes").mkdir()
    (root / "notes" / "garden.md").write_text("# Garden\n\nPlant tomatoes in May.\n")
    (root / "notes" / "ci.md").write_text(f"# CI\n\nThe runner token: {TOKEN.text}\n")
    (root / "USER.md").write_text("# About me\n\nI live in Porto.\n")
    (root / ".gitignore").write_text("private/\n")
    return root


def _log(root: Path) -> list[tuple[str, str, list[str]]]:
    """(author email, subject, files) of each commit, oldest first."""
    out = git(root, "log", "--reverse", "--format=%x00%ae%x1f%s", "--name-only")
    commits = []
    for chunk in out.split("\0")[1:]:
        head, _, files = chunk.partition("\n")
        email, subject = head.split("\x1f")
        commits.append((email, subject, [f for f in files.split("\n") if f]))
    return commits


def _in_git(root: Path) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout


def test_an_obsidian_vault_is_adopted_keeping_every_setting(tmp_path: Path) -> None:
    root = _obsidian_vault(tmp_path / "Notes")
    settings = {p.name: p.read_bytes() for p in (root / ".obsidian").iterdir()}
    vault = Vault.init(root, agent="orc", author=PERSON)
    # Their Obsidian settings, byte for byte: not one file added, merged or rewritten.
    assert {p.name: p.read_bytes() for p in (root / ".obsidian").iterdir()} == settings
    assert (root / "USER.md").read_text() == "# About me\n\nI live in Porto.\n"
    assert (root / ".gitignore").read_text().startswith("private/\n")
    assert ".obsidian/workspace.json" in (root / ".gitignore").read_text()

    (person, theirs), (agent, ours) = [(c[0], c) for c in _log(root)]
    assert person == "bea@example.org" and theirs[1].startswith("adopt:")
    assert set(theirs[2]) == {
        ".gitignore",
        ".obsidian/app.json",
        ".obsidian/core-plugins.json",
        "USER.md",
        "notes/ci.md",
        "notes/garden.md",
    }  # editor state is not committed
    assert "mdmem" in agent and ours[1] == "init: mdmem vault"
    assert "notes/garden.md" not in ours[2] and "USER.md" not in ours[2]
    assert {"mdmem.toml", "MEMORY.md"} <= set(ours[2])
    assert not any(p.startswith(".obsidian/") for p in ours[2])  # theirs alone
    # Their settings as they were are in their commit.
    first = json.loads(
        git(
            root,
            "show",
            f"{git(root, 'rev-list', '--max-parents=0', 'HEAD').strip()}:.obsidian/app.json",
        )
    )
    assert first == APP
    # The token they had typed never reached git; the note keeps it.
    assert not any(f.encode() in _in_git(root) for f in TOKEN.fragments)
    assert TOKEN.fragments[0] in (root / "notes" / "ci.md").read_text()
    report = vault.admin.adoption
    assert report is not None and report.adopted
    assert report.kept_out == {"notes/ci.md": ["GitLab token"]}
    text = "\n".join(report.lines())
    assert "as Bea Person <bea@example.org>" in text and "vimMode" not in text
    # The vault works: their note is found, a memory goes in.
    assert any("tomatoes" in h.text for h in vault.recall("tomatoes garden").items)
    vault.remember("The user prefers metric units.")
    # Only the file with the secret they must remove differs from git.
    assert vault.admin.store.git.dirty_paths() == ["notes/ci.md"]
    vault.close()


def _notes_repository(root: Path) -> Path:
    """A git repository of notes with one commit of the person's."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "todo.md").write_text("# Todo\n\n- call the plumber\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "my notes", human=True)
    return root


def test_uncommitted_work_in_a_repository_is_committed_as_the_person(tmp_path: Path) -> None:
    root = _notes_repository(tmp_path / "repo")
    (root / "todo.md").write_text("# Todo\n\n- call the plumber\n- buy seeds\n")
    (root / "draft.md").write_text("# Draft\n\nhalf a thought\n")
    vault = Vault.init(root, author=PERSON)
    commits = _log(root)
    assert [c[1] for c in commits] == [
        "my notes",
        "adopt: the work left uncommitted",
        "init: mdmem vault",
    ]
    assert set(commits[1][2]) == {"todo.md", "draft.md"} and commits[1][0] == "bea@example.org"
    assert "todo.md" not in commits[2][2] and "draft.md" not in commits[2][2]
    assert vault.admin.store.git.dirty_paths() == []
    assert vault.admin.adoption is not None and vault.admin.adoption.was_repository
    vault.close()


def test_a_clean_repository_gets_only_the_agent_s_commit(tmp_path: Path) -> None:
    root = _notes_repository(tmp_path / "repo")
    Vault.init(root).close()
    assert [c[1] for c in _log(root)] == ["my notes", "init: mdmem vault"]


def test_without_an_identity_it_asks_who_the_files_belong_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _obsidian_vault(tmp_path / "Notes")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "none"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InvalidInputError, match="author='Name <email>'"):
        Vault.init(root)
    result = CliRunner().invoke(main, ["init", str(root)])
    assert result.exit_code == 1
    assert "--author" in result.output and "author=" not in result.output
    result = CliRunner().invoke(main, ["init", str(root), "--author", PERSON])
    assert result.exit_code == 0, result.output
    assert "committed your files (6 files) as Bea Person <bea@example.org>" in result.output
    assert "kept your USER.md" in result.output


def test_a_new_folder_is_initialised_as_before(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "fresh")])
    assert result.exit_code == 0 and result.output.startswith("initialised ")
    assert [c[1] for c in _log(tmp_path / "fresh")] == ["init: mdmem vault"]


def test_settings_that_are_not_json_are_left_alone_and_said(tmp_path: Path) -> None:
    root = tmp_path / "Notes"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text("{ vimMode: true, // hand-edited\n}")
    vault = Vault.init(root, author=PERSON)
    assert (root / ".obsidian" / "app.json").read_text() == "{ vimMode: true, // hand-edited\n}"
    assert vault.admin.adoption is not None
    assert list(vault.admin.adoption.left_alone) == [".obsidian/"]  # never read, never merged
    vault.close()
