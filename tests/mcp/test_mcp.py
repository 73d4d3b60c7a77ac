"""The MCP server, driven by a real MCP client session over stdio (and HTTP)."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

import mdmem.cli.serve  # noqa: F401 - registers `serve` on the CLI group
from mdmem import InvalidInputError, MdmemError, ScopeDeniedError, Vault
from mdmem.cli import main
from mdmem.mcp.server import MCP_TOOLS, core_resources, read_resource_text
from mdmem.mcp.tools import Toolset
from tests.mcp_client import server_params


def _line(vault: Vault, path: str, line: int) -> str:
    return (vault.root / path).read_text(encoding="utf-8").splitlines()[line - 1]


def test_stdio_session_lists_remembers_recalls_reads_and_refuses(vault: Vault) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    vault.remember("Bob's salary is 90k.", scope="user:bob")
    seen: dict[str, Any] = {}

    async def session() -> None:
        params = server_params(vault, "root", "user:alice")
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = (await client.list_tools()).tools
                seen["tools"] = {t.name: t for t in tools}

                stored = await client.call_tool(
                    "remember", {"content": "The user prefers metric units.", "kind": "preference"}
                )
                seen["stored"] = stored
                seen["recalled"] = await client.call_tool("recall", {"query": "metric units"})
                seen["widened"] = await client.call_tool(
                    "recall", {"query": "salary", "scope": "user:bob"}
                )
                seen["write_bob"] = await client.call_tool(
                    "remember", {"content": "Bob is on leave.", "scope": "user:bob"}
                )
                seen["bad_args"] = await client.call_tool("recall", {"top_k": 3})
                seen["context"] = await client.call_tool("context", {"query": "metric units"})
                resources = (await client.list_resources()).resources
                seen["resources"] = [str(r.uri) for r in resources]
                seen["user_md"] = await client.read_resource("mdmem://vault/USER.md")
                try:
                    await client.read_resource("mdmem://vault/scopes/user/bob/USER.md")
                    seen["bob_md"] = "read"
                except MCPError as exc:
                    seen["bob_md"] = str(exc)

    anyio.run(session)

    assert set(seen["tools"]) == set(MCP_TOOLS)
    recall_tool = seen["tools"]["recall"]
    assert recall_tool.input_schema["properties"]["top_k"]["maximum"] == 20
    assert "root, user:alice" in recall_tool.description
    assert recall_tool.description.count("Allowed scopes") == 1

    stored = seen["stored"]
    assert not stored.is_error and stored.structured_content["was_new"] is True
    memory_id = stored.structured_content["id"]

    recalled = seen["recalled"]
    assert not recalled.is_error
    item = recalled.structured_content["items"][0]
    assert item["id"] == memory_id and item["path"] == "USER.md"
    assert f"^{memory_id}" in _line(vault, item["path"], item["line"])
    assert "metric units" in recalled.content[0].text  # the JSON text for plain clients

    for key in ("widened", "write_bob"):
        refused = seen[key]
        assert refused.is_error
        assert refused.structured_content["error"]["type"] == "scope_denied"
        assert "items" not in refused.structured_content
    assert "90k" not in seen["widened"].content[0].text
    bob_file = (vault.root / "scopes" / "user" / "bob" / "MEMORY.md").read_text(encoding="utf-8")
    assert "on leave" not in bob_file
    assert seen["bad_args"].structured_content["error"]["type"] == "invalid_arguments"
    assert seen["context"].structured_content["context"].startswith("## Recalled Memory")

    assert "mdmem://vault/USER.md" in seen["resources"]
    assert "mdmem://vault/scopes/user/alice/USER.md" in seen["resources"]
    assert not any("user/bob" in uri for uri in seen["resources"])
    user_md = seen["user_md"].contents[0].text
    assert "The user prefers metric units." in user_md and f"^{memory_id}" in user_md
    assert "outside the scopes" in seen["bob_md"]


def test_resource_uris_are_confined(vault: Vault) -> None:
    entry = vault.log("Alice called about the invoice.", scope="user:alice")
    vault.log("Bob called about his salary.")
    tools = Toolset(vault, ["user:alice"])
    uris = [r["uri"] for r in core_resources(vault, tools)]
    assert "mdmem://vault/scopes/user/alice/USER.md" in uris
    # "Today" is the vault's today (its configured zone), the day the entry was logged on.
    today = vault.admin.store.clock.today()
    assert f"mdmem://vault/{entry.path}" in uris
    assert entry.path == f"scopes/user/alice/daily/{today}.md"
    for uri in (
        "mdmem://vault/scopes/user/alice/daily/today",
        f"mdmem://vault/scopes/user/alice/daily/{today}.md",
    ):
        text = read_resource_text(vault, tools, uri)
        assert "Alice called about the invoice." in text and "salary" not in text
    for uri in (
        "mdmem://vault/USER.md",  # root is not allowed here
        "mdmem://vault/daily/today",
        "mdmem://vault/scopes/user/bob/USER.md",
    ):
        with pytest.raises(ScopeDeniedError):
            read_resource_text(vault, tools, uri)
    for uri in (
        "mdmem://vault/../../etc/passwd",
        "mdmem://vault/scopes/user/alice/../../../mdmem.toml",
        "mdmem://vault/notes/private.md",
        "file:///etc/passwd",
    ):
        with pytest.raises(InvalidInputError):
            read_resource_text(vault, tools, uri)


def test_serve_without_a_vault_is_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--vault", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error:")
    assert "Traceback" not in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpServer:
    """``mdmem serve`` over HTTP in its own process (TCP with the token, or a unix socket)."""

    def __init__(self, vault: Vault, *args: str) -> None:
        env = {**os.environ, "MDMEM_EMBEDDER_PROVIDER": "hash"}
        cmd = [sys.executable, "-m", "mdmem.cli.serve", "serve", "--vault", str(vault.root)]
        self.proc = subprocess.Popen(
            [*cmd, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def wait(self, connect: Callable[[], None]) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                connect()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    pytest.fail("the HTTP server did not start")
                time.sleep(0.1)

    def close(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=10)
        return err.decode()


def _mcp_recall(url: str, client: Any) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    out: dict[str, Any] = {}

    async def session() -> None:
        async with (
            client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as mcp,
        ):
            await mcp.initialize()
            out["recall"] = await mcp.call_tool("recall", {"query": "office wifi"})

    anyio.run(session)
    return out["recall"]


def test_streamable_http_needs_the_users_token(vault: Vault) -> None:
    import httpx2

    from mdmem.mcp.http import token_path

    vault.remember("The office wifi is called Nebula.")
    port = _free_port()
    server = HttpServer(vault, "--http", "--port", str(port))
    try:
        server.wait(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.2).close())
        path = token_path()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        token = path.read_text().strip()
        url = f"http://127.0.0.1:{port}/mcp"
        # A real MCP client with the token: answered.
        good = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        result = _mcp_recall(url, good)
        assert "Nebula" in result.structured_content["items"][0]["content"]
        # Without it (another user, any local process): refused before MCP sees it.
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            answer = httpx2.post(url, json=hello, headers=headers, timeout=10)
            assert answer.status_code == 401 and answer.headers["www-authenticate"]
            assert "Nebula" not in answer.text
        with pytest.raises(Exception):  # noqa: B017 - the SDK's own error type varies
            _mcp_recall(url, httpx2.AsyncClient(timeout=10))
    finally:
        err = server.close()
    assert str(token_path()) in err  # the server says where the token is, never the token
    assert token not in err


def test_a_token_file_others_could_read_is_replaced(tmp_path: Path) -> None:
    from mdmem.mcp.http import ensure_token

    path = tmp_path / "cfg" / "token"
    token, how = ensure_token(path)
    assert how == "created" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_token(path) == (token, "read")
    os.chmod(path, 0o644)
    renewed, how = ensure_token(path)
    assert how == "renewed" and renewed != token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(MdmemError, match="not a plain file"):
        ensure_token(path)


def test_streamable_http_on_a_private_unix_socket(vault: Vault) -> None:
    import tempfile

    import httpx2

    vault.remember("The office wifi is called Nebula.")
    folder = Path(tempfile.mkdtemp(prefix="mdm"))
    path = folder / "private" / "mcp.sock"
    server = HttpServer(vault, "--socket", str(path))

    def connect() -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        finally:
            sock.close()

    try:
        server.wait(connect)
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        transport = httpx2.AsyncHTTPTransport(uds=str(path))
        client = httpx2.AsyncClient(transport=transport, timeout=30)
        result = _mcp_recall("http://localhost/mcp", client)
        assert "Nebula" in result.structured_content["items"][0]["content"]
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_connection_from_another_user_is_closed_on_the_socket() -> None:
    from mdmem.mcp.http import peer_checked_protocol

    if getattr(socket, "SO_PEERCRED", None) is None:
        pytest.skip("no SO_PEERCRED on this platform")

    class Transport:
        closed = False

        def __init__(self, sock: socket.socket) -> None:
            self.sock = sock

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return self.sock if name == "socket" else default

        def close(self) -> None:
            self.closed = True

    ours, theirs = socket.socketpair()
    try:
        foreign = peer_checked_protocol(os.getuid() + 1)
        protocol = foreign.__new__(foreign)
        transport = Transport(ours)
        protocol.connection_made(transport)
        assert transport.closed  # as if another user had connected: no answer at all
    finally:
        ours.close()
        theirs.close()
