"""A failed run's gotcha keeps the command, the failing test and the error lines
(issue #32, item 7): recorded outputs through the real hook entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.hookkit.log import HookLog
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.memory.capture.failure_excerpt import failure_excerpt
from tests.conftest import git

DATA = Path(__file__).parent / "data"

# output file, command, what the gotcha must keep, what it need not (the summary)
CASES = [
    (
        "pytest.txt",
        "pytest -q tests/test_cart.py",
        ["FAILED tests/test_cart.py::test_discount_total", "E assert 899 == 900"],
        "1 failed, 6 passed in 0.05s",
    ),
    (
        "cargo-test.txt",
        "cargo test -p shop",
        [
            "test money::tests::rounds_half_even ... FAILED",
            "panicked at src/money.rs:88:9",
            "left: 13 | right: 12",
        ],
        "test result: FAILED",
    ),
    (
        "go-test.txt",
        "go test ./timeutil/...",
        [
            "--- FAIL: TestParseDuration",
            'duration_test.go:27: ParseDuration("90m") = 1h0m0s, want 1h30m0s',
        ],
        "FAIL\texample.com",
    ),
    (
        "npm-test.txt",
        "npm test",
        ["Cart › applies the coupon before tax", "Expected: 1080", "Received: 1100"],
        "npm error code 1",
    ),
    (
        "tsc.txt",
        "npx tsc --noEmit",
        ["src/money.ts(12,7): error TS2322", "src/cart.ts(40,18): error TS2339"],
        "Found 2 errors",
    ),
    (
        "traceback.txt",
        "python scripts/migrate.py",
        [
            'File "/home/dev/shop/scripts/migrate.py", line 33, in load',
            "TypeError: Order.__init__() got an unexpected keyword argument 'total_cents'",
        ],
        "Loading fixtures",
    ),
]


def _payload(cwd: Path, command: str, stdout: str) -> Any:
    text = (DATA / "hooks" / "claude-code.post-tool-use.json").read_text(encoding="utf-8")
    text = text.replace("{CWD}", str(cwd)).replace("{TRANSCRIPT}", "")
    data = json.loads(text)
    data["tool_input"]["command"] = command
    data["tool_response"]["stdout"] = stdout
    return data


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    return path


@pytest.mark.parametrize(("name", "command", "kept", "summary"), CASES)
def test_a_recorded_failure_is_stored_with_what_failed_not_the_summary(
    vault: Vault, repo: Path, name: str, command: str, kept: list[str], summary: str
) -> None:
    output = (DATA / "failures" / name).read_text(encoding="utf-8")
    # Claude Code's PostToolUse for Bash has no exit code: the output shows the failure.
    run_event(vault, "claude-code", "post-tool-use", _payload(repo, command, output), Policy())
    entry = HookLog(vault.admin.state_dir).entries(1)[0]
    assert entry["failed"] is True and entry["ids"], entry
    gotcha = vault.admin.store.block(entry["ids"][0])
    assert gotcha is not None and gotcha.kind == "gotcha"
    assert f"`{command}` failed" in gotcha.text
    for part in kept:
        assert part in gotcha.text, (part, gotcha.text)
    assert summary not in gotcha.text
    assert len(gotcha.text) <= 900


def test_the_excerpt_is_bounded_and_keeps_later_lines_whole() -> None:
    long_failures = "\n".join(
        f"FAILED tests/test_x.py::test_{i} - AssertionError: {'x' * 300}" for i in range(10)
    )
    text = failure_excerpt(long_failures + "\n10 failed in 1.00s", 600)
    assert text is not None and len(text) <= 600
    assert text.startswith("FAILED tests/test_x.py::test_0") and "10 failed" not in text


def test_only_a_summary_is_kept_when_nothing_says_more() -> None:
    assert failure_excerpt("....F\n1 failed, 4 passed in 0.05s") == "1 failed, 4 passed in 0.05s"
    assert failure_excerpt("all good\n") is None
