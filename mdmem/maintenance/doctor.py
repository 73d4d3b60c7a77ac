"""`mdmem doctor`: check the files against both indexes, the manifest and git.

Every check is read-only; ``fix=True`` repairs what can be repaired without
any risk to the markdown: derived state is rebuilt, interrupted temp files
and git lock files whose git is gone (``index.lock``, ``HEAD.lock``, ref
locks) are removed. A secret found in a file (typed
there by hand: the writer refuses or redacts them) is reported with the
command that takes it out of history, never edited; one not yet committed
never is (the person's edit is committed with it redacted, see
:mod:`mdmem.store.typed_secrets`). Two repairs do edit the
vault, each in a commit of its own (``Op: repair``): an old vault's
``.gitattributes`` ``merge=union`` becomes ``merge=mdmem-append``, and a
copied line (an id on two lines) gets a fresh id on the copy.

Two checks look at git itself: :func:`check_merge_attributes` (files given
git's lossy built-in union merge) and :func:`check_git_programs` (settings of
the vault's own ``.git/config`` that would run a program; mdmem's git calls
neutralise or refuse them, see :mod:`mdmem.store.gitconfig`, and a person
should remove what they did not set).

For a copied line nothing but the id on the copy's line changes.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mdmem.errors import MdmemError
from mdmem.files.catalog import is_copy
from mdmem.files.ids import written_id
from mdmem.index.progress import Progress, silent
from mdmem.maintenance.derived import (
    DERIVED_CHECKS,
    Finding,
    check_derived_files,
    check_indexes,
    check_manifest,
    fix_derived,
)
from mdmem.maintenance.migrate import needs_migration
from mdmem.maintenance.obsidian import fix_ignore_filters, stale_ignore_filters
from mdmem.models import Block
from mdmem.store.gitattributes import APPEND_DRIVER, union_lines, without_union
from mdmem.store.gitlocks import (
    git_lock_files,
    git_processes_using,
    remove_if_stale,
    stale_git_locks,
)
from mdmem.store.secret_guard import scan

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = [
    "DoctorReport",
    "Problem",
    "check_git_programs",
    "check_merge_attributes",
    "check_secrets",
    "fix_merge_attributes",
    "run_doctor",
]


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
    # Worth knowing, not wrong (an older format mdmem still reads).
    notices: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not [p for p in self.problems if p.detail not in self.fixed]


_STEPS = 6  # progress steps of run_doctor


def run_doctor(
    store: MemoryStore,
    *,
    fix: bool = False,
    progress: Progress | None = None,
    extra: Sequence[tuple[str, Callable[[MemoryStore], list[Problem]]]] = (),
) -> DoctorReport:
    """Every check; ``extra``: (name, check) pairs of layers above this one
    (contact profiles), read-only, run after the built-in checks."""
    report = DoctorReport()
    # One step per group of checks (the derived state and git fsck take longest).
    tell = progress or silent
    tell("doctor", 0, _STEPS)
    store.refresh()

    report.checks.append("files parse")
    for path, reason in sorted(store.catalog.skipped.items()):
        report.problems.append(Problem("files parse", f"{path}: {reason}", False))
    for path, bad in sorted(store.catalog.damaged.items()):
        for byte in bad:  # the rest of the file is read; these lines are not
            report.problems.append(
                Problem("files parse", f"{byte.where(path)}, line skipped", False)
            )

    report.checks.append("fields beside the notes")
    for side, lines in sorted(store.catalog.fields.damaged().items()):
        shown = ", ".join(str(n) for n in lines[:5])
        report.problems.append(
            Problem(
                "fields beside the notes",
                f"{side}: lines {shown} are not field records (skipped; fix or remove them)",
                False,
            )
        )
    older = needs_migration(store)
    if older:
        report.notices.append(
            f"{len(older)} note(s) keep memories in the older format ({', '.join(older[:3])}"
            f"{' …' if len(older) > 3 else ''}): `mdmem admin migrate` moves them to the "
            "line format (both formats are read meanwhile)"
        )

    copies = check_copied_ids(store, report)
    tell("doctor", 1, _STEPS)

    _check_derived(store, report)
    tell("doctor", 2, _STEPS)

    if store.settings.secrets != "off":
        report.checks.append("no secrets in files")
        report.problems.extend(check_secrets(store))

    tell("doctor", 3, _STEPS)
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
    # A file whose only difference from git is a secret typed into it stays
    # so (see mdmem.store.typed_secrets): "no secrets in files" tells of it.
    kept = store.writer.secrets_kept_out(dirty) if dirty else {}
    unsaved = [rel for rel in dirty if rel not in kept or _more_than_the_secret(store, rel)]
    if unsaved:
        shown = ", ".join(unsaved[:5])
        report.problems.append(Problem("git", f"uncommitted edits: {shown}", not held))

    tell("doctor", 4, _STEPS)
    report.checks.append("merge drivers")
    report.problems.extend(check_merge_attributes(store))
    report.checks.append("obsidian settings")
    stale_filters = stale_ignore_filters(store)
    if stale_filters:
        report.problems.append(Problem("obsidian settings", stale_filters, True))
    report.checks.append("git config")
    report.problems.extend(check_git_programs(store))
    for name, check in extra:
        report.checks.append(name)
        report.problems.extend(check(store))
    tell("doctor", 5, _STEPS)

    if fix and report.problems:
        if copies:
            # First, so the derived state is checked against the repaired
            # files; the person's own edit is committed, as theirs, before it.
            if dirty and not held:
                store.commit_human_edits()
            fix_copied_ids(store, report, copies)
        _fix(store, report, temps, stale_locks, bool(dirty) and not held)
    tell("doctor", _STEPS, _STEPS)
    return report


def check_secrets(store: MemoryStore) -> list[Problem]:
    """Secrets in the vault's files, each with where it is and how to erase it.

    Nothing here is fixable by doctor: the file is the person's, and taking a
    secret out of history rewrites every commit, which only they may decide.
    The detail names the kind and the place, never the secret.
    """
    problems: list[Problem] = []
    kept = store.writer.secrets_kept_out()
    for path, state in sorted(store.catalog.files.items()):
        try:
            text = (store.root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        memories = list(state.parsed.memories())
        for finding in scan(text):
            line = text.count("\n", 0, finding.start) + 1
            owner = next((b for b in memories if b.line_start <= line <= b.line_end), None)
            if path in kept and line in kept[path].lines:
                how = (
                    "typed by hand and not in git: mdmem commits the file with it redacted, "
                    "and the file keeps it until you remove it"
                )
            elif owner is not None:
                how = (
                    f"in memory {owner.id}; `mdmem git purge {owner.id} --yes` forgets it and "
                    "erases every version from git history (remember it again without the secret)"
                )
            else:
                how = (
                    "in a note; remove it from the file, then erase it from git history with "
                    "`git filter-repo --replace-text <file listing the secret>` "
                    "(`mdmem git purge <id>` does this for memories)"
                )
            problems.append(
                Problem("no secrets in files", f"{path}:{line}: a {finding.kind} {how}", False)
            )
    return problems


def _more_than_the_secret(store: MemoryStore, rel: str) -> bool:
    """Whether the file differs from git by more than its redacted secrets."""
    kept = store.writer.secrets_kept_out([rel]).get(rel)
    return kept is None or store.git.show("HEAD", rel) != kept.data


def _check_derived(store: MemoryStore, report: DoctorReport) -> None:
    """The derived state against the files on disk (see maintenance.derived)."""
    report.checks.extend(DERIVED_CHECKS)
    for finding in derived_findings(store):
        report.problems.append(Problem(finding.check, finding.detail, finding.fixable))


def derived_findings(store: MemoryStore) -> list[Finding]:
    return [*check_manifest(store), *check_indexes(store), *check_derived_files(store)]


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
    if any(p.check == "merge drivers" for p in report.problems):
        fix_merge_attributes(store)
    if any(p.check == "obsidian settings" for p in report.problems):
        fix_ignore_filters(store)
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


# ------------------------------------------------------------------ git ----


def _attribute_files(store: MemoryStore) -> list[str]:
    """The vault's .gitattributes files, at any depth (git reads untracked ones too)."""
    out = store.git.run(
        "ls-files", "-z", "--cached", "--others", "--exclude-standard",
        "--", ":(glob)**/.gitattributes",
        strip=False,
    )  # fmt: skip
    return sorted({p for p in out.split("\0") if p})


