"""The wording rule of auto-resolve: same subject with a new value, or another fact?"""

from __future__ import annotations

import random

import pytest

from mdmem.memory.consolidation.subjects import compare, tokens


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("the office is cleaned monthly", "the office is cleaned weekly", "monthly -> weekly"),
        ("the release is v4.2", "the release is v4.3", "v4.2 -> v4.3"),
        ("Alice lives in Paris", "Alice lives in Berlin", "Paris -> Berlin"),
        ("deploys happen on Tuesdays", "deploys happen on Thursdays", "Tuesdays -> Thursdays"),
        ("The build uses Node 18.", "The build uses Node 20.", "18 -> 20"),
        (
            "The monthly bill is around $4,200.",
            "The monthly bill is around $5,100.",
            "$4,200 -> $5,100",
        ),
        ("The standup starts at 9:30.", "The standup starts at 9:45.", "9:30 -> 9:45"),
        (
            "The cat is fed at 7am and 6pm.",
            "The cat is fed at 8am and 7pm.",
            "7am -> 8am; 6pm -> 7pm",
        ),
        ("Office cleaning: monthly", "Office cleaning: weekly", "monthly -> weekly"),
        (
            "The office is cleaned weekly.",
            "The office is no longer cleaned weekly.",
            "∅ -> no longer",
        ),
        ("the cache layer is too slow", "the cache layer got fast", "is too slow -> got fast"),
        (
            "The user's car is a blue Honda.",
            "The user's car is a red Toyota.",
            "blue Honda -> red Toyota",
        ),
    ],
)
def test_a_new_value_for_the_same_subject_is_an_update(old: str, new: str, changed: str) -> None:
    verdict = compare(old, new)
    assert verdict.kind == "update" and verdict.update
    assert verdict.reason == f"same subject, new value: {changed}"


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        # A different identifier, code, name or number-as-name: another fact.
        (
            "Concurrent fact 1-1 from writer 1 has value 1001",
            "Concurrent fact 1-2 from writer 1 has value 1002",
            "identifier differs: 1-1 -> 1-2",
        ),
        (
            "Note abc123 says hello there",
            "Note def456 says hello there",
            "identifier differs: abc123 -> def456",
        ),
        (
            "Server web-01 is in rack 4.",
            "Server web-02 is in rack 4.",
            "identifier differs: web-01 -> web-02",
        ),
        (
            "Order #5521 shipped on Monday.",
            "Order #5522 shipped on Monday.",
            "identifier differs: #5521 -> #5522",
        ),
        (
            "The 'billing' queue is drained hourly.",
            "The 'emails' queue is drained hourly.",
            "identifier differs: billing -> emails",
        ),
        (
            "The file config/dev.yaml sets debug.",
            "The file config/prod.yaml sets debug.",
            "identifier differs: config/dev.yaml -> config/prod.yaml",
        ),
        (
            "Dana approved pull request 88.",
            "Dana approved pull request 91.",
            "identifier differs: 88 -> 91",
        ),
        # The subject differs, before the main verb.
        (
            "The frontend is written in TypeScript",
            "The backend is written in TypeScript",
            "subject differs: frontend -> backend",
        ),
        ("Alice lives in Paris", "Bob lives in Paris", "subject differs: Alice -> Bob"),
        (
            "The office in Berlin is cleaned weekly.",
            "The office in Munich is cleaned weekly.",
            "subject differs: Berlin -> Munich",
        ),
        (
            "Weekly reports for marketing are sent on Monday.",
            "Weekly reports for sales are sent on Monday.",
            "subject differs: marketing -> sales",
        ),
        ("Room 204 has a projector.", "Room 205 has a projector.", "subject differs: 204 -> 205"),
        (
            "The user's cat is named Miso.",
            "The user's dog is named Miso.",
            "subject differs: cat -> dog",
        ),
    ],
)
def test_another_subject_or_identifier_is_a_distinct_fact(old: str, new: str, reason: str) -> None:
    verdict = compare(old, new)
    assert (verdict.kind, verdict.reason) == ("distinct", reason)
    assert not verdict.update and verdict.subject == ()


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "Alice visited Paris last year.",
            "Alice visited Berlin last year.",
            "an event, not a state",
        ),
        # Irregular past tenses are events too.
        (
            "The user met Tom at the conference.",
            "The user met Jane at the conference.",
            "an event, not a state",
        ),
        ("The user bought apples today.", "The user bought pears today.", "an event, not a state"),
        ("The user bought apples today.", "The user ate pears today.", "the verb changed"),
        (
            "The page loads in 1.2 s on desktop.",
            "The page loads in 3.4 s on mobile.",
            "changed in several places: 1.2 -> 3.4; desktop -> mobile",
        ),
        (
            "The channel #deploys announces releases.",
            "The channel #incidents announces releases.",
            "tags differ",
        ),
        ("Deploys are slow. Ask Bob.", "Deploys are slow.", "different sentence structure"),
    ],
)
def test_what_the_wording_cannot_settle_is_unsure(old: str, new: str, reason: str) -> None:
    verdict = compare(old, new)
    assert (verdict.kind, verdict.reason) == ("unsure", reason)
    assert not verdict.update


