from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdmem.errors import PathOutsideVaultError
from mdmem.files.textfile import atomic_write, decode, safe_path


@pytest.mark.parametrize("rel", ["../x.md", "/etc/passwd", ".git/config", "a/../../b.md"])
def test_safe_path_rejects_escapes(tmp_path: Path, rel: str) -> None:
    with pytest.raises(PathOutsideVaultError):
        safe_path(tmp_path, rel)


def test_safe_path_rejects_symlinked_folders(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(PathOutsideVaultError):
        safe_path(root, "link/x.md")
    (root / "inner").mkdir()
    (root / "ok").symlink_to(root / "inner")
    assert safe_path(root, "ok/x.md") == root.resolve() / "ok" / "x.md"


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_atomic_write_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.md"
    target.write_text("old")

    def boom(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_decode_keeps_odd_line_breaks_inside_lines() -> None:
    raw = "a\u2028b\nc\x0bd\r\ne".encode()
    tf = decode(raw)
    assert len(tf.lines) == 3 and tf.to_bytes() == raw
