"""``mdmem team check``: what must never be in a team folder, by file and line.

For CI and pre-commit. A finding is one of:

* ``secret`` - a line holds what the secret guard takes for a secret (every
  line of every file in the folder, README and fields files included, read
  after resolving symlinks; a symlink leading out of the repository is a
  finding itself);
* ``personal`` - a person's or contact's scope, or a personal field
  (``contact``, ``speaker``, ``session``, ``role``, ``episode``), on a line or
  kept beside it;
* ``duplicate`` - an id on more than one line;
* ``unparseable`` - a file that is not UTF-8 markdown or holds conflict
  markers, a list item without an id, an unknown field or status, a fields
  file line that is no record;
* ``unreviewed`` - a line git shows no acceptance of while its phrase says
  ``accepted by …`` (or names another person than git does), or a line no
  proposal in git introduced (typed by hand: ``mdmem team propose ID`` makes
  it a proposal). Who accepted a line is git's answer
  (:mod:`mdmem.team.provenance`); in a shallow clone it can't be given, and
  the check says so once instead (fetch the whole history).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mdmem.files import blocks as blk
from mdmem.files.sidecar import Fields, Record, parse_records, resolve
from mdmem.files.textfile import SkipFile, decode
from mdmem.store.gitstore import GitStore
from mdmem.store.secret_guard import scan
from mdmem.team import provenance
from mdmem.team.lines import (
    ACCEPTED,
    KEPT_FIELDS,
    LEGACY_FIELDS,
    PERSONAL_FIELDS,
    PROPOSED,
    UNREVIEWED,
    TeamLine,
    personal_reason,
    team_line,
)
from mdmem.team.repo import FIELDS_DIR, TEAM_DIR, Checkout

__all__ = ["Finding", "check"]

_KNOWN_FIELDS = frozenset(LEGACY_FIELDS) | PERSONAL_FIELDS
_CONFLICT = ("<<<<<<< ", "=======", ">>>>>>> ", "||||||| ")


@dataclass(frozen=True)
class Finding:
    path: str  # repository-relative
    line: int
    problem: str  # secret | personal | duplicate | unparseable | unreviewed
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.problem}: {self.message}"


def check(checkout: Checkout) -> list[Finding]:
    """Every finding in the checkout's team folder (working tree), in file order."""
    folder = checkout.team_dir
    findings: list[Finding] = []
    if not folder.is_dir():
        return findings
    seen: dict[str, str] = {}
    files: list[tuple[str, Path]] = []
    for entry in sorted(folder.rglob("*")):
        rel = entry.relative_to(checkout.root).as_posix()
        try:
            real = entry.resolve()
        except OSError as exc:
            findings.append(Finding(rel, 1, "unparseable", f"cannot resolve: {exc}"))
            continue
        if checkout.root not in real.parents:
            findings.append(Finding(rel, 1, "unparseable", "a symlink leading outside the repo"))
            continue
        if real.is_file():
            files.append((rel, real))
    records: list[Record] = []
    for rel, real in files:
        if rel.startswith(f"{FIELDS_DIR}/"):
            findings.extend(_check_fields(rel, real, records))
    beside = resolve(records)
    lines: list[TeamLine] = []
    for rel, real in files:
        if not rel.startswith(f"{FIELDS_DIR}/"):
            findings.extend(_check_file(rel, real, seen, beside, lines))
    findings.extend(_check_reviews(checkout, lines))
    return findings


def _check_fields(rel: str, real: Path, records: list[Record]) -> list[Finding]:
    out: list[Finding] = []
    text = real.read_bytes().decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        for secret in scan(line):
            out.append(Finding(rel, number, "secret", f"looks like a secret ({secret.kind})"))
        if line.startswith(_CONFLICT):
            out.append(Finding(rel, number, "unparseable", "a merge conflict marker"))
    found, bad = parse_records(text.splitlines())
    out.extend(Finding(rel, n, "unparseable", "not a fields record") for n in bad)
    numbers = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() and n not in bad]
    for number, record in zip(numbers, found, strict=False):
        for key, _value in record.values:
            if key in PERSONAL_FIELDS:
                out.append(Finding(rel, number, "personal", f"^{record.id} keeps [{key}::]"))
            elif key not in KEPT_FIELDS:
                out.append(Finding(rel, number, "unparseable", f"unknown field {key!r}"))
    records.extend(found)
    return out


