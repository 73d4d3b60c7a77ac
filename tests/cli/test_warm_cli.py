"""The CLI through the warm server: same output, thin imports, daemon start/stop."""

from __future__ import annotations

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
from mdmem.agent.warm import paths_for, request

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
        "from mdmem.agent.warm import request\n"
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
