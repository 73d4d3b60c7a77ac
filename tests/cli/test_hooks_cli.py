"""``mdmem hooks install/uninstall/doctor/log`` and ``mdmem hook`` as a host runs them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main

DATA = Path(__file__).parent.parent / "agent" / "data" / "hooks"
EXISTING = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "model": "sonnet",
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier -w"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    Vault.init(tmp_path / "v", agent="cli-agent").close()
    return tmp_path / "v"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / ".claude").mkdir(parents=True)
    # Key order and spacing of the user's own file, which uninstall must give back byte for byte.
    (path / ".claude" / "settings.json").write_text(json.dumps(EXISTING, indent=4) + "\n")
    return path


def invoke(runner: CliRunner, vault_dir: Path, *args: str, stdin: bytes | None = None) -> str:
    result = runner.invoke(main, ["--vault", str(vault_dir), *args], input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


def test_install_merges_is_idempotent_and_uninstall_restores(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    original = settings.read_bytes()
    out = json.loads(
        invoke(runner, vault_dir, "hooks", "install", "claude-code", "--dir", str(repo), "--json")
    )
    assert out["changed"] is True and out["path"] == str(settings)
    data = json.loads(settings.read_text())
    assert data["permissions"] == EXISTING["permissions"] and data["model"] == "sonnet"
    assert EXISTING["hooks"]["PostToolUse"][0] in data["hooks"]["PostToolUse"]
    assert EXISTING["hooks"]["Stop"][0] in data["hooks"]["Stop"]
    for native in (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PreCompact",
        "Stop",
        "SessionEnd",
    ):
        commands = [h["command"] for g in data["hooks"][native] for h in g["hooks"]]
        ours = [c for c in commands if " hook " in c]
        assert len(ours) == 1 and str(vault_dir.resolve()) in ours[0]
    installed = settings.read_bytes()
    again = json.loads(
        invoke(runner, vault_dir, "hooks", "install", "claude-code", "--dir", str(repo), "--json")
    )
    assert again["changed"] is False and settings.read_bytes() == installed
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--dir", str(repo))
    assert settings.read_bytes() == original


def test_uninstall_after_the_file_changed_removes_only_mdmems_hooks(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    invoke(runner, vault_dir, "hooks", "install", "claude-code", "--dir", str(repo))
    data = json.loads(settings.read_text())
    data["env"] = {"FOO": "1"}  # the user edits the file after installing
    settings.write_text(json.dumps(data))
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--dir", str(repo))
    assert json.loads(settings.read_text()) == {**EXISTING, "env": {"FOO": "1"}}


def test_install_creates_a_file_and_uninstall_removes_it(
    runner: CliRunner, vault_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "fresh"
    project.mkdir()
    invoke(runner, vault_dir, "hooks", "install", "cursor", "--dir", str(project))
    data = json.loads((project / ".cursor" / "hooks.json").read_text())
    assert data["version"] == 1
    assert set(data["hooks"]) == {
        "sessionStart",
        "beforeSubmitPrompt",
        "postToolUse",
        "preCompact",
        "stop",
        "sessionEnd",
    }
    assert all(list(h) == ["command"] for hs in data["hooks"].values() for h in hs)
    invoke(runner, vault_dir, "hooks", "install", "codex", "--dir", str(project))
    codex = json.loads((project / ".codex" / "hooks.json").read_text())
    assert set(codex["hooks"]) == {
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PreCompact",
        "Stop",
    }
    invoke(runner, vault_dir, "hooks", "uninstall", "cursor", "--dir", str(project))
    assert not (project / ".cursor" / "hooks.json").exists()


def test_install_defaults_to_the_project_not_the_users_home(
    runner: CliRunner, vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    invoke(runner, vault_dir, "hooks", "install", "codex")
    assert (tmp_path / ".codex" / "hooks.json").exists() and not home.exists()
    invoke(runner, vault_dir, "hooks", "install", "codex", "--user")
    assert (home / ".codex" / "hooks.json").exists()


@pytest.mark.parametrize("host", ["claude-code", "codex", "cursor"])
def test_hook_command_answers_a_recorded_payload_in_the_hosts_format(
    runner: CliRunner, vault_dir: Path, repo: Path, host: str
) -> None:
    with Vault.open(vault_dir) as v:
        v.remember("Ada prefers integer cents for money.", kind="preference")
    raw = (DATA / f"{host}.session-start.json").read_text().replace("{CWD}", str(repo))
    out = invoke(runner, vault_dir, "hook", "session-start", "--host", host, stdin=raw.encode())
    data = json.loads(out)
    context = (
        data["additional_context"]
        if host == "cursor"
        else data["hookSpecificOutput"]["additionalContext"]
    )
    assert "integer cents" in context


def test_hook_never_fails_the_host(runner: CliRunner, tmp_path: Path) -> None:
    # No vault anywhere and an unreadable payload: still exit 0 and valid output with a notice.
    for stdin in (b"{not json", b'{"session_id": "s", "cwd": "/nowhere"}'):
        result = runner.invoke(
            main, ["--vault", str(tmp_path / "missing"), "hook", "prompt-submit"], input=stdin
        )
        assert result.exit_code == 0
        assert "hook failed" in json.loads(result.output)["systemMessage"]
    errors = Path(os.environ["MDMEM_CONFIG_HOME"]) / "hook-errors.jsonl"
    assert len(errors.read_text().splitlines()) == 2
    # `mdmem hooks log` of any vault shows them: they are not silent.
    Vault.init(tmp_path / "other").close()
    shown = runner.invoke(main, ["--vault", str(tmp_path / "other"), "hooks", "log"])
    assert shown.output.count("ERROR (no vault)") == 2


def test_hooks_log_shows_what_was_injected_and_why(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    with Vault.open(vault_dir) as v:
        memory = v.remember("We deploy the shop service to fly.io in the ams region.")
    raw = (DATA / "claude-code.prompt-submit.json").read_text().replace("{CWD}", str(repo))
    invoke(runner, vault_dir, "hook", "prompt-submit", stdin=raw.encode())
    entries = json.loads(invoke(runner, vault_dir, "hooks", "log", "--json"))["entries"]
    last = entries[-1]
    assert last["event"] == "prompt-submit" and last["ids"] == [memory.id]
    assert last["tokens"] > 0 and last["why"][0]["scores"]
    human = invoke(runner, vault_dir, "hooks", "log")
    assert "prompt-submit" in human and memory.id in human
    explained = invoke(runner, vault_dir, "context", "fly.io region", "--explain")
    assert "## Why these memories" in explained and memory.id in explained


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_hooks_doctor_passes_then_fails_when_the_command_is_broken(
    vault_dir: Path, repo: Path
) -> None:
    def mdmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mdmem", "--vault", str(vault_dir), *args],
            capture_output=True,
            text=True,
            env=_env(),
            cwd=repo,
            timeout=120,
        )

    assert mdmem("hooks", "install", "claude-code").returncode == 0
    ok = mdmem("hooks", "doctor")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok   claude-code session-start" in ok.stdout
    assert "ok   claude-code prompt-submit" in ok.stdout
    with Vault.open(vault_dir) as v:  # the canary is gone again
        assert not [m for m in v.library.list(statuses="active") if "canary" in m.text]
    settings = repo / ".claude" / "settings.json"
    # A broken install: the program the hook names no longer exists.
    data = json.loads(settings.read_text())
    for groups in data["hooks"].values():
        for handler in (h for g in groups for h in g["hooks"]):
            words = shlex.split(handler["command"])
            if " hook " in handler["command"]:
                handler["command"] = shlex.join(["/nonexistent/mdmem", *words[1:]])
    settings.write_text(json.dumps(data))
    bad = mdmem("hooks", "doctor")
    assert bad.returncode == 1
    assert "FAIL claude-code session-start" in bad.stdout and "exit 127" in bad.stdout


def test_hooks_policy_shows_what_applies_and_why(runner: CliRunner, repo: Path) -> None:
    (repo / ".mdmem.toml").write_text('capture = "off"\nscope = "project:shop"\nendpoint = "x"\n')
    result = runner.invoke(main, ["hooks", "policy", "--dir", str(repo / ".claude"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == str(repo / ".mdmem.toml")
    assert (data["capture"], data["scope"], data["enabled"]) == ("off", "project:shop", True)
    assert any("endpoint" in n for n in data["notes"])
    human = runner.invoke(main, ["hooks", "policy", "--dir", str(repo)]).output
    assert "capture: off" in human and "note:" in human
