"""Merging the team files in clones that did not run `mdmem team init` or
`team trust`: real git, a bare origin, two clones, concurrent appends, pull.

`.gitattributes` names the block-aware driver (`merge=mdmem-team`); git only
runs a driver its own config defines, and `.git/config` never travels with a
clone. So every team command that commits to the team files defines it in
the clone it runs in; a clone that never ran one gets git's text merge,
which conflicts visibly (never merges silently)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.team.folder import DRIVER_NAME


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=env
    )


def mdmem(vault: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["--vault", str(vault), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """(Ada's clone, which ran `team init` and pushed; Bob's fresh clone after that)."""
    origin = tmp_path / "shop.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    ada, bob = tmp_path / "ada", tmp_path / "bob"
    git(tmp_path, "clone", "-q", str(origin), str(ada))
    for name, clone in (("Ada", ada), ("Bob", bob)):
        if clone == bob:
            git(tmp_path, "clone", "-q", str(origin), str(bob))
        git(clone, "config", "user.name", name)
        git(clone, "config", "user.email", f"{name.lower()}@example.org")
        Vault.init(tmp_path / f"vault-{name.lower()}", agent=f"{name.lower()}-agent").close()
        if clone == ada:
            (ada / "app.py").write_text("print('shop')\n")
            git(ada, "add", "app.py")
            git(ada, "commit", "-q", "-m", "the shop")
            git(ada, "branch", "-M", "main")
            mdmem(tmp_path / "vault-ada", "team", "init", "--repo", str(ada))
            git(ada, "push", "-q", "origin", "HEAD:main")
    return ada, bob


def propose(tmp_path: Path, who: str, clone: Path, text: str) -> str:
    vault = tmp_path / f"vault-{who}"
    with Vault.open(vault, agent=f"{who}-agent") as v:
        memory_id = v.remember(text, kind="gotcha").id
    mdmem(vault, "team", "propose", memory_id, "--repo", str(clone))
    return memory_id


def has_driver(clone: Path) -> bool:
    found = git(clone, "config", "--get", f"merge.{DRIVER_NAME}.driver", check=False)
    return found.returncode == 0 and bool(found.stdout.strip())


def test_a_clone_that_only_proposes_merges_concurrent_appends_cleanly(
    clones: tuple[Path, Path], tmp_path: Path
) -> None:
    ada, bob = clones
    assert not has_driver(bob)  # a fresh clone: .git/config does not travel
    first = propose(tmp_path, "ada", ada, "The cart service caches prices for 60s.")
    git(ada, "push", "-q", "origin", "HEAD:main")
    second = propose(tmp_path, "bob", bob, "Run migrations with ALEMBIC_LOCK=1.")
    assert has_driver(bob)  # proposing defined it, without `team trust`
    pulled = git(bob, "pull", "--no-rebase", "-q", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    text = (bob / ".mdmem" / "team" / "gotchas.md").read_text()
    assert first in text and second in text and "<<<<<<<" not in text
    # Still no trust: proposing lets nothing into Bob's prompts.
    shown = CliRunner().invoke(
        main,
        [
            "--vault",
            str(tmp_path / "vault-bob"),
            "team",
            "show",
            "ALEMBIC_LOCK",
            "--repo",
            str(bob),
        ],
    )
    assert "not trusted" in shown.output


def test_a_clone_that_never_ran_a_team_command_conflicts_visibly(
    clones: tuple[Path, Path], tmp_path: Path
) -> None:
    """Git's own text merge (the driver is undefined there): a conflict with
    markers that `mdmem team check` names, never a silent merge."""
    ada, bob = clones
    propose(tmp_path, "ada", ada, "The cart service caches prices for 60s.")
    git(ada, "push", "-q", "origin", "HEAD:main")
    gotchas = bob / ".mdmem" / "team" / "gotchas.md"
    line = "- Billing uses ISO weeks. [kind:: gotcha] [status:: proposed] ^m-0000000000ee01\n"
    gotchas.write_text(gotchas.read_text() + line)
    git(bob, "commit", "-q", "-am", "team: a line typed by hand")
    pulled = git(bob, "pull", "--no-rebase", "-q", "origin", "main", check=False)
    assert not has_driver(bob)
    assert pulled.returncode != 0 and "CONFLICT" in pulled.stdout + pulled.stderr
    checked = CliRunner().invoke(
        main, ["--vault", str(tmp_path / "vault-bob"), "team", "check", "--repo", str(bob)]
    )
    assert checked.exit_code == 1 and "merge conflict marker" in checked.output
