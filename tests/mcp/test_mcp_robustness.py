"""The MCP server answers every malformed line over stdio, then keeps serving.

Raw JSON-RPC lines are written to a real ``mdmem serve`` subprocess: each
hostile line must get its error reply within a few seconds (a client waits for
the reply to its request id), and a normal ``tools/call`` must work after them.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.mcp.stdio import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_DEPTH,
    MAX_LINE_BYTES,
    PARSE_ERROR,
    screen_line,
)

REPLY_SECONDS = 5.0


class RawClient:
    """JSON-RPC over the server's stdin/stdout, one line at a time, no SDK."""

    def __init__(self, vault: Vault) -> None:
        env = {
            **os.environ,
            "MDMEM_EMBEDDER_PROVIDER": "hash",
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mdmem.cli.serve", "serve", "--vault", str(vault.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._buffer = b""

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode())

    def receive(self, timeout: float = REPLY_SECONDS) -> dict[str, Any] | None:
        """The next line the server writes, or None if none comes in time."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def call(self, message: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        self.send_json(message)
        reply = self.receive(timeout)
        assert reply is not None, f"no reply to {message['method']}"
        return reply

    def initialize(self) -> None:
        reply = self.call(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "1"},
                },
            },
            timeout=60.0,  # the first reply waits for the server to open the vault
        )
        assert "result" in reply, reply
        self.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def client(vault: Vault) -> Iterator[RawClient]:
    vault.remember("The user prefers metric units.", kind="preference")
    raw = RawClient(vault)
    try:
        raw.initialize()
        yield raw
    finally:
        raw.close()


def _call_tool(request_id: object, name: str, arguments: object) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message).encode()


def _recall_works(client: RawClient, request_id: int) -> None:
    reply = client.call(
        json.loads(_call_tool(request_id, "recall", {"query": "metric units"}).decode())
    )
    assert reply["id"] == request_id and not reply["result"]["isError"], reply
    items = reply["result"]["structuredContent"]["items"]
    assert items and "metric units" in items[0]["content"]


NESTED = b"[" * 10_000 + b"]" * 10_000
# (name, the raw line, the id its reply carries, the error code)
HOSTILE: list[tuple[str, bytes, object, int]] = [
    (
        "lone surrogate in an argument",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        b'"params":{"name":"remember","arguments":{"content":"a \\ud800 b"}}}',
        1,
        INVALID_PARAMS,
    ),
    (
        "lone surrogate in a key",
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
        b'"params":{"name":"recall","arguments":{"\\udc00":1,"query":"x"}}}',
        2,
        INVALID_PARAMS,
    ),
    (
        "lone surrogate in the method",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/\\ud800"}',
        3,
        INVALID_REQUEST,
    ),
    (
        "10,000 nested arrays",
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"recall",'
        b'"arguments":{"query":"x","tags":' + NESTED + b"}}}",
        4,
        INVALID_PARAMS,
    ),
    (
        "10,000 nested objects, the id after them",
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get","arguments":{"id":"m-1",'
        b'"x":' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b'}},"id":5}',
        5,
        INVALID_PARAMS,
    ),
    (
        "invalid UTF-8 bytes",
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call",'
        b'"params":{"name":"remember","arguments":{"content":"caf\xe9 \xff"}}}',
        6,
        PARSE_ERROR,
    ),
    (
        "a JSON array (a batch)",
        b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]',
        None,
        INVALID_REQUEST,
    ),
    ("a JSON number", b"42", None, INVALID_REQUEST),
    ("a JSON string", b'"tools/list"', None, INVALID_REQUEST),
    ("null", b"null", None, INVALID_REQUEST),
    ("not JSON", b'{"jsonrpc":"2.0","id":8,"method":', 8, PARSE_ERROR),
    ("NaN", b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":NaN}}', 9, PARSE_ERROR),
    (
        "a number out of range",
        b'{"jsonrpc":"2.0","id":10,"method":"tools/call",'
        b'"params":{"name":"recall","arguments":{"query":"x","top_k":1e999}}}',
        10,
        INVALID_PARAMS,
    ),
    (
        "an integer of 5,000 digits",
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call",'
        b'"params":{"name":"recall","arguments":{"query":"x","top_k":' + b"9" * 5000 + b"}}}",
        11,
        PARSE_ERROR,
    ),
    (
        "params not an object",
        b'{"jsonrpc":"2.0","id":12,"method":"tools/list","params":5}',
        12,
        INVALID_PARAMS,
    ),
    ("no jsonrpc member", b'{"id":13,"method":"tools/list"}', 13, INVALID_REQUEST),
    ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, INVALID_REQUEST),
    (
        "an object id",
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
        None,
        INVALID_REQUEST,
    ),
    ("a method that is a number", b'{"jsonrpc":"2.0","id":14,"method":7}', 14, INVALID_REQUEST),
    ("no method", b'{"jsonrpc":"2.0","id":15}', 15, INVALID_REQUEST),
    ("an unknown method", b'{"jsonrpc":"2.0","id":16,"method":"foo/bar"}', 16, -32601),
    (
        "tools/call without a name",
        b'{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{}}',
        17,
        INVALID_PARAMS,
    ),
    (
        "arguments that are a list",
        _call_tool(18, "recall", [1, 2]),
        18,
        INVALID_PARAMS,
    ),
]


def test_every_hostile_line_gets_an_error_reply_and_the_server_keeps_serving(
    client: RawClient,
) -> None:
    for name, line, request_id, code in HOSTILE:
        started = time.monotonic()
        client.send(line)
        reply = client.receive()
        took = time.monotonic() - started
        assert reply is not None, f"{name}: no reply within {REPLY_SECONDS}s"
        assert took < REPLY_SECONDS, name
        assert reply.get("jsonrpc") == "2.0", name
        assert reply.get("id") == request_id, (name, reply)
        assert reply["error"]["code"] == code, (name, reply)
        assert "\n" not in reply["error"]["message"], name
    # Still serving, and nothing of the refused writes reached the vault.
    _recall_works(client, 100)
    reply = client.call(json.loads(_call_tool(101, "recall", {"query": "a b"}).decode()))
    assert reply["result"]["structuredContent"]["items"] == []


def test_a_huge_line_and_a_huge_argument_are_refused_and_serving_goes_on(
    client: RawClient,
) -> None:
    huge = _call_tool(1, "remember", {"content": "x" * 5_000_000})
    reply = client.call(json.loads(huge.decode()))
    assert reply["id"] == 1 and reply["result"]["isError"] is True
    assert reply["result"]["structuredContent"]["error"]["type"] == "invalid_arguments"
    too_long = _call_tool(2, "remember", {"content": "y" * (MAX_LINE_BYTES + 10)})
    client.send(too_long)
    reply = client.receive(timeout=30.0)
    assert reply is not None and reply["id"] == 2
    assert reply["error"]["code"] == INVALID_REQUEST
    _recall_works(client, 3)


def test_a_malformed_notification_gets_no_reply_but_breaks_nothing(client: RawClient) -> None:
    client.send(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"r":"\\ud800"}}')
    client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized","params":' + NESTED + b"}")
    client.send(b"")  # a blank line is not a message either
    reply = client.call({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert reply == {"jsonrpc": "2.0", "id": "after", "result": {}}


# Tool arguments of the wrong type: each a tool result with isError, never a crash.
WRONG_TYPES: list[tuple[str, object]] = [
    ("recall", {"query": ["metric"]}),
    ("recall", {"query": "x", "top_k": True}),
    ("recall", {"query": "x", "top_k": 2.5}),
    ("recall", {"query": "x", "top_k": 10**30}),
    ("recall", {"query": "x", "top_k": -1}),
    ("recall", {"query": "x", "source_kinds": [1, 2]}),
    ("recall", {"query": "x", "source_kinds": {"a": 1}}),
    ("recall", {"query": "x", "scope": 5}),
    ("recall", {"query": "x", "since": 12}),
    ("recall", {"query": None}),
    ("recall", {}),
    ("recall", {"query": "x", "unknown_argument": 1}),
    ("remember", {"content": 5}),
    ("remember", {"content": {"text": "x"}}),
    ("remember", {"content": ""}),
    ("remember", {"content": "ok", "tags": [1, 2]}),
    ("remember", {"content": "ok", "kind": ["fact"]}),
    ("remember", {"content": "ok", "kind": "no-such-kind"}),
    ("forget", {"memory_id": 123}),
    ("forget", {"memory_id": None}),
    ("forget", {"memory_id": "not-an-id"}),
    ("forget", {"memory_id": "m-0123456789ab"}),
    ("get", {"memory_id": ["m-0123456789ab"]}),
    ("get", {"memory_id": "m-0123456789ab"}),
    ("history", {"memory_id": {"x": 1}}),
    ("context", {"query": "x", "max_chars": "many"}),
    ("context", {"query": 3.5}),
    ("reflect", {"query": ""}),
]


def test_tool_arguments_of_the_wrong_type_come_back_as_errors(client: RawClient) -> None:
    for i, (tool, arguments) in enumerate(WRONG_TYPES):
        reply = client.call(json.loads(_call_tool(i, tool, arguments).decode()))
        assert reply["id"] == i, (tool, arguments, reply)
        if "error" in reply:  # refused by the protocol layer
            assert reply["error"]["code"] == INVALID_PARAMS, (tool, arguments, reply)
            continue
        result = reply["result"]
        assert result["isError"] is True, (tool, arguments, reply)
        error = result["structuredContent"]["error"]
        assert error["type"] != "internal_error", (tool, arguments, error)
    _recall_works(client, 1000)


# ------------------------------------------------------ the screen, alone ----


def test_screen_line_passes_good_messages_through_unchanged() -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "caf\u00e9 \U0001f600", "tags": [[1]]}},
    }
    screened = screen_line(json.dumps(message).encode() + b"\r\n")
    assert screened is not None and screened.error is None and screened.message == message
    assert screen_line(b"   \r\n") is None


def test_screen_line_allows_nesting_up_to_the_limit_only() -> None:
    def nested(depth: int) -> bytes:
        # params (1) > arguments (2) > x (3) > ... : `depth` levels in all
        inner = b"[" * (depth - 3) + b"]" * (depth - 3)
        return (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall",'
            b'"arguments":{"query":"q","x":' + inner + b"}}}"
        )

    ok = screen_line(nested(MAX_DEPTH))
    assert ok is not None and ok.error is None
    refused = screen_line(nested(MAX_DEPTH + 1))
    assert refused is not None and refused.error is not None
    assert refused.error["error"]["code"] == INVALID_PARAMS and refused.error["id"] == 1


def test_screen_line_finds_the_top_level_id_not_one_inside_the_arguments() -> None:
    line = (
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get","arguments":'
        b'{"id":"m-inner","x":' + NESTED + b'}},"id":"outer"}'
    )
    screened = screen_line(line)
    assert screened is not None and screened.error is not None
    assert screened.error["id"] == "outer"


def test_screen_line_reads_an_unterminated_line_in_linear_time() -> None:
    # Escaped quotes in a string that never ends: a tokenizer that searched
    # ahead from each quote would take minutes here.
    line = b'{"id":4,"x":"' + b'y\\"' * 2_000_000
    started = time.monotonic()
    screened = screen_line(line)
    assert time.monotonic() - started < REPLY_SECONDS
    assert screened is not None and screened.error is not None
    assert screened.error["id"] == 4 and screened.error["error"]["code"] == PARSE_ERROR