def test_the_subject_is_its_content_words_or_nothing_for_a_pronoun() -> None:
    assert compare("The office is cleaned monthly.", "The office is cleaned weekly.").subject == (
        "office",
    )
    assert compare(
        "The user's sister lives in Rome.", "The user's sister lives in Oslo."
    ).subject == (
        "user's",
        "sister",
    )
    assert compare("It is broken.", "It is fixed.").subject == ()
    # A restatement (case, punctuation, articles) is the same statement.
    same = compare("The office is cleaned weekly", "the office is cleaned weekly.")
    assert (same.kind, same.reason, same.subject) == ("update", "same statement", ("office",))


def test_a_bare_file_name_and_its_path_are_the_same_file() -> None:
    verdict = compare(
        "constants.ts is 800 lines long and should be split",
        "src/lib/constants.ts is 800 lines long and was split",
    )
    assert (verdict.kind, verdict.reason) == ("update", "same subject, new value: should be -> was")
    other = compare("src/a/constants.ts is long", "src/b/constants.ts is long")
    assert other.kind == "distinct"


def test_tokens_keep_codes_quotes_and_values_whole_and_set_tags_apart() -> None:
    toks, tags = tokens(
        'Note abc123 says "hello world" at 9:30, v4.2 and $1,450 in src/x.py. #todo'
    )
    assert [(t.text, t.cls) for t in toks] == [
        ("Note", "word"),
        ("abc123", "code"),
        ("says", "word"),
        ("hello world", "code"),
        ("at", "word"),
        ("9:30", "number"),
        ("v4.2", "number"),
        ("and", "word"),
        ("$1,450", "number"),
        ("in", "word"),
        ("src/x.py", "code"),
    ]
    assert tags == frozenset({"todo"})
    assert toks[8].key == "$1450"  # commas do not make two amounts differ
    two, _ = tokens("Deploys are slow. Ask Bob when it fails.")
    assert [t.clause for t in two] == [0, 0, 0, 1, 1, 2, 2, 2]


def test_reasons_stay_short_for_commit_trailers() -> None:
    long_old = "The plan is " + "alpha " * 30
    verdict = compare(long_old, "The plan is beta")
    assert verdict.update and len(verdict.reason) < 120 and "\n" not in verdict.reason


def test_any_text_gets_a_verdict_never_an_exception() -> None:
    # compare runs inside remember's write path: whatever a memory holds, it must answer.
    rng = random.Random(3)
    pieces = ["the", "is", "a", "Note", "x1", "#tag", "'", '"', "`", ":", "->", ".", ";", "é"]
    pieces += ["1-1", "9:30", "v4.2", "$5", "src/a.py", "is'", "\u00a0", "\n", "", "—", "’s"]
    for _ in range(400):
        old = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 9)))
        new = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 9)))
        verdict = compare(old, new)
        assert verdict.kind in ("update", "distinct", "unsure") and "\n" not in verdict.reason
