"""The one visibility rule (mdmem.store.visibility), and every read path that asks it.

Two leaks it closes: a note whose frontmatter declares ``scope: user:alice``
was shown, by paths that judged scope from the folder, to a reader confined
to the root; and a reader talking with Bob saw the episode, facts and daily
log line consolidated from Alice's turns, though her turns themselves were
hidden. Both must be invisible on every read path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mdmem import ScopeDeniedError, Vault
from mdmem.agent.prompt import prompt_context
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.mcp.server import core_resources, read_resource_text
from mdmem.mcp.tools import Toolset
from mdmem.store.derived import origins_of
from mdmem.store.visibility import EVERYONE, Reader
from tests.conftest import git
from tests.mcp_client import mcp_session

SECRET = "Alice's salary review is on the ninth of March"
ROOT_ONLY = Reader.of("root")
HOOKS = Path(__file__).parents[1] / "hookkit" / "data" / "hooks"


@pytest.fixture
def declared(vault: Vault) -> tuple[Vault, str]:
    """A root-folder note whose frontmatter says it is Alice's, committed by a person;
    and a core file (LEARNING.md) that declares the same."""
    note = vault.root / "notes" / "alice.md"
    note.parent.mkdir()
    note.write_text(f"---\nscope: user:alice\n---\n# Review\n\n- {SECRET}. ^m-01jd3k5x7q00\n")
    learning = vault.root / "LEARNING.md"
    learning.write_text(
        "---\nscope: user:alice\n---\n## Topic: pay\n\n- Salary bands are secret. ^m-01jd3k5x7q01\n"
    )
    git(vault.root, "add", "-A", human=True)
    git(vault.root, "commit", "-qm", "alice's notes", human=True)
    vault.remember("The office plants need water on Mondays.")
    return vault, "m-01jd3k5x7q00"


def test_a_reader_is_scopes_and_a_contact() -> None:
    assert Reader.of("root").scopes == frozenset({""})
    assert Reader.of(["(root)", "project:web"]).scopes == frozenset({"", "project:web"})
    assert Reader.of(None, " telegram:7 ").contact == "telegram:7"
    assert EVERYONE.unrestricted and not ROOT_ONLY.unrestricted
    assert ROOT_ONLY.narrowed(["", "user:alice"]).scopes == frozenset({""})


def test_the_rule_reads_the_effective_scope_not_the_folder(declared: tuple[Vault, str]) -> None:
    vault, note_id = declared
    rule = vault.admin.store.visibility
    block = vault.admin.store.block(note_id)
    assert block.path == "notes/alice.md" and block.scope == "user:alice"
    assert not rule.may_see(ROOT_ONLY, block)
    assert rule.may_see(Reader.of("user:alice"), block) and rule.may_see(EVERYONE, block)
    assert not rule.may_see_file(ROOT_ONLY, "LEARNING.md")
    assert rule.may_see_file(ROOT_ONLY, "MEMORY.md")


def test_every_read_path_hides_a_declared_scope(declared: tuple[Vault, str]) -> None:
    vault, note_id = declared
    # The owner sees it: the rule is about readers, not about the note.
    assert SECRET in vault.recall("salary review March").items[0].text
    assert vault.get(note_id).text.startswith(SECRET)

    assert SECRET not in _texts(vault.recall("salary review March", reader=ROOT_ONLY))
    assert SECRET not in vault.context("salary review March", reader=ROOT_ONLY)
    with pytest.raises(ScopeDeniedError):
        vault.get(note_id, reader=ROOT_ONLY)
    changes = vault.reading(ROOT_ONLY).changes("2000-01-01")
    assert note_id not in {c.id for c in changes.remembered}
    assert all("notes/alice.md" not in e.paths for e in changes.human_edits)
    assert note_id in {c.id for c in vault.git.changes("2000-01-01").remembered}
    assert SECRET not in prompt_context(vault, "salary review March", scope="").render()
    assert "Salary bands" not in prompt_context(vault, "salary", scope="").render()
    listed = vault.reading(ROOT_ONLY).list()
    assert note_id not in {m.id for m in listed} and listed

    tools = Toolset(vault, ["root"])
    recalled = tools.dispatch("recall", {"query": "salary review March"})
    assert SECRET not in json.dumps(recalled)
    assert tools.dispatch("get", {"memory_id": note_id})["error"]["type"] == "scope_denied"
    assert SECRET not in json.dumps(tools.dispatch("context", {"query": "salary review"}))
    assert note_id not in json.dumps(tools.dispatch("changes", {"since": "2000-01-01"}))
    with pytest.raises(ScopeDeniedError):
        read_resource_text(vault, tools, "mdmem://vault/LEARNING.md")
    assert "plants" in read_resource_text(vault, tools, "mdmem://vault/MEMORY.md")
    assert {r["path"] for r in core_resources(vault, tools)} >= {"MEMORY.md"}


def test_the_mcp_server_over_stdio_hides_it(declared: tuple[Vault, str]) -> None:
    vault, note_id = declared
    seen = mcp_session(
        vault,
        [
            ("recall", "recall", {"query": "salary review March"}),
            ("get", "get", {"memory_id": note_id}),
            ("changes", "changes", {"since": "2000-01-01"}),
        ],
        "root",
    )
    for label in ("recall", "get", "changes"):
        text = " ".join(getattr(c, "text", "") for c in seen[label].content)
        assert SECRET not in text and (label != "changes" or note_id not in text), label
    assert "scope_denied" in " ".join(getattr(c, "text", "") for c in seen["get"].content)


def _hook(vault: Vault, event: str, cwd: Path) -> dict[str, Any]:
    text = (HOOKS / f"claude-code.{event}.json").read_text(encoding="utf-8")
    data = json.loads(text.replace("{CWD}", str(cwd)).replace("{TRANSCRIPT}", ""))
    if event == "prompt-submit":
        data["prompt"] = "When is the salary review in March?"
    out = run_event(vault, "claude-code", event, data, Policy(), warm=True)
    return json.loads(out) if out.strip() else {}


def test_the_hooks_hide_it(declared: tuple[Vault, str], tmp_path: Path) -> None:
    vault, note_id = declared
    user = vault.root / "USER.md"
    user.write_text(user.read_text() + "\n")  # a profile exists to inject
    vault.remember("The user prefers short answers.", kind="preference")
    _hook(vault, "session-start", tmp_path)  # marks the first session seen
    git(vault.root, "commit", "--allow-empty", "-qm", "later", human=True)
    note = vault.root / "notes" / "alice.md"
    note.write_text(note.read_text() + f"- {SECRET}, again. ^m-01jd3k5x7q02\n")
    git(vault.root, "commit", "-qam", "more on alice", human=True)
    for event in ("session-start", "prompt-submit"):
        answer = json.dumps(_hook(vault, event, tmp_path))
        assert SECRET not in answer and note_id not in answer, event


@pytest.fixture
def consolidated(vault: Vault) -> Vault:
    """Alice's conversation, consolidated (extractively) into an episode, facts and
    a daily-log line; and Bob's, left as turns."""
    alice = vault.session("chat-alice", source="telegram", contact="telegram:alice")
    alice.record("user", "My sister's wedding is in Lisbon on the 12th of June.")
    alice.record("user", "I decided to book the flight to Lisbon with TAP.")
    bob = vault.session("chat-bob", source="telegram", contact="telegram:bob")
    bob.record("user", "Remind me to water the plants on Monday.")
    result = vault.consolidate(llm=None)
    assert result.episodes
    return vault