def _check_file(
    rel: str,
    real: Path,
    seen: dict[str, str],
    beside: dict[str, Fields],
    lines: list[TeamLine],
) -> list[Finding]:
    out: list[Finding] = []
    raw = real.read_bytes()
    text = raw.decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), 1):
        for secret in scan(line):
            out.append(Finding(rel, number, "secret", f"looks like a secret ({secret.kind})"))
        if line.startswith(_CONFLICT):
            out.append(Finding(rel, number, "unparseable", "a merge conflict marker"))
    if not rel.endswith(".md") or rel.lower().endswith("/readme.md"):
        return out
    try:
        parsed = blk.parse(rel, decode(raw), labels=True, beside=beside)
    except SkipFile as why:
        if not any(f.problem == "unparseable" for f in out):
            out.append(Finding(rel, 1, "unparseable", str(why)))
        return out
    covered: set[int] = set()
    for block in parsed.blocks:
        if not block.is_memory:
            continue
        covered.update(range(block.line_start, block.line_end + 1))
        where = f"{rel}:{block.line_start}"
        if block.id in seen:
            out.append(
                Finding(rel, block.line_start, "duplicate", f"^{block.id} also at {seen[block.id]}")
            )
        else:
            seen[block.id] = where
            lines.append(team_line(block))
        reason = personal_reason(block.scope, block.fields)
        personal = [k for k, _ in block.fields if k in PERSONAL_FIELDS and k != "scope"]
        if reason is None and personal:
            reason = f"it carries the personal field [{personal[0]}::]"
        if reason is not None:
            out.append(Finding(rel, block.line_start, "personal", reason))
        for key, value in block.fields:
            if key not in _KNOWN_FIELDS:
                out.append(
                    Finding(rel, block.line_start, "unparseable", f"unknown field [{key}::]")
                )
            elif key == "status" and value.strip().lower() != PROPOSED:
                out.append(
                    Finding(rel, block.line_start, "unparseable", f"unknown status {value!r}")
                )
    file_lines = decode(raw).lines
    start = parsed.frontmatter_lines
    for number, line in enumerate(file_lines[start:], start + 1):
        stripped = line.lstrip()
        if number in covered or not stripped.startswith(("- ", "* ", "+ ")):
            continue
        if line[: len(line) - len(stripped)].strip() == "" and len(line) - len(stripped) < 2:
            out.append(
                Finding(
                    rel, number, "unparseable", f"a list item without an id (^m-...) in {TEAM_DIR}"
                )
            )
    return out


def _check_reviews(checkout: Checkout, lines: list[TeamLine]) -> list[Finding]:
    """What git says of each line against what the line says of itself."""
    if not lines:
        return []
    if checkout.shallow:
        first = lines[0]
        return [
            Finding(
                first.path,
                first.line,
                "unreviewed",
                "a shallow clone: git's history can't show who accepted the lines "
                "(fetch all of it: git fetch --unshallow; CI: fetch-depth: 0)",
            )
        ]
    out: list[Finding] = []
    for line in provenance.reviewed_lines(GitStore(checkout.root), lines, shallow=False):
        problem = _disagreement(line)
        if problem:
            out.append(Finding(line.path, line.line, "unreviewed", f"^{line.id} {problem}"))
    return out


def _disagreement(line: TeamLine) -> str:
    if line.status == ACCEPTED:
        if line.says == ACCEPTED and not _same_name(line.says_by, line.accepted_by):
            return f"says accepted by {line.says_by}; git shows {line.accepted_by} accepted it"
        return ""
    if line.status == PROPOSED:
        if line.says == ACCEPTED:
            return f"says accepted by {line.says_by}; git shows an open proposal"
        return ""
    assert line.status == UNREVIEWED
    if line.says == ACCEPTED:
        return f"says accepted by {line.says_by}; git shows no acceptance ({line.why})"
    if not line.proposed_by:
        return (
            f"{line.why}; `mdmem team propose {line.id}` makes it a proposal "
            "(or remove it)"
        )
    return line.why


def _same_name(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
