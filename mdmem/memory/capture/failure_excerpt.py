"""The lines of a failed command's output worth keeping in a gotcha.

A summary line ("1 failed in 0.05s", "test result: FAILED.") says that a run
failed, not what failed; a person reading the gotcha later, or an agent about
to repeat the mistake, needs the failing test's id, the assertion or error
message and where it was raised. :func:`failure_excerpt` picks those lines
(pytest, Python tracebacks, cargo/rustc, go test, jest/mocha/npm, tsc,
gcc/clang, mypy) in the order the output printed them, within a bound, and
falls back to summary lines only when nothing better is there.
"""

from __future__ import annotations

import re

__all__ = ["failure_excerpt"]

_WHICH = 1  # which test or file failed
_WHAT = 2  # the assertion, error or exception message
_SUMMARY = 3  # a count of failures: kept only when nothing else is

_PATTERNS: tuple[tuple[int, re.Pattern[str]], ...] = tuple(
    (rank, re.compile(pattern))
    for rank, pattern in (
        # pytest: the short summary names test and message; "E" lines are the assertion.
        (_WHICH, r"^(?:FAILED|ERROR) \S+::\S+"),
        (_WHICH, r"^(?:FAILED|ERROR) \S+\.py\b"),
        (_WHAT, r"^E\s{2,}\S"),
        (_WHAT, r"^\S+\.py:\d+: \w+(?:Error|Exception|Exit|Warning)\b"),
        # a Python traceback's last frame and its exception line
        (_WHAT, r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b(?::|$)"),
        # cargo test / rustc
        (_WHICH, r"^test \S+ \.\.\. FAILED$"),
        (_WHAT, r"^thread '[^']+' panicked at "),
        (_WHAT, r"^\s*(?:left|right): "),
        (_WHAT, r"^assertion (?:`left \S+ right` )?failed"),
        (_WHAT, r"^error(?:\[E\d+\])?: "),
        (_WHAT, r"^\s*--> \S+:\d+:\d+"),
        # go test
        (_WHICH, r"^\s*--- FAIL: \S+"),
        (_WHAT, r"^\s+\S+_test\.go:\d+: "),
        (_WHAT, r"^panic: "),
        # jest / mocha / vitest
        (_WHICH, r"^\s*● .+›"),
        (_WHICH, r"^\s*FAIL\s+\S+\.(?:[cm]?[jt]sx?)\b"),
        (_WHAT, r"^\s*(?:Expected|Received)(?: value)?:\s"),
        (_WHAT, r"^\s*expect\(.+\)\.\w+\("),
        (_WHICH, r"^\s*\d+\) .+:$"),
        (_WHAT, r"^\s*(?:AssertionError|TypeError|ReferenceError)(?: \[\w+\])?: "),
        # compilers and type checkers
        (_WHAT, r"\berror TS\d+: "),
        (_WHAT, r"^\S+:\d+(?::\d+)?: (?:fatal )?error: "),
        (_WHAT, r"^\S+\.pyi?:\d+: error: "),
        # summaries (the last resort)
        (_SUMMARY, r"^(?:=+ )?(?:\d+ passed, )?\d+ (?:failed|errors?)\b"),
        (_SUMMARY, r"^test result: FAILED\."),
        (_SUMMARY, r"^FAIL\s+\S+"),
        (_SUMMARY, r"^Tests?:\s+\d+ failed"),
        (_SUMMARY, r"^\s*\d+ failing\b"),
        (_SUMMARY, r"^npm (?:ERR!|error) "),
        (_SUMMARY, r"^Found \d+ errors?"),
    )
)
_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
_PER_RANK = {_WHICH: 3, _WHAT: 5, _SUMMARY: 1}
_SEPARATOR = " | "


def failure_excerpt(output: str, limit: int = 600) -> str | None:
    """The telling lines of ``output``, joined on one line of at most ``limit``
    characters; None when no line is recognised."""
    lines = [ln.rstrip() for ln in output.splitlines()]
    picked: dict[int, int] = {}  # line index -> rank
    counts = dict.fromkeys(_PER_RANK, 0)
    seen: set[str] = set()
    for i, line in enumerate(lines):
        rank = _rank(line)
        if rank is None or counts[rank] >= _PER_RANK[rank]:
            continue
        key = " ".join(line.split())
        if key in seen:
            continue  # pytest prints a failure's message twice (E line, short summary)
        seen.add(key)
        picked[i] = rank
        counts[rank] += 1
    frame = _last_frame(lines)
    if frame is not None:
        picked[frame] = _WHAT
    if any(rank != _SUMMARY for rank in picked.values()):
        picked = {i: r for i, r in picked.items() if r != _SUMMARY}
    if not picked:
        return None
    return _fit([" ".join(lines[i].split()) for i in sorted(picked)], limit)


def _rank(line: str) -> int | None:
    for rank, pattern in _PATTERNS:
        if pattern.search(line):
            return rank
    return None


def _last_frame(lines: list[str]) -> int | None:
    """The last ``File "…", line N`` of the last traceback, where the error was raised."""
    start = next((i for i in range(len(lines) - 1, -1, -1) if _TRACEBACK.match(lines[i])), None)
    if start is None:
        return None
    frames = [i for i in range(start, len(lines)) if _FRAME.match(lines[i])]
    return frames[-1] if frames else None


def _fit(parts: list[str], limit: int) -> str:
    """Parts joined within ``limit``; a long part is cut so the later ones still fit."""
    share = max(80, (limit - len(_SEPARATOR) * (len(parts) - 1)) // len(parts))
    cut = [p if len(p) <= share else p[: share - 1] + "…" for p in parts]
    text = _SEPARATOR.join(cut)
    while len(text) > limit and len(cut) > 1:
        cut.pop()  # fewer lines rather than a sentence cut in the middle
        text = _SEPARATOR.join(cut)
    return text if len(text) <= limit else text[: limit - 1] + "…"
