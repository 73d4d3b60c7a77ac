"""recall(as_of=...): the vault as it was at a date or commit."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main


def _at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)


def test_as_of_day_one_returns_what_was_believed_then(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, "2026-03-01T10:00:00+00:00")
    x = vault.remember("Deploys happen on Tuesdays", kind="decision")
    day_one = vault.git.head()
    _at(monkeypatch, "2026-03-02T10:00:00+00:00")
    y = vault.supersede(x.id, "Deploys happen on Fridays")
    now = vault.recall("when do deploys happen")
    assert [h.id for h in now.items] == [y.id]
    then = vault.recall("when do deploys happen", as_of="2026-03-01")
    assert [h.id for h in then.items] == [x.id]
    assert then.items[0].commit == day_one and "Tuesdays" in then.items[0].text
    by_commit = vault.recall("when do deploys happen", as_of=day_one)
    assert [h.id for h in by_commit.items] == [x.id]
    # Warm: the snapshot is reused from memory, then from disk after reopening.
    assert vault.recall("deploys", as_of=day_one).items[0].id == x.id
    reopened = Vault.open(vault.root)
    assert reopened.recall("deploys", as_of=day_one).items[0].id == x.id


def test_as_of_before_the_first_commit_is_an_error(vault: Vault) -> None:
    with pytest.raises(InvalidInputError, match="no commit"):
        vault.recall("anything", as_of="1999-01-01")
    with pytest.raises(InvalidInputError):
        vault.recall("anything", as_of="not a commit or date")


def test_cli_as_of(vault: Vault) -> None:
    m = vault.remember("Snapshots are cached by commit")
    head = vault.git.head()
    vault.forget(m.id)
    out = CliRunner().invoke(
        main,
        ["--vault", str(vault.root), "recall", "snapshots cached", "--as-of", str(head), "--json"],
    )
    assert out.exit_code == 0, out.output
    assert '"commit": "' + str(head) in out.output
