"""Hooks never stall the host, whatever the warm server does.

A fake server on the vault's real socket takes every connection and then never
answers, answers only after 30 s, or sends half an answer (and holds on, or hangs
up). Each hook event, run as the host runs it (``python -m mdmem hook``), answers
within its budget with exit 0 and the host's JSON; the first run finds the server
wedged (no answer, and no answer to a ping either) and marks it, the next runs
skip it without connecting, and a capture nobody answered is still made, by a
child process the host does not wait for. A real server that is only busy is
told apart: late, not wedged, and it finishes the capture it took.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.hookkit.hosts import host
from mdmem.hookkit.log import HookLog
from mdmem.ipc.sockets import ensure_private_folder
from mdmem.warm.client import PING_SECONDS, WEDGED_SECONDS, ask, ask_within, paths_for
from tests.conftest import git

DATA = Path(__file__).parent / "data" / "hooks"
REPO = Path(__file__).resolve().parents[2]
EVENTS = tuple(host("claude-code").events)
CAPTURES = tuple(e for e in EVENTS if e not in ("session-start", "prompt-submit"))
#: What a hook may wait on the server, by its default budgets: prompt_latency_ms
#: (300) and the socket's 0.1 s, or hook_latency_ms (1000); a late answer's ping
#: comes on top of the first and is part of the second.
BUDGET = {e: 0.3 + 0.1 + PING_SECONDS if e == "prompt-submit" else 1.0 for e in EVENTS}
#: The rest of a hook run: Python's start and mdmem's imports, on a loaded machine.
SLACK = 2.0
KINDS = ("mute", "slow", "half", "cut")
HALF = b'{"ok": true, "result": "{\\"hookSpecificOutput'  # no end, no newline


class FakeServer:
    """A real unix socket at ``path`` that takes connections and then, per ``kind``:
    ``mute`` never answers, ``slow`` answers after 30 s, ``half`` sends half an
    answer and holds on, ``cut`` sends half an answer and hangs up."""

    def __init__(self, path: Path, kind: str) -> None:
        self.kind = kind
        self.accepted: list[float] = []  # monotonic times
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(time.monotonic())
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            conn.recv(1 << 20)  # the request (it was taken; nothing is done with it)
            if self.kind == "slow" and not self._stop.wait(30):
                conn.sendall(b'{"ok": true, "result": "{}"}\n')
            elif self.kind in ("half", "cut"):
                conn.sendall(HALF)
                if self.kind == "cut":
                    conn.close()
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for conn in self._conns:
            conn.close()
        self._thread.join(5)


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short socket folder (sockaddr_un holds about 100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="mdr"))
    monkeypatch.setenv("MDMEM_RUNTIME_DIR", str(folder / "rt"))
    try:
        yield folder / "rt"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fake(vault: Vault, kind: str) -> FakeServer:
    paths = paths_for(vault.root)
    ensure_private_folder(paths.folder)
    paths.socket.unlink(missing_ok=True)
    return FakeServer(paths.socket, kind)


def marker(vault: Vault) -> Path:
    paths = paths_for(vault.root)
    return paths.folder / f"{paths.key}.wedged"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")  # a project: outside a repository the hooks capture nothing
    return path


def payload(event: str, cwd: Path) -> bytes:
    text = (DATA / f"claude-code.{event}.json").read_text(encoding="utf-8")
    return text.replace("{CWD}", str(cwd)).replace("{TRANSCRIPT}", "").encode()


def run_hook(
    vault: Vault, event: str, cwd: Path, root: Path | None = None
) -> tuple[dict[str, Any], float]:
    """The host's run of one hook: its answer, and how long the host waited for it
    (exit and the end of stdout and stderr: a child still holding them would count)."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mdmem", "--vault", str(root or vault.root), "hook", event],
        input=payload(event, cwd),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        timeout=300,
    )
    took = time.monotonic() - started
    assert proc.returncode == 0 and not proc.stderr, (event, proc.stderr.decode())
    answer = json.loads(proc.stdout)
    assert isinstance(answer, dict), (event, answer)
    return answer, took


def hook_runs(vault: Vault, event: str) -> int:
    return sum(1 for e in HookLog(vault.admin.state_dir).entries() if e.get("event") == event)


def wait_for(what: str, check: Any, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.1)


# -- the client's verdict ----------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_wedged_server_is_marked_once_and_then_skipped(
    vault: Vault, runtime: Path, kind: str
) -> None:
    server = fake(vault, kind)
    try:
        started = time.monotonic()
        assert ask_within(vault.root, "hook", {}, timeout=0.3) == ("wedged", None)
        took = time.monotonic() - started
        assert len(server.accepted) == 2  # the request, then a ping
        assert took < 0.3 + PING_SECONDS + 0.5
        assert marker(vault).is_file()
        for _ in range(3):
            assert ask_within(vault.root, "hook", {}, timeout=0.3) == ("skipped", None)
        assert len(server.accepted) == 2  # not asked again
        # Once the mark is old, the server is given another chance (and found wedged).
        old = time.time() - WEDGED_SECONDS - 1
        os.utime(marker(vault), (old, old))
        assert ask_within(vault.root, "hook", {}, timeout=0.3) == ("wedged", None)
        assert len(server.accepted) == 4
    finally:
        server.close()
    # A server started since (another socket) is asked, the mark notwithstanding.
    again = fake(vault, kind)
    try:
        assert marker(vault).is_file()
        assert ask_within(vault.root, "hook", {}, timeout=0.3) == ("wedged", None)
        assert len(again.accepted) == 2
    finally:
        again.close()


