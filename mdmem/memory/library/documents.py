"""Documents: files ingested into ``documents/`` as heading-delimited chunks.

``ingest(store, path)`` converts a markdown, text, HTML or PDF file
(:mod:`mdmem.memory.library.docconvert`) and writes ``documents/<name>.md``:
frontmatter written by mdmem (``source``, ``checksum``, ``date``, ``title``),
then one ``## heading`` entry per chunk ending in a block id, kind
``document_chunk`` (the folder gives the kind, like ``daily/`` gives ``log``).

Re-ingest keeps ids: a chunk whose heading and text are unchanged keeps its
id and its lines byte for byte; a chunk whose text changed under the same
heading keeps its id with the new text; new chunks get new ids; gone ones
go. A source whose checksum equals the one on file writes nothing.

Hand edits: a chunk a person changed (or deleted) in ``documents/`` since
the last ingest (compared with the file as that ingest committed it) is kept
when the new source leaves that chunk as it was; when the new source changes
or removes it, the re-ingest is refused with the chunk ids, and
``force=True`` (``mdmem library ingest --force``) replaces it (the edit stays in git).

Where it came from: ``source`` is the file name, or its path inside the
folder ingested (``docs/sub/b.txt``): never the absolute path, which would
carry the user's directory layout into the vault's git. The document is
found again by ``origin``, a hash of its absolute path on the ingesting
machine (so a copy of the vault elsewhere makes a new document, not a wrong
match). Only regular files are read; a folder ingest skips symlinks, hidden
entries and anything inside a vault.

The document's text is data: it passes the secrets guard, and its own
frontmatter, ``[key:: value]`` fields, ``^ids`` and headings are stored so
they read back as text, never as mdmem's metadata (docs/file-format.md, "Text is
text; metadata comes from the caller").
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import yaml

from mdmem.errors import ConflictError, InvalidInputError, MdmemError, Spelled
from mdmem.files import blocks as blk
from mdmem.files import render
from mdmem.files.textfile import SkipFile, TextFile, decode
from mdmem.memory.library.docconvert import (
    MAX_CHUNKS,
    MAX_DOCUMENT_BYTES,
    SUFFIXES,
    Chunk,
    chunk_markdown,
    convert,
)
from mdmem.models import Block, one_line
from mdmem.store.editors import Edit, Editor
from mdmem.store.memories import MemoryStore

log = logging.getLogger("mdmem")

__all__ = ["DOCUMENTS_DIR", "IngestResult", "expand", "ingest", "ingest_many"]

DOCUMENTS_DIR = "documents"
KIND = "document_chunk"
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class IngestResult:
    """What one ingest did: the vault file, and chunk ids kept, changed, added, removed."""

    source: str
    path: str
    checksum: str
    chunks: list[str]
    unchanged: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    written: bool = False
    commit: str | None = None
    kept_edits: list[str] = field(default_factory=list)  # hand-edited chunks left as they are
    cut: str | None = None  # why part of the document's text was left out (None: whole)
    error: str | None = None  # ingest_many: why this file was not ingested (None: it was)


def expand(
    store: MemoryStore, paths: Iterable[str | Path]
) -> tuple[list[tuple[Path, Path | None]], list[tuple[str, str]]]:
    """The files a list of paths means: ([(file, the folder it was found in)], [(skipped, why)]).

    A file named outright is taken as it is (its symlink followed: the user
    chose it). Under a folder, symlinks are skipped (a link can point out of
    the folder, at a private file or back up into a loop), and so are hidden
    entries, unsupported suffixes and anything inside a vault.
    """
    files: list[tuple[Path, Path | None]] = []
    skipped: list[tuple[str, str]] = []
    vault = store.root.resolve()
    for given in (Path(p).expanduser() for p in paths):
        if not given.is_dir():
            files.append((given, None))
            continue
        if given.resolve() == vault or vault in given.resolve().parents:
            skipped.append((str(given), "inside the vault"))
            continue
        for top, dirs, names in os.walk(given, followlinks=False):
            here = Path(top)
            keep = []
            for d in sorted(dirs):
                sub = here / d
                if d.startswith("."):
                    continue
                if sub.is_symlink():
                    skipped.append((str(sub), "a symlink"))
                elif (sub / "mdmem.toml").is_file() or sub.resolve() == vault:
                    skipped.append((str(sub), "a vault"))
                else:
                    keep.append(d)
            dirs[:] = keep
            for name in sorted(names):
                full = here / name
                if name.startswith(".") or full.suffix.lower() not in SUFFIXES:
                    continue
                if full.is_symlink():
                    skipped.append((str(full), "a symlink"))
                    continue
                try:
                    regular = stat.S_ISREG(full.stat().st_mode)
                except OSError as exc:
                    skipped.append((str(full), exc.strerror or "unreadable"))
                    continue
                if not regular:
                    skipped.append((str(full), "not a regular file"))
                    continue
                files.append((full, given))
    return files, skipped


def ingest_many(
    store: MemoryStore,
    paths: Iterable[str | Path],
    *,
    scope: str | None = None,
    force: bool = False,
    on_skip: Callable[[str, str], object] | None = None,
) -> list[IngestResult]:
    """Ingest files and folders (see :func:`expand`), each file in its own commit;
    ``on_skip(name, why)`` hears of each entry a folder walk left out.

    Among several files (or a folder's), one that can't be ingested (not
    text, too large, a hand-edit conflict) is skipped: its result carries the
    one-line ``error`` and the rest go in. A single file named on its own
    raises its error instead (there is no rest).
    """
    files, skipped = expand(store, paths)
    for name, why in skipped:
        log.warning("ingest: skipped %s (%s)", name, why)
        if on_skip is not None:
            on_skip(name, why)
    if len(files) == 1 and files[0][1] is None:
        return [ingest(store, files[0][0], scope=scope, force=force)]
    results = []
    for f, r in files:
        try:
            results.append(ingest(store, f, scope=scope, force=force, root=r))
        except MdmemError as exc:
            log.warning("ingest: %s not ingested: %s", f, exc)
            results.append(IngestResult(_source_name(f, r), "", "", [], error=str(exc)))
    return results


def ingest(
    store: MemoryStore,
    path: str | Path,
    *,
    scope: str | None = None,
    title: str | None = None,
    force: bool = False,
    root: Path | None = None,
) -> IngestResult:
    """Copy or convert ``path`` into ``documents/`` as chunks; see the module doc.

    ``root``: the folder the file was found in (its ``source`` is then the
    path inside that folder); ``force``: replace hand-edited chunks.
    """
    scope = blk.validate_scope(scope)
    source = Path(path).expanduser()
    raw = _read_regular(source)
    real = source.resolve()
    if store.root.resolve() in real.parents:
        # A note in the vault is indexed as it is; a copy would be recalled twice.
        raise InvalidInputError(f"{source.name} is already in the vault: it is indexed as it is")
    source_name = _source_name(source, root)
    origin = "sha256:" + hashlib.sha256(os.fsencode(real)).hexdigest()[:20]
    checksum = "sha256:" + hashlib.sha256(raw).hexdigest()
    name = title if title is not None else source.stem
    name = _clean_title(name)
    converted = convert(source, raw)
    cut = converted.cut
    chunks = chunk_markdown(converted.text, name)
    if len(chunks) > MAX_CHUNKS:
        cut = f"{cut}; " if cut else ""
        cut += f"kept the first {MAX_CHUNKS:,} of {len(chunks):,} chunks"
        chunks = chunks[:MAX_CHUNKS]
    # Every chunk passes the same check (and secrets guard) as any memory text.
    chunks = [Chunk(_clean_heading(store, c.heading), store.clean_text(c.text)) for c in chunks]
    if not chunks:
        raise InvalidInputError(f"{source.name} holds no text to ingest")

    folder = blk.scope_dir(scope) / DOCUMENTS_DIR
    with store.writer.batch(subject=None) as tx:
        rel, old_meta, old_chunks = _existing(store, folder, origin, str(real), name)
        if (
            old_meta.get("checksum") == checksum
            and old_meta.get("origin") == origin
            and old_meta.get("source") == source_name
            and old_chunks
        ):
            ids = [b.id for b in old_chunks]
            return IngestResult(source_name, rel, checksum, ids, unchanged=ids, cut=cut)
        # What the last ingest wrote: the baseline a hand edit is measured against.
        ingested = _as_ingested(store, rel, old_chunks) if old_chunks else {}
        current = {b.id: b for b in old_chunks}
        plan = _assign_ids(store, chunks, list(ingested.values()) or old_chunks)
        chunks, kept_edits = _keep_hand_edits(chunks, plan, ingested, current, force=force)
        meta: dict[str, object] = {
            "title": name,
            "source": source_name,
            "origin": origin,
            "checksum": checksum,
            "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        }
        if cut:
            meta["cut"] = cut  # the file says it is not the whole document
        # Keys a person added to the frontmatter stay.
        meta.update({str(k): v for k, v in old_meta.items() if k not in meta and k not in _LEGACY})
        lines = _render(meta, name, chunks, plan)
        added = [i for i, how in plan.values() if how == "added"]
        kept = [i for i, how in plan.values() if how == "unchanged"]
        changed = [i for i, how in plan.values() if how == "changed"]
        used = {i for i, _ in plan.values()}
        removed = [b.id for b in old_chunks if b.id not in used]
        verb = "ingest" if not old_chunks else "re-ingest"
        subject = f"{verb} document: {one_line(name, 60)}"
        trailers = [
            ("Op", "ingest"),
            ("Kind", KIND),
            ("Scope", scope or blk.ROOT_SCOPE),
            ("Source", one_line(source_name, 200)),
            ("Checksum", checksum),
            *(("Memory-Id", i) for i in [*added, *changed, *removed][:20]),
        ]
        if not old_meta:
            tx.create_file(rel, lines, subject=subject, trailers=trailers)
        else:
            base = decode((store.root / rel).read_bytes()).text
            tx.apply(rel, _replacer(lines, base, rel), subject, trailers)
    return IngestResult(
        source_name,
        rel,
        checksum,
        [i for i, _ in plan.values()],
        unchanged=kept,
        changed=changed,
        added=added,
        removed=removed,
        written=True,
        commit=store.git.head(),
        kept_edits=kept_edits,
        cut=cut,
    )


# Frontmatter keys mdmem sets on each ingest (or an older release wrote) that
# a re-ingest replaces rather than keeps.
_LEGACY = frozenset({"source", "origin", "cut"})


def _read_regular(source: Path) -> bytes:
    """The file's bytes; only a regular file of bounded size is read.

    A FIFO or device would block or never end, and a huge file is read only
    to be refused: both are refused from ``stat`` first.
    """
    try:
        st = source.stat()
    except OSError as exc:
        raise InvalidInputError(f"can't read {source}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InvalidInputError(
            f"{source.name} is a folder: use ingest_many (mdmem library ingest FOLDER)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInputError(f"{source.name} is not a regular file")
    limit = MAX_DOCUMENT_BYTES
    if st.st_size > limit:
        raise InvalidInputError(f"{source.name} is larger than {limit // (1024 * 1024)} MiB")
    try:
        with open(source, "rb") as fh:
            raw = fh.read(limit + 1)  # the file may have grown since stat
    except OSError as exc:
        raise InvalidInputError(f"can't read {source}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise InvalidInputError(f"{source.name} is larger than {limit // (1024 * 1024)} MiB")
    return raw


def _source_name(source: Path, root: Path | None) -> str:
    """What ``source`` says: the name inside the folder ingested, or the file's name."""
    if root is not None:
        try:
            inner = source.relative_to(root)
            return unicodedata.normalize("NFC", (Path(root.name) / inner).as_posix())
        except ValueError:
            pass
    return unicodedata.normalize("NFC", source.name)


def _as_ingested(store: MemoryStore, rel: str, current: list[Block]) -> dict[str, Block]:
    """Chunk id -> the chunk as the last ingest committed it (the current one without git)."""
    try:
        commits = store.git.log("-1", "--grep=^Op: ingest$", "--", rel)
        data = store.git.show(commits[0].sha, rel) if commits else None
    except MdmemError as exc:
        log.warning("ingest: no ingest commit of %s to compare hand edits with: %s", rel, exc)
        data = None
    if data is None:
        return {b.id: b for b in current}
    try:
        parsed = blk.parse(rel, decode(data))
    except (SkipFile, MdmemError):
        return {b.id: b for b in current}
    return {b.id: b for b in parsed.memories() if b.kind == KIND}


def _keep_hand_edits(
    chunks: list[Chunk],
    plan: dict[int, tuple[str, str]],
    ingested: dict[str, Block],
    current: dict[str, Block],
    *,
    force: bool,
) -> tuple[list[Chunk], list[str]]:
    """(the chunks to write, the ids of hand-edited chunks kept as the person left them).

    A chunk edited by hand since the last ingest is kept when the source did
    not change it; a re-ingest that would change or remove it is refused
    (unless ``force``).
    """
    edited = {
        i
        for i, was in ingested.items()
        if i not in current or (current[i].heading, current[i].text) != (was.heading, was.text)
    }
    if not edited:
        return chunks, []
    planned = {plan[n][0]: (n, plan[n][1]) for n in range(len(chunks))}
    conflicts = [i for i in sorted(edited) if planned.get(i, (0, "removed"))[1] != "unchanged"]
    if conflicts and not force:
        raise InvalidInputError.naming(
            f"chunk(s) {', '.join('^' + i for i in conflicts[:10])} were edited by hand since "
            "the last ingest and the new version changes them: re-run with ",
            Spelled("force=True", "--force"),
            " to replace them (the edit stays in git history)",
        )
    out = list(chunks)
    kept: list[str] = []
    for i in sorted(edited - set(conflicts)) if not force else []:
        n, _how = planned[i]
        mine = current.get(i)
        if mine is None:
            continue  # deleted by hand: left out below
        out[n] = Chunk(mine.heading, mine.text)
        kept.append(i)
    gone = {i for i in edited - set(conflicts) if i not in current} if not force else set()
    if gone:
        keep_n = [n for n in range(len(out)) if plan[n][0] not in gone]
        new_plan = {m: plan[n] for m, n in enumerate(keep_n)}
        plan.clear()
        plan.update(new_plan)
        out = [out[n] for n in keep_n]
    return out, kept


def documents(store: MemoryStore, *, scope: str | None = None) -> list[dict[str, str]]:
    """The ingested documents of a scope: path, title, source, checksum, date."""
    scope = blk.validate_scope(scope)
    folder = store.root / blk.scope_dir(scope) / DOCUMENTS_DIR
    out: list[dict[str, str]] = []
    for full in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        meta = _frontmatter(full)
        rel = full.relative_to(store.root).as_posix()
        out.append({"path": rel, **{k: str(meta.get(k, "")) for k in _META_KEYS}})
    return out


_META_KEYS = ("title", "source", "origin", "checksum", "date")


def _clean_title(name: str) -> str:
    # NFC: a macOS file name (decomposed) and a typed one read as one title.
    name = unicodedata.normalize("NFC", str(name))
    title = one_line(str(name).replace("[", "(").replace("]", ")").replace("^", ""), 120)
    title = title.strip().strip("#").strip()
    if not title:
        raise InvalidInputError("a document needs a title (its file name is empty)")
    return title


def _clean_heading(store: MemoryStore, heading: str) -> str:
    # Headings go through the secrets guard like the text under them.
    return one_line(store.clean_text(heading))


def _frontmatter(full: Path) -> dict[str, object]:
    try:
        tf = decode(full.read_bytes())
        meta = blk.parse(full.name, tf).frontmatter
    except (OSError, SkipFile, MdmemError):
        return {}
    return dict(meta) if isinstance(meta, dict) else {}


def _existing(
    store: MemoryStore, folder: PurePosixPath, origin: str, legacy_source: str, name: str
) -> tuple[str, dict[str, object], list[Block]]:
    """(the vault file for this source, its frontmatter, its chunks in order).

    A document is found again by its ``origin`` (or, as an older release
    wrote it, by its absolute path in ``source``); a new one gets a free
    ``documents/<slug>.md`` (``-2``, ``-3``... when another source has it).
    """
    base = store.root / str(folder)
    slug = _SLUG.sub("-", name.casefold()).strip("-")[:60] or "document"
    candidates = sorted(base.glob("*.md")) if base.is_dir() else []
    for full in candidates:
        meta = _frontmatter(full)
        found = meta.get("origin") == origin or (
            "origin" not in meta and meta.get("source") == legacy_source
        )
        if found:
            rel = full.relative_to(store.root).as_posix()
            tf = decode(full.read_bytes())
            parsed = blk.parse(rel, tf)
            chunks = [b for b in parsed.memories() if b.kind == KIND]
            return rel, meta, chunks
    taken = {p.name for p in candidates}
    n = 1
    while (f"{slug}.md" if n == 1 else f"{slug}-{n}.md") in taken:
        n += 1
    file_name = f"{slug}.md" if n == 1 else f"{slug}-{n}.md"
    return f"{folder}/{file_name}", {}, []


def _assign_ids(
    store: MemoryStore, chunks: list[Chunk], old: list[Block]
) -> dict[int, tuple[str, str]]:
    """Chunk position -> (id, "unchanged" | "changed" | "added")."""
    by_content: dict[tuple[str, str], list[str]] = {}
    for b in old:
        by_content.setdefault((b.heading, b.text), []).append(b.id)
    plan: dict[int, tuple[str, str]] = {}
    used: set[str] = set()
    for n, chunk in enumerate(chunks):
        same = by_content.get((chunk.heading, chunk.text))
        if same:
            plan[n] = (same.pop(0), "unchanged")
            used.add(plan[n][0])
    # A chunk whose text changed under the same heading is the same chunk, updated.
    spare: dict[str, list[str]] = {}
    for b in old:
        if b.id not in used:
            spare.setdefault(b.heading, []).append(b.id)
    for n, chunk in enumerate(chunks):
        if n in plan:
            continue
        ids = spare.get(chunk.heading)
        plan[n] = (ids.pop(0), "changed") if ids else (store.writer.new_id(), "added")
    return dict(sorted(plan.items()))


def _render(
    meta: dict[str, object], title: str, chunks: list[Chunk], plan: dict[int, tuple[str, str]]
) -> list[str]:
    """The document file: mdmem's frontmatter, a title, one entry per chunk.

    Deterministic, so an unchanged chunk renders to the same lines again.
    """
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000)
    lines = ["---", *front.rstrip("\n").split("\n"), "---", f"# {title}"]
    for n, chunk in enumerate(chunks):
        lines.append("")
        lines.extend(render.render_entry(chunk.heading, chunk.text, plan[n][0]))
    return lines


def _replacer(lines: list[str], base: str, rel: str) -> Editor:
    """An editor replacing the document file's lines (unchanged chunks render the same).

    ``base`` is the file the plan was made from. The writer replays an edit
    on a file someone saved meanwhile: a whole-file replace would then drop
    their edit (in git, but gone from the file), so it stops instead and a
    re-run weighs the new edit like any other.
    """

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        if "".join(tf.lines) != base:
            raise ConflictError(f"{rel} changed while it was re-ingested; run the ingest again")
        tf.lines[:] = []
        tf.append_lines(lines)
        return Edit()

    return edit
