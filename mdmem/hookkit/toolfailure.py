"""Whether a shell command failed, read from its output when the host does not say.

Claude Code sends a failed call to PostToolUseFailure, but its PostToolUse
payload for Bash carries ``stdout``, ``stderr`` and ``interrupted`` and no
exit code; Codex has no failure event at all and hands over the output text;
Cursor's ``postToolUse`` gives ``tool_output``. A failing test run or build in
such a payload is still a failure worth a gotcha, so :func:`failure_line`
reads the output the way a person would: the summary lines that the common
tools print when they fail (pytest, unittest, cargo, go test, jest, mocha,
npm, make, tsc, mypy, ruff, compilers, shells), or a traceback that ends the
output. Each pattern needs a non-zero count or an explicit failure word, so
a passing run ("3 passed", "0 failed") never matches.

Only shell tools are read (:data:`SHELL_TOOLS`), and a command that merely
shows text (``cat``, ``grep``, ``git log`` …) counts as failed only by its
exit marker: a log file full of tracebacks is not a failure of ``cat``.
"""

from __future__ import annotations

import re

__all__ = ["SHELL_TOOLS", "failure_line"]

#: Tool names (lower case) whose output is a shell command's, across hosts.
SHELL_TOOLS = frozenset(
    {
        "bash",
        "shell",
        "exec_command",
        "local_shell",
        "shell_command",
        "run_terminal_cmd",
        "terminal",
        "container.exec",
    }
)
_TAIL_LINES = 200  # the failure summary comes at the end of a run

# The shell or the host reporting a non-zero exit (Claude Code, Codex's exec output).
_EXIT = re.compile(
    r"^(?:exit (?:code|status):?\s*|process exited with code\s+|"
    r"command exited with non-zero status(?: code)?\s+)(-?[1-9]\d*)\b",
    re.I,
)
_SUMMARIES = [
    re.compile(p)
    for p in (
        # pytest: "FAILED path::test - …", "1 failed, 2 passed in 0.1s", "== 1 failed in 0.1s =="
        r"^FAILED \S+::\S+",
        r"^ERROR \S+::\S+",
        r"^(?:=+ )?(?:\d+ passed, )?[1-9]\d* (?:failed|errors?)\b.*(?: in [\d.]+s)",
        r"^Interrupted: [1-9]\d* errors? during collection",
        # unittest
        r"^FAILED \((?:failures|errors)=[1-9]",
        # cargo test / rustc
        r"^test result: FAILED\.",
        r"^error(?:\[E\d+\])?: ",
        # go test
        r"^--- FAIL: ",
        r"^FAIL(?:\s+\S+|$)",
        # jest, mocha (and Cursor's one-line summaries)
        r"^Tests?:\s+[1-9]\d* failed",
        r"^Test Suites:\s+[1-9]\d* failed",
        r"^\s*[1-9]\d* failing\b",
        # npm, make, gradle, maven
        r"^npm (?:ERR!|error) ",
        r"^make(?:\[\d+\])?: \*\*\* .*Error \d+",
        r"^(?:BUILD FAILED|FAILURE: Build failed)",
        r"^\[ERROR\] (?:BUILD FAILURE|Failed to execute)",
        # type checkers, linters, compilers
        r"^Found [1-9]\d* errors? in \d+ files?",  # mypy
        r"^Found [1-9]\d* errors?\.",  # ruff
        r"\berror TS\d+:",  # tsc
        r"^\S+:\d+:\d+: (?:fatal )?error: ",  # gcc, clang
        r"^✖ [1-9]\d* problems? \([1-9]\d* errors?",  # eslint
        # shells
        r"^(?:\S+: )?(?:line \d+: )?\S+: command not found$",
        r"^\S+: cannot access .*: No such file or directory$",
    )
]
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):")
_EXCEPTION_END = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b(?::|$)")
# Commands that show text rather than run something: their output may quote failures.
_VIEWERS = re.compile(
    r"^\s*(?:sudo\s+)?(?:cat|less|more|head|tail|grep|egrep|rg|ag|sed|awk|echo|printf|"
    r"jq|bat|view|git\s+(?:log|show|diff|blame|grep))\b"
)


def failure_line(tool: str, command: str, output: str) -> str | None:
    """The line of a shell tool's ``output`` that says ``command`` failed, or None."""
    if tool.lower() not in SHELL_TOOLS or not output:
        return None
    lines = [ln.rstrip() for ln in output.splitlines()[-_TAIL_LINES:] if ln.strip()]
    for line in lines[:5]:
        if _EXIT.match(line.strip()):
            return line.strip()
    if _VIEWERS.match(command):
        return None
    for line in reversed(lines):
        if any(p.search(line) for p in _SUMMARIES):
            return line.strip()
    if lines and _EXCEPTION_END.match(lines[-1]) and any(_TRACEBACK.match(ln) for ln in lines):
        return lines[-1].strip()
    return None