def _read_attributes(store: MemoryStore, rel: str) -> str | None:
    try:
        return (store.root / rel).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def check_merge_attributes(store: MemoryStore) -> list[Problem]:
    """Files .gitattributes gives git's built-in union merge (vaults made before 0.2).

    Plain ``git pull`` merges them silently and can glue two entries into one,
    losing a block id; with mdmem's driver name it shows a normal conflict.
    """
    problems = []
    for rel in _attribute_files(store):
        text = _read_attributes(store, rel)
        for number, pattern in union_lines(text or ""):
            problems.append(
                Problem(
                    "merge drivers",
                    f"{rel}:{number} gives {pattern} git's union merge, which can glue two "
                    f"entries and lose an id under plain git pull; --fix renames it "
                    f"merge={APPEND_DRIVER}",
                    True,
                )
            )
    return problems


def fix_merge_attributes(store: MemoryStore) -> list[str]:
    """Rename ``merge=union`` to mdmem's driver in one commit (``Op: repair``); the paths."""
    changed: list[str] = []
    with store.writer.transaction("repair: merge driver") as tx:
        for rel in _attribute_files(store):
            text = _read_attributes(store, rel)
            if text is None or not union_lines(text):
                continue
            tx.stage_raw_file(rel, without_union(text).encode("utf-8"))
            changed.append(rel)
        if changed:
            tx.set_message(
                f"repair: merge=union -> merge={APPEND_DRIVER} in {', '.join(changed)}",
                [("Op", "repair")],
            )
    return changed


def check_git_programs(store: MemoryStore) -> list[Problem]:
    """Settings of the vault's own git config (and its includes) that would run a program.

    mdmem's git calls already neutralise them or refuse to run; they are
    reported because plain git in the folder would still run them, and a
    vault copied from elsewhere may carry them. Not fixable here: the
    person who owns the vault decides (``git config --unset <key>``).
    """
    return [
        Problem("git config", setting.describe(), False) for setting in store.git.program_settings()
    ]


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
        report.problems = [
            Problem(p.check, p.detail, False) if p.detail in mine else p for p in report.problems
        ]
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
