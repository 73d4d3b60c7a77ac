"""The CLI: thin views of the API, --json shapes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem.cli import main

from ..conftest import git


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def vault_dir(tmp_path: Path, runner: CliRunner) -> Path:
    path = tmp_path / "v"
    result = runner.invoke(main, ["--agent", "cli-agent", "init", str(path)])
    assert result.exit_code == 0, result.output
    return path


def run(runner: CliRunner, vault_dir: Path, *args: str) -> dict:
    result = runner.invoke(main, ["--vault", str(vault_dir), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_write_commands_and_json_shapes(runner: CliRunner, vault_dir: Path) -> None:
    m = run(
        runner, vault_dir, "remember", "Prefers metric units", "--kind", "preference", "-t", "units"
    )
    assert set(m) >= {
        "id",
        "path",
        "line",
        "text",
        "kind",
        "tags",
        "scope",
        "status",
        "created",
        "was_new",
    }
    assert m["path"] == "USER.md" and m["tags"] == ["units"] and m["was_new"] is True
    assert (
        run(runner, vault_dir, "remember", "prefers metric units", "--kind", "preference")[
            "was_new"
        ]
        is False
    )
    assert run(runner, vault_dir, "log", "did things", "-c", "Research")["kind"] == "log"
    assert run(runner, vault_dir, "journal", "reflecting")["path"] == "JOURNAL.md"
    assert run(runner, vault_dir, "learn", "Git", "rebase often")["path"] == "LEARNING.md"
    got = run(runner, vault_dir, "get", m["id"])
    assert got["text"] == "Prefers metric units #units"
    new = run(runner, vault_dir, "supersede", m["id"], "Prefers imperial units")
    assert new["superseded"] == [m["id"]]
    assert run(runner, vault_dir, "resolve", new["id"])["status"] == "resolved"
    history = run(runner, vault_dir, "history", m["id"])
    assert [v["status"] for v in history] == ["active", "superseded"]
    assert run(runner, vault_dir, "forget", new["id"])["id"] == new["id"]
    status = run(runner, vault_dir, "status")
    assert status["memories"] == 4 and status["dirty"] == []


def test_stdin_text(runner: CliRunner, vault_dir: Path) -> None:
    result = runner.invoke(
        main, ["--vault", str(vault_dir), "remember", "-", "--json"], input="from stdin\n"
    )
    assert json.loads(result.output)["text"] == "from stdin"


def test_vault_discovery_env_and_walk_up(
    runner: CliRunner, vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_VAULT", str(vault_dir))
    assert runner.invoke(main, ["status", "--json"]).exit_code == 0
    monkeypatch.delenv("MDMEM_VAULT")
    monkeypatch.chdir(vault_dir / "daily")
    assert json.loads(runner.invoke(main, ["status", "--json"]).output)["root"] == str(
        vault_dir.resolve()
    )


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["get", "m-01jd3k5x7q0000"], "no memory", 1),
        (["get", "not-an-id"], "not a memory id", 1),
        (["remember", "password = hunter2hunter2"], "secret", 1),
        (["remember", "x", "-t", "sk-proj-abcdefghijklmnopqrstuvwxyz0123"], "secret", 1),
        (["remember", "x", "--scope", "Bad Scope"], "invalid scope", 1),
        # Usage errors: click's multi-line usage block becomes one line, exit 2.
        (["get"], "Missing argument 'MEMORY_ID' (see mdmem get --help)", 2),
        (["remember", "x", "--kind", "bogus"], "'bogus' is not one of", 2),
        (["recall", "x", "-k", "many"], "'many' is not a valid integer", 2),
        (["remember", "x", "--no-such-option"], "No such option", 2),
        (["no-such-command"], "No such command 'no-such-command' (see mdmem --help)", 2),
        (["--bogus", "status"], "No such option '--bogus'", 2),
        (["git", "review", "--merge", "--reject"], "not both (see mdmem git review --help)", 2),
    ],
)
def test_errors_are_one_line(
    runner: CliRunner, vault_dir: Path, args: list[str], message: str, code: int
) -> None:
    result = runner.invoke(main, ["--vault", str(vault_dir), *args])
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and message in lines[0]
    assert "Usage:" not in result.output and "Traceback" not in result.output


def test_help_still_works(runner: CliRunner) -> None:
    for args in (["--help"], ["get", "--help"], []):
        result = runner.invoke(main, args)
        assert result.output.startswith("Usage: mdmem"), args
        assert "error:" not in result.output
    assert runner.invoke(main, ["get", "--help"]).exit_code == 0


def test_context_json(runner: CliRunner, vault_dir: Path) -> None:
    m = run(runner, vault_dir, "remember", "The user prefers metric units", "--kind", "preference")
    out = run(runner, vault_dir, "context", "metric units", "--max-chars", "400")
    assert set(out) == {"query", "context", "ids", "citations", "degraded"}
    assert out["query"] == "metric units" and out["ids"][0] == m["id"]
    assert out["citations"][0] == f"USER.md#^{m['id']}" and out["citations"][0] in out["context"]
    assert out["context"].startswith("## Recalled Memory\n") and len(out["context"]) <= 400
    plain = runner.invoke(main, ["--vault", str(vault_dir), "context", "metric units"])
    assert (
        plain.exit_code == 0
        and plain.output == run(runner, vault_dir, "context", "metric units")["context"]
    )
    empty = run(runner, vault_dir, "context", "quantum chromodynamics lattice")
    assert empty["ids"] == [] and empty["context"].endswith("(no relevant memories)\n")


def test_agent_option_is_the_commit_author(runner: CliRunner, vault_dir: Path) -> None:
    result = runner.invoke(main, ["--vault", str(vault_dir), "--agent", "orc-7", "remember", "x"])
    assert result.exit_code == 0, result.output
    author = subprocess.run(
        ["git", "log", "-1", "--format=%an|%ae|%s"],
        cwd=vault_dir,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert author == "orc-7|orc-7@agents.mdmem|remember fact: x"


def test_no_vault_is_one_line(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["status"])
    assert result.exit_code == 1 and "no mdmem vault" in result.output


def test_real_process_prints_no_traceback(vault_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MDMEM_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mdmem",
            "--vault",
            str(vault_dir),
            "forget",
            "m-01jd3k5x7q0000",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: ")


def test_short_help_and_version_flags(runner: CliRunner) -> None:
    assert runner.invoke(main, ["-h"]).output.startswith("Usage: mdmem")
    assert runner.invoke(main, ["remember", "-h"]).output.startswith("Usage: mdmem remember")
    version = runner.invoke(main, ["-V"])
    assert version.exit_code == 0 and "version" in version.output


def test_vault_may_follow_the_command(runner: CliRunner, vault_dir: Path) -> None:
    run(runner, vault_dir, "remember", "The ferry leaves at nine")
    for args in (
        ["recall", "--vault", str(vault_dir), "ferry", "--json"],
        ["recall", "ferry", f"--vault={vault_dir}", "--json"],
        ["--agent", "x", "recall", "--vault", str(vault_dir), "ferry", "--json"],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "ferry" in json.loads(result.output)["items"][0]["text"]
    # After `--` it is the command's own text.
    stored = runner.invoke(
        main, ["--vault", str(vault_dir), "remember", "--json", "--", "--vault is a flag"]
    )
    assert stored.exit_code == 0 and json.loads(stored.output)["text"] == "--vault is a flag"


def test_init_agent_is_the_vaults_default_author(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "v2"
    assert runner.invoke(main, ["init", "--agent", "orc-7", str(path)]).exit_code == 0
    assert 'agent = "orc-7"' in (path / "mdmem.toml").read_text()
    run(runner, path, "remember", "Written after init")
    authors = git(path, "log", "--format=%an").split()
    assert authors[:2] == ["orc-7", "orc-7"]
    bad = runner.invoke(main, ["init", "--agent", 'x"\nsecrets = "off', str(tmp_path / "v3")])
    assert bad.exit_code == 1 and "invalid agent name" in bad.output
