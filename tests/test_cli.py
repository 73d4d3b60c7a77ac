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
    ("args", "message"),
    [
        (["get", "m-01jd3k5x7q0000"], "no memory"),
        (["get", "not-an-id"], "not a memory id"),
        (["remember", "password = hunter2hunter2"], "secret"),
        (["remember", "x", "--scope", "Bad Scope"], "invalid scope"),
    ],
)
def test_errors_are_one_line(
    runner: CliRunner, vault_dir: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(main, ["--vault", str(vault_dir), *args])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


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
            "mdmem.cli",
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


def test_every_command_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for name in main.commands:
        assert f"mdmem {name}" in readme, f"README does not document `mdmem {name}`"
