"""Tiered recall: L0 abstracts and L1 overviews stored with long blocks, a
``tier`` argument on recall, context, the CLI and the tools; full text by id."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from mdmem import InvalidInputError, Vault
from mdmem.cli import main
from mdmem.git.purge import purge
from mdmem.mcp.tools import Toolset

TURNS = [
    ("user", "We are planning the Lisbon offsite for the platform team in October."),
    ("assistant", "The Lisbon offsite needs a venue near the river and a budget cap."),
    ("user", "Remember that the offsite budget is capped at forty thousand euros."),
    ("assistant", "Noted: the offsite budget cap is forty thousand euros for October."),
    ("user", "Book the venue by the end of June so the team can plan travel."),
]


def _episode(vault: Vault) -> tuple[str, dict[str, object]]:
    s = vault.session("plan-1", contact="ines")
    for role, text in TURNS:
        s.record(role, text)
    (episode,) = vault.consolidate().episodes
    raw = (vault.root / episode.path).read_text(encoding="utf-8")
    return episode.id, yaml.safe_load(raw.split("---\n")[1])


def test_episodes_store_an_abstract_and_an_overview_and_recall_serves_each_tier(
    vault: Vault,
) -> None:
    episode_id, meta = _episode(vault)
    abstract, overview = str(meta["abstract"]), str(meta["overview"])
    assert abstract and "\n" not in abstract and len(abstract) <= 160
    assert overview and len(overview) <= 600
    query = "Lisbon offsite budget venue"

    def episode_hit(tier: int) -> object:
        hits = vault.recall(query, kinds=["episode"], tier=tier).items
        return next(h for h in hits if h.id == episode_id)

    full = episode_hit(2)
    assert full.tier == 2 and full.text == vault.get(episode_id).text
    one = episode_hit(1)
    assert one.tier == 1 and one.text == overview
    zero = episode_hit(0)
    assert zero.tier == 0 and zero.text == abstract
    # Abstracts first in a prompt block too; the id opens the whole text.
    block = vault.context(query, kinds=["episode"], tier=0)
    assert abstract in block and full.text not in block
    with pytest.raises(InvalidInputError, match="tier"):
        vault.recall(query, tier=3)


def test_tool_outputs_keep_an_abstract_their_preview_and_the_full_text(vault: Vault) -> None:
    log = "ERROR: database migration 42 failed on table invoices\n" + "\n".join(
        f"  at step {i}: retrying migration on shard {i % 5}" for i in range(700)
    )
    entry = vault.session("ops-1").record_tool_output("migrate", log)
    line = vault.get(entry.id).field("abstract")
    assert line == "ERROR: database migration 42 failed on table invoices"
    hits = {t: vault.recall("migration failed invoices", tier=t).items[0] for t in (0, 1, 2)}
    assert all(h.id == entry.id for h in hits.values())
    assert hits[0].text == line
    assert hits[1].text == hits[2].text == vault.get(entry.id).text  # the preview
    key = vault.get(entry.id).field("tout")
    assert key and vault.sessions.read_tool_output(key) == log  # L2: everything


def test_a_long_memory_without_stored_tiers_is_cut_at_read_time(vault: Vault) -> None:
    long_text = (
        "The quarterly report covers revenue, hiring and the new office lease. "
        + "It also lists every vendor contract renewed this quarter and its terms. " * 12
    )
    memory = vault.remember(long_text.strip())
    zero = vault.recall("quarterly report vendor contracts", tier=0).items[0]
    assert zero.id == memory.id and len(zero.text) <= 160 and zero.text.startswith("The quarterly")
    one = vault.recall("quarterly report vendor contracts", tier=1).items[0]
    assert len(one.text) <= 600 and one.text.endswith(".")
    assert vault.get(memory.id).text == long_text.strip()


def test_tier_on_the_tools_and_the_cli(vault: Vault) -> None:
    episode_id, meta = _episode(vault)
    tools = Toolset(vault)
    # kinds=episode: the turns the episode summarises would stand for it otherwise
    # (one hit per fact), and this is about how a long block is shown.
    got = tools.dispatch(
        "recall", {"query": "Lisbon offsite budget", "tier": 0, "source_kinds": ["episode"]}
    )
    item = next(i for i in got["items"] if i["id"] == episode_id)
    assert item["tier"] == 0 and item["content"] == meta["abstract"]
    full = tools.dispatch("get", {"memory_id": episode_id})
    assert full["content"] == vault.get(episode_id).text
    bad = tools.dispatch("recall", {"query": "Lisbon", "tier": 5})
    assert bad["error"]["type"] == "invalid_arguments"
    out = CliRunner().invoke(
        main,
        [
            "--vault",
            str(vault.root),
            "recall",
            "Lisbon offsite budget",
            "--kind",
            "episode",
            "--tier",
            "0",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    items = json.loads(out.output)["items"]
    assert any(i["id"] == episode_id and i["tier"] == 0 for i in items)


def test_purge_takes_a_source_out_of_the_title_abstract_and_overview(vault: Vault) -> None:
    s = vault.session("pw-1", contact="max")
    secret = s.record("user", "Remember that the Zephyrine lockbox sits behind the boiler.")
    s.record("assistant", "Understood.")
    (episode,) = vault.consolidate().episodes
    note = (vault.root / episode.path).read_text(encoding="utf-8")
    meta = yaml.safe_load(note.split("---\n")[1])
    assert "Zephyrine" in meta["title"] and "Zephyrine" in meta["abstract"]
    result = purge(vault.admin.store, secret.id, confirm=True)
    path = vault.admin.store.catalog.path_of(episode.id)
    assert path is not None and "zephyrine" not in path
    assert dict(result.renamed)[episode.path] == path
    note = (vault.root / path).read_text(encoding="utf-8")
    assert "Zephyrine" not in note
    # Title and tiers are made again from what is left (the assistant's "Understood.").
    meta = yaml.safe_load(note.split("---\n")[1])
    assert meta["title"] and meta["abstract"] and meta["regenerated"]
