"""Every old name answers with a warning naming its replacement and removal version, and
none outlives that version (mdmem/aliases.py)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

import mdmem
from mdmem import Vault
from mdmem.aliases import REMOVAL, Alias, all_tables, overdue, version_key
from mdmem.cli import main
from mdmem.cli.context import CLI_ALIASES, MOVED_COMMANDS
from mdmem.git.desk import GIT_WRAPPER

UPGRADING = Path(__file__).parent.parent / "docs" / "upgrading.md"
ALL = [a for t in all_tables() for a in t.values()]


def test_every_alias_table_has_the_one_shape() -> None:
    names = {t.name for t in all_tables()}
    assert names == {
        "module paths",
        "Vault attributes",
        "the git wrapper on vault.git",
        "command names",
        "Vault arguments",
        "tool arguments",
        "setting names",
    }
    assert len(ALL) == 154 and all(isinstance(a, Alias) for a in ALL)  # 42 modules moved in 0.1.x
    assert all(a.old and a.new and version_key(a.removal) > (0, 0, 0) for a in ALL)


def test_no_alias_outlives_its_removal_version() -> None:
    late = overdue(mdmem.__version__)
    assert not late, (
        f"mdmem {mdmem.__version__} still has {len(late)} aliases due for removal, e.g. "
        f"{late[0].old} (removed in {late[0].removal}): delete them and their rows in "
        "docs/upgrading.md"
    )


def test_the_removal_check_bites_when_the_version_gets_there() -> None:
    assert overdue("0.1.9") == []
    assert len(overdue(REMOVAL)) == len(ALL) == len(overdue("0.2.0rc1")) == len(overdue("1.0"))
    assert version_key("0.10.0") > version_key("0.2.0")


def test_the_upgrading_page_lists_every_alias() -> None:
    page = UPGRADING.read_text(encoding="utf-8")
    missing = [a.old for a in ALL if f"| `{a.old}` | `{a.new}` | {a.removal} |" not in page]
    assert not missing, f"not in docs/upgrading.md: {missing}"
    rows = re.findall(r"^\| `", page, re.M)
    assert len(rows) == len(ALL)  # and nothing the tables no longer hold


@pytest.mark.parametrize("old", sorted(CLI_ALIASES))
def test_every_old_command_name_warns_on_stderr_and_still_runs(old: str) -> None:
    result = CliRunner().invoke(main, [old, "--help"])
    assert result.exit_code == 0, result.output
    alias = CLI_ALIASES[old]
    assert result.stderr == f"warning: {alias.message}\n"
    assert "removed in 0.2.0" in result.stderr and alias.new in result.stderr
    group, sub = MOVED_COMMANDS[old]
    new = CliRunner().invoke(main, [group, sub, "--help"])
    assert result.stdout.split("\n", 1)[1] == new.stdout.split("\n", 1)[1]  # past the usage line


def test_an_old_command_runs_the_new_one(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root).close()
    with Vault.open(root) as vault:
        vault.remember("The user prefers metric units.", kind="preference")
    runner = CliRunner()
    old = runner.invoke(main, ["--vault", str(root), "list", "--json"])
    new = runner.invoke(main, ["--vault", str(root), "library", "list", "--json"])
    assert old.exit_code == new.exit_code == 0
    assert old.stdout == new.stdout and "metric units" in old.stdout
    assert old.stderr.startswith("warning: mdmem list is deprecated") and new.stderr == ""


@pytest.mark.parametrize("name", sorted(GIT_WRAPPER))
def test_every_old_git_wrapper_name_on_the_git_desk_warns(vault: Vault, name: str) -> None:
    with pytest.warns(DeprecationWarning) as record:
        value = getattr(vault.git, name)
    message = str(record[0].message)
    assert message == GIT_WRAPPER[name].message and "removed in 0.2.0" in message
    assert record[0].filename == __file__  # the user's line, not ours
    assert value == getattr(vault.admin.store.git, name)


def test_the_git_desk_answers_only_the_names_it_lists(vault: Vault) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vault.git.head()  # the desk's own verb: no warning
        with pytest.raises(AttributeError, match="nonsense"):
            vault.git.nonsense  # noqa: B018
        with pytest.raises(AttributeError):
            vault.git._git  # noqa: B018


def test_an_old_command_name_adds_its_one_warning_line_to_a_one_line_error(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root).close()
    result = CliRunner().invoke(main, ["--vault", str(root), "review", "--merge", "--reject"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"warning: {CLI_ALIASES['review'].message}",
        "error: say --merge or --reject, not both (see mdmem review --help)",
    ]


def test_forget_with_purge_warns_and_still_purges(vault: Vault) -> None:
    m = vault.remember("The staging password rotates on Mondays.")
    with pytest.warns(DeprecationWarning) as record:
        vault.forget(m.id, purge=True, confirm=True)
    assert str(record[0].message) == (
        "Vault.forget(purge=True) is deprecated and is removed in 0.2.0: "
        "use vault.git.purge(id, confirm=True)"
    )
    assert record[0].filename == __file__
    assert m.id not in {x.id for x in vault.library.list()}
