"""Updates that say so are noticed (issue #32, item 4): "… now", "no longer",
"moved to", a changed day or time for the same subject."""

from __future__ import annotations

import pytest

from mdmem import Vault
from mdmem.agent.prompt import prompt_context
from mdmem.memory.consolidation.subjects import compare

UPDATES = [
    ("The deploy window is Monday 09:00.", "The deploy window is Tuesday 09:00 now."),
    ("The standup is at 10am.", "The standup moved to 11am."),
    ("The user lives in Lisbon.", "The user moved to Porto."),
    ("The user drinks coffee every morning.", "The user no longer drinks coffee every morning."),
    ("The cache TTL is 60 seconds.", "The cache TTL was raised to 300 seconds."),
    ("The main branch is called master.", "The main branch was renamed to main."),
    ("The book club meets on Wednesdays.", "The book club meets on Thursdays these days."),
]
DISTINCT = [
    ("The user drinks tea.", "The user no longer drinks coffee."),  # another statement negated
    ("The team uses GitHub for code.", "The team switched to Linear for tickets."),
    ("The frontend moved to Vite.", "The backend moved to Go."),
    ("The user reads science fiction.", "The user reads history now and then."),
    ("Ticket OPS-311 is open now.", "Ticket OPS-312 is open now."),
    ("The user's brother moved to Braga.", "The user moved to Porto."),
]


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_a_new_value_said_to_replace_the_old_is_an_update(old: str, new: str) -> None:
    verdict = compare(old, new)
    assert verdict.update and verdict.said, verdict


@pytest.mark.parametrize(("old", "new"), DISTINCT)
def test_change_words_about_something_else_are_no_update(old: str, new: str) -> None:
    # Never "said": the lower similarity bar is not theirs. (The plain rule may still call
    # "reads science fiction" / "reads history" an update: its cosine gate keeps them.)
    verdict = compare(old, new)
    assert not verdict.said, verdict


def test_plain_updates_are_not_marked_said() -> None:
    verdict = compare("the office is cleaned monthly", "the office is cleaned weekly")
    assert verdict.update and not verdict.said


@pytest.mark.slow
def test_remember_retires_the_old_window_and_it_never_reaches_a_prompt(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_EMBEDDER_PROVIDER", "minilm")
    minilm = Vault.open(vault.root)
    old = minilm.remember("The deploy window is Monday 09:00.")
    new = minilm.remember("The deploy window is Tuesday 09:00 now.")
    assert new.superseded == (old.id,)
    assert minilm.get(old.id).status == "superseded"
    context = prompt_context(minilm, "When is the deploy window?")
    shown = context.ids
    assert old.id not in shown and new.id in shown
    assert "Monday 09:00" not in context.render()
    # Saying it moved takes the value far from the old text (cosine ~0.65 with MiniLM).
    lisbon = minilm.remember("The user lives in Lisbon.")
    porto = minilm.remember("The user moved to Porto.")
    assert porto.superseded == (lisbon.id,)
    minilm.close()
