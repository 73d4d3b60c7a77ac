"""Contacts under attack and bad luck: scope leaks, probing, ambiguous links, broken notes."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError
from mdmem.mcp.tools import Toolset

PHONE = "whatsapp:+15550100"


def test_a_profile_is_not_recalled_outside_its_persons_scope(vault: Vault) -> None:
    vault.contacts.link(PHONE, "user:alice", display_name="Alice Zebrafinch")
    vault.remember("The zebrafinch project ships in May")  # root: something to find
    # An assistant confined to the root (or another person) must not find
    # alice's phone number by recalling her name.
    for allowed in (["root"], ["root", "user:bob"]):
        tools = Toolset(vault, allowed_scopes=allowed, tools=["recall"])
        found = tools.dispatch("recall", {"query": "Alice Zebrafinch whatsapp", "top_k": 10})
        assert "items" in found and "+15550100" not in str(found), allowed
    root_only = vault.recall("Alice Zebrafinch whatsapp", k=10, scope="").items
    assert root_only and all("+15550100" not in h.text for h in root_only)
    # In her own scope the profile is hers to find.
    mine = vault.recall("Alice Zebrafinch", k=10, scope="user:alice").items
    assert any("+15550100" in h.text for h in mine)


def test_probing_platform_ids_tells_nothing_outside_the_scopes(vault: Vault) -> None:
    vault.contacts.link(PHONE, "user:alice")
    bob = Toolset(vault, allowed_scopes=["user:bob"], tools=["contact_profile"])
    linked = bob.dispatch("contact_profile", {"who": PHONE})["error"]
    unknown = bob.dispatch("contact_profile", {"who": "whatsapp:+15550199"})["error"]
    person = bob.dispatch("contact_profile", {"who": "user:alice"})["error"]
    # A linked number, an unknown one and a person elsewhere answer alike.
    assert linked["type"] == unknown["type"] == person["type"] == "not_found"
    assert "+15550100" not in linked["message"].replace(PHONE, "")


def test_a_person_id_is_not_a_platform_id_and_links_do_not_chain(vault: Vault) -> None:
    vault.contacts.link("telegram:1", "user:bob")
    vault.contacts.link("telegram:2", "user:alice")
    with pytest.raises(InvalidInputError, match="is a person"):
        vault.contacts.link("user:bob", "user:alice")  # bob is someone, not alice's handle
    with pytest.raises(InvalidInputError, match="contact:"):
        vault.contacts.link("telegram:3", "contact:telegram-3")
    assert vault.contacts.person_of("telegram:1") == "user:bob"


def test_a_platform_id_on_two_profiles_resolves_to_nobody_and_doctor_says_so(
    vault: Vault,
) -> None:
    vault.contacts.link("telegram:7", "user:alice")
    vault.contacts.link("telegram:8", "user:bob")
    bob = vault.root / "contacts/user/bob.md"
    bob.write_text(bob.read_text().replace("- telegram:8", "- telegram:8\n- telegram:7"))
    vault.admin.refresh()
    # Which of the two did the person mean? Guessing would file the turns of
    # one person in another's scope.
    assert vault.contacts.person_of("telegram:7") is None
    session = vault.session("tg-7", contact="telegram:7")
    assert session.scope == ""
    report = vault.admin.doctor()
    problems = [p.detail for p in report.problems if p.check == "contact profiles"]
    assert any("telegram:7" in d and "user:alice" in d and "user:bob" in d for d in problems)


def test_doctor_reports_profiles_broken_by_hand(vault: Vault) -> None:
    vault.contacts.link("telegram:1", "user:alice")
    vault.contacts.link("telegram:2", "user:bob")
    vault.contacts.link("telegram:3", "user:carol")
    assert "contact profiles" in vault.admin.doctor().checks
    assert not [p for p in vault.admin.doctor().problems if p.check == "contact profiles"]
    (vault.root / "contacts/user/alice.md").write_text("---\nperson: [unclosed\n---\n# A\n")
    bob = vault.root / "contacts/user/bob.md"
    bob.write_text(bob.read_text().replace("person: user:bob", "person: user:mallory"))
    carol = vault.root / "contacts/user/carol.md"
    carol.write_text(carol.read_text().replace("- telegram:3", "- tele gram [3]"))
    (vault.root / "contacts/Notes.md").write_text("# my own note\n")
    details = [p.detail for p in vault.admin.doctor().problems if p.check == "contact profiles"]
    joined = "\n".join(details)
    assert "contacts/user/alice.md" in joined and "frontmatter" in joined
    assert "contacts/user/bob.md" in joined and "user:mallory" in joined
    assert "contacts/user/carol.md" in joined and "tele gram" in joined
    assert "contacts/Notes.md" not in joined  # a person's own note there is theirs
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "doctor", "--json"])
    assert "contact profiles" in out.output


def test_renames_racing_recorded_turns_lose_nothing(vault: Vault, run_git) -> None:
    vault.contacts.link("telegram:5", "user:dana", display_name="Dana")
    session = vault.session("tg-5", contact="telegram:5")
    errors: list[BaseException] = []

    def turns() -> None:
        try:
            for n in range(12):
                session.record("user", f"turn {n}", when=datetime(2026, 3, 1 + n, tzinfo=UTC))
        except BaseException as exc:
            errors.append(exc)

    def renames() -> None:
        try:
            for n in range(6):
                vault.contacts.rename("user:dana", f"Dana {n}")
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=turns), threading.Thread(target=renames)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not errors
    profile = vault.contacts.profile("telegram:5")
    assert profile.display_name == "Dana 5" and profile.platform_ids == ["telegram:5"]
    assert profile.last_seen == "2026-03-12T00:00+00:00"
    assert not vault.admin.store.git.dirty_paths()
