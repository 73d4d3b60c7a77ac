"""Recall controls: exclude_ids, metadata filters, status, scope weights, the
substring fallback and lean prompts, through the API, the CLI, the tools and MCP."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.agent.prompt import prompt_context
from mdmem.cli import main
from mdmem.mcp.tools import Toolset


def _ids(result: object) -> list[str]:
    return [h.id for h in result]  # type: ignore[attr-defined]


def test_exclude_ids_leaves_out_what_the_agent_has_seen(vault: Vault) -> None:
    first = vault.remember("The garden hose is in the shed.")
    second = vault.remember("The garden rake is behind the shed.")
    seen = _ids(vault.recall("garden shed"))
    assert {first.id, second.id} <= set(seen)
    again = _ids(vault.recall("garden shed", exclude_ids=[first.id]))
    assert first.id not in again and second.id in again
    # Citations and ^ids name the same memory.
    cited = _ids(vault.recall("garden shed", exclude_ids=[f"MEMORY.md#^{second.id}"]))
    assert second.id not in cited and first.id in cited
    with pytest.raises(InvalidInputError):
        vault.recall("garden shed", exclude_ids=["not an id"])


def test_metadata_filters_source_contact_session_author(vault: Vault) -> None:
    tg = vault.session("tg-1", source="telegram", contact="telegram:1")
    sl = vault.session("sl-1", source="slack", contact="slack:9")
    on_tg = tg.record("user", "The boat trip is on Saturday morning.")
    on_sl = sl.record("user", "The boat trip was moved to Sunday.")
    by_ann = vault.remember("The boat needs fuel before the trip.", fields=[("author", "ann")])
    note = vault.root / "notes" / "boat.md"
    note.parent.mkdir()
    note.write_text("# Boat\n\n## Trip\n\nPack life vests for the boat trip.\n", encoding="utf-8")
    vault.admin.commit_human_edits()
    q = "boat trip"
    assert _ids(vault.recall(q, source="telegram")) == [on_tg.id]
    assert _ids(vault.recall(q, contact="slack:9")) == [on_sl.id]
    assert _ids(vault.recall(q, session="sl-1")) == [on_sl.id]
    assert set(_ids(vault.recall(q, source=["telegram", "slack"]))) == {on_tg.id, on_sl.id}
    assert _ids(vault.recall(q, author="ann")) == [by_ann.id]
    assert _ids(vault.recall(q, author="human")) == ["notes/boat.md#Trip"]
    with pytest.raises(InvalidInputError, match="unknown recall argument"):
        vault.recall(q, speaker="ann")


def test_status_filter_finds_archived_and_resolved_only_when_asked(vault: Vault) -> None:
    active = vault.remember("The espresso machine descales monthly.")
    parked = vault.remember("The espresso beans come from a Lisbon roaster.")
    done = vault.remember("The espresso grinder needs a new burr.")
    vault.archive(parked.id)
    vault.resolve(done.id)
    assert _ids(vault.recall("espresso")) == [active.id]
    assert _ids(vault.recall("espresso", status="archived")) == [parked.id]
    assert _ids(vault.recall("espresso", status="resolved")) == [done.id]
    assert set(_ids(vault.recall("espresso", status=["archived", "resolved"]))) == {
        parked.id,
        done.id,
    }
    with pytest.raises(InvalidInputError, match="unknown status"):
        vault.recall("espresso", status="deleted")


def test_scope_weights_reorder_and_zero_suppresses(vault: Vault) -> None:
    home = vault.remember("The team lunch is on Friday at noon.", scope="project:home")
    work = vault.remember("The team lunch is on Friday at one.", scope="project:work")
    both = set(_ids(vault.recall("team lunch friday")))
    assert both == {home.id, work.id}
    for favoured, other in ((home, work), (work, home)):
        weights = {favoured.scope: 2.0, other.scope: 0.5}
        assert _ids(vault.recall("team lunch friday", scope_weights=weights))[0] == favoured.id
    only = _ids(vault.recall("team lunch friday", scope_weights={"project:work": 0}))
    assert only == [home.id]
    for bad in ({"project:work": -1}, {"project:work": "high"}, ["project:work"]):
        with pytest.raises(InvalidInputError):
            vault.recall("team lunch friday", scope_weights=bad)


def test_substring_fallback_when_keywords_find_nothing(vault: Vault) -> None:
    cpp = vault.remember("Build with the C++ toolchain on the CI runners.")
    cfg = vault.remember("The bastion config lives at ~/.conf/x_fooBar_baz.toml today.")
    vault.remember("Weather in Lisbon is mild.")
    # Symbols the keyword tokenizer drops, and part of a token, still match.
    assert _ids(vault.recall("C++"))[:1] == [cpp.id]
    assert _ids(vault.recall("ooBar_ba"))[:1] == [cfg.id]
    assert cpp.id not in _ids(vault.recall("C++", fallback=False))
    assert cfg.id not in _ids(vault.recall("ooBar_ba", fallback=False))


def test_lean_prompt_skips_semantic_and_episodic_retrieval(vault: Vault) -> None:
    vault.remember("The user's cat is called Miso.")
    s = vault.session("c-1", contact="zoe")
    s.record("user", "Remember that my cat Miso likes tuna.")
    vault.consolidate()
    full = prompt_context(vault, "what does the cat like")
    assert full["semantic"].ids and full["episodes"].ids
    lean = prompt_context(vault, "what does the cat like", lean=True)
    assert lean["semantic"].ids == [] and lean["episodes"].ids == []
    assert lean["recent"].ids  # the cheap sections stay


def test_controls_from_the_cli(vault: Vault) -> None:
    a = vault.remember("The office wifi is called Orchard.", scope="project:a")
    b = vault.remember("The office wifi password hint is fruit.", scope="project:b")
    runner = CliRunner()

    def recall(*args: str) -> list[str]:
        out = runner.invoke(
            main, ["--vault", str(vault.root), "recall", "office wifi", "--json", *args]
        )
        assert out.exit_code == 0, out.output
        return [i["id"] for i in json.loads(out.output)["items"]]

    assert recall("--exclude-id", a.id) == [b.id]
    assert recall("--scope-weight", "project:b=0") == [a.id]
    vault.archive(b.id)
    assert recall("--status", "archived") == [b.id]
    bad = runner.invoke(
        main, ["--vault", str(vault.root), "recall", "wifi", "--scope-weight", "project:b"]
    )
    assert bad.exit_code != 0 and "SCOPE=WEIGHT" in bad.output


def test_controls_through_the_recall_tool(vault: Vault) -> None:
    tg = vault.session("tg-2", source="telegram")
    first = tg.record("user", "The parcel arrives on Tuesday.")
    second = tg.record("user", "The parcel needs a signature.")
    tools = Toolset(vault)
    got = tools.dispatch("recall", {"query": "parcel", "exclude_ids": [first.id]})
    assert [i["id"] for i in got["items"]] == [second.id]
    got = tools.dispatch("recall", {"query": "parcel", "source": "slack"})
    assert got["items"] == []
    bad = tools.dispatch("recall", {"query": "parcel", "scope_weights": ["root"]})
    assert bad["error"]["type"] == "invalid_arguments"
    bad = tools.dispatch("recall", {"query": "parcel", "exclude_ids": first.id})
    assert bad["error"]["type"] == "invalid_arguments"  # a string is not a list
    hidden = vault.remember("The parcel locker code is kept by Bob.", scope="user:bob")
    confined = Toolset(vault, ["root"])
    denied = confined.dispatch("recall", {"query": "parcel", "scope_weights": {"user:bob": 5}})
    assert denied["error"]["type"] == "scope_denied"
    assert hidden.id not in json.dumps(denied)
