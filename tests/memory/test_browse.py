"""``vault.library.list`` filters and ``show`` (text, metadata, history, provenance)."""

from __future__ import annotations

import pytest

from mdmem import Vault
from mdmem.errors import InvalidInputError, MemoryNotFoundError
from tests.conftest import git


def _seed(vault: Vault) -> dict[str, str]:
    ids = {}
    ids["old"] = vault.remember("Standup is at 9.", tags=["team"], created="2024-01-10").id
    ids["pref"] = vault.remember("Prefers dark mode.", kind="preference", tags=["ui"]).id
    ids["web"] = vault.remember("Web deploys on Tuesdays.", scope="project:web").id
    ids["gone"] = vault.remember("The launch is in April.", created="2024-03-01").id
    vault.resolve(ids["gone"])
    return ids


def test_list_filters(vault: Vault) -> None:
    ids = _seed(vault)

    def listed(**filters: object) -> list[str]:
        return [m.id for m in vault.library.list(**filters)]

    assert set(listed()) == set(ids.values())
    assert listed(kinds=["preference"]) == [ids["pref"]]
    assert listed(scopes=["project:web"]) == [ids["web"]]
    assert ids["web"] not in listed(scopes=[""])
    assert listed(statuses=["resolved"]) == [ids["gone"]]
    assert listed(tags=["#team"]) == [ids["old"]]
    assert listed(until="2024-01-31") == [ids["old"]]
    assert set(listed(since="2024-01-10", until="2024-03-01")) == {ids["old"], ids["gone"]}
    # Newest first by default, a limit, and oldest first on request.
    assert listed(since="2024-01-01", until="2024-12-31") == [ids["gone"], ids["old"]]
    assert listed(since="2024-01-01", until="2024-12-31", oldest_first=True) == [
        ids["old"],
        ids["gone"],
    ]
    assert len(listed(limit=2)) == 2
    with pytest.raises(InvalidInputError):
        vault.library.list(since="last tuesday")


def test_list_by_author_tells_agent_and_person_apart(vault: Vault) -> None:
    ids = _seed(vault)
    user_md = vault.root / "USER.md"
    user_md.write_text(user_md.read_text() + "- Likes tea. ^m-01hhuman0000000000000000000\n")
    git(vault.root, "add", "USER.md", human=True)
    git(vault.root, "commit", "-qm", "my note", human=True)
    mine = vault.library.list(author="Ada Human")
    assert [m.text for m in mine] == ["Likes tea."]
    assert [m.id for m in vault.library.list(author="ADA@example.org")] == [mine[0].id]
    agent = {m.id for m in vault.library.list(author="test-agent")}
    assert agent == set(ids.values())


def test_show_has_text_metadata_history_and_authors(vault: Vault) -> None:
    m = vault.remember("Deploys go out on Tuesdays.", tags=["ops"], fields=[("owner", "ana")])
    vault.resolve(m.id)
    shown = vault.library.show(m.id)
    assert shown.memory["text"].startswith("Deploys go out on Tuesdays.")
    assert shown.memory["status"] == "resolved"
    assert ["owner", "ana"] in shown.memory["fields"]
    assert [v.status for v in shown.history] == ["active", "resolved"]
    assert shown.provenance is not None and shown.provenance.authors == ("test-agent",)
    assert shown.problems == []
    with pytest.raises(MemoryNotFoundError):
        vault.library.show("m-01nonexistent00000000000000")


def test_list_and_recall_filter_alike(vault: Vault) -> None:
    """One filter for both (mdmem.recall.search.BlockFilter): a tag finds its
    children, ``-kind`` leaves a kind out, an unknown kind is an error in both."""
    db = vault.remember("The infra database runs on db-07.", tags=["infra/db"]).id
    net = vault.remember("The infra network uses VLAN 40.", tags=["infra"]).id
    pref = vault.remember("Prefers infra changes on Mondays.", kind="preference").id
    other = vault.remember("The infra budget is fixed.", tags=["infrastructure"]).id

    def listed(**filters: object) -> set[str]:
        return {m.id for m in vault.library.list(**filters)}

    def recalled(**filters: object) -> set[str]:
        return {h.id for h in vault.recall("infra", k=20, **filters).items}  # type: ignore[arg-type]

    cases: list[dict[str, object]] = [
        {"tags": ["infra"]},
        {"tags": ["#infra/db"]},
        {"kinds": ["-preference"]},
        {"kinds": "preference"},
    ]
    for filters in cases:
        assert listed(**filters) == recalled(**filters), filters
    assert listed(tags=["infra"]) == {db, net}  # not "infrastructure": a child is "infra/…"
    assert pref not in listed(kinds=["-preference"]) and other in listed(kinds=["-preference"])
    for call in (listed, recalled):
        with pytest.raises(InvalidInputError):
            call(kinds=["recipe"])
