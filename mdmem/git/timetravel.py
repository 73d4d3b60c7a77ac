"""Time travel: recall against the vault as it was at a date or commit.

A throwaway index is built from that commit's tree (read in one `git
cat-file --batch` call), kept on disk under ``<state>/asof/<sha>/`` and reused
for later questions about the same commit. Vectors come from the embedding
cache (keyed by content hash), so rebuilding an old snapshot rarely calls the
embedder: only text that no longer exists anywhere needs embedding again.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.errors import EmbedderError, IndexError_, InvalidInputError
from mdmem.files.blocks import parse
from mdmem.files.health import DERIVED_ERRORS, error_line
from mdmem.files.ids import copy_key
from mdmem.files.manifest import block_from_row, block_to_row
from mdmem.files.sidecar import is_sidecar, merged, parse_records
from mdmem.files.textfile import SkipFile, decode
from mdmem.git.revisions import rev_parse
from mdmem.index.blocktext import embed_key, indexable
from mdmem.index.embedding import EMBED_BATCH
from mdmem.index.keyword import KeywordIndex
from mdmem.models import Block
from mdmem.recall.conversation import FileOrder, name_tokens, people_of
from mdmem.recall.search import to_datetime
from mdmem.store.derived import Lookup
from mdmem.store.visibility import Visibility

if TYPE_CHECKING:
    from mdmem.index.vector import VectorIndex
    from mdmem.providers.embedders import Embedder
    from mdmem.store.memories import MemoryStore

__all__ = ["Snapshot", "resolve_commit", "source_at"]

log = logging.getLogger("mdmem")

_KEEP_ON_DISK = 8
_KEEP_IN_MEMORY = 3


def resolve_commit(store: MemoryStore, as_of: str | date | datetime) -> str:
    """A commit sha for a commit-ish, or the last commit at or before a date/time."""
    moment: datetime | None = None
    if isinstance(as_of, datetime):
        moment = as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
    elif isinstance(as_of, date):
        moment = datetime(as_of.year, as_of.month, as_of.day, 23, 59, 59, tzinfo=UTC)
    elif isinstance(as_of, str) and as_of.strip():
        text = as_of.strip()
        sha = rev_parse(store, text)
        if sha is not None:
            return sha
        try:
            moment = to_datetime(text, end=len(text) <= 10)
        except InvalidInputError:
            moment = None
    if moment is None:
        raise InvalidInputError(f"as_of must be a commit or a date/time, not {as_of!r}")
    status, out, _ = store.git.execute("rev-list", "-1", f"--before={moment.isoformat()}", "HEAD")
    if status != 0 or not out.strip():
        raise InvalidInputError(f"the vault has no commit at or before {moment.isoformat()}")
    return out.strip()


@dataclass
class Snapshot:
    """The vault at one commit: its blocks and throwaway indexes.

    Built in the state dir; if that cannot be written (a full disk) the
    snapshot has no keyword index and recall scans its blocks, and if the
    embedder does not answer it has no vectors: ``gaps`` says which, and the
    recall is ``degraded``.
    """

    sha: str
    blocks_by_id: dict[str, Block]
    keyword_index: KeywordIndex | None
    vectors: VectorIndex | None
    embedder: Embedder | None
    missing_vectors: set[str] = field(default_factory=set)
    problems: list[tuple[str, str]] = field(default_factory=list)
    frontmatters: dict[str, dict[str, Any]] = field(default_factory=dict)

    # -- a recall source (mdmem.recall.pipeline.RecallSource) --

    @property
    def commit(self) -> str:
        return self.sha

    def block(self, block_id: str) -> Block | None:
        return self.blocks_by_id.get(block_id)

    def blocks(self) -> Iterable[Block]:
        return self.blocks_by_id.values()

    def frontmatter(self, path: str) -> Mapping[str, Any]:
        return self.frontmatters.get(path, {})

    @cached_property
    def _by_path(self) -> dict[str, list[Block]]:
        by_path: dict[str, list[Block]] = {}
        for block in self.blocks_by_id.values():
            by_path.setdefault(block.path, []).append(block)
        return by_path

    @cached_property
    def visibility(self) -> Visibility:
        return Visibility(Lookup(self.block, lambda p: self._by_path.get(p, []), self.frontmatter))

    @property
    def keyword(self) -> KeywordIndex:
        if self.keyword_index is None:
            raise IndexError_("the snapshot has no keyword index")
        return self.keyword_index

    def gaps(self) -> list[tuple[str, str]]:
        return list(self.problems)

    @cached_property
    def threads(self) -> FileOrder:
        names: list[str] = []
        for block in self.blocks_by_id.values():
            if block.is_memory:
                names += people_of(block)
        people = name_tokens(names)
        return FileOrder(lambda path: self._by_path.get(path, []), lambda: people)

    def close(self) -> None:
        if self.keyword_index is not None:
            self.keyword_index.close()


class _Snapshots:
    """Per-vault cache: a few snapshots in memory, more on disk."""

    def __init__(self) -> None:
        self.memory: OrderedDict[str, Snapshot] = OrderedDict()
        self.lock = threading.Lock()


_caches: dict[int, _Snapshots] = {}


def _cache(store: MemoryStore) -> _Snapshots:
    return _caches.setdefault(id(store), _Snapshots())


def snapshot(store: MemoryStore, sha: str) -> Snapshot:
    cache = _cache(store)
    with cache.lock:
        if sha in cache.memory:
            cache.memory.move_to_end(sha)
            return cache.memory[sha]
        snap = _load(store, sha) or _build(store, sha)
        if snap.problems:
            return snap  # degraded: built again next time, when the part may be back
        cache.memory[sha] = snap
        while len(cache.memory) > _KEEP_IN_MEMORY:
            _, old = cache.memory.popitem(last=False)
            old.close()
        return snap


def forget_snapshots(store: MemoryStore) -> None:
    """Drop the in-memory snapshots of this vault (after a purge)."""
    cache = _caches.pop(id(store), None)
    if cache is not None:
        for snap in cache.memory.values():
            snap.close()


# Written into each snapshot's "complete" marker; a snapshot built by another
# format is built again. 2: copied lines are blocks of their own. 3: files'
# frontmatter (tiers, an episode's sources, a contact) is kept. 4: notes with
# no date of their own are dated by git history. 5: memories take the fields
# kept beside their notes (mdmem.files.sidecar).
_FORMAT = "5"


def _root(store: MemoryStore) -> Path:
    return store.state_dir / "asof"


def _read_tree(store: MemoryStore, sha: str) -> dict[str, bytes]:
    listing = store.git.run("ls-tree", "-r", "-z", "--name-only", sha, strip=False)
    paths = [p for p in listing.split("\0") if p.endswith(".md") or is_sidecar(p)]
    paths = [p for p in paths if not p.startswith(("templates/", ".obsidian/", ".trash/"))]
    if not paths:
        return {}
    out = store.git.run_bytes(
        "cat-file", "--batch", input="".join(f"{sha}:{p}\n" for p in paths).encode()
    )
    pos = 0
    files: dict[str, bytes] = {}
    for path in paths:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        files[path] = out[pos : pos + size]
        pos += size + 1
    return files


def _build(store: MemoryStore, sha: str) -> Snapshot:
    blocks: dict[str, Block] = {}
    frontmatters: dict[str, dict[str, Any]] = {}
    # Notes with no date of their own are dated by git history, as live recall
    # dates them (mdmem.store.gitdates), if first recorded by this commit.
    when = datetime.fromtimestamp(int(store.git.run("log", "-1", "--format=%ct", sha)), tz=UTC)
    tree = _read_tree(store, sha)
    # Every fields file of the commit, read once: a line moved between notes
    # finds its fields in the file it came from.
    records = [
        parse_records(raw.decode("utf-8", "replace").splitlines())[0]
        for path, raw in tree.items()
        if is_sidecar(path)
    ]
    beside = merged(records)
    for path, raw in tree.items():
        if is_sidecar(path):
            continue
        try:
            parsed = parse(path, decode(raw), beside=beside)
        except SkipFile:
            continue
        store.catalog.date_from_history(path, parsed, until=when)
        if parsed.frontmatter:
            frontmatters[path] = parsed.frontmatter
        seen: dict[str, int] = {}
        for block in parsed.blocks:
            if block.is_memory:
                n = seen[block.id] = seen.get(block.id, 0) + 1
                if block.id in blocks:
                    # A copied line: keyed by its place, as the catalog does,
                    # so the snapshot keeps both lines.
                    block = replace(block, id=copy_key(path, block.id, n), is_memory=False)
            if indexable(block):
                # As the live indexes hold it: a secret once typed by hand, redacted.
                blocks[block.id] = store.indexer.derived(block)
    directory = _root(store) / sha
    try:
        return _build_on_disk(store, sha, directory, blocks, frontmatters)
    except DERIVED_ERRORS as exc:
        # The state dir cannot take it (a full disk): answer from the blocks.
        shutil.rmtree(directory, ignore_errors=True)
        why = f"time-travel snapshot not built ({error_line(exc)}); scanning its blocks"
        log.warning("%s", why)
        return Snapshot(
            sha,
            blocks,
            None,
            None,
            None,
            set(blocks),
            [("keyword", why), ("vector", why)],
            frontmatters,
        )


def _build_on_disk(
    store: MemoryStore,
    sha: str,
    directory: Path,
    blocks: dict[str, Block],
    frontmatters: dict[str, dict[str, Any]],
) -> Snapshot:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    keyword = KeywordIndex.create(directory / "keyword")
    try:
        keyword.add_many(list(blocks.values()), bulk=len(blocks) > 2_000)
        vectors, embedder, missing, problems = _vectors_for(store, directory, list(blocks.values()))
        (directory / "blocks.json").write_text(
            json.dumps([block_to_row(b, i) for i, b in enumerate(blocks.values())]),
            encoding="utf-8",
        )
        (directory / "frontmatter.json").write_text(
            json.dumps(frontmatters, default=str), encoding="utf-8"
        )
        # Without its vectors (the embedder did not answer) it is complete
        # all the same: _load finds the vectors short and builds it again.
        (directory / "complete").write_text(f"{sha} {_FORMAT}")
    except BaseException:
        keyword.close()
        raise
    _prune(store, keep=sha)
    return Snapshot(sha, blocks, keyword, vectors, embedder, missing, problems, frontmatters)


def _vectors_for(
    store: MemoryStore, directory: Path, blocks: list[Block]
) -> tuple[VectorIndex | None, Embedder | None, set[str], list[tuple[str, str]]]:
    embedder = store.embedding.embedder
    if embedder is None:
        return None, None, {b.id for b in blocks}, []
    import numpy as np

    from mdmem.index.vector import VectorIndex

    try:
        if store.embedding.resting():
            raise EmbedderError(store.embedding.problem or "embedder unavailable")
        vectors = VectorIndex(directory / "vectors", dim=embedder.dim, model=embedder.name)
        found: dict[str, Any] = {}
        for start in range(0, len(blocks), EMBED_BATCH):  # from the cache, the rest embedded
            found.update(store.embedding.vectors(blocks[start : start + EMBED_BATCH]))
    except EmbedderError as exc:
        # Keyword-only for now; the snapshot is built again next time.
        why = f"time-travel vectors unavailable: {error_line(exc)}"
        return None, None, {b.id for b in blocks}, [("vector", why)]
    if blocks:
        matrix = np.stack([found[embed_key(b)] for b in blocks]).astype(np.float32)
        vectors.upsert([b.id for b in blocks], matrix)
    vectors.save()
    return vectors, embedder, set(), []


def _load(store: MemoryStore, sha: str) -> Snapshot | None:
    directory = _root(store) / sha
    marker = directory / "complete"
    if not marker.exists() or marker.read_text(encoding="utf-8") != f"{sha} {_FORMAT}":
        return None
    try:
        rows = json.loads((directory / "blocks.json").read_text(encoding="utf-8"))
        blocks = {b.id: b for b in (block_from_row(tuple(r)) for r in rows)}
        frontmatters = json.loads((directory / "frontmatter.json").read_text(encoding="utf-8"))
        keyword = KeywordIndex(directory / "keyword")
        embedder = store.embedding.embedder
        vectors = None
        if embedder is not None:
            from mdmem.index.vector import VectorIndex

            vectors = VectorIndex(directory / "vectors", dim=embedder.dim, model=embedder.name)
            if vectors.stale_model or len(vectors) != len(blocks):
                return None
    except Exception as exc:  # a damaged snapshot is rebuilt, never trusted
        log.info("as-of snapshot %s unusable (%s); rebuilding", sha[:10], exc)
        return None
    (directory / "complete").touch()
    return Snapshot(sha, blocks, keyword, vectors, embedder, frontmatters=frontmatters)


def _prune(store: MemoryStore, keep: str) -> None:
    root = _root(store)
    done = sorted(
        (p for p in root.iterdir() if (p / "complete").exists()),
        key=lambda p: (p / "complete").stat().st_mtime,
    )
    for old in done[:-_KEEP_ON_DISK]:
        if old.name != keep:
            shutil.rmtree(old, ignore_errors=True)


def source_at(store: MemoryStore, as_of: str | date | datetime) -> Snapshot:
    """The vault at a commit-ish or date, as a recall source (mdmem.recall.pipeline)."""
    return snapshot(store, resolve_commit(store, as_of))
