"""The warm server and its thin client: answers, idle stop, one per vault, private socket."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdmem import InvalidInputError, MdmemError, MemoryNotFoundError, Vault
from mdmem.hookkit.runner import serve_hook
from mdmem.ipc.hostproc import start_time
from mdmem.models import to_jsonable
from mdmem.warm.client import paths_for, request
from mdmem.warm.server import ServerLock, WarmServer


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private socket folder per test (sockaddr_un paths are short)."""
    folder = Path(tempfile.mkdtemp(prefix="mdr"))
    monkeypatch.setenv("MDMEM_RUNTIME_DIR", str(folder / "rt"))
    yield folder / "rt"
    shutil.rmtree(folder, ignore_errors=True)


class Running:
    """A WarmServer serving in a thread, stopped at the end."""

    def __init__(self, server: WarmServer) -> None:
        self.server = server
        server.bind()
        self.thread = threading.Thread(target=server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.stop()
        self.thread.join(10)


@pytest.fixture
def running(vault: Vault) -> Iterator[Running]:
    vault.remember("Launch is May 12", kind="fact")
    vault.remember("The user prefers metric units.", kind="preference")
    run = Running(WarmServer(vault, idle_seconds=60, hooks=serve_hook))
    yield run
    run.close()


def test_ping_recall_and_context_answer_like_the_vault(running: Running, vault: Vault) -> None:
    info = request(vault.root, "ping", timeout=5)
    assert info["pid"] == os.getpid()
    assert info["root"] == os.path.realpath(vault.root)
    assert {"ping", "recall", "context", "stop", "hook"} <= set(info["methods"])

    got = request(vault.root, "recall", {"query": "when is the launch", "k": 3}, timeout=10)
    direct = to_jsonable(vault.recall("when is the launch", k=3))
    assert [h["id"] for h in got["items"]] == [h["id"] for h in direct["items"]]
    assert got["items"][0]["text"] == "Launch is May 12"

    ctx = request(vault.root, "context", {"query": "launch", "max_chars": 400}, timeout=10)
    assert ctx["context"].startswith("## Recalled Memory")
    assert "Launch is May 12" in ctx["context"]
    assert ctx["ids"] and ctx["citations"][0].startswith("MEMORY.md#^")


def test_errors_come_back_as_the_same_mdmem_error(running: Running, vault: Vault) -> None:
    with pytest.raises(InvalidInputError, match="unknown method"):
        request(vault.root, "drop_tables", timeout=5)
    with pytest.raises(InvalidInputError, match="unknown recall parameter"):
        request(vault.root, "recall", {"query": "x", "rm": True}, timeout=5)
    running.server.register("get", lambda v, p: v.get(p["id"]))
    with pytest.raises(MemoryNotFoundError):
        request(vault.root, "get", {"id": "m-00000000000000"}, timeout=5)
    # The server is still there after the errors.
    assert request(vault.root, "ping", timeout=5) is not None


def test_a_request_for_another_vault_is_refused(running: Running, vault: Vault) -> None:
    answer = running.server.answer(
        {"v": 1, "root": "/somewhere/else", "method": "ping", "params": {}}
    )
    assert answer["ok"] is False
    assert "serves" in answer["error"]["message"]


def test_socket_is_private(running: Running, vault: Vault, runtime_dir: Path) -> None:
    paths = paths_for(vault.root)
    assert paths.folder == runtime_dir
    assert stat.S_IMODE(os.stat(runtime_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(paths.socket).st_mode) == 0o600
    assert os.stat(paths.socket).st_uid == os.getuid()
    # A folder others can enter is not trusted by the client.
    os.chmod(runtime_dir, 0o755)
    try:
        assert request(vault.root, "ping", timeout=2) is None
    finally:
        os.chmod(runtime_dir, 0o700)
    assert request(vault.root, "ping", timeout=5) is not None


def test_the_socket_is_keyed_by_the_vault_real_path(vault: Vault, tmp_path: Path) -> None:
    link = tmp_path / "link-to-vault"
    link.symlink_to(vault.root)
    assert paths_for(link).socket == paths_for(vault.root).socket
    assert paths_for(tmp_path).socket != paths_for(vault.root).socket


def test_a_connection_from_another_uid_is_refused(vault: Vault) -> None:
    if getattr(socket, "SO_PEERCRED", None) is None:
        pytest.skip("no SO_PEERCRED on this platform")
    run = Running(WarmServer(vault, idle_seconds=60, allowed_uid=os.getuid() + 1))
    try:
        assert request(vault.root, "ping", timeout=3) is None
        assert run.server.refused == 1
        assert run.server.requests == 0
    finally:
        run.close()


def test_no_server_means_none_quickly(vault: Vault) -> None:
    started = time.monotonic()
    assert request(vault.root, "ping", timeout=5) is None
    assert time.monotonic() - started < 1


def test_a_stale_socket_is_none_for_the_client_and_replaced_by_the_server(
    vault: Vault,
) -> None:
    paths = paths_for(vault.root)
    from mdmem.ipc.sockets import ensure_private_folder

    ensure_private_folder(paths.folder)
    # What a killed server leaves: a socket file nobody listens on.
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(paths.socket))
    dead.close()
    assert paths.socket.exists()
    assert request(vault.root, "ping", timeout=2) is None
    run = Running(WarmServer(vault, idle_seconds=60, hooks=serve_hook))
    try:
        assert request(vault.root, "ping", timeout=5)["pid"] == os.getpid()
    finally:
        run.close()
    assert not paths.socket.exists()


def test_a_server_that_does_not_answer_in_time_is_none(vault: Vault) -> None:
    paths = paths_for(vault.root)
    from mdmem.ipc.sockets import ensure_private_folder

    ensure_private_folder(paths.folder)
    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(str(paths.socket))
    mute.listen(1)  # accepts (in the backlog) and never answers
    try:
        started = time.monotonic()
        assert request(vault.root, "ping", timeout=0.4) is None
        assert time.monotonic() - started < 2
    finally:
        mute.close()


def test_one_server_per_vault(running: Running, vault: Vault) -> None:
    assert not ServerLock(paths_for(vault.root)).acquire()
    with pytest.raises(MdmemError, match="already runs"):
        WarmServer(vault, idle_seconds=60, hooks=serve_hook).bind()
    # The first one still answers, and its socket is still there.
    assert request(vault.root, "ping", timeout=5)["pid"] == os.getpid()


def test_idle_server_stops_and_cleans_up(vault: Vault) -> None:
    server = WarmServer(vault, idle_seconds=0.6)
    run = Running(server)
    assert request(vault.root, "ping", timeout=5) is not None
    run.thread.join(10)
    assert not run.thread.is_alive()
    assert not paths_for(vault.root).socket.exists()
    assert request(vault.root, "ping", timeout=1) is None
    # The lock is free again: a new server may start.
    lock = ServerLock(paths_for(vault.root))
    assert lock.acquire()
    lock.release()


def test_stop_method_ends_the_loop(vault: Vault) -> None:
    run = Running(WarmServer(vault, idle_seconds=60, hooks=serve_hook))
    answer = request(vault.root, "stop", timeout=5)
    assert answer == {"stopping": True, "pid": os.getpid(), "busy": []}
    run.thread.join(10)
    assert not run.thread.is_alive()
    assert request(vault.root, "ping", timeout=1) is None


def test_idle_time_must_be_positive(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        WarmServer(vault, idle_seconds=0)


# -- a backbone: no single request stops it or holds up the others ----------------


def raw_request(vault: Vault, data: bytes, timeout: float = 5.0) -> Any:
    """Send ``data`` as it is (no encoding by the client) and read the answer."""
    from mdmem.warm.client import recv_message

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(paths_for(vault.root).socket))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        return recv_message(sock, time.monotonic() + timeout)
    finally:
        sock.close()


def envelope(vault: Vault, method: str, params: Any) -> bytes:
    message = {"v": 1, "root": os.path.realpath(vault.root), "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("depth", [100, 975, 200_000])
def test_a_deeply_nested_request_is_refused_and_the_server_lives(
    running: Running, vault: Vault, depth: int
) -> None:
    nested = b"[" * depth + b"]" * depth
    answer = raw_request(vault, nested + b"\n")
    assert answer["ok"] is False and "nested deeper" in answer["error"]["message"]
    # The same depth inside a well-formed hook payload.
    head = envelope(vault, "hook", {}).rstrip(b"}\n")  # ..."params": {
    answer = raw_request(vault, head + b'"payload": ' + nested + b"}}\n")
    assert answer["ok"] is False and "nested deeper" in answer["error"]["message"]
    assert request(vault.root, "ping", timeout=5)["requests"] >= 2


def test_what_a_handler_raises_is_answered_and_logged(
    running: Running, vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    def recurse(v: Vault, p: dict[str, Any]) -> Any:
        return recurse(v, p)

    def exits(v: Vault, p: dict[str, Any]) -> Any:
        raise SystemExit(3)

    running.server.register("recurse", recurse)
    running.server.register("exits", exits, lane="write")
    with pytest.raises(MdmemError, match="RecursionError"):
        request(vault.root, "recurse", timeout=10)
    # A lane outlives even what a request should never raise; the client gets no answer.
    assert request(vault.root, "exits", timeout=3) is None
    assert request(vault.root, "exits", timeout=3) is None
    assert "request recurse failed" in caplog.text and "Traceback" in caplog.text
    assert request(vault.root, "recall", {"query": "launch"}, timeout=10)["items"]


def test_slow_senders_do_not_hold_up_the_others(
    running: Running, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mdmem.warm.server as ws

    monkeypatch.setattr(ws, "REQUEST_SECONDS", 1.5)
    slow = []
    for _ in range(30):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(paths_for(vault.root).socket))
        sock.sendall(b'{"v": 1, "root": ')  # and never the rest
        slow.append(sock)
    try:
        started = time.monotonic()
        assert request(vault.root, "ping", timeout=5) is not None
        assert time.monotonic() - started < 1.0
        time.sleep(2.5)  # past their deadline: each was dropped
        assert all(s.recv(10) == b"" for s in slow)
        assert request(vault.root, "ping", timeout=5)["dropped"] >= 30
    finally:
        for sock in slow:
            sock.close()


def test_an_oversized_request_is_dropped(
    running: Running, vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mdmem.warm.server as ws

    monkeypatch.setattr(ws, "MAX_REQUEST", 64 * 1024)
    big = envelope(vault, "recall", {"query": "x" * 200_000})
    with pytest.raises((OSError, ValueError)):
        raw_request(vault, big)
    assert request(vault.root, "ping", timeout=5)["dropped"] == 1


def test_a_hundred_clients_at_once_are_all_answered(running: Running, vault: Vault) -> None:
    answers: list[Any] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        method, params = ("recall", {"query": "launch", "k": 2}) if i % 2 else ("ping", {})
        got = request(vault.root, method, params, timeout=30)
        with lock:
            answers.append(got)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 100 and all(a is not None for a in answers)


def test_a_long_write_does_not_delay_a_read(running: Running, vault: Vault) -> None:
    def timed_recall() -> float:
        started = time.monotonic()
        got = request(vault.root, "recall", {"query": "when is the launch"}, timeout=30)
        assert got["items"]
        return time.monotonic() - started

    timed_recall()  # the first one opens what recall needs
    release = threading.Event()
    running.server.register("slow_write", lambda v, p: release.wait(60), lane="write")
    writer = threading.Thread(
        target=request, args=(vault.root, "slow_write"), kwargs={"timeout": 90}
    )
    writer.start()
    try:
        time.sleep(0.3)
        assert timed_recall() < 20  # not the minute the write takes, even on a loaded machine
        info = request(vault.root, "ping", timeout=5)
        assert [b["method"] for b in info["busy"]] == ["slow_write"]
    finally:
        release.set()
        writer.join(30)


def test_stop_while_a_request_is_stuck(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    import mdmem.warm.server as ws

    monkeypatch.setattr(ws, "STOP_GRACE_SECONDS", 0.5)
    server = WarmServer(vault, idle_seconds=60, hooks=serve_hook)
    stuck = threading.Event()
    server.register("stuck", lambda v, p: stuck.wait(30), lane="write")
    result: list[bool] = []
    server.bind()
    thread = threading.Thread(target=lambda: result.append(server.serve_forever()), daemon=True)
    thread.start()
    client = threading.Thread(target=request, args=(vault.root, "stuck"), kwargs={"timeout": 30})
    client.start()
    try:
        time.sleep(0.3)
        info = request(vault.root, "ping", timeout=2)  # status: answered, and it says why
        assert info is not None and info["busy"][0]["method"] == "stuck"
        answer = request(vault.root, "stop", timeout=2)
        assert answer["stopping"] and answer["busy"]
        thread.join(5)
        assert not thread.is_alive() and result == [False]  # it says the request never ended
        assert not paths_for(vault.root).socket.exists()
    finally:
        stuck.set()
        client.join(10)


def test_the_server_stays_while_a_host_session_lives(vault: Vault) -> None:
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server = WarmServer(vault, idle_seconds=0.5)
        run = Running(server)
        start = start_time(host.pid)
        server.sessions.note(
            {
                "host": "claude-code",
                "event": "session-start",
                "payload": {"session_id": "s1"},
                "client": {"host_pid": host.pid, "host_start": start},
            }
        )
        time.sleep(2.0)
        assert run.thread.is_alive()  # idle, but a session is open
        assert request(vault.root, "ping", timeout=5)["sessions"] == 1
        host.kill()
        host.wait()
        run.thread.join(10)
        assert not run.thread.is_alive()  # the host is gone: idle stop
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()


def test_a_session_end_lets_the_idle_stop_come(vault: Vault) -> None:
    server = WarmServer(vault, idle_seconds=0.5)
    note = {"host": "codex", "payload": {"session_id": "s2"}, "client": {"host_pid": os.getpid()}}
    server.sessions.note({**note, "event": "session-start"})
    assert server.sessions.open_count() == 1
    server.sessions.note({**note, "event": "session-end"})
    assert server.sessions.open_count() == 0
