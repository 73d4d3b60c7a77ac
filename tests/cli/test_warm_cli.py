"""The CLI through the warm server: same output, thin imports, daemon start/stop."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.warm.client import paths_for, request

HEAVY = ("numpy", "whoosh", "faiss", "git", "openai", "mcp", "click", "mdmem.vault", "yaml")


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mdr"))
    monkeypatch.setenv("MDMEM_RUNTIME_DIR", str(folder / "rt"))
    # Scores must not drift with the clock between the two runs compared.
    monkeypatch.setenv("MDMEM_RECALL_RECENCY_WEIGHT", "0")
    yield folder / "rt"
    shutil.rmtree(folder, ignore_errors=True)


def mdmem(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mdmem", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=180,
    )


@pytest.fixture
def daemon(vault: Vault) -> Iterator[Path]:
    """A vault with a few memories and its warm server running (stopped at the end)."""
    vault.remember("Launch is May 12", kind="fact", tags=("launch",))
    vault.remember("The user prefers metric units.", kind="preference")
    vault.log("Met Dana about the launch checklist", category="Meeting")
    root = vault.root
    vault.close()
    started = mdmem("--vault", str(root), "serve", "--daemon", "--idle", "120")
    assert started.returncode == 0, started.stderr
    assert "running (pid" in started.stdout
    info = request(root, "ping", timeout=10)
    assert info is not None
    yield root
    if request(root, "stop", timeout=5) is None:
        # The test may have stopped it already (then the pid is gone).
        with contextlib.suppress(ProcessLookupError):
            os.kill(info["pid"], signal.SIGTERM)
    deadline = time.monotonic() + 20
    while paths_for(root).socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


READS = [
    ("recall", "when is the launch", "--json"),
    ("recall", "when is the launch"),
    ("recall", "units", "-k", "1", "--kind", "preference", "--json"),
    ("context", "launch", "--json"),
    ("context", "launch", "--max-chars", "80"),  # an error: one line, exit 1
    ("status", "--json"),
    ("get", "m-00000000000000"),  # not found: exit 1
]


def test_reads_through_the_server_print_what_in_process_prints(daemon: Path) -> None:
    before = request(daemon, "ping", timeout=5)["requests"]
    for args in READS:
        warm = mdmem(*args, "--vault", str(daemon))
        cold = mdmem(*args, "--vault", str(daemon), env={"MDMEM_NO_SERVER": "1"})
        assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr), args
        if "--json" in args and args[0] == "recall":
            w, c = json.loads(warm.stdout), json.loads(cold.stdout)
            assert w.pop("took_ms") >= 0 and c.pop("took_ms") >= 0  # time, not content
            assert w == c, args
        elif args[0] == "status":
            w, c = json.loads(warm.stdout), json.loads(cold.stdout)
            assert w["root"] == c["root"] and w["memories"] == c["memories"] == 3
        else:
            assert warm.stdout == cold.stdout, args
    # Each warm call was answered by the server, not by a fallback.
    assert request(daemon, "ping", timeout=5)["requests"] == before + len(READS) + 1


def test_a_memory_written_by_another_process_is_recalled_warm(daemon: Path) -> None:
    wrote = mdmem("--vault", str(daemon), "remember", "The office moved to Lisbon", "--json")
    assert wrote.returncode == 0, wrote.stderr
    memory_id = json.loads(wrote.stdout)["id"]
    got = mdmem("recall", "where is the office", "--json", "--vault", str(daemon))
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["items"][0]["id"] == memory_id
    shown = mdmem("--vault", str(daemon), "get", memory_id, "--json")
    assert json.loads(shown.stdout)["text"] == "The office moved to Lisbon"


def test_warm_cli_call_imports_nothing_heavy(daemon: Path) -> None:
    code = (
        "import sys\n"
        f"sys.argv = ['mdmem', 'recall', 'launch', '--json', '--vault', {str(daemon)!r}]\n"
        "from mdmem.__main__ import run\n"
        "try:\n    run()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["items"][0]["text"].startswith("Launch is May 12")
    assert result.stderr.strip() == "[]"


def test_second_start_finds_the_first_and_stop_stops_it(daemon: Path) -> None:
    pid = request(daemon, "ping", timeout=5)["pid"]
    again = mdmem("--vault", str(daemon), "serve", "--daemon")
    assert again.returncode == 0, again.stderr
    assert f"already runs for {daemon} (pid {pid})" in again.stdout
    status = mdmem("--vault", str(daemon), "server", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["pid"] == pid
    # `server run` itself refuses while the first holds the lock.
    second = mdmem("--vault", str(daemon), "server", "run", "--idle", "5")
    assert second.returncode == 3 and "already runs" in second.stderr
    stopped = mdmem("--vault", str(daemon), "server", "stop", "--json")
    assert json.loads(stopped.stdout)["stopped"] is True
    assert request(daemon, "ping", timeout=1) is None
    status = mdmem("--vault", str(daemon), "server", "status")
    assert status.returncode == 1 and "no warm server" in status.stdout


def test_thin_client_and_import_mdmem_load_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "import mdmem\n"
        "from mdmem.warm.client import request\n"
        "request('.', 'ping', timeout=0.1)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "from mdmem import Vault, InvalidInputError, KINDS\n"
        "print(Vault.__name__, InvalidInputError.__name__, 'fact' in KINDS)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "Vault InvalidInputError True"]


def test_serve_daemon_on_a_folder_that_is_not_a_vault(tmp_path: Path) -> None:
    result = mdmem("--vault", str(tmp_path), "serve", "--daemon")
    assert result.returncode == 1
    assert "mdmem init" in result.stderr


def test_warnings_logged_while_the_server_runs_a_command_reach_the_caller(daemon: Path) -> None:
    # A file the catalog must skip (a NUL byte: not text), first seen by the command
    # below: in its own process the warning goes to stderr, so through the server it must too.
    (daemon / "notes-broken.md").write_bytes(b"# Notes\n\x00 not text\n")
    warm = mdmem("recall", "launch", "--vault", str(daemon))
    assert warm.returncode == 0, warm.stderr
    assert "WARNING: skipping notes-broken.md" in warm.stderr
    cold = mdmem("recall", "launch", "--vault", str(daemon), env={"MDMEM_NO_SERVER": "1"})
    assert cold.stderr == warm.stderr
    assert cold.stdout == warm.stdout
    # -q keeps it to errors, as in-process.
    (daemon / "other-broken.md").write_bytes(b"\x00\x01")
    quiet = mdmem("-q", "recall", "launch", "--vault", str(daemon))
    assert quiet.returncode == 0 and quiet.stderr == ""
    status = json.loads(mdmem("status", "--json", "--vault", str(daemon)).stdout)
    assert "other-broken.md" in status["skipped"]


def test_a_caller_with_other_settings_is_not_answered_with_the_servers(daemon: Path) -> None:
    other = {"MDMEM_RECALL_K": "1"}  # the server was started without it (k = 5)
    warm = mdmem("recall", "launch", "--json", "--vault", str(daemon), env=other)
    cold = mdmem("recall", "launch", "--json", "--vault", str(daemon),
                 env={**other, "MDMEM_NO_SERVER": "1"})
    assert warm.returncode == cold.returncode == 0, warm.stderr
    w, c = json.loads(warm.stdout), json.loads(cold.stdout)
    w.pop("took_ms"), c.pop("took_ms")
    assert w == c and len(w["items"]) == 1
    # --agent goes in-process too: `status` names the agent.
    named = mdmem("--agent", "someone-else", "status", "--json", "--vault", str(daemon))
    assert json.loads(named.stdout)["agent"] == "someone-else"


def test_mdmem_server_auto_starts_one_for_the_next_calls(vault: Vault) -> None:
    vault.remember("Launch is May 12", kind="fact")
    root = vault.root
    vault.close()
    auto = {"MDMEM_SERVER": "auto", "MDMEM_SERVER_IDLE": "60"}
    first = mdmem("recall", "launch", "--json", "--vault", str(root), env=auto)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["items"][0]["text"].startswith("Launch is May 12")
    deadline = time.monotonic() + 120
    info = None
    while info is None and time.monotonic() < deadline:
        info = request(root, "ping", timeout=1)
        time.sleep(0.2)
    assert info is not None, "no server came up"
    try:
        # Started with MDMEM_SERVER=auto, it still serves a caller without it.
        second = mdmem("recall", "launch", "--json", "--vault", str(root))
        assert json.loads(second.stdout)["items"] == json.loads(first.stdout)["items"]
        assert request(root, "ping", timeout=5)["requests"] >= 2  # it answered the second
        assert info["idle_seconds"] == 60
    finally:
        if request(root, "stop", timeout=5) is None:
            os.kill(info["pid"], signal.SIGTERM)


def test_a_script_with_the_old_entry_point_is_served_too(daemon: Path) -> None:
    """`mdmem` scripts installed before the entry point moved call mdmem.cli:main."""
    before = request(daemon, "ping", timeout=5)["requests"]
    code = (
        "import sys\n"
        f"sys.argv = ['mdmem', 'recall', 'launch', '--json', '--vault', {str(daemon)!r}]\n"
        "from mdmem.cli import main\n"
        "sys.exit(main())\n"
    )
    old = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert old.returncode == 0, old.stderr
    assert request(daemon, "ping", timeout=5)["requests"] == before + 2  # its call, and ours
    cold = mdmem("recall", "launch", "--json", "--vault", str(daemon),
                 env={"MDMEM_NO_SERVER": "1"})
    w, c = json.loads(old.stdout), json.loads(cold.stdout)
    w.pop("took_ms"), c.pop("took_ms")
    assert w == c


def test_an_idle_daemon_process_exits_and_removes_its_socket(vault: Vault) -> None:
    root = vault.root
    vault.close()
    started = mdmem("--vault", str(root), "serve", "--daemon", "--idle", "2")
    assert started.returncode == 0, started.stderr
    pid = request(root, "ping", timeout=5)["pid"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.kill(pid, signal.SIGTERM)
        pytest.fail("the idle server process did not exit")
    assert not paths_for(root).socket.exists()
    assert request(root, "ping", timeout=1) is None


@pytest.mark.slow
def test_status_and_stop_are_right_while_a_long_capture_runs(daemon: Path, tmp_path: Path) -> None:
    import threading

    transcript = tmp_path / "long.jsonl"
    with transcript.open("w", encoding="utf-8") as f:
        for i in range(1500):
            role = "user" if i % 2 == 0 else "assistant"
            message = {"role": role, "content": f"Turn {i}: the orders table moves to cents."}
            f.write(json.dumps({"type": role, "uuid": f"t{i}", "message": message}) + "\n")
    payload = {
        "session_id": "long",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    }
    params = {"host": "claude-code", "event": "pre-compact", "payload": payload}
    params["policy"] = {"capture": "everything"}
    capture = threading.Thread(
        target=request, args=(daemon, "hook", params), kwargs={"timeout": 600}
    )
    capture.start()
    try:
        busy: list[dict[str, object]] = []
        deadline = time.monotonic() + 60
        while not busy and time.monotonic() < deadline:
            status = mdmem("--vault", str(daemon), "server", "status", "--json")
            assert status.returncode == 0, status.stderr  # answered while the write runs
            busy = json.loads(status.stdout)["busy"]
        assert busy and busy[0]["method"] == "hook pre-compact" and busy[0]["lane"] == "write"
        human = mdmem("--vault", str(daemon), "server", "status").stdout
        assert "running: hook pre-compact (write)" in human
        stopped = mdmem("--vault", str(daemon), "server", "stop", "--json")
        data = json.loads(stopped.stdout)
        # It waited for the capture (up to its grace), and then the process was gone.
        assert data["stopped"] is True or data.get("still_running") is True
        if data["stopped"]:
            gone = mdmem("--vault", str(daemon), "server", "status", "--json")
            assert gone.returncode == 1 and json.loads(gone.stdout)["running"] is False
    finally:
        capture.join(600)
