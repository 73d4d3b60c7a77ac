"""Forgetting for real: remove a memory's text from every commit of the vault.

:func:`purge` replaces the text (every version of it, and each line of a
multi-line memory) with ``[PURGED]`` in all blobs and commit messages, keeping
the number of commits, then expires reflogs and prunes. The rewrite is
``git fast-export | scrub | git fast-import`` (always available) or ``git
filter-repo`` when installed. Afterwards the remote no longer matches: a
marker makes ``sync`` refuse to pull until ``force_push`` overwrites it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mdmem.errors import GitError, InvalidInputError, MemoryNotFoundError
from mdmem.git.provenance import clear_blame_cache
from mdmem.git.versions import versions as history_of
from mdmem.store.ids import normalize_id

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "PURGED",
    "PurgeResult",
    "clear_stale_marker",
    "purge",
    "remote_is_stale",
    "scrub_message",
]

PURGED = "[PURGED]"


@dataclass(frozen=True)
class PurgeResult:
    memory_id: str
    method: str  # "filter-repo" or "fast-export"
    commits: int  # commits in the repository (unchanged by a purge)
    commits_rewritten: int
    blobs_rewritten: int | None  # None when filter-repo did the work
    messages_rewritten: int | None
    strings: int  # distinct strings replaced by [PURGED]
    also_in: tuple[str, ...]  # other current memories that contained the text and were scrubbed too
    forgotten_now: bool  # the memory was still in the vault and got forgotten first
    seconds: float


_MIN_LINE = 4  # shorter lines of a multi-line memory stay (too likely to occur elsewhere)
_MIN_PREFIX = 12  # a truncated commit subject must keep this much of the text to be matched


def purge(
    store: MemoryStore,
    memory_id: str,
    *,
    confirm: bool,
    method: str | None = None,
) -> PurgeResult:
    """Forget ``memory_id`` and rewrite ALL history so its text is in no commit.

    Every blob and commit message holding the memory's text (any version of it,
    and each of its lines for a multi-line memory) gets ``[PURGED]`` instead;
    the number of commits stays the same. Reflogs are expired and unreachable
    objects pruned. Clones and remotes elsewhere still hold the text: after a
    purge, ``sync`` refuses to pull until ``force_push=True`` overwrites the remote.

    ``method``: ``"filter-repo"`` (needs ``git filter-repo`` on PATH),
    ``"fast-export"`` (git plumbing, always available) or None (filter-repo
    when installed).
    """
    import time

    if not confirm:
        raise InvalidInputError(
            "purge rewrites the whole git history of the vault and cannot be undone; other "
            "clones and the remote still hold the text until they are rewritten too; "
            "pass confirm=True (--yes) to proceed"
        )
    if method not in (None, "filter-repo", "fast-export"):
        raise InvalidInputError("method must be 'filter-repo' or 'fast-export'")
    memory_id = normalize_id(memory_id)
    started = time.perf_counter()
    with store.writer.writing():
        texts: list[str] = []
        forgotten_now = False
        try:
            texts.append(store.block(memory_id).text)
        except MemoryNotFoundError:
            pass
        try:
            versions = history_of(store, memory_id)
        except MemoryNotFoundError:
            versions = []
        texts += [v.text for v in versions if v.text]
        if not texts:
            raise MemoryNotFoundError(f"no memory {memory_id} in the vault or its history")
        if store.catalog.has_id(memory_id):
            store.forget(memory_id, reason="purge")
            forgotten_now = True
        strings = _purge_strings(texts)
        store.refresh()
        also_in = tuple(
            sorted(
                b.id
                for b in store.catalog.blocks(memories_only=True)
                if b.id != memory_id and any(s in b.text for s in strings)
            )
        )
        before = set(_all_commits(store))
        old_head = store.git.head()
        if method is None:
            method = "filter-repo" if shutil.which("git-filter-repo") else "fast-export"
        blobs: int | None = None
        messages: int | None = None
        if method == "filter-repo":
            if not shutil.which("git-filter-repo"):
                raise InvalidInputError(
                    "git filter-repo is not installed (pip install git-filter-repo); "
                    "use method='fast-export'"
                )
            _purge_filter_repo(store, strings)
        else:
            blobs, messages = _purge_fast_export(store, strings, old_head)
        _expire_and_prune(store)
        after = _all_commits(store)
        store.git.forget_tracked()
        clear_blame_cache()
        store.refresh()
        _mark_remote_stale(store, old_head)
    reindex = getattr(store, "reindex", None)
    if callable(reindex):  # whoosh keeps deleted documents in its segments until rewritten
        reindex(full=True)
    return PurgeResult(
        memory_id=memory_id,
        method=method,
        commits=len(after),
        commits_rewritten=len(before - set(after)),
        blobs_rewritten=blobs,
        messages_rewritten=messages,
        strings=len(strings),
        also_in=also_in,
        forgotten_now=forgotten_now,
        seconds=round(time.perf_counter() - started, 3),
    )


def _purge_strings(texts: Iterable[str]) -> list[str]:
    found: dict[str, None] = {}
    for text in texts:
        text = text.strip()
        if not text:
            continue
        found.setdefault(text)
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= _MIN_LINE and any(ch.isalnum() for ch in line):
                found.setdefault(line)
                collapsed = " ".join(line.split())
                found.setdefault(collapsed)
    return sorted(found, key=len, reverse=True)


def _all_commits(store: MemoryStore) -> list[str]:
    return store.git.run("rev-list", "--all").split()


def _purge_fast_export(
    store: MemoryStore, strings: list[str], old_head: str | None
) -> tuple[int, int]:
    """fast-export | rewrite each ``data`` block | fast-import --force; then update files."""
    scrubber = _Scrubber(strings)
    store.state_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryFile(dir=store.state_dir) as err_out,
        tempfile.TemporaryFile(dir=store.state_dir) as err_in,
    ):
        exporter = store.git.popen(
            "fast-export",
            "--all",
            "--signed-tags=strip",
            "--tag-of-filtered-object=rewrite",
            "--reencode=yes",
            stdout=subprocess.PIPE,
            stderr=err_out,
        )
        importer = store.git.popen(
            "fast-import",
            "--force",
            "--quiet",
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err_in,
        )
        assert exporter.stdout is not None and importer.stdin is not None
        try:
            scrubber.stream(exporter.stdout, importer.stdin)
        finally:
            importer.stdin.close()
            exporter.stdout.close()
        export_rc, import_rc = exporter.wait(), importer.wait()
        if export_rc != 0 or import_rc != 0:
            err_out.seek(0)
            err_in.seek(0)
            message = (
                (err_out.read() + err_in.read()).decode("utf-8", "replace").strip().splitlines()
            )
            raise GitError(f"history rewrite failed: {message[0] if message else 'exit status'}")
    new_head = store.git.run("rev-parse", "--verify", "HEAD")
    if old_head and new_head != old_head:
        # Move index and files from the old tree to the rewritten one (a two-way
        # checkout: it refuses rather than overwrite a file someone is editing).
        store.git.run("read-tree", "-m", "-u", old_head, new_head)
    store.git.run("update-index", "-q", "--refresh", ok_codes=(0, 1))
    return scrubber.blobs, scrubber.messages


class _Scrubber:
    """Rewrites the ``data <n>`` blocks of a fast-export stream."""

    def __init__(self, strings: list[str]) -> None:
        self.strings = strings
        self.byte_strings = [s.encode("utf-8") for s in strings]
        self.blobs = 0
        self.messages = 0

    def stream(self, src: IO[bytes], dst: IO[bytes]) -> None:
        kind = b""
        while True:
            line = src.readline()
            if not line:
                break
            if line.startswith(b"data "):
                size_text = line[5:].strip()
                if size_text.startswith(b"<<"):
                    raise GitError("unexpected delimited data in fast-export stream")
                payload = _read_exact(src, int(size_text))
                if kind == b"blob":
                    new = self.scrub_blob(payload)
                    self.blobs += new != payload
                else:
                    new = self.scrub_message(payload)
                    self.messages += new != payload
                dst.write(b"data %d\n" % len(new))
                dst.write(new)
                continue
            if line[:1] not in (b" ", b"\n") and not line.startswith((b"mark ", b"original-oid ")):
                kind = line.split(b" ", 1)[0].strip()
            dst.write(line)

    def scrub_blob(self, data: bytes) -> bytes:
        for s in self.byte_strings:
            if s in data:
                data = data.replace(s, PURGED.encode())
        return data

    def scrub_message(self, data: bytes) -> bytes:
        text = data.decode("utf-8", "surrogateescape")
        return scrub_message(text, self.strings).encode("utf-8", "surrogateescape")


def scrub_message(text: str, strings: list[str]) -> str:
    """Replace ``strings`` in a commit message, and their prefixes cut off by "…"."""
    for s in strings:
        if s in text:
            text = text.replace(s, PURGED)
    idx = text.find("…")
    while idx != -1:
        cut = 0
        for s in strings:
            k = min(len(s), idx)
            while k >= min(_MIN_PREFIX, len(s)) and k > 0:
                if text[idx - k : idx] == s[:k]:
                    cut = max(cut, k)
                    break
                k -= 1
        if cut:
            text = text[: idx - cut] + PURGED + text[idx + 1 :]
            idx = text.find("…", idx - cut + len(PURGED))
        else:
            idx = text.find("…", idx + 1)
    return text


def _read_exact(src: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = src.read(remaining)
        if not chunk:
            raise GitError("fast-export stream ended early")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _purge_filter_repo(store: MemoryStore, strings: list[str]) -> None:
    remotes = _remote_config(store)
    store.state_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "wb", dir=store.state_dir, prefix="purge-", delete=False
    ) as tmp:
        for s in strings:
            if "\n" not in s:
                tmp.write(b"literal:" + s.encode("utf-8") + b"==>" + PURGED.encode() + b"\n")
        for s in strings:
            if "\n" in s or len(s) < _MIN_PREFIX:
                continue
            tmp.write(
                b"regex:" + _prefix_regex(s).encode("utf-8") + b"==>" + PURGED.encode() + b"\n"
            )
    try:
        # filter-repo's own git calls get the safe settings from git (GIT_CONFIG_PARAMETERS).
        status, _out, err = store.git.execute(
            "filter-repo",
            "--force",
            "--quiet",
            "--prune-empty",
            "never",
            "--prune-degenerate",
            "never",
            "--replace-text",
            tmp.name,
            "--replace-message",
            tmp.name,
        )
    finally:
        os.unlink(tmp.name)
    if status != 0:
        lines = err.strip().splitlines()
        raise GitError(f"git filter-repo: {lines[-1] if lines else status}")
    # filter-repo drops the remotes so a rewrite is not pushed by accident;
    # sync guards against that instead (see _mark_remote_stale).
    for name, url in remotes:
        if not store.git.run("config", "--get", f"remote.{name}.url", ok_codes=(0, 1)):
            store.git.run("remote", "add", name, url)


def _prefix_regex(s: str) -> str:
    """Any prefix of ``s`` of at least _MIN_PREFIX characters, followed by "…"."""
    head = re.escape(s[:_MIN_PREFIX])
    tail = ""
    for ch in reversed(s[_MIN_PREFIX:]):
        tail = f"(?:{re.escape(ch)}{tail})?"
    return head + tail + "…"


def _remote_config(store: MemoryStore) -> list[tuple[str, str]]:
    out = store.git.run("config", "--get-regexp", r"^remote\..*\.url$", ok_codes=(0, 1))
    remotes = []
    for line in out.splitlines():
        key, _, url = line.partition(" ")
        remotes.append((key[len("remote.") : -len(".url")], url))
    return remotes


def _expire_and_prune(store: MemoryStore) -> None:
    git_dir = store.root / ".git"
    # Pseudo-refs may point at old commits; COMMIT_EDITMSG holds the last message verbatim.
    names = ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")
    for name in (*names, "COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG"):
        try:
            (git_dir / name).unlink()
        except FileNotFoundError:
            pass
    store.git.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    store.git.run("gc", "--prune=now", "--quiet")


# Purged history diverges from every clone: the next sync must overwrite the
# remote (never rebase the old history back in on top of the purge).
def _stale_marker(store: MemoryStore) -> Path:
    return store.state_dir / "purged-history.json"


def _mark_remote_stale(store: MemoryStore, old_head: str | None) -> None:
    store.state_dir.mkdir(parents=True, exist_ok=True)
    marker = _stale_marker(store)
    data = {"old_head": old_head, "when": datetime.now(UTC).isoformat(timespec="seconds")}
    marker.write_text(json.dumps(data) + "\n", encoding="utf-8")


def remote_is_stale(store: MemoryStore) -> bool:
    return _stale_marker(store).is_file()


def clear_stale_marker(store: MemoryStore) -> None:
    try:
        _stale_marker(store).unlink()
    except FileNotFoundError:
        pass
