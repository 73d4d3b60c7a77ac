"""A byte that is not UTF-8 costs its line, not the file (issue #32, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import VaultFileError
from mdmem.files.textfile import BadByte, SkipFile, decode, decode_readable

_TOPICS = [
    "aardvark", "bassoon", "cobalt", "dulcimer", "eucalyptus",
    "flamingo", "gazpacho", "harpsichord", "iguana", "juniper",
]  # fmt: skip


_WHERE = [
    "sleeps in the garden shed", "needs new reeds every month", "paint dries overnight",
    "hangs above the fireplace", "grows beside the river", "visits the lake in spring",
    "is served cold at lunch", "was tuned by Ada", "lives in the glass tank",
    "berries flavour the gin",
]  # fmt: skip


def _damaged_vault(root: Path) -> tuple[Vault, list[str], int]:
    """Ten memories in MEMORY.md; the fifth gets a Latin-1 byte. Returns its 1-based line."""
    vault = Vault.init(root, agent="test-agent")
    # Distinct subjects: one thing kept per memory, so none retires another.
    ids = [vault.remember(f"The {word} {_WHERE[i]}.").id for i, word in enumerate(_TOPICS)]
    path = root / "MEMORY.md"
    lines = path.read_bytes().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if ids[4].encode() in line)
    lines[number - 1] = lines[number - 1].replace(b"The ", b"The caf\xe9 ", 1)
    path.write_bytes(b"".join(lines))
    return vault, ids, number


def test_decode_readable_blanks_only_the_bad_line_and_says_where() -> None:
    raw = b"# Notes\n- caf\xe9 au lait\r\n- tea \xff\xfe here\n- fine\n"
    with pytest.raises(SkipFile, match="line 2, column 6: byte 0xE9"):
        decode(raw)
    tf = decode_readable(raw)
    assert tf.lines == ["# Notes\n", "\r\n", "\n", "- fine\n"]
    assert tf.bad == (BadByte(2, 6, 0xE9), BadByte(3, 7, 0xFF))
    with pytest.raises(VaultFileError):
        tf.to_bytes()  # the text is not the file: it must never be written back
    assert decode_readable(b"- ok\n").bad == ()


def test_a_latin1_byte_hides_one_memory_and_the_answer_says_so(tmp_path: Path) -> None:
    vault, ids, number = _damaged_vault(tmp_path / "v")
    before = (vault.root / "MEMORY.md").read_bytes()
    for word, memory_id in zip(_TOPICS, ids, strict=True):
        result = vault.recall(word, mode="keyword")
        found = [item.id for item in result.items]
        assert (memory_id in found) == (memory_id != ids[4]), word
        assert result.degraded and f"MEMORY.md:{number}:10:" in (result.degraded_reason or "")
    vault.close()
    for round_ in range(2):  # a first open reads the file; the next one starts from the manifest
        opened = Vault.open(tmp_path / "v")
        listed = {m.id for m in opened.library.list()}
        assert listed >= {*ids[:4], *ids[5:]} and ids[4] not in listed
        result = opened.recall(_TOPICS[0], mode="keyword")
        assert result.degraded and f"MEMORY.md:{number}:10:" in (result.degraded_reason or "")

        details = [p.detail for p in opened.admin.doctor().problems if p.check == "files parse"]
        assert f"MEMORY.md:{number}:10: byte 0xE9 is not UTF-8, line skipped" in details

        # Another file still takes writes; MEMORY.md refuses, naming the place, unchanged.
        other = opened.remember(f"The user prefers green tea, round {round_}.", kind="preference")
        assert other.id in (opened.root / "USER.md").read_text(encoding="utf-8")
        with pytest.raises(VaultFileError, match=f"^MEMORY.md:{number}:10: byte 0xE9"):
            opened.remember("The kazoo is in the drawer.")
        assert (opened.root / "MEMORY.md").read_bytes() == before
        opened.close()


def test_fixing_the_line_brings_the_memory_back_and_clears_degraded(tmp_path: Path) -> None:
    vault, ids, _number = _damaged_vault(tmp_path / "v")
    path = vault.root / "MEMORY.md"
    path.write_bytes(path.read_bytes().replace(b"caf\xe9", "café".encode()))
    result = vault.recall("eucalyptus", mode="keyword")
    assert ids[4] in [item.id for item in result.items]
    assert not result.degraded
