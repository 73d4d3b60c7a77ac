"""Byte-faithful text files: decode, splice lines, write atomically, stay in the vault.

Editing one memory must leave every other byte of a file as the human left it:
the BOM, CRLF line endings, trailing spaces, a missing final newline. So files
are handled as a list of lines that keep their own endings, and edits splice
whole lines; nothing is ever re-serialised.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from mdmem.errors import PathOutsideVaultError

__all__ = [
    "MAX_FILE_BYTES",
    "FileStat",
    "SkipFile",
    "TextFile",
    "atomic_write",
    "decode",
    "discard_temp",
    "file_stat",
    "fsync_file",
    "install_temp",
    "safe_path",
    "write_temp",
]

BOM = "\ufeff"
MAX_FILE_BYTES = 8 * 1024 * 1024
_CONFLICT_PREFIXES = ("<<<<<<< ", ">>>>>>> ")


class SkipFile(Exception):  # noqa: N818 - a signal, not an error: the file is skipped with a warning
    """A vault file that cannot be read as markdown; the reason is the message."""


@dataclass
class TextFile:
    """A decoded file: lines keep their endings so the bytes round-trip exactly."""

    lines: list[str]
    bom: bool = False
    newline: str = "\n"
    # Lines [0, fence_clean) are known to leave no code fence open; appends
    # only need to look at what came after (see Vault's fence check).
    fence_clean: int = 0

    @classmethod
    def empty(cls) -> TextFile:
        return cls(lines=[])

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def to_bytes(self) -> bytes:
        return ((BOM if self.bom else "") + self.text).encode("utf-8")

    def copy(self) -> TextFile:
        return TextFile(
            lines=list(self.lines), bom=self.bom, newline=self.newline, fence_clean=self.fence_clean
        )

    def replace_lines(self, start: int, end: int, new_lines: list[str]) -> None:
        """Replace 0-based lines [start, end) with ``new_lines`` (given without endings)."""
        ending = self.newline
        if end == len(self.lines) and end > 0 and not _has_ending(self.lines[end - 1]):
            # The block ran to an unterminated last line: keep it unterminated.
            rendered = [line + ending for line in new_lines]
            if rendered:
                rendered[-1] = rendered[-1][: -len(ending)]
        else:
            rendered = [line + ending for line in new_lines]
        self.lines[start:end] = rendered
        self.fence_clean = min(self.fence_clean, start)

    def append_lines(self, new_lines: list[str], *, blank_before: bool = False) -> int:
        """Append lines at the end; returns the 0-based index of the first one."""
        if self.lines and not _has_ending(self.lines[-1]):
            self.lines[-1] += self.newline
        if blank_before and self.lines and self.lines[-1].strip():
            self.lines.append(self.newline)
        first = len(self.lines)
        self.lines.extend(line + self.newline for line in new_lines)
        return first

    def insert_lines(self, at: int, new_lines: list[str]) -> None:
        """Insert lines before 0-based line ``at`` (``at == len`` appends)."""
        if at >= len(self.lines):
            self.append_lines(new_lines)
            return
        self.lines[at:at] = [line + self.newline for line in new_lines]
        self.fence_clean = min(self.fence_clean, at)


def _has_ending(line: str) -> bool:
    return line.endswith("\n") or line.endswith("\r")


def decode(raw: bytes, *, max_bytes: int = MAX_FILE_BYTES) -> TextFile:
    """Decode a vault file, or raise SkipFile saying why it is not markdown."""
    if len(raw) > max_bytes:
        raise SkipFile(f"larger than {max_bytes // (1024 * 1024)} MiB")
    if b"\x00" in raw[:8192]:
        raise SkipFile("binary file (NUL byte)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"invalid UTF-8 at byte {exc.start}") from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    lines = text.splitlines(keepends=True)
    # splitlines also breaks on \x0b, \x1c, U+2028...: rejoin anything that
    # does not end in a real newline so line numbers match editors and git.
    merged: list[str] = []
    for line in lines:
        if merged and not _has_ending(merged[-1]):
            merged[-1] += line
        else:
            merged.append(line)
    for line in merged:
        if line.startswith(_CONFLICT_PREFIXES):
            raise SkipFile("unresolved merge conflict markers")
    newline = "\r\n" if merged and merged[0].endswith("\r\n") else "\n"
    return TextFile(lines=merged, bom=bom, newline=newline)


def safe_path(root: Path, relative: str | os.PathLike[str]) -> Path:
    """Resolve ``relative`` inside the vault ``root`` or raise PathOutsideVaultError.

    Rejects absolute paths, ``..`` escapes, anything under ``.git`` and symlinks
    (of the file or any folder on the way) that resolve outside the vault.
    """
    rel = Path(relative)
    if rel.is_absolute():
        raise PathOutsideVaultError(f"absolute path not allowed: {relative}")
    parts = rel.parts
    if any(part == ".." for part in parts):
        raise PathOutsideVaultError(f"path escapes the vault: {relative}")
    if parts and parts[0] == ".git":
        raise PathOutsideVaultError(f"refusing to touch git internals: {relative}")
    real_root = root.resolve()
    target = real_root / rel
    resolved = target.resolve()
    if resolved != real_root and real_root not in resolved.parents:
        raise PathOutsideVaultError(f"{relative} leads outside the vault (symlink?)")
    return target


# (inode, size, mtime ns, ctime ns) of a file. The same twice means nothing
# wrote to it in between: ctime can't be set back by anyone, unlike mtime.
FileStat = tuple[int, int, int, int]


def file_stat(path: Path) -> FileStat | None:
    """What stat says of a file's current content; None if it is missing."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, replace."""
    tmp = write_temp(path, data)
    install_temp(tmp, path)


def write_temp(path: Path, data: bytes, *, fsync: bool = True) -> Path:
    """Stage ``data`` beside ``path`` (same folder, same mode), fsynced unless asked not to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.mdmem-{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
    except BaseException:
        discard_temp(tmp)
        raise
    return tmp


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def install_temp(tmp: Path, path: Path) -> None:
    """Atomically put a staged temp file in place and make the rename durable."""
    try:
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    _fsync_dir(path.parent)


def discard_temp(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
