"""Names a query calls people by: nicknames from how a chat uses them, and misspellings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.models import Block
from mdmem.recall import aliases
from mdmem.recall.conversation import FileOrder
from tests.recall.test_conversation import turn as conversation_turn

T0 = datetime(2024, 1, 5, 20, 0, tzinfo=UTC)


def chat(lines: Sequence[tuple[str, str]]) -> list[Block]:
    return [
        conversation_turn(n, text, who, path="sessions/s.md", at=T0)
        for n, (who, text) in enumerate(lines, start=1)
    ]


EMI_AND_ELISE = chat(
    [
        ("Emi", "Hi! I'm Kate by the way."),
        ("elise", "Hey Kate! Nice to meet you."),
        ("Emi", "I took a cooking class today."),
        ("elise", "That looks amazing Kate!"),
        ("Emi", "I went skiing in Utah."),
        ("elise", "What about you Kate?"),
        ("Emi", "My friend Sarah came over."),
        ("elise", "I met Sarah at the gym, with Sarah we lifted."),
        ("Emi", "Sarah said hi."),
    ]
)


def resolve(query: str, blocks: Sequence[Block]) -> list[aliases.Alias]:
    order = FileOrder(lambda path: blocks, set)
    people = {"emi", "elise"}

    def lookup(word: str) -> list[Block]:
        return [b for b in blocks if word.casefold() in b.text.casefold()]

    return aliases.resolve(query, people, lookup, order.neighbours)


def test_a_nickname_used_to_address_someone_means_them() -> None:
    found = resolve("What countries has Kate visited?", EMI_AND_ELISE)
    assert found == [aliases.Alias("Kate", "Emi", "nickname")]
    assert aliases.rewrite("What are Kate's hobbies?", found) == "What are Emi's hobbies?"


def test_a_third_person_talked_about_is_nobodys_nickname() -> None:
    assert resolve("Where did Sarah go?", EMI_AND_ELISE) == []


def test_known_names_and_question_words_are_left_alone() -> None:
    assert resolve("What did Elise and Emi do in May?", EMI_AND_ELISE) == []


def test_a_misspelt_name_means_the_one_known_name_an_edit_away() -> None:
    blocks = chat([("Akib", "I played Smite."), ("Fahim Khan", "Cool.")])
    order = FileOrder(lambda path: blocks, set)
    people = {"akib", "fahim", "khan"}

    def lookup(word: str) -> list[Block]:
        return [b for b in blocks if word.casefold() in b.text.casefold()]

    found = aliases.resolve("What games do Aqib and Fahin play?", people, lookup, order.neighbours)
    assert found == [
        aliases.Alias("Aqib", "akib", "misspelling"),
        aliases.Alias("Fahin", "fahim", "misspelling"),
    ]
    # A word the vault holds is not a misspelling, even one edit from a name.
    blocks.append(conversation_turn(9, "Fahin is my cousin.", "Akib", path="sessions/s.md", at=T0))
    assert aliases.resolve("Who is Fahin?", people, lookup, order.neighbours) == []


@pytest.mark.parametrize(
    ("a", "b", "close"),
    [
        ("aqib", "akib", True),
        ("fahin", "fahim", True),
        ("elisa", "elise", True),
        ("jon", "john", True),
        ("mraia", "maria", True),
        ("kate", "emi", False),
        ("anna", "anne", True),
        ("bob", "bob", False),
    ],
)
def test_one_edit(a: str, b: str, close: bool) -> None:
    assert aliases._one_edit(a, b) is close


def test_recall_reads_a_nickname_as_the_person(tmp_path: Path) -> None:
    vault = Vault.init(
        tmp_path / "v", agent="t", embedder={"provider": "hash"}, consolidation={"auto": False}
    )
    with vault.batch("chat"):
        for block in EMI_AND_ELISE:
            speaker = block.field("speaker")
            assert speaker is not None
            vault.remember(block.text, kind="fact", fields=[("speaker", speaker)], created=T0)
    result = vault.recall("Where did Kate go skiing?", k=3, mode="keyword")
    assert result.query == "Where did Kate go skiing?"  # as asked
    assert "skiing" in result.items[0].text
    # The people feature fires for Emi's turns: the query now names her.
    assert result.items[0].scores.get("f_people") == 1.0
    vault.close()
