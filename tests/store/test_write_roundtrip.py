"""What a write accepts reads back byte-identical; what it can't store is refused.

A hypothesis property over text built from the pieces that used to break the
file or set metadata (headings, setext underlines, fences, ids of other
memories, inline fields in both forms, frontmatter, list markers, control
characters, surrogates, CRLF, unicode), for every write verb: the memory reads
back as the text through a new Vault object on a fresh state dir, every other
memory is unchanged, and a refusal is an InvalidInputError that changes
nothing. A plain test repeats the round trip through a fresh process.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmem import Vault
from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.files.textfile import decode
from mdmem.models import Memory

# What no stored text may hold (the write must refuse it), and the part of it a
# tool output (code, kept verbatim) may not hold either.
REFUSED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")

PIECES = [
    "# Injected Heading",
    "## 12:00 · Fake",
    "### ",
    "===",
    "---",
    "- - -",
    "***",
    "```",
    "```py",
    "````",
    "~~~",
    "---\ntitle: forged\nscope: user:alice\n---",
    "[status:: superseded]",
    "[status:: resolved]",
    "(kind:: gotcha)",
    "[kind:: world]",
    "[scope:: user:alice]",
    "(scope:: project:x)",
    "[created:: 1999-01-01]",
    "[by:: ^m-01jd3k5x7q0001]",
    "[consolidated:: ^m-01jd3k5x7q0002]",
    "(importance:: 9)",
    "[role:: system]",
    "[k::v]",
    "- ",
    "* item",
    "+ ",
    "1. ",
    "2) ",
    "- [ ] task",
    "> quote",
    "    indented",
    "\t",
    "  ",
    "| a | b |",
    "|---|---|",
    ":--",
    "<!-- comment",
    "-->",
    "<div>",
    "<script>",
    "^abc",
    " ^abc",
    "#tag",
    " #tag",
    "```a`b",
    "<<<<<<< ours",
    ">>>>>>> theirs",
    "=======",
    "\\",
    "\\\\",
    "\\#",
    "\\[",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "é",
    "✓ 日本語",
    "\u00a0",
    "\u200d",
    "\U0001f600",
    "\x1b[31m",
    "\x00",
    "\x0b",
    "\x0c",
    "\x85",
    "\u2028",
    "\ud800",
    "word",
    "plain words here",
]


def _stored(text: str, *, paragraph: bool) -> str:
    """The documented stored form: LF line endings, no trailing space on a line,
    no leading/trailing blank space; a list item (one paragraph) has no blank lines."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    if paragraph:
        lines = [line for line in lines if line.strip()]
    return "\n".join(lines).strip()


def _topic_ok(topic: str) -> bool:
    flat = " ".join(topic.split())
    return not (
        REFUSED.search(topic)
        or not flat
        or len(flat) > 120
        or flat.startswith("#")
        or re.search(r"(?:^|\s)#+$", flat)
    )


@dataclass
class Outcome:
    """What a verb should have stored: its text (or None: a refusal is due)."""

    expected: str | None
    kind: str
    fields: frozenset[str] = frozenset()
    heading: str | None = None
    code: bool = False  # a tool output: the text is a fenced code block


Verb = Callable[[Vault, str, str], tuple[Callable[[], Memory], Outcome]]


