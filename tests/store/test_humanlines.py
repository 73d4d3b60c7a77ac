"""A person's own lines in a profile file become memories with ids (issue 25)."""

from __future__ import annotations

from pathlib import Path

from mdmem import Vault
from mdmem.files.blocks import is_typed_key, memory_file_kind, parse
from mdmem.files.textfile import TextFile
from tests.conftest import git


def test_memory_files_of_the_root_and_of_scopes() -> None:
    assert memory_file_kind("USER.md") == "preference" and memory_file_kind("MEMORY.md") == "fact"
    assert memory_file_kind("scopes/project/shop/LEARNING.md") == "learning"
    assert memory_file_kind("WORLD.earlier.md") == "world"
    assert memory_file_kind("notes/USER.md") is None and memory_file_kind("JOURNAL.md") is None


def test_only_simple_top_level_items_without_an_id_are_typed_lines() -> None:
    text = (
        "# User\n\n- typed by hand\n- has one ^m-0000000001aaaa\n"
        "- parent\n  - child\n\n```\n- in a fence\n```\n- two\n  lines\n"
    )
    tf = TextFile(lines=text.splitlines(keepends=True))
    typed = [b for b in parse("USER.md", tf).blocks if is_typed_key(b.id)]
    assert [(b.line_start, b.line_end, b.text, b.kind) for b in typed] == [
        (3, 3, "typed by hand", "preference"),
        (11, 12, "two\nlines", "preference"),
    ]
    # The same lines in a note of a person's own are part of its sections.
    assert not any(is_typed_key(b.id) for b in parse("notes/USER.md", tf).blocks)


def test_typed_lines_get_ids_byte_for_byte_and_stay_the_persons(vault: Vault) -> None:
    vault.remember("Prefers tea.", kind="preference")
    user_md = vault.root / "USER.md"
    before = user_md.read_bytes()
    typed = b"- Call me Ada  \r\n- nested\n  - child\n"
    user_md.write_bytes(before + typed)
    vault.admin.commit_human_edits()
    after = user_md.read_bytes()
    assert after.startswith(before)
    added = after[len(before) :].split(b"\n")
    # Only the item's end changed; its spacing and its CRLF are as typed.
    assert added[0].startswith(b"- Call me Ada ^m-")
    assert added[0].endswith(b"\r")
    assert added[1:] == [b"- nested", b"  - child", b""]  # not a simple item: left alone
    memory_id = added[0].decode().split("^")[1].strip()
    memory = vault.get(memory_id)
    assert (memory.text, memory.kind, memory.field("captured")) == (
        "Call me Ada",
        "preference",
        "human",
    )
    assert git(vault.root, "status", "--porcelain") == ""
    agent = git(vault.root, "log", "--author=@agents.mdmem", "--format=%s", "-1")
    assert "typed by a person" not in agent  # both commits are the person's
    # A second call finds nothing left to do.
    head = git(vault.root, "rev-parse", "HEAD")
    vault.admin.commit_human_edits()
    assert git(vault.root, "rev-parse", "HEAD") == head


def test_an_agent_write_does_not_rewrite_a_file_a_person_is_typing_into(vault: Vault) -> None:
    user_md = vault.root / "USER.md"
    with user_md.open("a", encoding="utf-8") as fh:
        fh.write("- being typed\n")
    vault.remember("A fact.")  # commits the person's edit first, as theirs, unchanged
    assert user_md.read_text(encoding="utf-8").endswith("- being typed\n")


def test_a_scopes_profile_is_covered_too(vault: Vault, tmp_path: Path) -> None:
    vault.remember("Shop uses cents.", scope="project:shop")
    memory_md = vault.root / "scopes" / "project" / "shop" / "MEMORY.md"
    with memory_md.open("a", encoding="utf-8") as fh:
        fh.write("- The shop's staging host is stg-2\n")
    vault.admin.commit_human_edits()
    found = [m for m in vault.library.list(scopes="project:shop") if "stg-2" in m.text]
    assert found and found[0].scope == "project:shop" and found[0].field("captured") == "human"
