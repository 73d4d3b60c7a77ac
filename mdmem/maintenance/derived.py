"""Doctor's checks of the derived state against the markdown files.

Every file in the state dir is a cache of the vault: the manifest, the
keyword index, the vectors and their embedding cache, the usefulness
numbers, the id counter and the time-travel snapshots. These checks compare
them with the files *on disk* (never with another cache: a manifest compared
with a catalog loaded from that manifest always agrees), ask SQLite for its
own consistency check, and list what the running process had to work around
(a file kept in memory, a derived write still to be retried, a damaged file
set aside at open). :func:`fix_derived` repairs all of it without touching
a single vault file.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import IndexError_
from mdmem.files.blocks import parse
from mdmem.files.health import CORRUPT_SUFFIX, DERIVED_ERRORS, error_line, quarantine
from mdmem.files.ids import written_id
from mdmem.files.sidecar import is_sidecar
from mdmem.files.textfile import SkipFile, decode
from mdmem.index.blocktext import indexable
from mdmem.models import Block

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "DERIVED_CHECKS",
    "Finding",
    "check_derived_files",
    "check_indexes",
    "check_manifest",
    "fix_derived",
]

#: The doctor checks this module runs (in this order).
DERIVED_CHECKS = ("manifest matches files", "keyword index", "vector index", "derived files")

# SQLite files of the state dir; the owner of each opens it again when it
# finds it replaced (see health.open_sqlite and the owners' reopen checks).
_SQLITE_FILES = ("manifest.sqlite", "embeddings.sqlite", "usefulness.sqlite")
_ID_COUNTER = "last-id-ms"
# Problems only the running process knows of (Indexer.problems) that no
# other check reports.
_PROCESS_PROBLEMS = ("vector index not saved", "embedding cache kept in memory")
_SNAPSHOTS = "asof"


@dataclass(frozen=True)
class Finding:
    check: str
    detail: str
    fixable: bool


# ------------------------------------------------------------------ checks --


def _signature(block: Block) -> tuple[object, ...]:
    # What recall and get show; ``created`` of a heading section comes from
    # the file's mtime at parse time, so it is left out. A copied line is
    # keyed by its place in the catalog and by its id in a lone parse.
    return (
        written_id(block.id),
        block.line_start,
        block.line_end,
        block.content_hash,
        block.kind,
        block.scope,
        block.status,
        tuple(block.tags),
        block.heading,
    )


def check_manifest(store: MemoryStore) -> list[Finding]:
    """Each file on disk, parsed now, against its manifest row and blocks."""
    check = "manifest matches files"
    manifest = store.indexer.manifest
    try:
        rows = manifest.files()
    except IndexError_ as exc:
        return [Finding(check, f"manifest unreadable: {error_line(exc)}", True)]
    out: list[Finding] = []
    seen: set[str] = set()
    for rel, sig in store.catalog.walk():
        if is_sidecar(rel):
            continue  # read with its note
        seen.add(rel)
        try:
            raw = (store.root / rel).read_bytes()
            parsed = parse(rel, decode(raw), beside=store.catalog.fields.view(rel))
        except (OSError, SkipFile):
            continue  # "files parse" reports it
        row = rows.get(rel)
        if row is None:
            out.append(Finding(check, f"{rel} not indexed", True))
            continue
        try:
            recorded = [_signature(b) for b in manifest.blocks(rel)]
        except IndexError_ as exc:
            return [*out, Finding(check, f"manifest unreadable: {error_line(exc)}", True)]
        if recorded != [_signature(b) for b in parsed.blocks]:
            what = "stale" if tuple(row[:3]) != sig else "out of step with the file"
            out.append(Finding(check, f"{rel}: manifest rows {what}", True))
    for rel in sorted(rows.keys() - seen):
        out.append(Finding(check, f"{rel} indexed but gone", True))
    return out


def check_indexes(store: MemoryStore) -> list[Finding]:
    """Both indexes against the blocks of the files."""
    indexer = store.indexer
    out: list[Finding] = []
    wanted = {b.id for b in store.catalog.blocks() if indexable(b)}
    try:
        have = indexer.keyword.ids()
    except IndexError_ as exc:
        out.append(Finding("keyword index", f"unusable: {error_line(exc)}", True))
    else:
        if wanted - have:
            out.append(
                Finding(
                    "keyword index",
                    f"{len(wanted - have)} block(s) missing from the keyword index",
                    True,
                )
            )
        if have - wanted:
            out.append(
                Finding(
                    "keyword index",
                    f"{len(have - wanted)} stale document(s) in the keyword index",
                    True,
                )
            )
    vectors = indexer.vectors
    if vectors is None:
        problem = indexer.embedding.problem or "no embedder"
        out.append(Finding("vector index", f"vectors unavailable: {problem}", False))
    else:
        vec_ids = vectors.ids()
        if wanted - vec_ids:
            out.append(
                Finding("vector index", f"{len(wanted - vec_ids)} block(s) without a vector", True)
            )
        if vec_ids - wanted:
            out.append(Finding("vector index", f"{len(vec_ids - wanted)} stale vector(s)", True))
    return out


def check_derived_files(store: MemoryStore) -> list[Finding]:
    """The state dir's files themselves, and what this process works around."""
    check = "derived files"
    state = store.state_dir
    out: list[Finding] = []
    for name in _SQLITE_FILES:
        problem = _sqlite_check(state / name)
        if problem is not None:
            out.append(Finding(check, f"{name} is damaged: {problem}", True))
    if state.is_dir():
        for aside in sorted(state.glob(f"*{CORRUPT_SUFFIX}")):
            original = aside.name[: -len(CORRUPT_SUFFIX)]
            out.append(
                Finding(
                    check,
                    f"{original} was damaged and rebuilt; the damaged copy is {aside.name}",
                    True,
                )
            )
    counter = _counter_problem(state / _ID_COUNTER)
    if counter is not None:
        out.append(Finding(check, counter, True))
    out += [Finding(check, f"time-travel snapshot {s}", True) for s in _snapshot_problems(state)]
    indexer = store.indexer
    if indexer.manifest.problem is not None:
        out.append(Finding(check, f"manifest kept in memory: {indexer.manifest.problem}", True))
    for why in indexer.problems():
        # The rest (manifest in memory, the keyword index, vectors) is
        # reported above or by the index checks.
        if "not indexed yet" in why or why.startswith(_PROCESS_PROBLEMS):
            out.append(Finding(check, why, True))
    return out


