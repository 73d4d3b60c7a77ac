"""`mdmem doctor`: check the files against both indexes, the manifest and git.

Every check is read-only; ``fix=True`` repairs what can be repaired without
any risk to the markdown: derived state is rebuilt, interrupted temp files
and a stale git ``index.lock`` are removed. The vault's text is never edited.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.maintenance.derived import (
    DERIVED_CHECKS,
    Finding,
    check_derived_files,
    check_indexes,
    check_manifest,
    fix_derived,
)

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

    _check_derived(store, report)

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
    return report


def _check_derived(store: MemoryStore, report: DoctorReport) -> None:
    """The derived state against the files on disk (see maintenance.derived)."""
    report.checks.extend(DERIVED_CHECKS)
    for finding in derived_findings(store):
        report.problems.append(Problem(finding.check, finding.detail, finding.fixable))


def derived_findings(store: MemoryStore) -> list[Finding]:
    return [*check_manifest(store), *check_indexes(store), *check_derived_files(store)]


def _fix(
    store: MemoryStore, report: DoctorReport, temps: list[Path], stale_lock: bool, dirty: bool
) -> None:
    for tmp in temps:
        os.unlink(tmp)
    if stale_lock:
        (store.root / ".git" / "index.lock").unlink(missing_ok=True)
    if dirty:
        store.commit_human_edits()
    derived = [
        Finding(p.check, p.detail, p.fixable)
        for p in report.problems
        if p.check in DERIVED_CHECKS and p.fixable
    ]
    failures = fix_derived(store, derived) if derived else []
    # Fixed is what a second look no longer finds, not what was attempted.
    still = {f.detail for f in derived_findings(store)} if derived else set()
    report.fixed = [
        p.detail
        for p in report.problems
        if p.fixable and not (p.check in DERIVED_CHECKS and p.detail in still)
    ]
    report.problems += [Problem("derived files", why, False) for why in failures]
