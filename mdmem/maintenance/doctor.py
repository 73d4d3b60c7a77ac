"""`mdmem doctor`: check the files against both indexes, the manifest and git.

Every check is read-only; ``fix=True`` repairs what can be repaired without
any risk to the markdown: derived state is rebuilt, interrupted temp files
and a stale git ``index.lock`` are removed. The vault's text is never edited,
so a secret found in a file (typed there by hand: the writer refuses or
redacts them) is reported with the command that takes it out of history.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.index.indexer import indexable
from mdmem.store.secret_guard import scan

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["DoctorReport", "Problem", "check_secrets", "run_doctor"]

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

    if store.settings.secrets != "off":
        report.checks.append("no secrets in files")
        report.problems.extend(check_secrets(store))

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


def check_secrets(store: MemoryStore) -> list[Problem]:
    """Secrets in the vault's files, each with where it is and how to erase it.

    Nothing here is fixable by doctor: the file is the person's, and taking a
    secret out of history rewrites every commit, which only they may decide.
    The detail names the kind and the place, never the secret.
    """
    problems: list[Problem] = []
    for path, state in sorted(store.catalog.files.items()):
        try:
            text = (store.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        memories = list(state.parsed.memories())
        for finding in scan(text):
            line = text.count("\n", 0, finding.start) + 1
            owner = next((b for b in memories if b.line_start <= line <= b.line_end), None)
            if owner is not None:
                how = (
                    f"in memory {owner.id}; `mdmem purge {owner.id} --yes` forgets it and "
                    "erases every version from git history (remember it again without the secret)"
                )
            else:
                how = (
                    "in a note; remove it from the file, then erase it from git history with "
                    "`git filter-repo --replace-text <file listing the secret>` "
                    "(`mdmem purge <id>` does this for memories)"
                )
            problems.append(
                Problem("no secrets in files", f"{path}:{line}: a {finding.kind} {how}", False)
            )
    return problems


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
