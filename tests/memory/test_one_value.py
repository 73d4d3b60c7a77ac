"""Updates that change one value are updates (issue "Discernment", item 4).

The same statement about the same subject with one value changed (a time, a
version, a host, a port, a path, a named option, an amount, a state, a count)
retires the older memory; statements about another subject that share the
template, per-item facts of a list, relations that hold many values and
events that add up stay apart.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.config import ConsolidationSettings
from mdmem.memory.consolidation.lifecycle import SAID_THRESHOLD, retire_limit
from mdmem.memory.consolidation.subjects import Verdict, compare

# (old, new, what changed as the verdict's reason shows it)
ONE_VALUE = [
    ("The API listens on port 8080.", "The API listens on port 9090.", "8080 -> 9090"),
    (
        "The staging database lives on host db-07.",
        "The staging database lives on host db-12.",
        "db-07 -> db-12",
    ),
    (
        "We pin numpy 1.26 in requirements.txt.",
        "We pin numpy 2.0 in requirements.txt.",
        "1.26 -> 2.0",
    ),
    (
        "The nginx config is at /etc/nginx/app.conf.",
        "The nginx config is at /etc/nginx/conf.d/app.conf.",
        "/etc/nginx/app.conf -> /etc/nginx/conf.d/app.conf",
    ),
    (
        "Uploads are stored in bucket media-eu-1.",
        "Uploads are stored in bucket media-us-2.",
        "media-eu-1 -> media-us-2",
    ),
    (
        "The support inbox is help@acme.io.",
        "The support inbox is support@acme.io.",
        "help@acme.io -> support@acme.io",
    ),
    (
        "The weekly sync is at 14:00 on Wednesdays.",
        "The weekly sync is at 15:30 on Wednesdays.",
        "14:00 -> 15:30",
    ),
    (
        "The contract renewal date is 2025-03-01.",
        "The contract renewal date is 2025-04-01.",
        "2025-03-01 -> 2025-04-01",
    ),
    (
        "The team's travel budget is $12,000.",
        "The team's travel budget is $9,000.",
        "$12,000 -> $9,000",
    ),
    ("We keep 7 days of logs.", "We keep 30 days of logs.", "7 -> 30"),
    # A name that is the whole predicate of "be", after a definite subject.
    ("The cache backend is Redis.", "The cache backend is Memcached.", "Redis -> Memcached"),
    ("The user's dentist is Dr. Alvarez.", "The user's dentist is Dr. Chen.", "Alvarez -> Chen"),
]

# Updates the wording sees whose values are words: the ordinary similarity bar.
PLAIN_UPDATES = [
    ("Dark mode is off in the admin panel.", "Dark mode is on in the admin panel."),
    ("I use Firefox as my main browser.", "I use Chrome as my main browser."),
    ("The default shell is bash.", "The default shell is zsh."),  # lower case: could be a property
]

# The new text says it changed, with another verb than the old one.
SAID = [
    ("The staging database lives on host db-07.", "The staging database moved to host db-12."),
    ("The message broker runs on host mq-02.", "The message broker is now on host mq-04."),
    ("The Pro plan costs $20 a month.", "The Pro plan is now $25 a month."),
    ("we're on Python 3.11", "we upgraded to Python 3.12"),
    ("The standup is at 10:00.", "Standup moved from 10:00 to 10:30."),
]

# (old, new, verdict kind, reason)
# One pair per line reads best as a table.
# ruff: noqa: E501
LOOK_ALIKES = [
    # The same template about another subject.
    ("The frontend runs on port 3000.", "The backend runs on port 3001.", "distinct", "subject differs: frontend -> backend"),
    ("Alice's flight is at 9.", "Bob's flight is at 9.", "distinct", "subject differs: Alice's -> Bob's"),
    # Per-item facts of a list: the identifier names the subject.
    ("Server web-01 has 16 GB.", "Server web-02 has 32 GB.", "distinct", "identifier differs: web-01 -> web-02"),
    ("Room 204 is booked.", "Room 205 is booked.", "distinct", "subject differs: 204 -> 205"),
    # An identifier of a thing the verb relates its subject to: one of many.
    ("The release includes PR #412.", "The release includes PR #415.", "distinct", "identifier differs: #412 -> #415"),
    ("The router forwards port 22.", "The router forwards port 443.", "distinct", "identifier differs: 22 -> 443"),
    ("The monorepo contains packages/ui.", "The monorepo contains packages/api.", "distinct", "identifier differs: packages/ui -> packages/api"),
    ("The CLI accepts a --verbose flag.", "The CLI accepts a --quiet flag.", "distinct", "identifier differs: --verbose -> --quiet"),
    ("Lena is watching issue #880.", "Lena is watching issue #912.", "distinct", "identifier differs: #880 -> #912"),
    ("The test is flaky on host ci-03.", "The test is flaky on host ci-07.", "distinct", "identifier differs: ci-03 -> ci-07"),
    ("The user has a meeting in room 204.", "The user has a meeting in room 205.", "distinct", "identifier differs: 204 -> 205"),
    # Events add up, irregular pasts too.
    ("The on-call engineer restarted db-07.", "The on-call engineer restarted db-12.", "distinct", "identifier differs: db-07 -> db-12"),
    ("The power went out at 14:05.", "The power went out at 19:40.", "unsure", "an event, not a state"),
    ("I met Sam at the conference.", "I met Priya at the conference.", "unsure", "an event, not a state"),
    # Another bound of the same quantity.
    ("The autoscaler keeps at least 3 nodes.", "The autoscaler keeps at most 10 nodes.", "unsure", "the bound changed: least 3 -> most 10"),
]  # fmt: skip

# Relations that may hold many values read like updates to the wording, which
# cannot tell them from one-valued ones: never one_value, never said, so only
# the ordinary similarity bar can let them through (MiniLM keeps them below it).
MANY_VALUES = [
    ("The user likes tea.", "The user likes coffee."),
    ("I speak Spanish.", "I speak Italian."),
    ("The app is available in German.", "The app is available in French."),
    ("One of our customers is Initech.", "One of our customers is Globex."),
    ("Alice is Bob's manager.", "Alice is Carol's manager."),
]


@pytest.mark.parametrize(("old", "new", "changed"), ONE_VALUE)
def test_one_value_changed_is_an_update_the_structure_vouches_for(
    old: str, new: str, changed: str
) -> None:
    verdict = compare(old, new)
    assert verdict.update and verdict.one_value and not verdict.said, verdict
    assert verdict.reason == f"same subject, new value: {changed}"


@pytest.mark.parametrize(("old", "new"), PLAIN_UPDATES)
def test_a_new_word_for_the_value_is_an_update_without_the_lower_bar(old: str, new: str) -> None:
    verdict = compare(old, new)
    assert verdict.update and not verdict.one_value and not verdict.said, verdict


@pytest.mark.parametrize(("old", "new"), SAID)
def test_a_value_said_to_have_changed_with_another_verb_is_an_update(old: str, new: str) -> None:
    verdict = compare(old, new)
    assert verdict.update and verdict.said, verdict


@pytest.mark.parametrize(("old", "new", "kind", "reason"), LOOK_ALIKES)
def test_look_alikes_stay_apart(old: str, new: str, kind: str, reason: str) -> None:
    verdict = compare(old, new)
    assert (verdict.kind, verdict.reason) == (kind, reason)
    assert not verdict.one_value


@pytest.mark.parametrize(("old", "new"), MANY_VALUES)
def test_relations_that_hold_many_values_never_get_the_lower_bar(old: str, new: str) -> None:
    verdict = compare(old, new)
    assert not verdict.one_value and not verdict.said, verdict


def test_the_lower_bar_is_the_said_threshold() -> None:
    cfg = ConsolidationSettings()
    plain = Verdict("update", "x", ("office",))
    assert retire_limit(plain, False, cfg) == cfg.same_context_threshold
    assert retire_limit(Verdict("update", "x"), False, cfg) == cfg.other_context_threshold
    assert retire_limit(Verdict("update", "x", one_value=True), False, cfg) == SAID_THRESHOLD
    assert retire_limit(Verdict("update", "x", said=True), True, cfg) == SAID_THRESHOLD


def remembered(vault: Vault, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Remember each pair (old, then new) in a scope of its own; the pairs whose old retired."""
    out = []
    for n, (old, new) in enumerate(pairs):
        first = vault.remember(old, scope=f"project:p{n}")
        second = vault.remember(new, scope=f"project:p{n}")
        if vault.get(first.id).status == "superseded":
            assert second.superseded == (first.id,)
            out.append((old, new))
        else:
            assert second.superseded == ()
    return out


