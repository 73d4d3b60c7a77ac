"""``mdmem hooks install/uninstall/doctor/log`` and ``mdmem hook`` as a host runs them."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from tests.conftest import git

DATA = Path(__file__).parent.parent / "hookkit" / "data" / "hooks"
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


def _ours(data: dict[str, Any]) -> list[str]:
    return [
        h["command"]
        for groups in data["hooks"].values()
        for g in groups
        for h in g.get("hooks", [g])
        if " hook " in h["command"]
    ]


def test_install_goes_to_the_personal_file_by_default(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    git(repo, "init", "-q")
    shared = repo / ".claude" / "settings.json"
    before = shared.read_bytes()
    out = json.loads(
        invoke(runner, vault_dir, "hooks", "install", "claude-code", "--dir", str(repo), "--json")
    )
    personal = repo / ".claude" / "settings.local.json"
    assert out["path"] == str(personal) and out["location"] == "personal"
    assert shared.read_bytes() == before  # the file a team commits is not touched
    commands = _ours(json.loads(personal.read_text()))
    assert len(commands) == 7 and all(str(vault_dir.resolve()) in c for c in commands)
    assert any("PostToolUseFailure" in k for k in json.loads(personal.read_text())["hooks"])
    # Like Claude Code itself, git is told to ignore the personal file.
    ignored = subprocess.run(
        ["git", "-C", str(repo), "check-ignore", "-q", ".claude/settings.local.json"]
    )
    assert ignored.returncode == 0
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--dir", str(repo))
    assert not personal.exists()


def test_shared_install_is_portable_merges_and_uninstall_restores(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    original = settings.read_bytes()
    args = ("hooks", "install", "claude-code", "--shared", "--dir", str(repo), "--json")
    out = json.loads(invoke(runner, vault_dir, *args))
    assert out["changed"] is True and out["path"] == str(settings)
    data = json.loads(settings.read_text())
    assert data["permissions"] == EXISTING["permissions"] and data["model"] == "sonnet"
    assert EXISTING["hooks"]["PostToolUse"][0] in data["hooks"]["PostToolUse"]
    assert EXISTING["hooks"]["Stop"][0] in data["hooks"]["Stop"]
    for native in (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "Stop",
        "SessionEnd",
    ):
        commands = [h["command"] for g in data["hooks"][native] for h in g["hooks"]]
        ours = [c for c in commands if " hook " in c]
        assert len(ours) == 1 and shlex.split(ours[0])[0] == "mdmem"
    # No path of this machine in the shared file: the vault goes by its name,
    # which the installing user's own hooks.toml now maps to the vault.
    text = settings.read_text()
    assert str(vault_dir) not in text and str(Path(sys.executable).parent) not in text
    assert "/" not in "".join(_ours(data)) and "--vault-name v" in _ours(data)[0]
    from mdmem.hookkit.policy import named_vault

    assert named_vault("v") == vault_dir.resolve()
    installed = settings.read_bytes()
    again = json.loads(invoke(runner, vault_dir, *args))
    assert again["changed"] is False and settings.read_bytes() == installed
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--shared", "--dir", str(repo))
    assert settings.read_bytes() == original


def test_a_named_vault_in_a_shared_command_is_the_users_own(
    runner: CliRunner, vault_dir: Path, repo: Path, tmp_path: Path
) -> None:
    invoke(runner, vault_dir, "hooks", "install", "claude-code", "--shared", "--dir", str(repo))
    with Vault.open(vault_dir) as v:
        v.remember("Ada prefers integer cents for money.", kind="preference")
    raw = (DATA / "claude-code.session-start.json").read_text().replace("{CWD}", str(repo))
    # A teammate's machine: another default vault in hooks.toml, "v" names ours.
    other = tmp_path / "other"
    Vault.init(other).close()
    config = Path(os.environ["MDMEM_CONFIG_HOME"]) / "hooks.toml"
    config.write_text(f'vault = "{other}"\n' + config.read_text())
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["SessionStart"][0]["hooks"][0]["command"]
    words = shlex.split(command)[1:]  # as the host runs it, without the program
    result = runner.invoke(main, words, input=raw.encode())
    assert result.exit_code == 0, result.output
    assert "integer cents" in json.loads(result.output)["hookSpecificOutput"]["additionalContext"]


def test_uninstall_after_the_file_changed_removes_only_mdmems_hooks(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    invoke(runner, vault_dir, "hooks", "install", "claude-code", "--shared", "--dir", str(repo))
    data = json.loads(settings.read_text())
    data["env"] = {"FOO": "1"}  # the user edits the file after installing
    settings.write_text(json.dumps(data))
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--shared", "--dir", str(repo))
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
        "postToolUseFailure",
        "preCompact",
        "stop",
        "sessionEnd",
    }
    assert all(list(h) == ["command"] for hs in data["hooks"].values() for h in hs)
    # Cursor has no personal project file: the project's file, portable.
    assert str(vault_dir) not in (project / ".cursor" / "hooks.json").read_text()
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
    history = git(vault_dir, "log", "--format=%H %s")
    ok = mdmem("hooks", "doctor")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "ok   claude-code session-start" in ok.stdout
    assert "ok   claude-code prompt-submit" in ok.stdout
    assert "ok   claude-code post-tool-failure" in ok.stdout
    assert f"vault: {vault_dir.resolve()}" in ok.stdout
    # Nothing written: no canary, no commit, the history as it was.
    assert git(vault_dir, "log", "--format=%H %s") == history
    assert git(vault_dir, "status", "--porcelain") == ""
    settings = repo / ".claude" / "settings.local.json"
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
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "git@h.org:acme/shop.git"])
    (repo / ".mdmem.toml").write_text('capture = "off"\nscope = "project:shop"\nendpoint = "x"\n')
    result = runner.invoke(main, ["hooks", "policy", "--dir", str(repo / ".claude"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == str(repo / ".mdmem.toml")
    assert (data["capture"], data["enabled"], data["identity"]) == ("off", True, "h.org/acme/shop")
    # Naming a scope needs the person's confirmation: refused, with the one line saying how.
    assert data["scope"].startswith("project:shop-") and data["legacy_scope"] == "project:shop"
    assert any("endpoint" in n for n in data["notes"])
    assert any("refused" in n and "mdmem hooks trust" in n for n in data["notes"])
    human = runner.invoke(main, ["hooks", "policy", "--dir", str(repo)]).output
    assert "capture: off" in human and "note:" in human
    assert "identity: h.org/acme/shop (from the remote)" in human
    assert "vault: None" not in human and "vault: (the hook command's" in human

    trusted = runner.invoke(main, ["hooks", "trust", str(repo / ".claude")])
    assert trusted.exit_code == 0, trusted.output
    assert "confirmed: " + str(repo / ".mdmem.toml") in trusted.output
    result = runner.invoke(main, ["hooks", "policy", "--dir", str(repo), "--json"])
    assert json.loads(result.output)["scope"] == "project:shop"
    (repo / ".mdmem.toml").write_text('scope = "project:shop"\n')  # edited: asks again
    result = runner.invoke(main, ["hooks", "policy", "--dir", str(repo), "--json"])
    assert json.loads(result.output)["scope"].startswith("project:shop-")


def test_hooks_adopt_lets_one_project_read_its_old_scope(
    runner: CliRunner, repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other" / "repo"
    for path, owner in ((repo, "acme"), (other, "otherco")):
        subprocess.run(["git", "init", "-q", str(path)], check=True)
        url = f"git@h.org:{owner}/shop.git"
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", url], check=True)
    human = runner.invoke(main, ["hooks", "policy", "--dir", str(repo)]).output
    assert "older captures: project:shop is not read here" in human
    done = runner.invoke(main, ["hooks", "adopt", "--dir", str(repo), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["adopted"] == "project:shop"
    data = json.loads(runner.invoke(main, ["hooks", "policy", "--dir", str(repo), "--json"]).output)
    assert data["also_reads"] == ["project:shop"]
    refused = runner.invoke(main, ["hooks", "adopt", "--dir", str(other)])
    assert refused.exit_code != 0 and "never merged" in refused.output
    assert len(refused.output.strip().splitlines()) == 1


# -- never failing the host, whatever it sends ------------------------------------


def run_hook(args: list[str], stdin: bytes, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "mdmem", *args],
        input=stdin,
        capture_output=True,
        env=env or _env(),
        timeout=120,
    )


def _nested_payload(depth: int) -> bytes:
    base = (DATA / "claude-code.post-tool-use.json").read_text()
    tail = '"tool_response": ' + "[" * depth + '"x"' + "]" * depth + "}"
    return (base[: base.index('"tool_response"')] + tail).encode()


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["hook", "prompt-submit"], b"[" * 5000 + b"]" * 5000),
        (["hook", "post-tool-use"], _nested_payload(975)),
        (["hook", "stop"], b"\xff\xfe garbage \x00 not json"),
        (["hook", "prompt-submit"], b'"just a string"'),
        (["hook", "session-start"], b"x" * (16 * 1024 * 1024 + 10)),
        (["hook", "no-such-event"], b"{}"),
        (["hook"], b"{}"),
        (["hook", "prompt-submit", "--host", "vim"], b"{}"),
        (["hook", "prompt-submit", "--host"], b"{}"),
        (["hook", "session-end", "--host", "codex", "--frobnicate", "7"], b"{}"),
        (["--vault", "/nowhere/at/all", "hook", "pre-compact"], b'{"session_id": 5}'),
    ],
)
def test_every_hook_line_exits_0_with_a_json_answer(
    vault_dir: Path, args: list[str], stdin: bytes
) -> None:
    if "--vault" not in args:
        args = ["--vault", str(vault_dir), *args]
    proc = run_hook(args, stdin)
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), dict)
    assert b"Traceback" not in proc.stderr and b"Traceback" not in proc.stdout
    if stdin != b'"just a string"':  # that one is only a payload with nothing in it
        errors = (Path(os.environ["MDMEM_CONFIG_HOME"]) / "hook-errors.jsonl").read_text()
        assert errors.strip()  # what went wrong is in the hook log


def test_the_click_hook_command_never_exits_2(runner: CliRunner, vault_dir: Path) -> None:
    for args in (["hook", "bogus"], ["hook", "stop", "--what"], ["hook"]):
        result = runner.invoke(main, ["--vault", str(vault_dir), *args], input=b"{}")
        assert result.exit_code == 0 and isinstance(json.loads(result.output), dict)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-device", "directory"])
def test_a_transcript_that_is_no_regular_file_is_skipped_at_once(
    vault_dir: Path, repo: Path, tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "transcript.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "link-to-device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    for event in ("pre-compact", "stop"):
        raw = (DATA / f"claude-code.{event}.json").read_text()
        raw = raw.replace("{CWD}", str(repo)).replace("{TRANSCRIPT}", str(path))
        (repo / ".mdmem.toml").write_text('capture = "everything"\n')
        started = time.monotonic()
        proc = run_hook(["--vault", str(vault_dir), "hook", event], raw.encode())
        assert proc.returncode == 0 and json.loads(proc.stdout) == {}
        assert time.monotonic() - started < 60


def test_the_vault_a_hook_command_names_wins_over_the_users_default(
    runner: CliRunner, vault_dir: Path, repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "default-vault"
    Vault.init(other).close()
    config = Path(os.environ["MDMEM_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text(f'vault = "{other}"\n')
    with Vault.open(vault_dir) as v:
        v.remember("Ada prefers integer cents for money.", kind="preference")
    raw = (DATA / "claude-code.session-start.json").read_text().replace("{CWD}", str(repo))
    out = invoke(runner, vault_dir, "hook", "session-start", stdin=raw.encode())
    assert "integer cents" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    # Without a vault in the command, the user's default is the one.
    alone = runner.invoke(main, ["hook", "session-start"], input=raw.encode())
    assert "integer cents" not in alone.output


def test_a_cold_hook_starts_a_warm_server_and_says_so_once(
    vault_dir: Path, repo: Path, tmp_path: Path
) -> None:
    import tempfile

    runtime = Path(tempfile.mkdtemp(prefix="mdr"))
    env = {**_env(), "MDMEM_RUNTIME_DIR": str(runtime / "rt")}
    env.pop("MDMEM_SERVER")
    raw = (DATA / "claude-code.prompt-submit.json").read_text().replace("{CWD}", str(repo))
    args = ["--vault", str(vault_dir), "hook", "prompt-submit"]
    try:
        first = json.loads(run_hook(args, raw.encode(), env).stdout)
        assert "started a warm server" in first["systemMessage"]
        status = ["--vault", str(vault_dir), "server", "status", "--json"]
        deadline = time.monotonic() + 90
        while json.loads(run_hook(status, b"", env).stdout)["running"] is not True:
            assert time.monotonic() < deadline, "the warm server did not come up"
            time.sleep(0.5)
        second = json.loads(run_hook(args, raw.encode(), env).stdout)
        assert "systemMessage" not in second  # said once
        info = json.loads(run_hook(status, b"", env).stdout)
        assert info["requests"] >= 1 and info["sessions"] == 1
    finally:
        run_hook(["--vault", str(vault_dir), "server", "stop"], b"", env)
        shutil.rmtree(runtime, ignore_errors=True)


# -- install: symlinks, other encodings ---------------------------------------------


def test_a_symlinked_settings_file_is_edited_where_it_points(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    dotfiles = repo / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-local.json"
    real.write_text('{"model": "opus"}\n')
    link = repo / ".claude" / "settings.local.json"
    link.symlink_to(real)
    invoke(runner, vault_dir, "hooks", "install", "claude-code", "--dir", str(repo))
    assert link.is_symlink() and os.readlink(link) == str(real)
    data = json.loads(real.read_text())
    assert data["model"] == "opus" and "SessionStart" in data["hooks"]
    invoke(runner, vault_dir, "hooks", "uninstall", "claude-code", "--dir", str(repo))
    assert link.is_symlink() and json.loads(real.read_text()) == {"model": "opus"}


def test_a_project_install_never_writes_outside_the_project(
    runner: CliRunner, vault_dir: Path, tmp_path: Path
) -> None:
    home_claude = tmp_path / "home" / ".claude"
    home_claude.mkdir(parents=True)
    (home_claude / "settings.json").write_text('{"theme": "dark"}\n')
    project = tmp_path / "proj"
    project.mkdir()
    (project / ".claude").symlink_to(home_claude)  # the project's .claude is the global one
    for flag in ("--personal", "--shared"):
        result = runner.invoke(
            main,
            [
                "--vault",
                str(vault_dir),
                "hooks",
                "install",
                "claude-code",
                flag,
                "--dir",
                str(project),
            ],
        )
        assert result.exit_code == 1 and "outside the project" in result.output
        assert "Traceback" not in result.output
    assert [p.name for p in home_claude.iterdir()] == ["settings.json"]
    assert json.loads((home_claude / "settings.json").read_text()) == {"theme": "dark"}


def test_a_settings_file_in_another_encoding_is_a_clear_error(
    runner: CliRunner, vault_dir: Path, repo: Path
) -> None:
    settings = repo / ".claude" / "settings.local.json"
    settings.write_bytes('{"model": "café"}'.encode("latin-1"))
    result = runner.invoke(
        main, ["--vault", str(vault_dir), "hooks", "install", "claude-code", "--dir", str(repo)]
    )
    assert result.exit_code == 1 and "is not UTF-8 text" in result.output
    assert "Traceback" not in result.output
    assert settings.read_bytes() == '{"model": "café"}'.encode("latin-1")


def test_codex_has_no_personal_project_file(runner: CliRunner, vault_dir: Path, repo: Path) -> None:
    result = runner.invoke(
        main,
        ["--vault", str(vault_dir), "hooks", "install", "codex", "--personal", "--dir", str(repo)],
    )
    assert result.exit_code == 1 and "no per-project personal settings file" in result.output
