"""The history rewrite of a purge: ``git fast-export | Rewriter | git fast-import``.

:class:`Rewriter` edits the stream: file versions that hold a memory
concerned are rewritten by parsing them (:func:`~mdmem.git.purge_files.rewrite_file`),
every other blob, commit message and tag message is swept by content
(:class:`~mdmem.git.sweep.Sweep`), paths and ref names holding the purged
text are renamed in every commit. :func:`rewrite_history` runs the pipe and
moves the refs, the notes and the working tree onto the new history.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from mdmem.errors import GitError
from mdmem.git.leftovers import move_notes
from mdmem.git.purge_files import rewrite_file
from mdmem.git.purge_messages import PURGED, scrub_message

if TYPE_CHECKING:
    from mdmem.git.sweep import Sweep
    from mdmem.store.derived import Rewrite
    from mdmem.store.memories import MemoryStore

__all__ = ["Rewriter", "rewrite_history"]


class Rewriter:
    """Rewrites a ``git fast-export`` stream for one purge.

    A blob that mentions a memory concerned is held back; each commit that
    uses it gets that file's rewritten version inline (``M <mode> inline
    <path>``), since a block is found by parsing the file as the markdown its
    path says it is. A version that leaves becomes ``D <path>``; a renamed
    note changes its path in every commit.
    """

    def __init__(
        self,
        rewrite: Rewrite,
        sweep: Sweep,
        *,
        forms: Collection[str],
        own: set[str],
        raw_paths: Collection[str] = (),
        dropped_paths: Collection[str] = (),
        renames: Mapping[str, str] | None = None,
        refs: Mapping[str, str] | None = None,
    ) -> None:
        self.rewrite = rewrite
        self.sweep = sweep
        # What the content search redacted: blobs (by mark) until a commit
        # names their path, then "<ref>:<path>"; messages of commits and tags.
        self.redacted: set[bytes] = set()
        self.cleaned: set[str] = set()
        self.ref = ""
        self.commits: dict[str, str] = {}  # a commit's mark -> its sha before the rewrite
        self.forms = forms
        self.own = own
        # A block names its id after a caret; an export row quotes it.
        self.markers = [
            marker.encode() for i in sorted(self.rewrite.touched) for marker in (f"^{i}", f'"{i}"')
        ]
        self.raw_paths = set(raw_paths)
        # Every path that changes name: notes named after an old title, names holding a fragment.
        self.renames = dict(rewrite.renames if renames is None else renames)
        self.refs = dict(refs or {})  # full ref names that change
        # A path named in a message: renamed with its note, or gone with it.
        self.paths = {**dict.fromkeys(sorted(dropped_paths), PURGED), **self.renames}
        self.held: dict[bytes, bytes] = {}
        self.done: dict[tuple[bytes, str], bytes | None] = {}
        self.spans: dict[tuple[str, bytes], int | None] = {}
        self.blobs = 0
        self.messages = 0

    def stream(self, src: IO[bytes], dst: IO[bytes]) -> None:
        command, sha, name, commit_mark = b"", "", "", ""
        blob: list[bytes] | None = None
        mark = b""
        back: bytes | None = None
        while True:
            line, back = (back, None) if back is not None else (src.readline(), None)
            if not line:
                break
            if line == b"blob\n":
                command, blob, mark = b"blob", [line], b""
                continue
            if line.startswith(b"data "):
                payload = _read_data(src, line)
                if blob is not None:
                    if mark and any(m in payload for m in self.markers):
                        self.held[mark] = payload
                        # Its optional LF goes with it: a stray one is no command.
                        after = src.readline()
                        back = None if after == b"\n" else after
                    else:
                        redacted = self.sweep.redact(payload)
                        if redacted is not payload:
                            self.redacted.add(mark)
                            self.blobs += 1
                        dst.write(b"".join(blob))
                        _write_data(dst, redacted)
                    blob = None
                    continue
                if command == b"commit":
                    payload = self.message(payload, sha)
                elif command == b"tag":
                    redacted = self.sweep.redact(payload)
                    if redacted is not payload:
                        self.cleaned.add(f"message of tag {name}")
                        self.messages += 1
                    payload = redacted
                _write_data(dst, payload)
                continue
            if blob is not None:
                blob.append(line)
                if line.startswith(b"mark "):
                    mark = line[5:].strip()
                continue
            if line.startswith(b"original-oid "):
                sha = line[13:].strip().decode("ascii")
                if command == b"commit" and commit_mark:
                    self.commits[commit_mark] = sha
            elif command == b"commit" and line.startswith(b"mark "):
                commit_mark = line[5:].strip().decode("ascii")
            elif line[:1].isalpha() and line.split(b" ", 1)[0].strip() in _COMMANDS:
                command, sha = line.split(b" ", 1)[0].strip(), ""
                name = self.ref_name(command, line.partition(b" ")[2].strip())
                if command in (b"commit", b"reset", b"tag"):
                    line = command + b" " + name.encode("utf-8", "surrogateescape") + b"\n"
                if command == b"commit":
                    self.ref, commit_mark = name, ""
            if command == b"commit" and self.file_change(line, dst):
                continue
            if command == b"tag" and line.startswith(b"from ") and line[5:].strip() in self.held:
                raise GitError("a tag points at a file version that holds the memory; delete it")
            dst.write(line)

    def ref_name(self, command: bytes, raw: bytes) -> str:
        """A ref a ``commit``/``reset`` (full name) or ``tag`` (short name) line names,
        renamed where its name held the purged text."""
        name = raw.decode("utf-8", "surrogateescape")
        if command == b"tag":
            return self.refs.get(f"refs/tags/{name}", f"refs/tags/{name}").removeprefix(
                "refs/tags/"
            )
        return self.refs.get(name, name) if command in (b"commit", b"reset") else name

    def moved(self, path: bytes) -> bytes:
        """A path as the stream writes it, renamed where its name holds the purged text."""
        new = self.renames.get(_unquote_path(path))
        return path if new is None else _quote_path(new)

    def file_change(self, line: bytes, dst: IO[bytes]) -> bool:
        """Handle one ``M``/``D``/``N`` line of a commit; False to copy it as it is."""
        if line.startswith(b"D "):
            path = line[2:-1]
            if _unquote_path(path) in self.raw_paths:
                return True
            moved = self.moved(path)
            if moved != path:
                dst.write(b"D " + moved + b"\n")
                return True
            return False
        if line.startswith(b"N "):
            ref, _, commitish = line[2:-1].partition(b" ")
            if ref not in self.held:
                return False
            dst.write(b"N inline " + commitish + b"\n")
            _write_data(dst, self.rewritten(ref, "notes.md") or b"", lf=True)
            return True
        if not line.startswith(b"M "):
            return False
        mode, ref, path = line[2:-1].split(b" ", 2)
        name = _unquote_path(path)
        if name in self.raw_paths:
            return True  # the raw output never existed
        shown = self.renames.get(name, name)  # never the old name: it may hold the text
        if ref in self.redacted:
            self.cleaned.add(f"{self.ref}:{shown}")
        moved = self.moved(path)
        if ref not in self.held:
            if moved == path:
                return False
            dst.write(b"M " + mode + b" " + ref + b" " + moved + b"\n")
            return True
        new = self.rewritten(ref, name)
        if new is None:
            dst.write(b"D " + moved + b"\n")
            return True
        dst.write(b"M " + mode + b" inline " + moved + b"\n")
        _write_data(dst, new, lf=True)
        return True

    def rewritten(self, ref: bytes, path: str) -> bytes | None:
        key = (ref, path)
        if key not in self.done:
            data = self.held[ref]
            new = rewrite_file(path, data, self.rewrite, self.spans, self.raw_paths)
            if new is not None:
                swept = self.sweep.redact(new)
                if swept is not new:
                    self.cleaned.add(f"{self.ref}:{self.renames.get(path, path)}")
                new = swept
            self.blobs += new != data
            self.done[key] = new
        return self.done[key]

    def message(self, payload: bytes, sha: str) -> bytes:
        text = payload.decode("utf-8", "surrogateescape")
        new = scrub_message(text, self.forms, own=sha in self.own, own_commits=self.own)
        for old, moved in self.paths.items():
            new = new.replace(old, moved)
        swept = self.sweep.redact_text(new)
        if swept != new:
            self.cleaned.add(f"message of commit {sha[:12]} ({self.ref})")
        new = swept
        self.messages += new != text
        return new.encode("utf-8", "surrogateescape")


_COMMANDS = frozenset({b"commit", b"tag", b"reset", b"feature", b"progress", b"done", b"option"})


def _read_data(src: IO[bytes], header: bytes) -> bytes:
    size_text = header[5:].strip()
    if size_text.startswith(b"<<"):
        raise GitError("unexpected delimited data in fast-export stream")
    chunks: list[bytes] = []
    remaining = int(size_text)
    while remaining:
        chunk = src.read(remaining)
        if not chunk:
            raise GitError("fast-export stream ended early")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _write_data(dst: IO[bytes], payload: bytes, *, lf: bool = False) -> None:
    # The stream's own optional LF after a copied payload follows as a line.
    dst.write(b"data %d\n" % len(payload))
    dst.write(payload)
    if lf:
        dst.write(b"\n")


def rewrite_history(store: MemoryStore, rewriter: Rewriter, old_head: str | None) -> None:
    """fast-export | rewriter | fast-import --force; then move the files to the new tree."""
    store.state_dir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(dir=store.state_dir) as marks_dir,
        tempfile.TemporaryFile(dir=store.state_dir) as err_out,
        tempfile.TemporaryFile(dir=store.state_dir) as err_in,
    ):
        exporter = store.git.popen(
            "fast-export",
            "--all",
            "--show-original-ids",
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
            f"--export-marks={Path(marks_dir) / 'marks'}",
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err_in,
        )
        assert exporter.stdout is not None and importer.stdin is not None
        try:
            rewriter.stream(exporter.stdout, importer.stdin)
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
        marks = (Path(marks_dir) / "marks").read_text(encoding="ascii").split()
    moved = {
        rewriter.commits[mark]: new
        for mark, new in zip(marks[::2], marks[1::2], strict=True)
        if mark in rewriter.commits and rewriter.commits[mark] != new
    }
    _move_refs(store, rewriter.refs)
    move_notes(store, moved)
    new_head = store.git.run("rev-parse", "--verify", "HEAD")
    if old_head and new_head != old_head:
        # Move index and files from the old tree to the rewritten one (a two-way
        # checkout: it refuses rather than overwrite a file someone is editing).
        store.git.run("read-tree", "-m", "-u", old_head, new_head)
    store.git.run("update-index", "-q", "--refresh", ok_codes=(0, 1))


def _move_refs(store: MemoryStore, refs: Mapping[str, str]) -> None:
    """Refs whose name held the purged text: the import wrote the new names; the old
    ones go (one left would keep the old history reachable), and HEAD and a branch's
    settings follow the new name."""
    if not refs:
        return
    head = store.git.run("symbolic-ref", "-q", "HEAD", ok_codes=(0, 1))
    for old, new in refs.items():
        if head == old:
            store.git.run("symbolic-ref", "HEAD", new)
        store.git.run("update-ref", "-d", old, ok_codes=(0, 1))
        if old.startswith("refs/heads/"):
            # [branch "<name>"] in .git/config names it too (upstream, merge settings).
            store.git.run(
                "config",
                "--rename-section",
                f"branch.{old.removeprefix('refs/heads/')}",
                f"branch.{new.removeprefix('refs/heads/')}",
                ok_codes=(0, 1, 3, 128),
            )


def _unquote_path(raw: bytes) -> str:
    """A path as fast-export writes it: plain, or C-quoted with escapes."""
    if not raw.startswith(b'"'):
        return raw.decode("utf-8", "surrogateescape")
    body, out, i = raw[1:-1], bytearray(), 0
    simple = {b"n": 10, b"t": 9, b"r": 13, b"a": 7, b"b": 8, b"f": 12, b"v": 11}
    while i < len(body):
        ch = body[i : i + 1]
        if ch != b"\\":
            out += ch
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt.isdigit():
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            out += nxt
            i += 2
    return bytes(out).decode("utf-8", "surrogateescape")


def _quote_path(path: str) -> bytes:
    """A path for a fast-import command: C-quoted where a quote, a backslash or a
    control character would end or confuse it."""
    data = path.encode("utf-8", "surrogateescape")
    if not (data.startswith(b'"') or any(b < 32 or b in b'"\\' or b == 127 for b in data)):
        return data
    out = bytearray(b'"')
    for b in data:
        if b in b'"\\':
            out += b"\\" + bytes([b])
        elif b < 32 or b == 127:
            out += b"\\%03o" % b
        else:
            out.append(b)
    return bytes(out + b'"')
