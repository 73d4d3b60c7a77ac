"""Lines appended after a file's last memory item are read without a full parse,
and the result is exactly what a full parse gives; anything else is left to it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mdmem import Vault
from mdmem.files.blocks import appended_items, parse
from mdmem.files.textfile import decode_readable

WHEN = datetime(2026, 1, 2, tzinfo=UTC)


def _parse(text: str, path: str = "MEMORY.md"):  # type: ignore[no-untyped-def]
    return parse(path, decode_readable(text.encode()), fallback_time=WHEN)


@pytest.fixture
def memory_file(vault: Vault) -> str:
    """MEMORY.md as agents leave it: a heading, a person's paragraph, items."""
    for i in range(5):
        vault.remember(f"Fact number {i} about the deploy window")
    return (vault.root / "MEMORY.md").read_text()


def _appended(vault: Vault, extra: list[str]) -> list[str]:
    other = Vault.open(vault.root, agent="other")
    return [other.remember(text).id for text in extra]


def test_other_agents_items_read_alone_equal_a_full_parse(vault: Vault, memory_file: str) -> None:
    old = _parse(memory_file)
    ids = _appended(vault, ["The window moved to Tuesday", "Ask Ana about #billing"])
    new_text = (vault.root / "MEMORY.md").read_text()
    fast = appended_items(old, decode_readable(new_text.encode()))
    assert fast is not None
    full = _parse(new_text)
    assert fast.blocks == full.blocks
    assert [b.id for b in fast.blocks[-2:]] == ids


@pytest.mark.parametrize(
    "tail",
    [
        "  indented continuation of the last item\n",  # joins the item above
        "a paragraph line\n",
        "\n- after a blank line ^m-01abcdefgh0000\n",
        "```\n- fenced ^m-01abcdefgh0001\n",
        "- an item without an id\n",
        "## A heading\n- under it ^m-01abcdefgh0002\n",
    ],
)
def test_any_other_change_is_left_to_the_full_parse(memory_file: str, tail: str) -> None:
    old = _parse(memory_file)
    assert appended_items(old, decode_readable((memory_file + tail).encode())) is None


def test_an_edit_before_the_end_is_left_to_the_full_parse(memory_file: str) -> None:
    old = _parse(memory_file)
    edited = memory_file.replace("Fact number 0", "Fact number zero")
    edited += "- new item ^m-01abcdefgh0003\n"
    assert appended_items(old, decode_readable(edited.encode())) is None


def test_a_file_not_ending_in_an_item_is_left_to_the_full_parse() -> None:
    text = "# Notes\n\nSome paragraph a person wrote.\n"
    old = _parse(text, "notes/a.md")
    grown = text + "- an item ^m-01abcdefgh0004\n"
    assert appended_items(old, decode_readable(grown.encode())) is None


def test_the_catalog_sees_another_writers_items(vault: Vault) -> None:
    vault.remember("first fact from this agent")
    ids = _appended(vault, [f"other agent fact {i}" for i in range(3)])
    vault.remember("second fact from this agent")  # syncs the other's lines first
    for memory_id in ids:
        assert vault.get(memory_id) is not None
    assert {h.id for h in vault.recall("other agent fact", k=10).items} >= set(ids)


def test_a_rewrite_after_another_writers_append_reaches_the_indexes(vault: Vault) -> None:
    old = vault.remember("The staging database password rotates on Fridays").id
    _appended(vault, ["Another agent's note about the release train"])
    # This process first reads the other's append on its own, then rewrites an
    # older line (forget changes its status in place): the indexes must see both.
    vault.forget(old)
    vault.remember("A note written after the forget")
    assert old not in {h.id for h in vault.recall("staging database password", k=10).items}
    fresh = Vault.open(vault.root, agent="third")
    assert old not in {h.id for h in fresh.recall("staging database password", k=10).items}
    assert "release train" in fresh.recall("release train", k=1).items[0].text
    report = fresh.admin.doctor()
    assert not [p for p in report.problems if "index" in p.check.lower()], report.problems


def test_a_block_rewritten_after_an_append_voids_the_append_shortcut(
    vault: Vault, memory_file: str
) -> None:
    from dataclasses import replace

    catalog = vault.admin.store.catalog
    path = vault.root / "MEMORY.md"
    _appended(vault, ["Another agent's line"])
    raw = path.read_bytes()
    st = path.stat()
    sig = (st.st_mtime_ns, st.st_size, st.st_ino)
    before = len(catalog.blocks_in("MEMORY.md"))
    catalog.load("MEMORY.md", raw, sig)
    assert len(catalog.blocks_in("MEMORY.md")) == before + 1
    first = next(b for b in catalog.blocks_in("MEMORY.md") if b.is_memory)
    catalog.replace_block("MEMORY.md", replace(first, status="superseded"), sig)
    # The indexes must now diff the whole file, not just the appended block.
    assert catalog.take_appended("MEMORY.md") is None
