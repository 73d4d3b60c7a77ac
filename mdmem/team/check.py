"""``mdmem team check``: what must never be in a team folder, by file and line.

For CI and pre-commit. A finding is one of:

* ``secret`` - a line holds what the secret guard takes for a secret (every
  line of every file in the folder, README included, read after resolving
  symlinks; a symlink leading out of the repository is a finding itself);
* ``personal`` - a person's or contact's scope, or a personal field
  (``contact``, ``speaker``, ``session``, ``role``, ``episode``);
* ``duplicate`` - an id on more than one line;
* ``unparseable`` - a file that is not UTF-8 markdown or holds conflict
  markers, a list item without an id, an unknown field or status.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mdmem.files import blocks as blk
from mdmem.files.textfile import SkipFile, decode
from mdmem.store.secret_guard import scan
from mdmem.team.lines import PERSONAL_FIELDS, PROPOSED, TEAM_FIELDS, personal_reason
from mdmem.team.repo import TEAM_DIR, Checkout

__all__ = ["Finding", "check"]

_KNOWN_FIELDS = frozenset(TEAM_FIELDS) | PERSONAL_FIELDS
_CONFLICT = ("<<<<<<< ", "=======", ">>>>>>> ", "||||||| ")


@dataclass(frozen=True)
class Finding:
    path: str  # repository-relative
    line: int
    problem: str  # secret | personal | duplicate | unparseable
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
        if not real.is_file():
            continue
        findings.extend(_check_file(rel, real, seen))
    return findings


def _check_file(rel: str, real: Path, seen: dict[str, str]) -> list[Finding]:
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
        parsed = blk.parse(rel, decode(raw))
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
        reason = personal_reason(block.scope, block.fields)
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
    lines = decode(raw).lines
    for number, line in enumerate(lines[parsed.frontmatter_lines :], parsed.frontmatter_lines + 1):
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
