"""Every secret format, through a real vault: refused or redacted, and in no
file, no git object, no derived state and no error message afterwards."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import SecretRefusedError
from tests.secret_samples import FORMATS


def _everything_stored(vault: Vault, state_root: Path) -> dict[str, bytes]:
    """The vault's files, every git object (uncompressed) and the state dir."""
    stored: dict[str, bytes] = {}
    for path in vault.root.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(vault.root).parts:
            stored[f"vault:{path.relative_to(vault.root)}"] = path.read_bytes()
    stored["git objects"] = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout
    for path in state_root.rglob("*"):
        if path.is_file():
            stored[f"state:{path.relative_to(state_root)}"] = path.read_bytes()
    return stored


def _leaks(stored: dict[str, bytes], fragments: list[str]) -> list[tuple[str, str]]:
    """Where a fragment (or, for the indexes, which lower-case and split text
    into words, any 8+ character run of it) was stored."""
    needles = set()
    for fragment in fragments:
        needles.add(fragment.encode())
        needles.update(run.lower().encode() for run in re.findall(r"[A-Za-z0-9]{8,}", fragment))
    return [
        (where, needle.decode())
        for where, data in stored.items()
        for needle in needles
        if needle in data or needle in data.lower()
    ]


def test_refused_secrets_are_nowhere(vault: Vault, tmp_path: Path) -> None:
    before = vault.git.head()
    for sample in FORMATS:
        with pytest.raises(SecretRefusedError) as caught:
            vault.remember(sample.text)
        message = str(caught.value)
        assert sample.kind in message, sample.name
        assert not [f for f in sample.fragments if f in message], sample.name
    assert vault.git.head() == before
    fragments = [f for s in FORMATS for f in s.fragments]
    assert _leaks(_everything_stored(vault, tmp_path / "_state"), fragments) == []


def test_redacted_secrets_are_nowhere_and_the_rest_is_kept(vault: Vault, tmp_path: Path) -> None:
    for sample in FORMATS:
        memory = vault.remember(sample.text, secrets="redact")
        assert f"[REDACTED:{sample.kind}]" in memory.text, sample.name
        assert vault.get(memory.id).text == memory.text
        # The words around the secret are stored and found.
        assert sample.text.split()[0] in memory.text
    vault.reindex()
    fragments = [f for s in FORMATS for f in s.fragments]
    assert _leaks(_everything_stored(vault, tmp_path / "_state"), fragments) == []
    reopened = Vault.open(vault.root)
    try:
        texts = "\n".join(m.text for m in reopened.library.list())
    finally:
        reopened.close()
    assert texts.count("[REDACTED:") >= len(FORMATS)
