"""What the person confirmed once (mdmem.config.Confirmations): every kind of
trust record — vault settings, project files, team checkouts — saved one way:
atomic, under a unique temp name, private, and changed under a lock so that
confirmations made at once all stay."""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from mdmem.config import Confirmations, config_home, trust_vault
from mdmem.errors import ConfigError
from mdmem.projects import trust as project_trust
from mdmem.team import TeamFolder, trust_checkout
from mdmem.team.repo import find_checkout
from mdmem.team.trust import TRUST_FILE, is_trusted
from tests.conftest import git


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Ada")
    git(root, "config", "user.email", "ada@example.org")
    return root


def test_every_trust_record_is_private(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "mdmem.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:9/v1"\n')
    trust_vault(vault)
    policy = tmp_path / "project" / ".mdmem.toml"
    policy.parent.mkdir()
    policy.write_text('capture = "off"\n')
    project_trust.confirm(policy, policy.read_bytes())
    checkout = find_checkout(_repo(tmp_path / "shop"))
    assert checkout is not None
    trust_checkout(checkout)
    home = config_home()
    files = {p.name: _mode(p) for p in home.iterdir() if not p.name.startswith(".")}
    assert files == {
        "trusted.json": 0o600,
        project_trust.STORE_FILE: 0o600,
        TRUST_FILE: 0o600,
    }
    # Nothing half-written or left behind: only the records and their lock files.
    assert all(p.name.endswith((".json", ".lock")) for p in home.iterdir())


def test_a_record_saved_readable_by_others_becomes_private_on_the_next_change(
    tmp_path: Path,
) -> None:
    """team-trust.json was saved 0644 before: the next change narrows it."""
    checkout = find_checkout(_repo(tmp_path / "shop"))
    assert checkout is not None
    old = config_home() / TRUST_FILE
    old.parent.mkdir(parents=True)
    old.write_text("{}")
    os.chmod(old, 0o644)
    trust_checkout(checkout)
    assert _mode(old) == 0o600 and is_trusted(checkout)


def _confirm_many(home: str, folder: str, n: int, start: int) -> None:
    os.environ["MDMEM_CONFIG_HOME"] = home
    for i in range(start, start + n):
        policy = Path(folder) / f"p{i}" / ".mdmem.toml"
        project_trust.confirm(policy, policy.read_bytes())


def test_confirmations_made_at_once_all_stay(tmp_path: Path) -> None:
    """Eight processes confirm different project files at the same time: a read-
    modify-write without the lock (or with one temp name) kept only some."""
    for i in range(8 * 5):
        (tmp_path / f"p{i}").mkdir()
        (tmp_path / f"p{i}" / ".mdmem.toml").write_text(f'capture = "off"  # {i}\n')
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_confirm_many, args=(str(config_home()), str(tmp_path), 5, 5 * n))
        for n in range(8)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    for i in range(8 * 5):
        policy = tmp_path / f"p{i}" / ".mdmem.toml"
        assert project_trust.is_confirmed(policy, policy.read_bytes()), i
    assert _mode(config_home() / project_trust.STORE_FILE) == 0o600


def test_a_change_that_fails_saves_nothing(tmp_path: Path) -> None:
    records = Confirmations("example.json")
    with records.change() as data:
        data["kept"] = 1
    with pytest.raises(RuntimeError), records.change() as data:
        data["lost"] = 2
        raise RuntimeError("stop")
    assert records.read() == {"kept": 1}


def test_a_symlinked_project_file_never_counts_as_confirmed(tmp_path: Path) -> None:
    """A cloned repository whose .mdmem.toml links to a file the person confirmed
    for another project does not borrow that confirmation (or its scope)."""
    mine = tmp_path / "secret-project" / ".mdmem.toml"
    mine.parent.mkdir()
    mine.write_text('scope = "project:secret"\ncapture = "everything"\n')
    project_trust.confirm(mine, mine.read_bytes())
    assert project_trust.is_confirmed(mine, mine.read_bytes())
    clone = tmp_path / "cloned" / ".mdmem.toml"
    clone.parent.mkdir()
    clone.symlink_to(mine)
    assert not project_trust.is_confirmed(clone, clone.read_bytes())
    with pytest.raises(ConfigError, match="symbolic link"):
        project_trust.confirm(clone, clone.read_bytes())

    from mdmem.hookkit.policy import resolve_policy

    policy = resolve_policy(str(clone.parent))
    assert policy.scope != "project:secret"
    assert any("refused" in note for note in policy.notes)
    # The file itself, where it lies, still counts.
    assert resolve_policy(str(mine.parent)).scope == "project:secret"


def test_a_team_checkout_trusted_once_is_saved_privately_through_init(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "shop")
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    TeamFolder.at(repo).init(tmp_path / "_state")
    assert _mode(config_home() / TRUST_FILE) == 0o600
