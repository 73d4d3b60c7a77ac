"""A write's intent, kept in the state dir while its files are replaced and committed.

The writer replaces a transaction's files one by one and then makes one
commit. A process killed in between (``kill -9``, a power cut) would leave
new bytes on disk without their commit, and the next write would commit them
as a *person's* edit: the agent's change misattributed, and a multi-file
change (a cleanup over MEMORY.md and USER.md, a contact fold) possibly only
half there.

So before the first file is replaced, :meth:`Intent.save` writes what the
transaction is about to do (``intent.json`` in the state dir: the commit
message, the agent, each file's old and new checksums, and for a multi-file
change the new bytes of each file), and :meth:`Intent.clear` removes it once
the commit exists. :func:`recover`, run by whoever takes the vault lock next,
rolls an interrupted write forward: files still holding their old bytes get
the new ones, and the files now holding the new bytes are committed with the
recorded message, as the agent, plus ``Recovered: interrupted write``. A file
a person changed since (neither old nor new bytes) is left to them and named
in a warning. A single-file change keeps no bytes (the file replace itself
is atomic); of a file a multi-file change only appends to (a memory's line
and the record of its fields beside it) only the appended bytes are kept, so
the common write pays a small JSON file and its new lines. The record is not
fsynced (that doubled a remember's cost): it covers a killed process, whose
writes the OS still holds, not a power cut.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

from mdmem.files.textfile import atomic_write, safe_path

__all__ = ["Intent", "recover"]

log = logging.getLogger("mdmem")

_DIR = "write-intent"
_FILE = "intent.json"


def _mark(data: bytes | None) -> str | None:
    # Which of two known versions a file holds: length + CRC-32 is enough
    # (this is not a defence against an adversary) and costs ~1 ms per 3 MB.
    return None if data is None else f"{len(data)}:{zlib.crc32(data):08x}"


class Intent:
    """What one transaction's flush is about to write; see the module doc."""

    def __init__(self, state_dir: Path, message: str, agent: str) -> None:
        self.folder = state_dir / _DIR
        self.message = message
        self.agent = agent
        self.files: dict[str, dict[str, str | None]] = {}
        self.blobs: dict[str, bytes] = {}

    def record(self, rel: str, old: bytes | None, new: bytes, *, keep_bytes: bool) -> None:
        """Note one file's old and new content (the new bytes too when ``keep_bytes``)."""
        self.files[rel] = {"old": _mark(old), "new": _mark(new)}
        if keep_bytes:
            if old is not None and new.startswith(old):
                self.files[rel]["appends"] = "1"  # the blob is what goes after the old bytes
                self.blobs[rel] = new[len(old) :]
            else:
                self.blobs[rel] = new

    def save(self) -> None:
        """Write the intent (blobs first, the JSON that names them last)."""
        for n, (rel, data) in enumerate(sorted(self.blobs.items())):
            name = f"blob-{n}"
            _put(self.folder / name, data)
            self.files[rel]["blob"] = name
        body = {"message": self.message, "agent": self.agent, "files": self.files}
        _put(self.folder / _FILE, json.dumps(body).encode("utf-8"))

    def clear(self) -> None:
        """The commit exists: nothing to recover (the record goes first, then its blobs)."""
        for name in [_FILE, *(f"blob-{n}" for n in range(len(self.blobs)))]:
            try:
                os.unlink(self.folder / name)
            except FileNotFoundError:
                pass


def _put(path: Path, data: bytes) -> None:
    # Replaced whole (a reader never sees half a record), without fsync.
    atomic_write(path, data, fsync=False)


def recover(
    state_dir: Path,
    root: Path,
    commit: Callable[[str, str, list[str]], object],
    dirty: Callable[[list[str]], list[str]],
) -> list[str]:
    """Finish a write a killed process left; the paths committed (see the module doc).

    ``commit(message, agent, paths)`` commits as the agent; ``dirty(paths)``
    says which of ``paths`` differ from HEAD.
    """
    folder = state_dir / _DIR
    try:
        body = json.loads((folder / _FILE).read_text(encoding="utf-8"))
        files = body["files"]
        message, agent = str(body["message"]), str(body["agent"])
    except FileNotFoundError:
        return []  # the common case; stray blobs of an unfinished save are overwritten
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("an interrupted write's record is unreadable, dropped: %s", exc)
        shutil.rmtree(folder, ignore_errors=True)
        return []
    done: list[str] = []
    left: list[str] = []
    for rel, marks in sorted(files.items()):
        full = safe_path(root, rel)
        try:
            held: bytes | None = full.read_bytes()
        except FileNotFoundError:
            held = None
        now = _mark(held)
        if now == marks.get("new"):
            done.append(rel)
        elif now == marks.get("old") and marks.get("blob"):
            blob = (folder / str(marks["blob"])).read_bytes()
            atomic_write(full, (held or b"") + blob if marks.get("appends") else blob)
            done.append(rel)
        else:
            left.append(rel)
    if left:
        log.warning(
            "an interrupted write could not be finished for %s (changed since); "
            "they are left as they are",
            ", ".join(left),
        )
    committed = dirty(done) if done else []
    if committed:
        commit(message, agent, committed)
        log.warning("finished an interrupted write: %s", ", ".join(committed))
    shutil.rmtree(folder, ignore_errors=True)
    return committed