def test_a_busy_server_is_late_not_wedged_and_finishes_the_capture(
    vault: Vault, runtime: Path
) -> None:
    from mdmem.warm.server import WarmServer

    release = threading.Event()
    done: list[str] = []

    def slow_hooks(vault: Vault, params: dict[str, Any], *, pause: Any = None) -> str:
        release.wait(60)  # a long capture: the write lane is busy, the server's loop is not
        done.append(str(params.get("event")))
        return "{}"

    server = WarmServer(vault, idle_seconds=60, hooks=slow_hooks)
    server.bind()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        params = {"event": "stop"}
        assert ask_within(vault.root, "hook", params, timeout=0.3) == ("late", None)
        assert not marker(vault).exists()
        assert ask_within(vault.root, "hook", params, timeout=0.3) == ("late", None)
        release.set()
        wait_for("the server finishes both captures", lambda: done == ["stop", "stop"], 30)
        assert ask(vault.root, "ping", timeout=5)[1]["requests"] == 5  # 2 hooks, 2 pings, this
    finally:
        release.set()
        server.stop()
        thread.join(10)


# -- the host's view ---------------------------------------------------------------


def check_every_event(vault: Vault, repo: Path, server: FakeServer) -> None:
    for event in EVENTS:
        marker(vault).unlink(missing_ok=True)  # each event meets the wedged server first
        before = len(server.accepted)
        answer, took = run_hook(vault, event, repo)
        assert took < BUDGET[event] + SLACK, (event, took)
        asked = server.accepted[before:]
        assert len(asked) == 2, event  # the hook, then a ping
        # The ping came when the hook's own wait ended, not later.
        assert asked[1] - asked[0] < BUDGET[event] + 0.5, (event, asked[1] - asked[0])
        assert "answered neither it nor a ping" in answer["systemMessage"], event
        if event == "prompt-submit":
            context = answer["hookSpecificOutput"]["additionalContext"]
            assert "degraded" in context and "not answering" in context
        # The next run skips it: no connection, no notice again.
        answer, took = run_hook(vault, event, repo)
        assert took < BUDGET[event] + SLACK, (event, took)
        assert len(server.accepted) == before + 2, event
        assert "systemMessage" not in answer, (event, answer)


@pytest.mark.parametrize(
    "kind", [pytest.param(k, marks=[] if k == "mute" else pytest.mark.slow) for k in KINDS]
)
def test_every_event_answers_within_its_budget_whatever_the_server_does(
    vault: Vault, runtime: Path, repo: Path, kind: str
) -> None:
    server = fake(vault, kind)
    try:
        check_every_event(vault, repo, server)
        # Each capture ran twice, each time in a child the host did not wait for:
        # they are made (logged in the vault's hook log) all the same.
        for event in CAPTURES:
            wait_for(f"{event} captured", lambda e=event: hook_runs(vault, e) == 2)
    finally:
        server.close()
    assert {e: hook_runs(vault, e) for e in ("session-start", "prompt-submit")} == {
        "session-start": 0,
        "prompt-submit": 0,
    }  # no cold in-process run behind the host's back


def test_a_capture_the_host_did_not_wait_for_is_made(
    vault: Vault, runtime: Path, repo: Path
) -> None:
    server = fake(vault, "mute")
    try:
        # The vault is busy (another writer holds its lock): the capture has to wait
        # for it, and the host must not.
        with vault.batch():
            answer, took = run_hook(vault, "post-tool-use", repo)
            assert took < BUDGET["post-tool-use"] + SLACK, took
            assert "answered neither" in answer["systemMessage"]
            assert vault.library.list(kinds="gotcha") == []
        wait_for("the gotcha", lambda: hook_runs(vault, "post-tool-use") == 1)
        vault.admin.refresh()
        [gotcha] = vault.library.list(kinds="gotcha")
        assert "test_checkout.py::test_total" in gotcha.text
    finally:
        server.close()


def test_a_vault_named_through_a_link_is_asked_once(
    vault: Vault, runtime: Path, repo: Path, tmp_path: Path
) -> None:
    link = tmp_path / "memory-link"
    link.symlink_to(vault.root)
    server = fake(vault, "mute")
    try:
        answer, took = run_hook(vault, "session-start", repo, root=link)
        # The fast path's verdict holds for the cold path: one wait, not two.
        assert len(server.accepted) == 2
        assert took < BUDGET["session-start"] + SLACK, took
        assert "answered neither it nor a ping" in answer["systemMessage"]
    finally:
        server.close()