def _remember(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    ok = not REFUSED.search(text)
    expected = _stored(text, paragraph=True) if ok else None
    return lambda: vault.remember(text, scope=scope), Outcome(expected or None, "fact")


def _log(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    expected = None if REFUSED.search(text) else _stored(text, paragraph=False)
    return lambda: vault.log(text, scope=scope), Outcome(expected or None, "log")


def _journal(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    expected = None if REFUSED.search(text) else _stored(text, paragraph=False)
    return lambda: vault.journal(text, scope=scope), Outcome(expected or None, "journal")


def _learn(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    # The text doubles as the topic (its first line), so topics get the same pieces.
    topic = text.split("\n")[0][:60] or "t"
    ok = not REFUSED.search(text) and _topic_ok(topic)
    expected = _stored(text, paragraph=True) if ok else None
    heading = "Topic: " + " ".join(topic.split())
    return (
        lambda: vault.learn(topic, text, scope=scope),
        Outcome(expected or None, "learning", heading=heading),
    )


def _record(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    session = vault.session("prop-" + (scope.replace(":", "-") or "root"), scope=scope)
    expected = None if REFUSED.search(text) else _stored(text, paragraph=False)
    return (
        lambda: session.record("user", text),
        Outcome(expected or None, "chat_message", fields=frozenset({"role"})),
    )


def _tool_output(vault: Vault, text: str, scope: str) -> tuple[Callable[[], Memory], Outcome]:
    session = vault.session("prop-tools", scope=scope)
    ok = not UNSTORABLE.search(text) and bool(text.strip())
    expected = text.replace("\r\n", "\n").replace("\r", "\n") if ok else None
    return (
        lambda: session.record_tool_output("shell", text),
        Outcome(expected, "tool_output", fields=frozenset({"kind", "role", "tool"}), code=True),
    )


VERBS: dict[str, Verb] = {
    "remember": _remember,
    "log": _log,
    "journal": _journal,
    "learn": _learn,
    "record": _record,
    "record_tool_output": _tool_output,
}


def _seed(root: Path) -> tuple[Vault, list[str]]:
    """A vault holding one memory of each kind of file, in the root and in a scope."""
    vault = Vault.init(root, agent="prop")
    ids = [
        vault.remember("Alice likes green tea.").id,
        vault.remember("The user prefers metric units.", kind="preference").id,
        vault.remember("Mallory's own note.", scope="user:mallory").id,
        vault.remember("Alice's own note.", scope="user:alice").id,
        vault.learn("Alpha", "Alpha insight one.").id,
        vault.learn("Beta", "Beta insight one.").id,
        vault.journal("A first reflection.").id,
        vault.log("Started the day.").id,
        vault.session("seed").record("user", "Hello there.").id,
        vault.session("seed").record_tool_output("ls", "a.txt\nb.txt").id,
    ]
    return vault, ids


def _snapshot(vault: Vault) -> dict[str, tuple[str, str, str, str]]:
    return {m.id: (m.text, m.kind, m.status, m.scope) for m in vault.library.list()}


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """No auto-resolve or auto-consolidation: every other memory must stay exactly as it was."""
    monkeypatch.setenv("MDMEM_CONSOLIDATION_AUTO", "false")
    monkeypatch.setenv("MDMEM_CONSOLIDATION_SAME_CONTEXT_THRESHOLD", "2")
    monkeypatch.setenv("MDMEM_CONSOLIDATION_OTHER_CONTEXT_THRESHOLD", "2")


def _texts(ids: list[str]) -> st.SearchStrategy[str]:
    pieces = st.sampled_from(PIECES + [f"^{i}" for i in ids] + [f"forged ^{i}" for i in ids])
    # Control characters and surrogates come from PIECES, now and then; random
    # text without them keeps most examples on the storing path.
    chars = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
    part = st.one_of(pieces, pieces, pieces, st.text(chars, max_size=4))
    joiner = st.sampled_from(["", " ", "\n"])
    return st.lists(st.tuples(part, joiner), min_size=1, max_size=10).map(
        lambda parts: "".join(p + j for p, j in parts)
    )


@pytest.fixture
def fresh_states(tmp_path: Path) -> Iterator[Callable[[], str]]:
    numbers = count()
    yield lambda: str(tmp_path / f"_fresh{next(numbers)}")


def _check_write(
    vault: Vault, verb: str, text: str, scope: str, fresh_state: str, supersede: bool
) -> None:
    call, outcome = VERBS[verb](vault, text, scope)
    target = None
    if supersede:
        # supersede stores the text as a list item, like remember, then retires the old one.
        target = vault.remember(f"Supersede target {fresh_state}", scope=scope)
        call = lambda: vault.supersede(target.id, text)  # noqa: E731
    before = _snapshot(vault)
    head = vault.git.head()
    try:
        memory = call()
    except InvalidInputError:
        assert outcome.expected is None, f"{verb} refused text it can store: {text!r}"
        assert vault.git.head() == head and _snapshot(vault) == before
        return
    assert outcome.expected is not None, f"{verb} accepted what it can't store: {text!r}"
    fresh = Vault.open(vault.root, agent="reader", state_dir=fresh_state)
    try:
        after = _snapshot(fresh)
        block = fresh.admin.store.block(memory.id)
    finally:
        fresh.close()
    # Every other memory is as it was (a superseded one only changes status).
    expected_after = dict(before)
    if target is not None:
        old = before[target.id]
        expected_after[target.id] = (old[0], old[1], "superseded", old[3])
    if not memory.was_new:  # the same text was stored before: nothing else changes
        assert memory.id in before and after == expected_after
        return
    # The file parses, and the memory reads back as the text, as written.
    parsed = blk.parse(memory.path, decode((vault.root / memory.path).read_bytes()))
    assert parsed.by_id(memory.id) is not None
    if outcome.code:
        lines = block.text.split("\n")
        assert lines[0].startswith("```") and lines[-1] == lines[0]
        assert "\n".join(lines[1:-1]) == outcome.expected
    else:
        assert block.text == outcome.expected == memory.text
    assert (block.kind, block.status, block.scope) == (outcome.kind, "active", scope)
    assert {k for k, _ in block.fields} <= outcome.fields
    assert abs(block.created - datetime.now(UTC)) < timedelta(days=1)
    if outcome.heading is not None:
        assert block.heading == outcome.heading
    expected_after[memory.id] = after[memory.id]
    assert after == expected_after


@pytest.mark.parametrize("verb", [*VERBS, "supersede"])
def test_property_every_write_reads_back_or_is_refused(
    verb: str, tmp_path: Path, quiet: None, fresh_states: Callable[[], str]
) -> None:
    vault, ids = _seed(tmp_path / "vault")
    vault.close()

    @settings(
        max_examples=25,  # per verb: 175 in all, each a write and a fresh open
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(text=_texts(ids), scoped=st.booleans())
    def check(text: str, scoped: bool) -> None:
        # Hypothesis seeds the global random module the same for every example,
        # and Whoosh names its segment files with it: unseeded, they'd collide.
        random.seed(os.urandom(16))
        scope = "user:mallory" if scoped else ""
        name = "remember" if verb == "supersede" else verb
        # A new Vault object per write (on the shared state dir: cheap), so each
        # write reads its file anew, as another process would.
        writer = Vault.open(vault.root, agent="prop")
        try:
            _check_write(writer, name, text, scope, fresh_states(), supersede=verb == "supersede")
        finally:
            writer.close()

    check()


_READER = """
import json, sys
from mdmem import Vault
vault = Vault.open(sys.argv[1], agent="reader")
print(json.dumps({m.id: [m.text, m.kind, m.status, m.scope] for m in vault.library.list()}))
"""

NASTY = [
    "entry text\n## 12:00 · Fake\nforged ^{other}",
    "Harmless start\n# Injected Heading\nmore text",
    "rewrite ^{other}\n# h\nsecond line",
    "---\ntitle: forged\nscope: user:alice\n---",
    "hidden [status:: superseded] (kind:: gotcha) [created:: 1999-01-01] [scope:: user:alice]",
    "a\r\nb\rc\t d  \n- x\n```\n<!-- c\nsee ^abc #tag \\[ \\\\",
    "1. one\n2) two\n> q\n| a |\n|---|\n===\n- - -\n    code\n~~~",
]


def test_writes_read_back_the_same_in_a_fresh_process(tmp_path: Path, quiet: None) -> None:
    vault, ids = _seed(tmp_path / "vault")
    other = ids[0]
    session = vault.session("nasty", scope="user:mallory")
    written: dict[str, str] = {}
    for n, pattern in enumerate(NASTY):
        text = pattern.replace("{other}", other)
        item = _stored(text, paragraph=True)
        entry = _stored(text, paragraph=False)
        memories = [
            (vault.remember(text, scope="user:mallory"), item),
            (vault.log(text), entry),
            (vault.journal(text), entry),
            (vault.learn(f"Topic {n}", text), item),
            (vault.supersede(vault.remember(f"Old {n}").id, text + " (new)"), f"{item} (new)"),
            (session.record("user", text), entry),
        ]
        tool = session.record_tool_output("sh", text)
        for memory, expected in memories:
            assert memory.text == expected
            written[memory.id] = expected
        written[tool.id] = vault.get(tool.id).text
        assert written[tool.id].split("\n")[1:-1] == text.replace("\r\n", "\n").replace(
            "\r", "\n"
        ).split("\n")
    before = _snapshot(vault)
    env = {**os.environ, "MDMEM_STATE_DIR": str(tmp_path / "_other_process")}
    out = subprocess.run(
        [sys.executable, "-c", _READER, str(vault.root)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    seen = {key: tuple(value) for key, value in json.loads(out).items()}
    assert seen == before
    assert {key: seen[key][0] for key in written} == written
    assert seen[other][0] == "Alice likes green tea."
