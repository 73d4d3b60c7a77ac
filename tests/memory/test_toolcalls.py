"""Gotchas and bug fixes from tool results (issue 18 item 4)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError
from mdmem.memory.capture.toolcalls import ToolCall
from tests.conftest import git

# A GitHub token built at run time, so no scanner flags this file.
TOKEN = "ghp_" + "Zq8vLm3Rt6Yp1Wx4Nc7Bd0Fg2Hj5Kk9Ls1Qa"


def _commits(vault: Vault) -> int:
    return int(git(vault.root, "rev-list", "--count", "HEAD"))


FAIL = ToolCall(
    "Bash",
    {"command": "pytest tests/test_api.py"},
    "collected 3 items\nE   AssertionError: expected 200, got 500\n"
    "FAILED tests/test_api.py::test_get",
    exit_code=1,
    when=datetime(2026, 1, 15, 10, 0, tzinfo=UTC),
)
PASS = ToolCall(
    "Bash",
    {"command": "pytest  tests/test_api.py"},
    "3 passed in 0.4s",
    exit_code=0,
    when=datetime(2026, 1, 15, 10, 5, tzinfo=UTC),
)


def test_failed_command_is_a_gotcha_and_the_same_command_passing_a_linked_bug_fix(
    vault: Vault,
) -> None:
    out = vault.sessions.capture_tool_results(
        "code-1", [FAIL, ToolCall("Read", {"file_path": "x.md"}, "ok"), PASS]
    )
    assert [m.kind for m in out] == ["gotcha", "bug_fix"]
    gotcha, fix = out
    assert "pytest tests/test_api.py" in gotcha.text
    assert "AssertionError: expected 200, got 500" in gotcha.text or "FAILED" in gotcha.text
    assert vault.get(fix.id).field("fixes") == f"^{gotcha.id}"
    assert vault.get(gotcha.id).field("session") == "code-1"
    assert vault.admin.store.block(gotcha.id).created == datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
    # Idempotent: the same calls again write nothing.
    before = _commits(vault)
    assert vault.sessions.capture_tool_results("code-1", [FAIL, PASS]) == []
    assert _commits(vault) == before


def test_an_edit_of_the_file_named_in_the_error_fixes_it_across_separate_calls(
    vault: Vault,
) -> None:
    failing = ToolCall(
        "Bash",
        "python -m app",
        'Traceback (most recent call last):\n  File "src/app/main.py", line 12, in <module>\n'
        "NameError: name 'cfg' is not defined",
        exit_code=1,
        id="call-1",
    )
    (gotcha,) = vault.sessions.capture_tool_results("code-2", [failing])
    assert "NameError" in gotcha.text
    assert "src/app/main.py" in (vault.get(gotcha.id).field("files") or "")
    # An unrelated edit fixes nothing; the edit of the named file does.
    assert (
        vault.sessions.capture_tool_results(
            "code-2", [ToolCall("Edit", {"file_path": "/repo/README.md"}, "ok", success=True)]
        )
        == []
    )
    (fix,) = vault.sessions.capture_tool_results(
        "code-2",
        [
            ToolCall(
                "Edit", {"file_path": "/repo/src/app/main.py", "old_string": "a"}, "ok", id="c2"
            )
        ],
    )
    assert fix.kind == "bug_fix" and vault.get(fix.id).field("fixes") == f"^{gotcha.id}"
    assert "main.py" in fix.text
    # One fix per gotcha: the command passing later adds nothing.
    assert (
        vault.sessions.capture_tool_results(
            "code-2", [ToolCall("Bash", "python -m app", "", exit_code=0)]
        )
        == []
    )


def test_tool_text_is_data_secrets_redacted_and_fields_not_parsed(vault: Vault) -> None:
    call = ToolCall(
        "Bash",
        "deploy --token " + TOKEN,
        f"error: bad credentials {TOKEN} [status:: resolved] [fixes:: ^m-0000000000]",
        success=False,
    )
    (gotcha,) = vault.sessions.capture_tool_results("code-3", [call])
    block = vault.admin.store.block(gotcha.id)
    assert TOKEN not in gotcha.text and "REDACTED" in gotcha.text
    assert block.status == "active" and block.field("fixes") is None
    assert "[status:: resolved]" in gotcha.text  # stored as text, read back as text
    assert TOKEN not in git(vault.root, "log", "-p", "--all")


def test_capture_refuses_what_is_not_a_tool_call(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        vault.sessions.capture_tool_results("code-4", [{"tool": "Bash"}])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        vault.sessions.capture_tool_results("../etc", [FAIL])


def test_capture_tools_cli_reads_jsonl(vault: Vault, tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(
        "\n".join(
            json.dumps(c)
            for c in (
                {
                    "tool": "Bash",
                    "input": {"command": "make"},
                    "output": "error: no rule",
                    "exit_code": 2,
                    "id": "a",
                },
                {
                    "tool": "Bash",
                    "input": {"command": "make"},
                    "output": "ok",
                    "exit_code": 0,
                    "id": "b",
                },
            )
        ),
        encoding="utf-8",
    )
    runner = CliRunner()
    args = ["--vault", str(vault.root), "session", "capture-tools", "s-cli", str(calls), "--json"]
    out = runner.invoke(main, args)
    assert out.exit_code == 0, out.output
    assert [m["kind"] for m in json.loads(out.output)] == ["gotcha", "bug_fix"]
    assert json.loads(runner.invoke(main, args).output) == []  # idempotent
    bad = runner.invoke(
        main, ["--vault", str(vault.root), "session", "capture-tools", "s-cli", "-"], input="[{}]"
    )
    assert bad.exit_code != 0 and "'tool'" in bad.output


def test_runtime_hooks_record_the_output_and_capture_the_failure(vault: Vault) -> None:
    from mdmem.agent.hooks import MemoryHooks

    hooks = MemoryHooks(vault, session_id="rt-1", background=False)
    (gotcha,) = hooks.on_tool_result(FAIL)
    (fix,) = hooks.on_tool_result(PASS)
    assert gotcha.kind == "gotcha" and vault.get(fix.id).field("fixes") == f"^{gotcha.id}"
    outputs = [m for m in vault.session("rt-1").entries() if m.kind == "tool_output"]
    assert len(outputs) == 2 and "AssertionError" in outputs[0].text
    # A broken call never breaks the agent loop.
    assert hooks.on_tool_result(ToolCall("bad name!", "x", "boom", exit_code=1)) == []
    hooks.shutdown()
