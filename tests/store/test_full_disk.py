"""A write whose commit fails leaves no line in the working file that git
doesn't have: the file is put back, and the error says so.

The first test fills a real filesystem (a small tmpfs, mounted in a user and
mount namespace of its own, so no root and no trace on the machine) until
git can't write its objects. Where namespaces are not allowed it is skipped;
the tests after it make git's commit fail at the GitStore boundary, which
simulates a failed write of git's objects (not the filesystem underneath).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import GitError
from mdmem.store.gitstore import GitStore
from tests.conftest import git

_SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pathlib import Path
    from mdmem import Vault
    from mdmem.errors import GitError

    mount, free_pages = Path(sys.argv[1]), int(sys.argv[2])
    vault = Vault.init(mount / "v")
    vault.remember("The user prefers metric units.")
    before = (vault.root / "MEMORY.md").read_bytes()
    filler = mount / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\\0" * 4096)
        except OSError:
            pass  # full
    os.truncate(filler, filler.stat().st_size - 4096 * free_pages)
    out = {"error": None}
    try:
        vault.remember("The user drinks green tea in the morning.")
    except GitError as exc:
        out["error"] = str(exc)
    out["file_unchanged"] = (vault.root / "MEMORY.md").read_bytes() == before
    filler.unlink()  # space again: the vault works, and never saw the tea
    out["status"] = subprocess.run(
        ["git", "status", "--porcelain"], cwd=vault.root, capture_output=True, text=True
    ).stdout
    out["tea_found"] = [h.text for h in vault.recall("green tea morning").items if "tea" in h.text]
    vault.remember("The user likes hiking.")
    out["after"] = [h.text for h in vault.recall("hiking").items]
    vault.close()
    print(json.dumps(out))
    """
)


def _namespaced(tmp_path: Path, free_pages: int) -> dict[str, object]:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to mount a small filesystem")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user and mount namespaces are not allowed here")
    mount = tmp_path / "small"
    mount.mkdir()
    script = tmp_path / "fill.py"
    script.write_text(_SCRIPT, encoding="utf-8")
    command = (
        f"mount -t tmpfs -o size=4m tmpfs {mount} && {sys.executable} {script} {mount} {free_pages}"
    )
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", command], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# One page free: git can't write the new blob. Five: the objects go in, the
# branch's ref can't be updated.
@pytest.mark.parametrize("free_pages", [1, 5])
def test_a_commit_that_fails_on_a_full_disk_puts_the_file_back(
    tmp_path: Path, free_pages: int
) -> None:
    result = _namespaced(tmp_path, free_pages)
    error = str(result["error"])
    assert "the write was undone" in error
    assert "space" in error.lower() or "couldn't write" in error, error
    assert result["file_unchanged"] is True
    assert result["status"] == ""
    assert result["tea_found"] == []
    assert result["after"] == ["The user likes hiking."]


def _failing_commit(monkeypatch: pytest.MonkeyPatch, after: object = None) -> None:
    """git's commit fails as on a full disk, once; ``after`` runs first (a
    person's editor saving meanwhile)."""
    real = GitStore.commit
    calls = {"n": 0}

    def commit(self: GitStore, message: str, *args: object, **kwargs: object) -> str | None:
        if "Op: init" in message or calls["n"]:
            return real(self, message, *args, **kwargs)  # type: ignore[arg-type]
        calls["n"] += 1
        if callable(after):
            after()
        raise GitError("git commit: fatal: unable to write loose object file: No space left")

    monkeypatch.setattr(GitStore, "commit", commit)


def test_a_batch_over_several_files_is_put_back_whole(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("The user prefers metric units.")
    files = {p: (vault.root / p).read_bytes() for p in ("MEMORY.md", "USER.md", "LEARNING.md")}
    head = vault.git.head()
    _failing_commit(monkeypatch)
    with pytest.raises(GitError, match="the write was undone"), vault.batch():
        vault.remember("Deploys happen on Fridays.")
        vault.remember("The user likes short answers.", kind="preference")
        vault.learn("Postgres", "VACUUM reclaims space.")
    assert {p: (vault.root / p).read_bytes() for p in files} == files
    assert vault.git.head() == head and vault.admin.store.git.dirty_paths() == []
    assert [h.text for h in vault.recall("Fridays deploys").items if "Fridays" in h.text] == []
    # Nothing is rolled forward later either.
    reopened = Vault.open(vault.root)
    reopened.remember("The user likes hiking.")
    assert "Fridays" not in (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    reopened.close()


def test_a_person_s_save_after_the_write_is_kept(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault.remember("The user prefers metric units.")
    memory_file = vault.root / "MEMORY.md"
    before = memory_file.read_bytes()

    def person_appends() -> None:
        with open(memory_file, "ab") as fh:
            fh.write(b"- typed by hand while mdmem committed\n")

    _failing_commit(monkeypatch, person_appends)
    with pytest.raises(GitError, match="the write was undone"):
        vault.remember("Deploys happen on Fridays.")
    assert memory_file.read_bytes() == before + b"- typed by hand while mdmem committed\n"
    # The person's line is theirs to commit: it goes in as a human edit, as usual.
    vault.admin.commit_human_edits()
    author = git(vault.root, "log", "-1", "--format=%ae")
    assert "mdmem" not in author
