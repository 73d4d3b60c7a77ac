"""Memory ids: ``m-`` + 10 chars of milliseconds + 2 of sequence + 2 random.

All in lower-case Crockford base32. The time part makes ids sortable by
creation time and lets ``created`` be read back from the id alone; the
sequence allows 1,024 ids per millisecond without running ahead of the clock;
the random tail keeps two machines that write in the same millisecond apart.
Within one state directory the issuer persists the last (ms, seq) it handed
out or reserved and never repeats it, so the same id cannot be issued twice, even by
concurrent processes (they share a locked counter file).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import secrets
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from mdmem.errors import InvalidInputError

__all__ = [
    "ID_PATTERN",
    "IdIssuer",
    "copy_key",
    "id_time",
    "is_copy_key",
    "is_memory_id",
    "new_id_text",
    "written_id",
]

log = logging.getLogger("mdmem")

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_TIME_CHARS = 10
_SEQ_CHARS = 2
_RANDOM_CHARS = 2
# Accept ids a human typed too (any length 6..32 of base32-ish chars).
ID_PATTERN = r"m-[0-9a-z]{6,32}"
_SEQ_LIMIT = 32**_SEQ_CHARS
_RESERVE = 8  # spare sequence numbers taken with each lock (see IdIssuer)
_ID_RE = re.compile(ID_PATTERN)
# The key of a copied line (see copy_key): "path#^m-…", or "path#^m-… (n)".
_COPY_KEY = re.compile(rf"^.+#\^({ID_PATTERN})(?: \(\d+\))?\Z")


def _encode(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


_DIGITS = frozenset(_ALPHABET)
# Crockford's digits to the ones int(..., 32) reads (it read every id parsed).
_TO_INT_DIGITS = str.maketrans(_ALPHABET, "0123456789abcdefghijklmnopqrstuv")


def _decode(text: str) -> int:
    if not text or not _DIGITS.issuperset(text):
        raise ValueError(text)
    return int(text.translate(_TO_INT_DIGITS), 32)


class _RandomTails:
    """Random id tails from the OS, fetched 4 KiB at a time (a system call
    per id was a tenth of a bulk import's id cost). Refetched after a fork,
    so parent and child never share tails."""

    def __init__(self) -> None:
        self._forked()
        if hasattr(os, "register_at_fork"):
            # A fork while another thread held the lock must not leave it held.
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._at = 0
        self._pid = 0

    def take(self) -> str:
        with self._lock:
            if self._at + _RANDOM_CHARS > len(self._pool) or self._pid != os.getpid():
                self._pool, self._at, self._pid = secrets.token_bytes(4096), 0, os.getpid()
            chunk = self._pool[self._at : self._at + _RANDOM_CHARS]
            self._at += _RANDOM_CHARS
        # 256 is a multiple of 32, so each byte's low five bits are uniform.
        return "".join(_ALPHABET[b & 31] for b in chunk)


_TAILS = _RandomTails()


def new_id_text(ms: int, seq: int = 0) -> str:
    return f"m-{_encode(ms, _TIME_CHARS)}{_encode(seq, _SEQ_CHARS)}{_TAILS.take()}"


def is_memory_id(text: str) -> bool:
    return bool(_ID_RE.fullmatch(text))


def copy_key(path: str, memory_id: str, n: int) -> str:
    """The key of a line that carries an id another line already has (a copy).

    Ids are unique in a vault, but a person can duplicate a line. The derived
    state (catalog, manifest, keyword and vector indexes) keys blocks by id, so
    the copy is keyed by where it is: ``path#^id`` (its citation) for the
    first line with that id in ``path``, ``path#^id (n)`` for the n-th.
    """
    return f"{path}#^{memory_id}" if n == 1 else f"{path}#^{memory_id} ({n})"


def written_id(block_id: str) -> str:
    """The id as written in the file: a copy's key gives its ``m-…`` id back."""
    if "#^" not in block_id:
        return block_id
    match = _COPY_KEY.match(block_id)
    return match.group(1) if match else block_id


def is_copy_key(block_id: str) -> bool:
    return "#^" in block_id and _COPY_KEY.match(block_id) is not None


def id_time(memory_id: str) -> datetime | None:
    """Creation time encoded in an id mdmem issued; None for hand-made ids."""
    body = memory_id[2:] if memory_id.startswith("m-") else memory_id
    if len(body) < _TIME_CHARS:
        return None
    try:
        ms = _decode(body[:_TIME_CHARS])
    except ValueError:
        return None
    if not 0 < ms < 2**48:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def normalize_id(text: str) -> str:
    """Accept ``^m-…``, ``m-…`` or a citation ``path#^m-…``; return ``m-…``."""
    candidate = text.strip()
    if "#" in candidate:
        candidate = candidate.rsplit("#", 1)[1]
    candidate = candidate.lstrip("^")
    if not is_memory_id(candidate):
        raise InvalidInputError(f"not a memory id: {text!r} (expected m-xxxxxxxxxx)")
    return candidate


class IdIssuer:
    """Hands out increasing (ms, sequence) pairs, persisted in the state dir.

    The counter file is locked with ``flock`` and rewritten in place, so ids
    stay unique across processes without the time part drifting ahead of the
    clock. Each lock reserves a few more sequence numbers of the same
    millisecond, used only while the clock still reads that millisecond: a
    bulk import takes the lock about once per millisecond instead of once per
    id. Ids of one process always increase; two processes writing in the same
    millisecond interleave in an unspecified order. No fsync: a killed
    process leaves the page cache intact; only a power loss could rewind the
    counter, and then the random tail still separates ids.
    """

    def __init__(self, state_dir: Path) -> None:
        self._path = state_dir / "last-id-ms"
        self._thread_lock = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        # Sequence numbers reserved in the counter file: (ms, next, last).
        self._spare = (0, 1, 0)
        # The last (ms, seq) this process issued or reserved, the floor when
        # the counter file cannot be used (or was started again).
        self._local = (0, -1)
        self._warned = False

    def _handle(self) -> int | None:
        """The counter file, opened again after a fork or when it was deleted
        (the state dir removed under an open vault); None if it cannot be opened."""
        fd = self._fd
        if fd is not None and self._pid == os.getpid():
            try:
                if os.fstat(fd).st_nlink > 0:
                    return fd
            except OSError:
                pass
            with contextlib.suppress(OSError):
                os.close(fd)
            self._fd = None
        # Reopen after fork: a flock on an inherited descriptor is shared.
        self._spare = (0, 1, 0)  # the parent may use what it reserved
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            self._fd = None
            self._unusable(exc)
            return None
        self._pid = os.getpid()
        return self._fd

    def _unusable(self, exc: OSError) -> None:
        if not self._warned:
            self._warned = True
            log.warning(
                "id counter %s unusable (%s); issuing ids from this process's clock",
                self._path,
                exc.strerror or exc,
            )

    def _issue_locally(self, now: int) -> str:
        """Without the shared counter: still increasing in this process, and the
        random tail keeps ids of other processes apart."""
        last_ms, last_seq = self._local
        if now > last_ms:
            ms, seq = now, 0
        elif last_seq + 1 < _SEQ_LIMIT:
            ms, seq = last_ms, last_seq + 1
        else:
            ms, seq = last_ms + 1, 0
        self._local = (ms, seq)
        return new_id_text(ms, seq)

    def issue(self) -> str:
        with self._thread_lock:
            now = int(time.time() * 1000)
            spare_ms, spare_next, spare_last = self._spare
            if spare_ms == now and spare_next <= spare_last:
                self._spare = (now, spare_next + 1, spare_last)
                self._local = max(self._local, (now, spare_next))
                return new_id_text(now, spare_next)
            fd = self._handle()
            if fd is None:
                return self._issue_locally(now)
            try:
                ms, seq, reserved = self._take(fd, now)
            except OSError as exc:  # EIO, ENOSPC: the id must not fail the write
                self._unusable(exc)
                return self._issue_locally(now)
            self._spare = (ms, seq + 1, reserved)
            self._local = max(self._local, (ms, reserved))
        return new_id_text(ms, seq)

    def _take(self, fd: int, now: int) -> tuple[int, int, int]:
        """Under the file lock: the next (ms, seq) and the last sequence reserved."""
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, 64, 0).decode("ascii", "replace").split()
            try:
                last_ms, last_seq = int(raw[0]), int(raw[1])
            except (IndexError, ValueError):
                last_ms, last_seq = 0, -1
            # Ids this process issued without the file count too.
            last_ms, last_seq = max((last_ms, last_seq), self._local)
            if now > last_ms:
                ms, seq = now, 0
            elif last_seq + 1 < _SEQ_LIMIT:
                ms, seq = last_ms, last_seq + 1
            else:
                ms, seq = last_ms + 1, 0
            reserved = min(seq + _RESERVE, _SEQ_LIMIT - 1) if ms == now else seq
            os.pwrite(fd, f"{ms} {reserved}".ljust(40).encode(), 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return ms, seq, reserved

    def __del__(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            try:
                os.close(self._fd)
            except OSError:
                pass
