"""`mdmem doctor`: check the files against both indexes, the manifest and git.

Every check is read-only; ``fix=True`` repairs what can be repaired without
any risk to the markdown: derived state is rebuilt, interrupted temp files
and git lock files whose git is gone (``index.lock``, ``HEAD.lock``, ref
locks) are removed. The vault's text is never edited.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.index.indexer import indexable
from mdmem.store.gitlocks import (
    git_lock_files,
    git_processes_using,
    remove_if_stale,
    stale_git_locks,
)

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["DoctorReport", "Problem", "run_doctor"]


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

    report.checks.append("ids are unique")
    seen: dict[str, str] = {}
    for path, state in store.catalog.files.items():
        for block in state.parsed.memories():
            if block.id in seen and seen[block.id] != path:
                report.problems.append(
                    Problem(
                        "ids are unique", f"{block.id} is in {seen[block.id]} and {path}", False
                    )
                )
            seen[block.id] = path

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
    # Any age: what makes a lock stale is that no git process can own it
    # (see mdmem.store.gitlocks); a person running --fix wants it gone now.
    stale_locks = stale_git_locks(store.root, grace=0.0)
    for lock in stale_locks:
        rel = lock.relative_to(store.root).as_posix()
        report.problems.append(Problem("git", f"{rel} is stale (its git is gone)", True))
    held = [lock for lock in git_lock_files(store.root) if lock not in stale_locks]
    if held:
        # A person's git at work (a commit in its editor): leave it, and
        # don't commit meanwhile (the commit would wait on its lock).
        users = ", ".join(str(pid) for pid in git_processes_using(store.root) or []) or "?"
        rel = held[0].relative_to(store.root).as_posix()
        detail = f"{rel} is held by a running git (pid {users})"
        report.problems.append(Problem("git", detail, False))
    fsck_code, _out, err = store.git.execute("fsck", "--no-progress", "--no-dangling")
    if fsck_code != 0:
        first = next((line for line in err.splitlines() if line.strip()), "failed")
        report.problems.append(Problem("git", f"git fsck: {first}", False))
    dirty = store.git.dirty_paths()
    if dirty:
        shown = ", ".join(dirty[:5])
        report.problems.append(Problem("git", f"uncommitted edits: {shown}", not held))

    if fix and report.problems:
        _fix(store, report, temps, stale_locks, bool(dirty) and not held)
    return report


def _fix(
    store: MemoryStore,
    report: DoctorReport,
    temps: list[Path],
    stale_locks: list[Path],
    dirty: bool,
) -> None:
    for tmp in temps:
        os.unlink(tmp)
    for lock in stale_locks:
        # Checked again right before the removal: a git may have started since.
        remove_if_stale(lock, store.root, grace=0.0)
    if dirty:
        store.commit_human_edits()
    if any(
        p.check in ("manifest matches files", "keyword index", "vector index")
        for p in report.problems
    ):
        store.reindex(full=True)
    report.fixed = [p.detail for p in report.problems if p.fixable]
