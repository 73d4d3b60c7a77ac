"""People and threads in recall: names as labels, replies inheriting their question's relevance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mdmem import Vault
from mdmem.models import Block
from mdmem.recall.conversation import (
    FileOrder,
    name_tokens,
    people_of,
    strip_people,
    thread_bonus,
    voice_of,
)

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)


def turn(
    n: int,
    text: str,
    speaker: str | None,
    *,
    path: str = "MEMORY.md",
    at: datetime = T0,
    field: str = "speaker",
) -> Block:
    return Block(
        id=f"m-{n:012d}",
        path=path,
        line_start=n,
        line_end=n,
        heading="",
        text=text,
        kind="fact",
        tags=(),
        scope="",
        status="active",
        created=at,
        updated=None,
        content_hash=str(n),
        fields=((field, speaker),) if speaker else (),
    )


class Order:
    """A Threads view over a fixed list of blocks."""

    def __init__(self, blocks: list[Block], people: set[str] | None = None) -> None:
        self.blocks = {b.id: b for b in blocks}
        by_path: dict[str, list[Block]] = {}
        for b in blocks:
            by_path.setdefault(b.path, []).append(b)
        self.order = FileOrder(lambda p: by_path.get(p, []), lambda: people or set())


# ------------------------------------------------------------------ people --


def test_name_tokens_skip_everyday_words_and_initials() -> None:
    assert name_tokens(["Caroline", "Will Smith", "J. May", "Ana-Lucía"]) == {
        "caroline",
        "smith",
        "ana",
        "lucía",
    }


def test_handles_and_roles_are_not_names() -> None:
    assert name_tokens(["user:demo", "telegram:123", "ana@example.org", "User", "bot"]) == set()
    assert strip_people("What does the user prefer?", name_tokens(["user:demo"])) == (
        "What does the user prefer?"
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Caroline paint?", "What did paint?"),
        ("Caroline's favourite book", "favourite book"),
        ("caroline", "caroline"),  # nothing else left: keep the query
        ("When is the deploy?", "When is the deploy?"),
    ],
)
def test_strip_people_removes_known_names_only(query: str, expected: str) -> None:
    assert strip_people(query, {"caroline", "melanie"}) == expected


def test_people_and_voice_come_from_fields() -> None:
    said = turn(1, "hi", "Caroline")
    assert people_of(said) == ["Caroline"] and voice_of(said) == "caroline"
    chat = turn(2, "hi", "user", field="role")
    assert people_of(chat) == [] and voice_of(chat) == "user"
    assert voice_of(turn(3, "a plain fact", None)) is None


# ----------------------------------------------------------------- threads --


def bonus(blocks: list[Block], relevance: dict[str, float]) -> dict[str, float]:
    view = Order(blocks)
    return thread_bonus(
        relevance,
        view.blocks.get,
        view.order,
        reply_weight=0.3,
        continuation_weight=0.1,
    )


def test_reply_inherits_from_its_question_and_speaker_continues_their_topic() -> None:
    q = turn(1, "How was the coconut ice cream you made?", "Joanna")
    a = turn(2, "Super good! Rich and creamy.", "Nate")
    other = turn(3, "Glad to hear it.", "Joanna")
    more = turn(4, "I'll send you the recipe tomorrow.", "Nate")
    got = bonus([q, a, other, more], {q.id: 0.8, a.id: 0.5})
    assert got[a.id] == pytest.approx(0.3 * 0.8)  # the reply to the question
    assert got[other.id] == pytest.approx(0.1 * 0.8)  # Joanna's next turn
    assert got[more.id] == pytest.approx(0.1 * 0.5)  # Nate's next turn
    assert q.id not in got


def test_threads_stop_at_files_gaps_and_non_turns() -> None:
    q = turn(1, "Where did you go?", "Ann")
    later = turn(2, "Lisbon.", "Bo", at=T0 + timedelta(hours=7))
    assert bonus([q, later], {q.id: 1.0}) == {}
    fact = turn(2, "The deploy runs on Tuesdays.", None)
    assert bonus([q, fact], {q.id: 1.0}) == {}
    elsewhere = turn(2, "Lisbon.", "Bo", path="sessions/other.md")
    assert bonus([q, elsewhere], {q.id: 1.0}) == {}
    not_a_question = turn(1, "I went somewhere.", "Ann")
    reply = turn(2, "Nice.", "Bo")
    assert bonus([not_a_question, reply], {not_a_question.id: 1.0}) == {}


def test_file_order_follows_appends_and_reparses() -> None:
    blocks = [turn(1, "a?", "x"), turn(2, "b", "y")]
    order = FileOrder(lambda p: blocks, set)
    assert [b.id for b in order.following(blocks[0])] == [blocks[1].id]
    blocks.append(turn(3, "c", "x"))  # appended in place
    assert [b.id for b in order.following(blocks[0])] == [blocks[1].id, blocks[2].id]
    assert order.following(turn(9, "unknown", "x")) == ()


def test_neighbours_are_the_turns_either_side_in_one_thread() -> None:
    first, second, third = turn(1, "a", "x"), turn(2, "b", "y"), turn(3, "c", "x")
    far = turn(4, "d", "y", at=T0 + timedelta(hours=7))
    fact = turn(5, "the deploy runs on Tuesdays", None)
    blocks = [third, first, far, second, fact]  # any order: the file's lines decide
    order = FileOrder(lambda p: blocks, set)
    assert [b.id for b in order.neighbours(second)] == [first.id, third.id]
    assert [b.id for b in order.neighbours(first)] == [second.id]
    assert [b.id for b in order.neighbours(third)] == [second.id]  # `far` is another thread
    assert order.neighbours(fact) == ()  # not a turn
    assert order.neighbours(turn(9, "unknown", "x")) == ()


# -------------------------------------------------------------- in a vault --


def test_session_reply_is_recalled_through_its_question(vault: Vault) -> None:
    chat = vault.session("s1", contact="Joanna")
    chat.record("user", "Which flavour of ice cream did you make last weekend?", when=T0)
    answer = chat.record("assistant", "Coconut milk, super rich.", when=T0 + timedelta(minutes=1))
    vault.remember("Deploys happen on Tuesdays.")
    hits = vault.recall("ice cream flavour", k=5).items
    reply = next(h for h in hits if h.id == answer.id)
    assert reply.scores["thread"] > 0
    off = Vault.open(
        vault.root,
        agent="test-agent",
        recall={"thread_reply_weight": 0.0, "thread_continuation_weight": 0.0},
    )
    assert all("thread" not in h.scores for h in off.recall("ice cream flavour", k=5).items)


def test_people_are_labels_for_the_tag_boost_and_follow_edits(vault: Vault) -> None:
    said = vault.remember("Went hiking in the hills.", fields=[("speaker", "Caroline")])
    vault.remember("Went hiking in the dunes.", fields=[("speaker", "Melanie")])
    assert {"caroline", "melanie"} <= vault.admin.store.catalog.people()
    top = vault.recall("where did Caroline go hiking", k=2).items[0]
    assert top.id == said.id and top.scores["tag_boost"] > 0
    vault.forget(said.id)
    vault.admin.refresh()
    assert "caroline" not in vault.admin.store.catalog.people()


def test_time_travel_recall_sees_threads_too(vault: Vault) -> None:
    chat = vault.session("s2")
    chat.record("user", "Which city hosts the offsite this year?", when=T0)
    answer = chat.record("assistant", "Porto, in June.", when=T0 + timedelta(minutes=1))
    head = vault.git.head()
    hits = vault.recall("offsite city", k=5, as_of=head).items
    assert any(h.id == answer.id and h.scores.get("thread", 0) > 0 for h in hits)