def test_copies_of_another_contacts_turns_are_hidden(consolidated: Vault) -> None:
    vault = consolidated
    rule = vault.admin.store.visibility
    bob = Reader.of(None, "telegram:bob")
    copies = [
        b
        for b in vault.admin.store.catalog.blocks(memories_only=False)
        if "Lisbon" in b.text and b.field("contact") is None
    ]
    assert copies, "consolidation made no copy without a contact field"
    for block in copies:
        assert rule.sources(block), block.id
        assert not rule.may_see(bob, block), (block.path, block.text)
        assert rule.may_see(Reader.of(None, "telegram:alice"), block)

    assert "Lisbon" not in _texts(vault.recall("wedding in Lisbon", reader=bob))
    assert "Lisbon" in _texts(vault.recall("wedding in Lisbon"))
    rendered = prompt_context(vault, "Where is the wedding in Lisbon?", "telegram:bob").render()
    assert "Lisbon" not in rendered and "plants" in rendered
    rendered = prompt_context(vault, "Where is the wedding in Lisbon?", "telegram:alice").render()
    assert "Lisbon" in rendered
    assert "Lisbon" not in json.dumps(
        [m.text for m in vault.reading(bob).list()], ensure_ascii=False
    )


def test_recall_as_of_applies_the_same_rule(declared: tuple[Vault, str]) -> None:
    vault, _ = declared
    head = vault.git.head()
    assert head is not None
    assert SECRET in _texts(vault.recall("salary review March", as_of=head))
    assert SECRET not in _texts(vault.recall("salary review March", as_of=head, reader=ROOT_ONLY))


def _texts(result: Any) -> str:
    return " ".join(h.text for h in result.items)


def test_a_copy_of_alices_turn_is_hidden_from_the_root_by_its_source_links(vault: Vault) -> None:
    """Copies in the vault root whose sources are Alice's: hidden from a root-only
    reader through the links store.derived reads (a copy's ``[sources::]``, an
    episode note's ``given:``), the same links purge follows."""
    chat = vault.session("alice-chat", source="telegram", scope="user:alice")
    turn = chat.record("user", "My salary review is on the ninth of March.")
    assert vault.consolidate(llm=None).episodes
    rule = vault.admin.store.visibility
    catalog = vault.admin.store.catalog
    alices_fact = next(
        b for b in catalog.blocks() if b.scope == "user:alice" and b.field("episode")
    )

    copy = vault.remember("The salary review falls in March.", fields=[("sources", f"^{turn.id}")])
    note = vault.root / "episodes" / "2026-01-01-planning.md"
    note.write_text(
        "---\nkind: episode\nscope: root\nsources: []\n"
        f"given:\n- '[[{alices_fact.path}#^{alices_fact.id}]]'\n---\n"
        "# Planning\n\nPlanning around the March salary review. ^m-01jd3k5x7q09\n"
    )
    git(vault.root, "add", "-A", human=True)
    git(vault.root, "commit", "-qm", "a planning note", human=True)
    vault.admin.refresh()

    for memory_id in (copy.id, "m-01jd3k5x7q09"):
        block = catalog.block(memory_id)
        assert block is not None and block.scope == ""
        assert origins_of(block, catalog) == (turn.id,)
        assert turn.id in {s.id for s in rule.sources(block)}
        assert not rule.may_see(ROOT_ONLY, block)
        assert rule.may_see(Reader.of(["root", "user:alice"]), block)
        assert rule.may_see(EVERYONE, block)

    assert "salary" not in _texts(vault.recall("salary review March", reader=ROOT_ONLY))
    assert "salary" in _texts(vault.recall("salary review March"))
    with pytest.raises(ScopeDeniedError):
        rule.require(ROOT_ONLY, catalog.block(copy.id))  # type: ignore[arg-type]
