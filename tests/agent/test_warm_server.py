"""The warm server and its thin client: answers, idle stop, one per vault, private socket."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdmem import InvalidInputError, MdmemError, MemoryNotFoundError, Vault
from mdmem.agent.warm import paths_for, request
from mdmem.agent.warm_server import ServerLock, WarmServer
from mdmem.models import to_jsonable


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
    run = Running(WarmServer(vault, idle_seconds=60))
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
    from mdmem.agent.warm_server import ensure_private_folder

    ensure_private_folder(paths.folder)
    # What a killed server leaves: a socket file nobody listens on.
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(paths.socket))
    dead.close()
    assert paths.socket.exists()
    assert request(vault.root, "ping", timeout=2) is None
    run = Running(WarmServer(vault, idle_seconds=60))
    try:
        assert request(vault.root, "ping", timeout=5)["pid"] == os.getpid()
    finally:
        run.close()
    assert not paths.socket.exists()


def test_a_server_that_does_not_answer_in_time_is_none(vault: Vault) -> None:
    paths = paths_for(vault.root)
    from mdmem.agent.warm_server import ensure_private_folder

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
        WarmServer(vault, idle_seconds=60).bind()
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
    run = Running(WarmServer(vault, idle_seconds=60))
    assert request(vault.root, "stop", timeout=5) == {"stopping": True, "pid": os.getpid()}
    run.thread.join(10)
    assert not run.thread.is_alive()
    assert request(vault.root, "ping", timeout=1) is None


def test_idle_time_must_be_positive(vault: Vault) -> None:
    with pytest.raises(InvalidInputError):
        WarmServer(vault, idle_seconds=0)