def _sqlite_check(path: Path) -> str | None:
    """SQLite's quick_check over a read-only connection (None: fine or absent)."""
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        return error_line(exc)
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None  # another process is writing: not damage
        return error_line(exc)
    except sqlite3.Error as exc:
        return error_line(exc)
    finally:
        db.close()
    first = str(rows[0][0]) if rows else "ok"
    return None if first == "ok" else first


def _counter_problem(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        fields = path.read_bytes()[:64].decode("ascii").split()
        int(fields[0]), int(fields[1])
    except (OSError, UnicodeDecodeError, IndexError, ValueError):
        return f"id counter {path.name} is unreadable"
    return None


def _snapshot_problems(state: Path) -> list[str]:
    root = state / _SNAPSHOTS
    if not root.is_dir():
        return []
    out: list[str] = []
    for snap in sorted(root.iterdir()):
        if not snap.is_dir():
            continue
        if not (snap / "complete").exists():
            out.append(f"{snap.name[:10]} was left half-built")
        elif not (snap / "blocks.json").is_file() or not (snap / "keyword").is_dir():
            out.append(f"{snap.name[:10]} is missing files")
    return out


# -------------------------------------------------------------------- fix --


def fix_derived(store: MemoryStore, findings: list[Finding]) -> list[str]:
    """Repair what ``findings`` name, derived state only: damaged files are set
    aside, copies set aside earlier are deleted, half-built snapshots removed,
    and the indexes rebuilt from the files. Returns what could not be done
    (the caller checks again to see what was fixed)."""
    state = store.state_dir
    for name in _SQLITE_FILES:
        if any(f.detail.startswith(f"{name} is damaged") for f in findings):
            quarantine(state / name)  # its owner opens a new one (ensure_state, ensure_open)
    for aside in state.glob(f"*{CORRUPT_SUFFIX}"):
        with contextlib.suppress(OSError):
            aside.unlink()
    if any(f.detail.startswith("id counter") for f in findings):
        with contextlib.suppress(OSError):
            (state / _ID_COUNTER).unlink()  # made again with the next id
    if any(f.detail.startswith("time-travel snapshot") for f in findings):
        for snap in (state / _SNAPSHOTS).iterdir():
            if not (snap / "complete").exists() or not (snap / "blocks.json").is_file():
                shutil.rmtree(snap, ignore_errors=True)
    if all(_file_level(f) for f in findings if f.fixable):
        return []
    try:
        store.indexer.ensure_state()
        store.reindex(full=True)
    except DERIVED_ERRORS as exc:
        return [f"could not rebuild the indexes: {error_line(exc)}"]
    return []


def _file_level(finding: Finding) -> bool:
    """Fixed by deleting a file, without rebuilding the indexes."""
    detail = finding.detail
    return detail.startswith(("id counter", "time-travel snapshot")) or (
        "the damaged copy is" in detail
    )
