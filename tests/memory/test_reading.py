"""Every read verb of every door goes through vault.reading and shows nothing hidden.

Three kinds of hidden material, each reached through each door:

* a memory a person moved out of ``scopes/project/secret/`` (its current text is
  harmless, its past versions and their commit subjects are not), and one that
  was forgotten there;
* a memory and a note in Alice's scope, read by a reader talking with Bob;
* a tool output recorded in ``project:secret``, read by a root-only reader;
* a token a person typed into a memory's line in the root, which every reader,
  the owner too, is shown redacted (the file keeps what they typed).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mdmem import MemoryHooks, MemoryNotFoundError, ScopeDeniedError, Vault
from mdmem.agent.prompt import prompt_context
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.mcp.server import URI_PREFIX as URI
from mdmem.mcp.server import read_resource_text
from mdmem.mcp.tools import Toolset
from tests.conftest import git
from tests.mcp_client import mcp_session

BLUEBIRD = "BLUEBIRD"  # the launch code name: in old versions and a commit subject only
# Alice's door code: in her scope only. Not digits alone, which commit hashes and
# timestamps in the answers hold by chance.
ALICE = "4711-zulu"
OUTPUT = "QUASAR-7"  # a build secret in a tool output of project:secret
TYPED = "ghp_4fR9kLm2Qx7Vb1Nc8Tz3Wy6Hd0Pj5Ks2Ae9U"  # typed into a root line by a person
HOOKS = Path(__file__).parents[1] / "hookkit" / "data" / "hooks"


@pytest.fixture
def hidden(vault: Vault) -> dict[str, str]:
    moved = vault.remember(f"The launch code name is {BLUEBIRD}.", scope="project:secret")
    gone = vault.remember(f"The {BLUEBIRD} rehearsal is on Friday.", scope="project:secret")
    vault.forget(gone.id)
    # A person moves the memory to the root, rewording it: its past stays in the scope.
    secret_file = vault.root / moved.path
    lines = [ln for ln in secret_file.read_text().splitlines(True) if moved.id not in ln]
    secret_file.write_text("".join(lines))
    root_file = vault.root / "MEMORY.md"
    root_file.write_text(
        root_file.read_text()
        + f"\n- The launch code name is decided; the deploy token is {TYPED}. ^{moved.id}\n"
    )
    git(vault.root, "add", "-A", human=True)
    git(vault.root, "commit", "-qm", "move the launch memory to the root", human=True)
    vault.admin.refresh()

    vault.contacts.link("telegram:1", "user:alice")
    vault.contacts.link("telegram:2", "user:bob")
    door = vault.remember(f"Alice's door code is {ALICE}.", scope="user:alice")
    note = vault.root / "notes" / "alice.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text(
        f"---\nscope: user:alice\n---\n# Alice\n\n- Her locker is {ALICE}B. ^m-01jd3k5x7q09\n"
    )
    git(vault.root, "add", "-A", human=True)
    git(vault.root, "commit", "-qm", "alice's note", human=True)
    vault.remember("Bob likes his coffee black.", scope="user:bob")
    vault.remember("The office plants need water on Mondays.")

    session = vault.session("build-9", scope="project:secret")
    rows = "\n".join(f"row {i}: {OUTPUT} failed" for i in range(400))
    session.record_tool_output("pytest", rows)
    key = _tool_output_key(vault)
    vault.admin.refresh()
    ids = {"moved": moved.id, "gone": gone.id, "door": door.id, "note": "m-01jd3k5x7q09"}
    return {**ids, "key": key}


def _tool_output_key(vault: Vault) -> str:
    [path] = list(vault.root.rglob("tout_*.md"))
    return path.stem


def _text(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _shown(call: Callable[[], Any]) -> str:
    """What a door shows: its answer, or nothing when it refuses."""
    try:
        return _text(call())
    except (ScopeDeniedError, MemoryNotFoundError):
        return ""


# ----------------------------------------------------------------- doors --

ROOT = ("",)


def _toolset(vault: Vault, name: str, args: dict[str, Any], scopes: Any = ROOT) -> str:
    answer = Toolset(vault, allowed_scopes=list(scopes)).dispatch(name, args)
    return _text(answer)


READS: dict[str, Callable[[Vault, dict[str, str]], str]] = {
    # vault.reading itself, root-only
    "reading.history": lambda v, h: _shown(lambda: v.reading(scopes=ROOT).history(h["moved"])),
    "reading.history(forgotten)": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).history(h["gone"])
    ),
    "reading.show": lambda v, h: _shown(lambda: v.reading(scopes=ROOT).show(h["moved"])),
    "reading.get": lambda v, h: _shown(lambda: v.reading(scopes=ROOT).get(h["moved"])),
    "reading.recall": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).recall(f"launch code {BLUEBIRD} rehearsal {OUTPUT}").items
    ),
    "reading.changes": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).changes("2000-01-01")
    ),
    "reading.compose": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).compose(f"launch code {BLUEBIRD} rehearsal {OUTPUT}").text
    ),
    "reading.list": lambda v, h: _shown(lambda: v.reading(scopes=ROOT).list()),
    "reading.file_text": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).file_text("MEMORY.md")
    ),
    "reading.export": lambda v, h: _export(v),
    "reading.tool_output": lambda v, h: _shown(
        lambda: v.reading(scopes=ROOT).tool_output(h["key"])
    ),
    # the tool calls (a root-only assistant)
    "tool.history": lambda v, h: _toolset(v, "history", {"memory_id": h["moved"]}),
    "tool.history(forgotten)": lambda v, h: _toolset(v, "history", {"memory_id": h["gone"]}),
    "tool.get": lambda v, h: _toolset(v, "get", {"memory_id": h["moved"]}),
    "tool.recall": lambda v, h: _toolset(v, "recall", {"query": f"launch code {BLUEBIRD}"}),
    "tool.context": lambda v, h: _toolset(v, "context", {"query": f"{BLUEBIRD} {OUTPUT}"}),
    "tool.changes": lambda v, h: _toolset(v, "changes", {"since": "2000-01-01"}),
    "tool.read_tool_output": lambda v, h: _toolset(v, "read_tool_output", {"key": h["key"]}),
    "mcp.resource": lambda v, h: _shown(
        lambda: read_resource_text(v, Toolset(v, allowed_scopes=["root"]), f"{URI}MEMORY.md")
    ),
    # a conversation with Bob: Alice's scope is another person's
    "contact.recall": lambda v, h: _shown(
        lambda: v.reading(contact="telegram:2").recall(f"door code locker {ALICE}").items
    ),
    "contact.list": lambda v, h: _shown(lambda: v.reading(contact="telegram:2").list()),
    "contact.get": lambda v, h: _shown(lambda: v.reading(contact="telegram:2").get(h["door"])),
    "contact.get(note)": lambda v, h: _shown(
        lambda: v.reading(contact="telegram:2").get(h["note"])
    ),
    "contact.compose": lambda v, h: _shown(
        lambda: v.reading(contact="telegram:2").compose(f"door code locker {ALICE}").text
    ),
    "contact.profile": lambda v, h: _shown(
        lambda: v.reading(contact="telegram:2").contact_profile("user:alice")
    ),
    "contact.prompt_context": lambda v, h: prompt_context(
        v, "What is Alice's door code? Her locker?", "telegram:2"
    ).render(),
    "contact.MemoryHooks": lambda v, h: MemoryHooks(
        v, contact="telegram:2", background=False
    ).prefetch("Alice's door code and locker"),
    "contact.tool.contact_profile": lambda v, h: _toolset(
        v, "contact_profile", {"who": "user:alice"}, ["", "user:bob"]
    ),
}


def _export(vault: Vault) -> str:
    out = io.StringIO()
    vault.reading(scopes=ROOT).export(out)
    return out.getvalue()


@pytest.mark.parametrize("door", sorted(READS))
def test_no_door_shows_what_its_reader_may_not_see(
    hidden: dict[str, str], vault: Vault, door: str
) -> None:
    assert TYPED in (vault.root / "MEMORY.md").read_text()  # the file keeps what was typed
    shown = READS[door](vault, hidden)
    for secret in (BLUEBIRD, ALICE, OUTPUT, TYPED):
        assert secret not in shown, (door, secret, shown[:400])


def test_the_owner_still_sees_everything(hidden: dict[str, str], vault: Vault) -> None:
    # The rule is about readers: the vault's owner reads every version.
    assert BLUEBIRD in _text(vault.history(hidden["moved"]))
    assert BLUEBIRD in _text(vault.reading().history(hidden["moved"]))
    assert ALICE in _text(vault.reading(contact="telegram:1").get(hidden["door"]))
    assert OUTPUT in vault.reading(scopes=["project:secret"]).tool_output(hidden["key"])
    # Bob's reader sees the root and Bob's own scope.
    bob = _text(vault.reading(contact="telegram:2").list())
    assert "coffee black" in bob and "plants" in bob
    # The moved memory's harmless present is visible to the root reader.
    current = [v.text for v in vault.reading(scopes=ROOT).history(hidden["moved"])]
    assert current and "decided" in (current[-1] or "")


def test_the_owner_is_shown_a_typed_secret_redacted(hidden: dict[str, str], vault: Vault) -> None:
    moved = hidden["moved"]
    owner_reads = {
        "get": lambda: vault.get(moved),
        "history": lambda: vault.history(moved),
        "recall": lambda: vault.recall("launch code name deploy token"),
        "context": lambda: vault.context("launch code name deploy token"),
        "changes": lambda: vault.reading().changes("2000-01-01"),
        "list": lambda: vault.reading().list(),
        "show": lambda: vault.reading().show(moved),
        "file_text": lambda: vault.reading().file_text("MEMORY.md"),
    }
    for name, read in owner_reads.items():
        shown = _text(read())
        assert TYPED not in shown and "REDACTED" in shown, name


def test_the_cli_shows_a_typed_secret_redacted(hidden: dict[str, str], vault: Vault) -> None:
    from click.testing import CliRunner

    from mdmem.cli import main

    moved = hidden["moved"]
    commands = [
        ["get", moved],
        ["history", moved],
        ["recall", "launch code name deploy token"],
        ["context", "launch code name deploy token"],
        ["git", "changes", "--since", "2000-01-01"],
        ["library", "list"],
        ["library", "export"],
    ]
    runner = CliRunner()
    for command in commands:
        for as_json in ([], ["--json"]):
            if command[:2] == ["library", "export"] and as_json:
                continue
            result = runner.invoke(main, ["--vault", str(vault.root), *command, *as_json])
            assert result.exit_code == 0, (command, result.output)
            assert TYPED not in result.output, (command, as_json)


def test_a_forgotten_memory_of_a_hidden_scope_is_denied(
    hidden: dict[str, str], vault: Vault
) -> None:
    with pytest.raises(ScopeDeniedError):
        vault.reading(scopes=ROOT).history(hidden["gone"])


def test_the_mcp_server_over_stdio_hides_old_versions(
    hidden: dict[str, str], vault: Vault
) -> None:
    seen = mcp_session(
        vault,
        [
            ("history", "history", {"memory_id": hidden["moved"]}),
            ("read", "read_tool_output", {"key": hidden["key"]}),
        ],
        "root",
    )
    for label in ("history", "read"):
        text = " ".join(getattr(c, "text", "") for c in seen[label].content)
        assert BLUEBIRD not in text and OUTPUT not in text, (label, text[:300])


def test_the_hook_kit_hides_them(hidden: dict[str, str], vault: Vault, tmp_path: Path) -> None:
    for event, prompt in (
        ("session-start", None),
        ("prompt-submit", f"What is the launch code name {BLUEBIRD}? {OUTPUT}? door {ALICE}?"),
    ):
        data = json.loads(
            (HOOKS / f"claude-code.{event}.json")
            .read_text(encoding="utf-8")
            .replace("{CWD}", str(tmp_path))
            .replace("{TRANSCRIPT}", "")
        )
        if prompt:
            data["prompt"] = prompt
        answer = run_event(vault, "claude-code", event, data, Policy(), warm=True)
        for secret in (BLUEBIRD, ALICE, OUTPUT):
            assert secret not in answer, (event, secret)


def test_reading_takes_a_reader_or_scopes_not_both(vault: Vault) -> None:
    from mdmem.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        vault.reading(vault.reading().reader, scopes=ROOT)
