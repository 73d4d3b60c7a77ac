"""``mdmem import``, ``export``, ``list``, ``show`` and ``session record``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem.cli import main

DATA = Path(__file__).parent.parent / "memory" / "data"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def vault_dir(tmp_path: Path, runner: CliRunner) -> Path:
    path = tmp_path / "v"
    result = runner.invoke(main, ["--agent", "cli-agent", "init", str(path)])
    assert result.exit_code == 0, result.output
    return path


def cli(runner: CliRunner, vault_dir: Path, *args: str, input: str | None = None) -> str:
    result = runner.invoke(main, ["--vault", str(vault_dir), *args], input=input)
    assert result.exit_code == 0, result.output
    return result.output


def test_import_json_report_and_twice(runner: CliRunner, vault_dir: Path) -> None:
    claude = str(DATA / "claude_conversations.json")
    report = json.loads(cli(runner, vault_dir, "library", "import", claude, "--json"))
    assert (report["format"], report["added"], report["refused"]) == ("claude", 3, 0)
    assert report["first"] == "2024-03-04T09:15:01+00:00"
    again = json.loads(
        cli(runner, vault_dir, "library", "import", claude, "--format", "claude", "--json")
    )
    assert (again["added"], again["duplicates"], again["commits"]) == (0, 3, 0)
    human = cli(runner, vault_dir, "library", "import", str(DATA / "messages.jsonl"))
    assert "imported 4 of 6 messages (jsonl)" in human and "2 refused" in human


def test_import_refuses_an_unknown_format_in_one_line(runner: CliRunner, vault_dir: Path) -> None:
    result = runner.invoke(
        main,
        [
            "--vault",
            str(vault_dir),
            "library",
            "import",
            str(DATA / "messages.jsonl"),
            "--format",
            "x",
        ],
    )
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_export_list_show(runner: CliRunner, vault_dir: Path, tmp_path: Path) -> None:
    cli(runner, vault_dir, "remember", "Deploys go out on Tuesdays", "-t", "ops")
    cli(runner, vault_dir, "remember", "Prefers tea", "--kind", "preference")
    out = tmp_path / "dump.jsonl"
    cli(runner, vault_dir, "library", "export", "--jsonl", "-o", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    rows = [r for r in lines if "kind" in r]
    assert {r["kind"] for r in rows} == {"fact", "preference"}
    stdout_rows = [
        json.loads(r) for r in cli(runner, vault_dir, "library", "export", "--jsonl").splitlines()
    ]
    assert [r["id"] for r in stdout_rows if "kind" in r] == [r["id"] for r in rows]

    listed = json.loads(cli(runner, vault_dir, "library", "list", "--kind", "preference", "--json"))
    assert [r["text"] for r in listed] == ["Prefers tea"]
    assert "Deploys go out on Tuesdays" in cli(runner, vault_dir, "library", "list", "-t", "ops")
    fact = next(r for r in rows if r["kind"] == "fact")
    shown = json.loads(cli(runner, vault_dir, "library", "show", fact["id"], "--json"))
    assert shown["memory"]["id"] == fact["id"]
    assert shown["history"][0]["author"] == "cli-agent"
    assert shown["provenance"]["authors"] == ["cli-agent"]
    text = cli(runner, vault_dir, "library", "show", fact["id"])
    assert "history:" in text and "authors:" in text and "#ops" in text


def test_export_into_a_missing_folder_is_a_one_line_error(
    runner: CliRunner, vault_dir: Path, tmp_path: Path
) -> None:
    target = tmp_path / "no-such-folder" / "dump.jsonl"
    result = runner.invoke(
        main, ["--vault", str(vault_dir), "library", "export", "--jsonl", "-o", str(target)]
    )
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "--output: no folder" in result.output and not target.parent.exists()


def test_session_record_from_args_and_stdin(runner: CliRunner, vault_dir: Path) -> None:
    first = json.loads(
        cli(
            runner,
            vault_dir,
            "session",
            "record",
            "standup",
            "Ship on Friday",
            "--role",
            "user",
            "--speaker",
            "Ana",
            "--when",
            "2024-05-03T09:00:00Z",
            "--event-id",
            "e1",
            "--json",
        )
    )
    assert first["was_new"] and first["created"].startswith("2024-05-03T09:00:00")
    assert ["speaker", "Ana"] in [list(f) for f in first["fields"]]
    again = cli(
        runner,
        vault_dir,
        "session",
        "record",
        "standup",
        "Ship on Friday",
        "--role",
        "user",
        "--event-id",
        "e1",
    )
    assert "already recorded" in again
    piped = json.loads(
        cli(
            runner,
            vault_dir,
            "session",
            "record",
            "standup",
            "-",
            "--role",
            "assistant",
            "--json",
            input="line one\nline two\n",
        )
    )
    assert piped["text"] == "line one\nline two"
    bad = runner.invoke(
        main,
        [
            "--vault",
            str(vault_dir),
            "session",
            "record",
            "s",
            "x",
            "--role",
            "user",
            "--when",
            "yesterday",
        ],
    )
    assert bad.exit_code == 1 and bad.output.startswith("error: --when")