def test_remember_retires_one_value_changes_below_the_ordinary_bar(tmp_path: Path) -> None:
    # The offline hash embedder puts these pairs at cosine 0.74-0.88: under a
    # bar of 0.95 only the verdicts that vouch for a replacement get through.
    high = {"same_context_threshold": 0.95, "other_context_threshold": 0.95}
    vault = Vault.init(tmp_path / "v", consolidation={"auto": False, **high})
    one_value = [
        ("The API listens on port 8080.", "The API listens on port 9090."),
        ("The cache backend is Redis.", "The cache backend is Memcached."),
        ("The support inbox is help@acme.io.", "The support inbox is support@acme.io."),
    ]
    plain = [
        ("the office is cleaned monthly", "the office is cleaned weekly"),
        ("The user likes tea.", "The user likes coffee."),
    ]
    assert remembered(vault, [*one_value, *plain]) == one_value


@pytest.mark.slow  # MiniLM embeddings and a commit per memory: ~10-20 s
def test_with_minilm_updates_of_one_value_retire_and_look_alikes_stay(tmp_path: Path) -> None:
    vault = Vault.init(
        tmp_path / "v", embedder={"provider": "minilm"}, consolidation={"auto": False}
    )
    updates = [
        # cosine 0.83: "moved to" says so
        ("The staging database lives on host db-07.", "The staging database moved to host db-12."),
        ("The API listens on port 8080.", "The API listens on port 9090."),  # 0.82
        ("We pin numpy 1.26 in requirements.txt.", "We pin numpy 2.0 in requirements.txt."),
        ("The cache backend is Redis.", "The cache backend is Memcached."),  # 0.77
        ("Dark mode is off in the admin panel.", "Dark mode is on in the admin panel."),
        ("The Pro plan costs $20 a month.", "The Pro plan is now $25 a month."),
    ]
    look_alikes = [
        ("The frontend runs on port 3000.", "The backend runs on port 3001."),
        ("Alice's flight is at 9.", "Bob's flight is at 9."),
        ("Server web-01 has 16 GB of RAM.", "Server web-02 has 32 GB of RAM."),
        ("Room 204 is booked for Monday.", "Room 205 is booked for Monday."),
        ("The release includes PR #412.", "The release includes PR #415."),
        ("Alice visited Paris in May.", "Alice visited Berlin in May."),
        ("The user likes tea.", "The user likes coffee."),  # 0.72: the ordinary bar keeps it
        ("The autoscaler keeps at least 3 nodes.", "The autoscaler keeps at most 10 nodes."),
    ]
    assert remembered(vault, [*updates, *look_alikes]) == updates
    log = subprocess.run(
        ["git", "log", "--format=%B"], cwd=vault.root, capture_output=True, text=True, check=True
    ).stdout
    assert "same subject, new value: 8080 -> 9090" in log
    vault.close()
