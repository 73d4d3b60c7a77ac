"""A secret a person types into a vault file never reaches git through mdmem:
``doctor --fix``, the commit of human edits before an agent's write, and the
agent's own commit of that file all give git the file with the secret
redacted; the file keeps what the person typed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mdmem import Vault
from tests.conftest import git
from tests.secret_samples import FORMATS

TOKEN = next(s for s in FORMATS if s.name == "GitLab token")


def _in_git(vault: Vault) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout


def _leaked(vault: Vault) -> bool:
    return any(f.encode() in _in_git(vault) for f in TOKEN.fragments)


def _type(vault: Vault, rel: str, line: str) -> Path:
    path = vault.root / rel
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    return path


@pytest.fixture
def typed(vault: Vault) -> Path:
    """MEMORY.md after a person typed a note and a token into it (uncommitted)."""
    vault.remember("Deploy notes live in the wiki.")
    path = _type(vault, "MEMORY.md", "- The staging runner is in eu-west-1.")
    _type(vault, "MEMORY.md", f"- CI: {TOKEN.text}")
    return path


def test_doctor_flags_it_and_fix_commits_the_file_without_it(vault: Vault, typed: Path) -> None:
    report = vault.admin.doctor()
    found = [p.detail for p in report.problems if p.check == "no secrets in files"]
    assert len(found) == 1 and "not in git" in found[0] and "GitLab token" in found[0]
    assert not any(f in found[0] for f in TOKEN.fragments)
    vault.admin.doctor(fix=True)
    assert not _leaked(vault)
    # The person's edit is committed as theirs, the token redacted in it...
    committed = git(vault.root, "show", "HEAD:MEMORY.md")
    assert "The staging runner is in eu-west-1." in committed
    assert "[REDACTED:GitLab token]" in committed
    assert "mdmem" not in git(vault.root, "log", "-1", "--format=%ae")
    assert "Redacted: GitLab token" in git(vault.root, "log", "-1", "--format=%B")
    # ...and the file keeps what they typed.
    assert TOKEN.fragments[0] in typed.read_text(encoding="utf-8")
    # A second look finds no uncommitted edit to fix, only the secret to remove.
    again = vault.admin.doctor()
    assert not [p for p in again.problems if p.check == "git"]
    assert [p for p in again.problems if p.check == "no secrets in files"]


def test_an_agent_write_to_the_file_never_commits_it(vault: Vault, typed: Path) -> None:
    memory = vault.remember("The user prefers metric units.")
    assert memory.path == "MEMORY.md"
    assert not _leaked(vault)
    text = typed.read_text(encoding="utf-8")
    assert TOKEN.fragments[0] in text and "metric units" in text
    committed = git(vault.root, "show", "HEAD:MEMORY.md")
    assert "metric units" in committed and "[REDACTED:GitLab token]" in committed
    # Another process (a fresh open) keeps it out as well.
    other = Vault.open(vault.root)
    other.remember("The user likes hiking.")
    other.close()
    assert not _leaked(vault)
    assert vault.admin.store.git.dirty_paths() == ["MEMORY.md"]
    # Once the person takes it out, the file and git agree again.
    typed.write_text(
        typed.read_text(encoding="utf-8").replace(TOKEN.text, "token in the password manager"),
        encoding="utf-8",
    )
    vault.remember("Standup is at 9:30.")
    assert vault.admin.store.git.dirty_paths() == []
    assert not _leaked(vault)


def test_a_secret_the_person_committed_themselves_is_left_as_committed(vault: Vault) -> None:
    vault.remember("Deploy notes live in the wiki.")
    path = _type(vault, "MEMORY.md", f"- CI: {TOKEN.text}")
    git(vault.root, "commit", "-qam", "my token, on purpose", human=True)
    vault.remember("The user prefers metric units.")
    assert TOKEN.fragments[0] in git(vault.root, "show", "HEAD:MEMORY.md")
    assert vault.admin.store.git.dirty_paths() == []
    assert TOKEN.fragments[0] in path.read_text(encoding="utf-8")


def test_with_the_guard_off_the_edit_goes_in_as_typed(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", secrets="off")
    vault.remember("Deploy notes live in the wiki.")
    _type(vault, "MEMORY.md", f"- CI: {TOKEN.text}")
    vault.remember("The user prefers metric units.")
    assert _leaked(vault) and vault.admin.store.git.dirty_paths() == []
    vault.close()


def _filler(count: int, tag: str) -> list[str]:
    return [f"- {tag} note {i}: the cache key is the commit hash" for i in range(count)]


def test_in_a_long_file_only_the_secret_typed_since_the_commit_is_kept_out() -> None:
    from mdmem.store.typed_secrets import keep_out

    old = [*_filler(300, "old"), f"- committed by them: {TOKEN.text}", *_filler(300, "more")]
    new = [*old[:100], "- typed just now: " + TOKEN.text, *old[100:]]
    kept = keep_out("\n".join(new).encode(), lambda: "\n".join(old).encode(), "strict")
    assert kept is not None
    assert kept.kinds == ("GitLab token",) and kept.lines == (101,)
    lines = kept.data.decode().split("\n")
    assert "[REDACTED:GitLab token]" in lines[100]
    assert not any(f in lines[100] for f in TOKEN.fragments)
    assert lines[301] == f"- committed by them: {TOKEN.text}"  # theirs to keep, as before
    # Nothing typed since: nothing to keep out.
    assert keep_out("\n".join(old).encode(), lambda: "\n".join(old).encode(), "strict") is None


def test_a_changed_line_inside_a_key_block_keeps_the_whole_block_out() -> None:
    from mdmem.store.typed_secrets import keep_out

    key_line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC{:02d}abcdefghijklmnop"
    body = [key_line.format(i) for i in range(40)]
    block = ["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----"]
    old = [*_filler(200, "a"), *block, *_filler(200, "b")]
    new = list(old)
    new[200 + 20] = new[200 + 20].replace("abc", "xyz")  # one line of the block edited
    kept = keep_out("\n".join(new).encode(), lambda: "\n".join(old).encode(), "strict")
    assert kept is not None and kept.lines == (201,)
    assert "BEGIN PRIVATE KEY" not in kept.data.decode()
