"""Byte-faithful text files: decode, splice lines, write atomically, stay in the vault.

Editing one memory must leave every other byte of a file as the human left it:
the BOM, CRLF line endings, trailing spaces, a missing final newline. So files
are handled as a list of lines that keep their own endings, and edits splice
whole lines; nothing is ever re-serialised.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from mdmem.atomicfile import (
    atomic_write,
    discard_temp,
    fsync_file,
    install_temp,
    write_temp,
)
from mdmem.errors import PathOutsideVaultError, VaultFileError

__all__ = [
    "MAX_FILE_BYTES",
    "BadByte",
    "FileStat",
    "SkipFile",
    "TextFile",
    "atomic_write",
    "content_digest",
    "decode",
    "decode_readable",
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
# What str.splitlines breaks on besides \n and \r (git and editors do not).
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


class SkipFile(Exception):  # noqa: N818 - a signal, not an error: the file is skipped with a warning
    """A vault file that cannot be read as markdown; the reason is the message."""


@dataclass(frozen=True)
class BadByte:
    """Where a line stops being UTF-8: 1-based line and column (characters), the byte."""

    line: int
    column: int
    byte: int

    def where(self, path: str) -> str:
        """``path:line:column: byte 0xE9 is not UTF-8``, as compilers and editors name places."""
        return f"{path}:{self.line}:{self.column}: byte 0x{self.byte:02X} is not UTF-8"

    def at(self) -> str:
        return f"line {self.line}, column {self.column}: byte 0x{self.byte:02X} is not UTF-8"


@dataclass
class TextFile:
    """A decoded file: lines keep their endings so the bytes round-trip exactly."""

    lines: list[str]
    bom: bool = False
    newline: str = "\n"
    # Lines [0, fence_clean) are known to leave no code fence open; appends
    # only need to look at what came after (see Vault's fence check).
    fence_clean: int = 0
    # Lines that were not UTF-8 (decode_readable): they stand here as empty
    # lines, so this text is not the file and must never be written back.
    bad: tuple[BadByte, ...] = ()

    @classmethod
    def empty(cls) -> TextFile:
        return cls(lines=[])

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def to_bytes(self) -> bytes:
        if self.bad:
            # A safety net: writers check first and name the file (store/writer.py).
            raise VaultFileError(f"refusing to rewrite a file: {self.bad[0].at()}")
        return ((BOM if self.bom else "") + self.text).encode("utf-8")

    def same_bytes(self, raw: bytes) -> bool:
        return not self.bad and self.to_bytes() == raw

    def check_writable(self, path: str) -> None:
        """Refuse, naming ``path:line:column``, to write a file read without its bad lines:
        writing would drop or re-encode a person's bytes, and neither is ours to do."""
        if self.bad:
            where = self.bad[0].where(path)
            raise VaultFileError(f"{where}; fix that line before mdmem writes to this file")

    def copy(self) -> TextFile:
        return TextFile(
            lines=list(self.lines),
            bom=self.bom,
            newline=self.newline,
            fence_clean=self.fence_clean,
            bad=self.bad,
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


def content_digest(raw: bytes) -> str:
    """What a file held, in 32 hex digits: a file whose stat changed (a copy,
    a restore, a checkout of the same text) is read again only if this did."""
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def decode(raw: bytes, *, max_bytes: int = MAX_FILE_BYTES) -> TextFile:
    """Decode a vault file, or raise SkipFile saying why it is not markdown."""
    if len(raw) > max_bytes:
        raise SkipFile(f"larger than {max_bytes // (1024 * 1024)} MiB")
    if b"\x00" in raw[:8192]:
        raise SkipFile("binary file (NUL byte)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        bad = _bad_bytes(raw)
        raise SkipFile(bad[0].at() if bad else "invalid UTF-8") from None
    return _split(text)


def decode_readable(raw: bytes, *, max_bytes: int = MAX_FILE_BYTES) -> TextFile:
    """Decode a vault file for reading: a line that is not UTF-8 reads as empty.

    One stray Latin-1 byte must cost its line, not the file (recall, context and
    hooks read the rest); the result's ``bad`` says where, and such a file is
    never written back (see :meth:`TextFile.to_bytes`). Other reasons to skip
    a file still raise SkipFile.
    """
    try:
        return decode(raw, max_bytes=max_bytes)
    except SkipFile:
        bad = _bad_bytes(raw)
        if not bad or len(raw) > max_bytes or b"\x00" in raw[:8192]:
            raise
    parts = raw.splitlines(keepends=True)
    bad_lines = {b.line for b in bad}
    kept: list[str] = []
    for number, part in enumerate(parts, start=1):
        body = part.rstrip(b"\r\n")
        if number in bad_lines:
            kept.append(part[len(body) :].decode("ascii"))  # the line's ending only
        else:
            kept.append(part.decode("utf-8"))
    tf = _split("".join(kept))
    tf.bad = tuple(bad)
    return tf


def _bad_bytes(raw: bytes) -> list[BadByte]:
    """The first byte that is not UTF-8 on each line that has one."""
    out: list[BadByte] = []
    # bytes.splitlines breaks on \n, \r and \r\n only: no multi-byte character
    # contains those bytes, so a line can be decoded on its own.
    for number, part in enumerate(raw.splitlines(keepends=True), start=1):
        body = part.rstrip(b"\r\n")
        if number == 1 and body.startswith(b"\xef\xbb\xbf"):
            body = body[3:]
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            column = len(body[: exc.start].decode("utf-8", errors="replace")) + 1
            out.append(BadByte(number, column, body[exc.start]))
    return out


def _split(text: str) -> TextFile:
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not any(c in text for c in _OTHER_BREAKS):
        merged = lines  # only \n, \r\n and \r: splitlines broke where git does
    else:
        # splitlines also breaks on \x0b, \x1c, U+2028...: rejoin anything that
        # does not end in a real newline so line numbers match editors and git.
        merged = []
        for line in lines:
            if merged and not _has_ending(merged[-1]):
                merged[-1] += line
            else:
                merged.append(line)
    if any(p in text for p in _CONFLICT_PREFIXES):  # a cheap look first: most files have none
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


