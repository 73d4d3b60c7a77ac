"""A copied line: the same ``^m-…`` id on two lines, in one file or in two.

Both lines stay recallable (the catalog, manifest, keyword and vector indexes
give the copy a key of its own), and a call that names the id refuses to pick
one of them silently.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import DuplicateIdError
from mdmem.files.ids import copy_key, written_id


def _commits(root: Path) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
    )
    return int(out.stdout.strip())


def _places(vault: Vault, query: str, **filters: object) -> list[tuple[str, str]]:
    hits = vault.recall(query, k=10, mode="keyword", **filters).items  # type: ignore[arg-type]
    return sorted((h.path, h.id) for h in hits)


def _vector_places(vault: Vault, query: str) -> list[tuple[str, str]]:
    return sorted((h.path, h.id) for h in vault.recall(query, k=10, mode="vector").items)


def _copy_line(vault: Vault, memory_id: str, src: str, dst: str, edit: str = "") -> str:
    """What a person does in an editor: duplicate the line carrying ``^memory_id``."""
    line = next(
        x for x in (vault.root / src).read_text(encoding="utf-8").splitlines() if memory_id in x
    )
    copy = line.replace(" ^", f"{edit} ^") if edit else line
    target = vault.root / dst
    before = target.read_text(encoding="utf-8") if target.exists() else "# Notes\n\n"
    target.write_text(before.rstrip("\n") + "\n" + copy + "\n", encoding="utf-8")
    return copy


def test_a_line_copied_into_another_file_keeps_both_recallable(vault: Vault) -> None:
    m = vault.remember("The user drinks oolong tea.")
    vault.remember("The user drinks coffee on Mondays.")  # a neighbour that must stay put
    _copy_line(vault, m.id, "MEMORY.md", "USER.md", edit=" in the morning")

    want = [("MEMORY.md", m.id), ("USER.md", m.id)]
    assert _places(vault, "oolong tea") == want
    # Each line is its own document in the keyword and the vector index...
    assert {"USER.md#^" + m.id, m.id} <= vault.admin.store.indexer.keyword.ids()
    vectors = vault.admin.store.indexer.vectors
    assert vectors is not None and {"USER.md#^" + m.id, m.id} <= vectors.ids()
    assert ("USER.md", m.id) in _vector_places(vault, "oolong tea in the morning")
    # ...and each hit cites its own line, with the id as it is written there.
    hits = {h.path: h for h in vault.recall("oolong tea", mode="keyword").items}
    assert hits["USER.md"].citation == f"USER.md#^{m.id}"
    assert "in the morning" in hits["USER.md"].text
    assert "in the morning" not in hits["MEMORY.md"].text
    assert vault.admin.store.indexer.manifest.count_blocks() == sum(
        1 for _ in vault.admin.store.catalog.blocks()
    )

    vault.close()
    # A fresh open loads the catalog from the manifest: the copy keeps its own key.
    again = Vault.open(vault.root)
    assert _places(again, "oolong tea") == want
    assert again.admin.doctor().checks  # runs; the duplicate itself is doctor's business
    again.reindex(full=True)
    assert _places(again, "oolong tea") == want
    again.close()


def test_a_copy_that_sorts_first_does_not_push_the_original_out(vault: Vault) -> None:
    m = vault.remember("Deploys happen on Thursdays.")
    # "A.md" is walked before MEMORY.md on a rebuild: neither line may vanish.
    _copy_line(vault, m.id, "MEMORY.md", "A.md")
    assert _places(vault, "deploys thursdays") == [("A.md", m.id), ("MEMORY.md", m.id)]
    vault.reindex(full=True)
    assert _places(vault, "deploys thursdays") == [("A.md", m.id), ("MEMORY.md", m.id)]
    report = vault.admin.doctor()
    assert {p.check for p in report.problems} == {"ids are unique", "git"}


def test_a_line_duplicated_in_the_same_file_keeps_both_recallable(vault: Vault) -> None:
    m = vault.remember("The staging database is called pinecone.")
    other = vault.remember("The prod database is called sequoia.")
    path = vault.root / "MEMORY.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, x in enumerate(lines) if m.id in x)
    lines.insert(at + 1, lines[at].replace("pinecone", "pinecone-2"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    assert _places(vault, "pinecone") == [
        ("MEMORY.md", m.id),
        ("MEMORY.md", m.id),
    ]
    texts = sorted(h.text for h in vault.recall("staging", mode="keyword").items)
    assert texts == [
        "The staging database is called pinecone-2.",
        "The staging database is called pinecone.",
    ]
    assert f"MEMORY.md#^{m.id} (2)" in vault.admin.store.indexer.keyword.ids()
    # The neighbour below the copy is untouched and addressable as before.
    assert vault.get(other.id).text == "The prod database is called sequoia."
    vault.close()
    again = Vault.open(vault.root)
    assert len(again.recall("pinecone", mode="keyword").items) == 2
    again.close()


@pytest.mark.parametrize("same_file", [False, True])
def test_calls_naming_a_duplicated_id_refuse_and_name_both_places(
    vault: Vault, same_file: bool
) -> None:
    m = vault.remember("The office wifi is called otterden.")
    dst = "MEMORY.md" if same_file else "USER.md"
    _copy_line(vault, m.id, "MEMORY.md", dst)
    vault.recall("otterden")  # the copy is noticed (and committed as the human's edit)
    vault.admin.store.commit_human_edits()
    before = {p: (vault.root / p).read_bytes() for p in ("MEMORY.md", "USER.md")}
    commits = _commits(vault.root)

    calls = {
        "get": lambda: vault.get(m.id),
        "forget": lambda: vault.forget(m.id),
        "resolve": lambda: vault.resolve(m.id),
        "supersede": lambda: vault.supersede(m.id, "The office wifi is called beaverlodge."),
        "citation": lambda: vault.get(f"{dst}#^{m.id}"),
        # A purge would leave the copy's text behind while claiming it gone.
        "purge": lambda: vault.git.purge(m.id, confirm=True),
    }
    for name, call in calls.items():
        with pytest.raises(DuplicateIdError) as caught:
            call()
        message = str(caught.value)
        assert "\n" not in message, name
        assert m.id in message and "MEMORY.md:" in message and f"{dst}:" in message, name
        assert "mdmem doctor --fix" in message, name
    # Nothing was written or committed by the refused calls.
    assert {p: (vault.root / p).read_bytes() for p in before} == before
    assert _commits(vault.root) == commits
    assert len(vault.recall("office wifi otterden", mode="keyword").items) == 2


def test_removing_the_original_leaves_the_copy_as_the_one_memory(vault: Vault) -> None:
    m = vault.remember("The cat is called Miso.")
    _copy_line(vault, m.id, "MEMORY.md", "USER.md", edit=" (a tabby)")
    assert len(vault.recall("cat Miso", mode="keyword").items) == 2
    # The person then deletes the original line: the copy is the memory now.
    path = vault.root / "MEMORY.md"
    path.write_text(
        "".join(x for x in path.read_text(encoding="utf-8").splitlines(True) if m.id not in x),
        encoding="utf-8",
    )
    assert _places(vault, "cat Miso") == [("USER.md", m.id)]
    assert vault.get(m.id).path == "USER.md"
    assert vault.get(m.id).text == "The cat is called Miso. (a tabby)"
    assert m.id in vault.admin.store.indexer.keyword.ids()
    assert f"USER.md#^{m.id}" not in vault.admin.store.indexer.keyword.ids()
    report = vault.admin.doctor(fix=True)  # commits the human's edits
    assert vault.admin.doctor().ok, report.problems
    vault.close()
    again = Vault.open(vault.root)
    assert again.get(m.id).path == "USER.md"
    assert _places(again, "cat Miso") == [("USER.md", m.id)]
    again.close()


def test_moving_a_line_between_files_keeps_it_under_its_id(vault: Vault) -> None:
    m = vault.remember("The boiler is serviced in October.")
    path = vault.root / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    line = next(x for x in text.splitlines(True) if m.id in x)
    # Cut and paste: the file it lands in may be read before or after the other.
    (vault.root / "A.md").write_text("# Home\n\n" + line, encoding="utf-8")
    path.write_text(text.replace(line, ""), encoding="utf-8")
    assert _places(vault, "boiler serviced") == [("A.md", m.id)]
    assert vault.get(m.id).path == "A.md"
    assert vault.admin.doctor().problems == [
        p for p in vault.admin.doctor().problems if p.check == "git"
    ]


def test_copy_keys_round_trip() -> None:
    assert copy_key("USER.md", "m-0123456789ab", 1) == "USER.md#^m-0123456789ab"
    assert copy_key("a b/N.md", "m-0123456789ab", 3) == "a b/N.md#^m-0123456789ab (3)"
    for key in (copy_key("USER.md", "m-0123456789ab", 1), copy_key("x.md", "m-0123456789ab", 2)):
        assert written_id(key) == "m-0123456789ab"
    assert written_id("m-0123456789ab") == "m-0123456789ab"
    assert written_id("notes.md#Heading") == "notes.md#Heading"


def test_the_parser_keeps_a_copied_line_as_a_block_of_its_own() -> None:
    from mdmem.files import blocks as blk
    from mdmem.files.textfile import decode

    raw = b"# Memory\n\n- Tea at four. ^m-0123456789ab\n- Tea at five. ^m-0123456789ab\n"
    parsed = blk.parse("MEMORY.md", decode(raw))
    assert [(b.id, b.line_start, b.text) for b in parsed.blocks if b.is_memory] == [
        ("m-0123456789ab", 3, "Tea at four."),
        ("m-0123456789ab", 4, "Tea at five."),
    ]
    # Neither line is left over as loose section text.
    assert not [b for b in parsed.blocks if not b.is_memory and "Tea" in b.text]


def test_recall_as_of_a_commit_keeps_both_lines(vault: Vault) -> None:
    m = vault.remember("The gym opens at six.")
    _copy_line(vault, m.id, "MEMORY.md", "MEMORY.md", edit=" on weekdays")
    vault.admin.store.commit_human_edits()
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=vault.root, capture_output=True, text=True
    ).stdout.strip()
    vault.forget(vault.remember("Something unrelated to recall.").id)  # HEAD moves on
    hits = vault.recall("gym opens six", mode="keyword", as_of=sha).items
    assert sorted(h.text for h in hits) == [
        "The gym opens at six.",
        "The gym opens at six. on weekdays",
    ]
    assert {h.id for h in hits} == {m.id} and all(h.commit == sha for h in hits)
