"""`mdmem doctor`: check the files against both indexes, the manifest and git.

Every check is read-only; ``fix=True`` repairs what can be repaired without
any risk to the markdown: derived state is rebuilt, interrupted temp files
and a stale git ``index.lock`` are removed. The one edit of the vault's text
is the repair of a copied line (an id on two lines): the copy gets a fresh id,
in a commit of its own (``Op: repair``), and nothing else in its line changes.

Which line is the copy: of the lines with one id, the original is the one
whose file held the id first in git history (``git log -S``); a file that
never committed it comes last, and a tie (one file, or files that got the id
in the same commit) goes to path order, then line order. So a line copied
and edited within one file is the later one, and a line copied into another
file is the one there even if the original's file was written since.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import MdmemError
from mdmem.index.indexer import indexable
from mdmem.models import Block
from mdmem.store.catalog import is_copy
from mdmem.store.ids import written_id

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["DoctorReport", "Problem", "run_doctor"]

_STALE_LOCK_SECONDS = 60


@dataclass(frozen=True)
class Problem:
    check: str
    detail: str
    fixable: bool


@dataclass
class DoctorReport:
    problems: list[Problem] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not [p for p in self.problems if p.detail not in self.fixed]


def run_doctor(store: MemoryStore, *, fix: bool = False) -> DoctorReport:
    report = DoctorReport()
    store.refresh()
    indexer = store.indexer

    report.checks.append("files parse")
    for path, reason in sorted(store.catalog.skipped.items()):
        report.problems.append(Problem("files parse", f"{path}: {reason}", False))

    copies = check_copied_ids(store, report)

    report.checks.append("manifest matches files")
    rows = indexer.manifest.files()
    for path, state in store.catalog.files.items():
        row = rows.get(path)
        if row is None or tuple(row[:3]) != tuple(state.signature):
            report.problems.append(Problem("manifest matches files", f"{path} not indexed", True))
    for path in rows.keys() - store.catalog.files.keys():
        report.problems.append(Problem("manifest matches files", f"{path} indexed but gone", True))

    wanted = {b.id for b in store.catalog.blocks() if indexable(b)}
    report.checks.append("keyword index")
    have = indexer.keyword.ids()
    if wanted - have:
        report.problems.append(
            Problem(
                "keyword index",
                f"{len(wanted - have)} block(s) missing from the keyword index",
                True,
            )
        )
    if have - wanted:
        report.problems.append(
            Problem(
                "keyword index",
                f"{len(have - wanted)} stale document(s) in the keyword index",
                True,
            )
        )

    report.checks.append("vector index")
    vectors = indexer.vectors
    if vectors is None:
        problem = indexer.embedder_problem or "no embedder"
        report.problems.append(Problem("vector index", f"vectors unavailable: {problem}", False))
    else:
        vec_ids = vectors.ids()
        if wanted - vec_ids:
            report.problems.append(
                Problem("vector index", f"{len(wanted - vec_ids)} block(s) without a vector", True)
            )
        if vec_ids - wanted:
            report.problems.append(
                Problem("vector index", f"{len(vec_ids - wanted)} stale vector(s)", True)
            )

    report.checks.append("no interrupted writes")
    temps = [p for p in store.root.rglob(".*.mdmem-*.tmp") if ".git" not in p.parts]
    for tmp in temps:
        report.problems.append(
            Problem(
                "no interrupted writes",
                f"{tmp.relative_to(store.root)} left by a killed write",
                True,
            )
        )

    report.checks.append("git")
    lock = store.root / ".git" / "index.lock"
    stale_lock = lock.exists() and time.time() - lock.stat().st_mtime > _STALE_LOCK_SECONDS
    if stale_lock:
        report.problems.append(Problem("git", ".git/index.lock is stale", True))
    fsck_code, _out, err = store.git.execute("fsck", "--no-progress", "--no-dangling")
    if fsck_code != 0:
        first = next((line for line in err.splitlines() if line.strip()), "failed")
        report.problems.append(Problem("git", f"git fsck: {first}", False))
    dirty = store.git.dirty_paths()
    if dirty:
        report.problems.append(Problem("git", f"uncommitted edits: {', '.join(dirty[:5])}", True))

    if fix and report.problems:
        _fix(store, report, temps, stale_lock, bool(dirty))
        if copies:
            fix_copied_ids(store, report, copies)
    return report


def _fix(
    store: MemoryStore, report: DoctorReport, temps: list[Path], stale_lock: bool, dirty: bool
) -> None:
    for tmp in temps:
        os.unlink(tmp)
    if stale_lock:
        (store.root / ".git" / "index.lock").unlink(missing_ok=True)
    if dirty:
        store.commit_human_edits()
    if any(
        p.check in ("manifest matches files", "keyword index", "vector index")
        for p in report.problems
    ):
        store.reindex(full=True)
    report.fixed = [p.detail for p in report.problems if p.fixable]


# ------------------------------------------------------------ copied lines --

_IDS_UNIQUE = "ids are unique"


@dataclass(frozen=True)
class CopiedLine:
    """A line carrying an id that an earlier line (the original) carries too."""

    memory_id: str
    path: str
    line: int
    occurrence: int  # which line with this id it is in its file (1-based, file order)


def check_copied_ids(store: MemoryStore, report: DoctorReport) -> list[CopiedLine]:
    """Report each id that is on more than one line, with every place; return
    the copies (every line but the original) that ``--fix`` gives fresh ids."""
    report.checks.append(_IDS_UNIQUE)
    out: list[CopiedLine] = []
    for memory_id, lines in store.catalog.duplicates().items():
        ordered = _original_first(store, memory_id, lines)
        copies = [_copied_line(store, memory_id, b) for b in ordered[1:]]
        places = ", ".join(f"{b.path}:{b.line_start}" for b in ordered)
        fresh = ", ".join(f"{c.path}:{c.line}" for c in copies)
        report.problems.append(
            Problem(
                _IDS_UNIQUE,
                f"{memory_id} is on {len(ordered)} lines ({places}): a copied line;"
                f" --fix gives {fresh} a fresh id",
                True,
            )
        )
        out.extend(copies)
    return out


def fix_copied_ids(store: MemoryStore, report: DoctorReport, copies: list[CopiedLine]) -> None:
    """Give each copied line a fresh id, in one ``repair`` commit."""
    mine = {p.detail for p in report.problems if p.check == _IDS_UNIQUE}
    try:
        with store.writer.transaction("repair") as tx:
            trailers: list[tuple[str, str]] = [("Op", "repair")]
            # Bottom-up within a file: renaming a line leaves the numbers of
            # the lines with that id above it as they were.
            for copy in sorted(copies, key=lambda c: (c.path, -c.occurrence)):
                new_id = store.writer.new_id()
                pair = [("Memory-Id", new_id), ("Copy-Of", copy.memory_id)]
                tx.give_fresh_id(
                    copy.path,
                    copy.memory_id,
                    copy.occurrence,
                    new_id,
                    subject=_repair_subject([copy]),
                    trailers=[("Op", "repair"), *pair],
                )
                trailers += pair
            tx.set_message(_repair_subject(copies), trailers)
    except MdmemError as exc:
        report.fixed = [d for d in report.fixed if d not in mine]
        report.problems.append(Problem(_IDS_UNIQUE, f"copied lines kept their ids: {exc}", False))


def _repair_subject(copies: list[CopiedLine]) -> str:
    if len(copies) == 1:
        c = copies[0]
        return f"repair: fresh id for a copied line ^{c.memory_id} ({c.path}:{c.line})"
    return f"repair: fresh ids for {len(copies)} copied lines"


def _original_first(store: MemoryStore, memory_id: str, lines: list[Block]) -> list[Block]:
    """``lines`` with the original first (see the module doc for the rule)."""
    first_seen = {path: _first_commit(store, memory_id, path) for path in {b.path for b in lines}}
    return sorted(lines, key=lambda b: (first_seen[b.path], b.path, b.line_start))


def _first_commit(store: MemoryStore, memory_id: str, path: str) -> tuple[float, float]:
    """When ``^memory_id`` first entered ``path`` in git, as (commits up to and
    including that one, its commit time): an ancestor always counts fewer, so
    two commits of one second still order. (inf, inf) if it never did."""
    never = (math.inf, math.inf)
    if not store.settings.git.enabled or store.git.head() is None:
        return never
    code, out, _err = store.git.execute(
        "log", "--format=%H %ct", "--reverse", "-F", "-S", f"^{memory_id}", "HEAD", "--", path
    )
    first = out.split("\n", 1)[0].split() if code == 0 else []
    if len(first) != 2 or not first[1].isdigit():
        return never
    code, count, _err = store.git.execute("rev-list", "--count", first[0])
    return (float(count) if code == 0 and count.isdigit() else math.inf, float(first[1]))


def _copied_line(store: MemoryStore, memory_id: str, block: Block) -> CopiedLine:
    same = sorted(
        b.line_start
        for b in store.catalog.blocks_in(block.path)
        if (b.is_memory or is_copy(b)) and written_id(b.id) == memory_id
    )
    return CopiedLine(memory_id, block.path, block.line_start, same.index(block.line_start) + 1)
