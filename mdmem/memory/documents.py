"""Documents: files ingested into ``documents/`` as heading-delimited chunks.

``ingest(store, path)`` converts a markdown, text, HTML or PDF file
(:mod:`mdmem.memory.docconvert`) and writes ``documents/<name>.md``:
frontmatter written by mdmem (``source``, ``checksum``, ``date``, ``title``),
then one ``## heading`` entry per chunk ending in a block id, kind
``document_chunk`` (the folder gives the kind, like ``daily/`` gives ``log``).

Re-ingest keeps ids: a chunk whose heading and text are unchanged keeps its
id and its lines byte for byte; a chunk whose text changed under the same
heading keeps its id with the new text; new chunks get new ids; gone ones
go. A source whose checksum equals the one on file writes nothing.

The document's text is data: it passes the secrets guard, and its own
frontmatter, ``[key:: value]`` fields, ``^ids`` and headings are stored so
they read back as text, never as mdmem's metadata (DESIGN, trust rules).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import yaml

from mdmem.errors import InvalidInputError, MdmemError
from mdmem.memory.docconvert import Chunk, chunk_markdown, to_markdown
from mdmem.models import Block, one_line
from mdmem.store import blocks as blk
from mdmem.store.editors import Edit, Editor
from mdmem.store.memories import MemoryStore
from mdmem.store.textfile import SkipFile, TextFile, decode

__all__ = ["DOCUMENTS_DIR", "IngestResult", "ingest", "ingest_many"]

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


def ingest_many(
    store: MemoryStore, paths: Iterable[str | Path], *, scope: str | None = None
) -> list[IngestResult]:
    """Ingest several files, each in its own commit (one bad file stops the run)."""
    return [ingest(store, p, scope=scope) for p in paths]


def ingest(
    store: MemoryStore, path: str | Path, *, scope: str | None = None, title: str | None = None
) -> IngestResult:
    """Copy or convert ``path`` into ``documents/`` as chunks; see the module doc."""
    scope = blk.validate_scope(scope)
    source = Path(path).expanduser()
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"can't read {source}: {exc.strerror or exc}") from None
    source_name = str(source.resolve())
    if store.root.resolve() in source.resolve().parents:
        # A note in the vault is indexed as it is; a copy would be recalled twice.
        raise InvalidInputError(f"{source.name} is already in the vault: it is indexed as it is")
    checksum = "sha256:" + hashlib.sha256(raw).hexdigest()
    name = title if title is not None else source.stem
    name = _clean_title(name)
    chunks = chunk_markdown(to_markdown(source, raw), name)
    # Every chunk passes the same check (and secrets guard) as any memory text.
    chunks = [Chunk(_clean_heading(store, c.heading), store.clean_text(c.text)) for c in chunks]
    if not chunks:
        raise InvalidInputError(f"{source.name} holds no text to ingest")

    folder = blk.scope_dir(scope) / DOCUMENTS_DIR
    with store.writer.batch(subject=None) as tx:
        rel, old_meta, old_chunks = _existing(store, folder, source_name, name)
        if old_meta.get("checksum") == checksum and old_chunks:
            ids = [b.id for b in old_chunks]
            return IngestResult(source_name, rel, checksum, ids, unchanged=ids)
        plan = _assign_ids(store, chunks, old_chunks)
        meta = {
            "title": name,
            "source": source_name,
            "checksum": checksum,
            "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        }
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
            tx.apply(rel, _replacer(lines), subject, trailers)
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
    )


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


_META_KEYS = ("title", "source", "checksum", "date")


def _clean_title(name: str) -> str:
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
    store: MemoryStore, folder: PurePosixPath, source_name: str, name: str
) -> tuple[str, dict[str, object], list[Block]]:
    """(the vault file for this source, its frontmatter, its chunks in order).

    A document is found again by its ``source``; a new one gets a free
    ``documents/<slug>.md`` (``-2``, ``-3``... when another source has it).
    """
    base = store.root / str(folder)
    slug = _SLUG.sub("-", name.casefold()).strip("-")[:60] or "document"
    candidates = sorted(base.glob("*.md")) if base.is_dir() else []
    for full in candidates:
        meta = _frontmatter(full)
        if meta.get("source") == source_name:
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
    meta: dict[str, str], title: str, chunks: list[Chunk], plan: dict[int, tuple[str, str]]
) -> list[str]:
    """The document file: mdmem's frontmatter, a title, one entry per chunk.

    Deterministic, so an unchanged chunk renders to the same lines again.
    """
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000)
    lines = ["---", *front.rstrip("\n").split("\n"), "---", f"# {title}"]
    for n, chunk in enumerate(chunks):
        lines.append("")
        lines.extend(blk.render_entry(chunk.heading, chunk.text, plan[n][0]))
    return lines


def _replacer(lines: list[str]) -> Editor:
    """An editor replacing the document file's lines (unchanged chunks render the same)."""

    def edit(tf: TextFile, parsed: blk.ParsedFile | None) -> Edit:
        tf.lines[:] = []
        tf.append_lines(lines)
        return Edit()

    return edit
