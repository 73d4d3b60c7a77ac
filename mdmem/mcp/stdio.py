"""The MCP server's stdio transport: one JSON-RPC message a line, and an answer to every bad one.

The SDK's own stdio transport hands a line it cannot validate to the server as
an exception, which the server only logs: a request with a lone surrogate
escape, nesting deeper than its parser allows, or a non-object line never
gets a reply, and the client waits forever. Here each line is screened
(:func:`screen_line`) before the server sees it:

* bytes that are not UTF-8, or text that is not JSON: parse error (-32700);
* not a JSON-RPC request (an array, a number, a string, no ``"jsonrpc":
  "2.0"``, an id that is not a string or an integer, no method name):
  invalid request (-32600);
* a request whose params are not an object, nest deeper than
  :data:`MAX_DEPTH`, or hold a lone surrogate (``"\\ud800"``: not a
  character, so not storable as UTF-8) or a number out of float range:
  invalid params (-32602);
* a line longer than :data:`MAX_LINE_BYTES`: invalid request, its remainder
  skipped.

The reply carries the request's id whenever it can be read from the line (the
top-level ``"id"``, found without parsing the nested parts), so the client's
waiting call ends; otherwise ``null``, as JSON-RPC says. A bad notification or
response gets no reply (JSON-RPC forbids one) and is logged. Then the next line
is served as usual.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "PARSE_ERROR",
    "Screened",
    "refuse_invalid",
    "screen_line",
    "stdio_transport",
]

log = logging.getLogger("mdmem.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# No tool argument needs more; the SDK's own JSON parser gives up a little
# deeper, and Python's recursion limit near 1,000.
MAX_DEPTH = 64
# Tool texts are capped far below this (20k characters); a line this long is
# refused without being parsed, and its rest is read past.
MAX_LINE_BYTES = 16 * 1024 * 1024
_SKIM_BYTES = 64 * 1024  # of an oversized line, what is kept to find its id
_DRAIN_SECONDS = 5.0
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Screened:
    """What one line is: a message to serve, an error to send back, or neither."""

    message: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # a JSON-RPC error response


def screen_line(raw: bytes, *, truncated: bool = False) -> Screened | None:
    """Screen one line of the wire (None: a blank line, nothing to do).

    ``truncated``: ``raw`` is the start of a line longer than
    :data:`MAX_LINE_BYTES`; it is refused with the id read from that start.
    """
    line = raw.strip()
    if not line:
        return None
    if truncated:
        text = line.decode("utf-8", errors="replace")
        return _refuse(_skim(text), INVALID_REQUEST, f"request larger than {MAX_LINE_BYTES} bytes")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        lenient = line.decode("utf-8", errors="replace")
        return _refuse(_envelope(lenient), PARSE_ERROR, f"not UTF-8 (byte {exc.start})")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        head = _skim(text)
        code = INVALID_PARAMS if "params" in head.deep else INVALID_REQUEST
        return _refuse(head, code, f"nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:  # JSONDecodeError, NaN, an integer of 5,000 digits
        return _refuse(_skim(text), PARSE_ERROR, f"not JSON: {_reason(exc)}")
    return _screen_value(value)


def _screen_value(value: Any) -> Screened:
    if not isinstance(value, dict):
        what = "a batch (array)" if isinstance(value, list) else f"a JSON {_kind(value)}"
        return _refuse(_Head(), INVALID_REQUEST, f"expected a JSON-RPC object, got {what}")
    problem = _problem_in(value)
    if problem is None and "params" in value and not isinstance(value["params"], dict):
        problem = ("params", "params must be an object")
    if problem is None:
        return Screened(message=value)
    where, why = problem
    return _refuse(_head_of(value), INVALID_PARAMS if where == "params" else INVALID_REQUEST, why)


def refuse_invalid(message: dict[str, Any], exc: Exception) -> Screened:
    """The answer to a screened message that the SDK's models still refused."""
    errors = getattr(exc, "errors", None)
    first = errors()[0] if callable(errors) and errors() else {}
    loc = [str(p) for p in first.get("loc", ())]
    why = _clean(f"{'.'.join(loc)}: {first.get('msg', exc)}" if loc else str(exc), 200)
    code = INVALID_PARAMS if "params" in loc and "method" in message else INVALID_REQUEST
    return _refuse(_head_of(message), code, why or "not a JSON-RPC message")


@dataclass
class _Head:
    """The top-level members of a message that decide how to answer it."""

    jsonrpc: Any = None
    id: str | int | None = None  # usable as the reply's id
    has_id: bool = False
    method: Any = None
    response: bool = False
    deep: frozenset[str] = frozenset()  # top-level keys whose value is an array/object


def _refuse(head: _Head, code: int, why: str) -> Screened:
    if isinstance(head.method, str) and not head.has_id:
        log.warning("dropped a malformed notification %.80r: %s", head.method, why)
        return Screened()  # a notification is never answered
    if head.method is None and head.has_id and head.response:
        log.warning("dropped a malformed response to request %r: %s", head.id, why)
        return Screened()  # nor is a response
    error = {"code": code, "message": _MESSAGES[code] + f": {why}"}
    return Screened(error={"jsonrpc": "2.0", "id": head.id, "error": error})


_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid request",
    INVALID_PARAMS: "Invalid params",
}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{_clean(exc.msg, 120)} (character {exc.pos})"
    return _clean(str(exc), 120)


def _clean(text: str, limit: int) -> str:
    """Text safe to echo: no surrogates, one line, at most ``limit`` characters."""
    return " ".join(_SURROGATE.sub("\ufffd", text).split())[:limit]


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number"


def _usable_id(value: Any) -> str | int | None:
    """A request id the reply can carry back (MCP: a string or an integer)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and not _SURROGATE.search(value):
        return value
    return None


def _problem_in(message: dict[str, Any]) -> tuple[str, str] | None:
    """(where, what) of the first thing in ``message`` that the server cannot
    take: the envelope, or a value too deep, not a character or out of range."""
    if message.get("jsonrpc") != "2.0":
        return "envelope", '"jsonrpc" must be "2.0"'
    if "id" in message and _usable_id(message["id"]) is None:
        if isinstance(message["id"], str):  # one the reply could not echo back
            return "envelope", "the id holds a lone surrogate (\\ud800-\\udfff)"
        return "envelope", "the id must be a string or an integer"
    method = message.get("method")
    if method is None and not ("id" in message and ("result" in message or "error" in message)):
        return "envelope", "no method"
    if method is not None and not isinstance(method, str):
        return "envelope", "the method must be a string"
    # Iterative, so depth costs no recursion; (value, depth, top-level key).
    stack: list[tuple[Any, int, str]] = [(v, 1, k) for k, v in message.items()]
    stack += [(k, 1, k) for k in message]
    while stack:
        value, depth, top = stack.pop()
        where = "params" if top == "params" else "envelope"
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return where, "a string holds a lone surrogate (\\ud800-\\udfff), not a character"
        elif isinstance(value, float):
            if not math.isfinite(value):
                return where, "a number is out of range"
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                return where, f"nested deeper than {MAX_DEPTH} levels"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((item, depth + 1, top))
                if isinstance(key, str):
                    stack.append((key, depth + 1, top))
    return None


def _head_of(message: dict[str, Any]) -> _Head:
    return _Head(
        jsonrpc=message.get("jsonrpc"),
        id=_usable_id(message.get("id")),
        has_id="id" in message,
        method=message.get("method"),
        response="result" in message or "error" in message,
    )


def _envelope(text: str) -> _Head:
    """The head of a line that may be JSON once its bad bytes are replaced."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (RecursionError, ValueError):
        return _skim(text)
    return _head_of(value) if isinstance(value, dict) else _Head()


# A JSON string (unrolled, so a megabyte string costs no backtracking), an
# opening or closing bracket, a comma or colon, or a scalar: groups 1 to 5.
_TOKEN = re.compile(
    r'\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([\[{])|([\]}])|([,:])|([^\s"\[\]{},:]+))', re.S
)
_STRING, _OPEN, _CLOSE, _PUNCT, _SCALAR = 1, 2, 3, 4, 5
# How much of a line the skim reads: clients write "id" before "params", and
# the skim stays a fraction of a second on any line.
_SKIM_CHARS = 1 << 20


def _skim(text: str) -> _Head:
    """The top-level members of a JSON object read without parsing the nested
    ones: what :func:`json.loads` could not give (too deep, broken, cut off).
    Stops at the first thing that is not JSON and returns what it found."""
    head = _Head()
    deep: set[str] = set()
    end = min(len(text), _SKIM_CHARS)
    pos = 0

    def take() -> tuple[int, str]:
        # Token by token from where the last one ended (never searching
        # ahead): an unterminated string then costs one pass, not one per quote.
        nonlocal pos
        match = _TOKEN.match(text, pos, end)
        if match is None or match.lastindex is None:
            pos = end
            return 0, ""
        pos = match.end()
        return match.lastindex, match.group(match.lastindex)

    if take() != (_OPEN, "{"):
        return head
    while True:
        kind, raw = take()
        if kind != _STRING:
            break
        key = _loads(raw)
        if take() != (_PUNCT, ":"):
            break
        kind, raw = take()
        if kind == _OPEN:
            deep.add(str(key))
            level = 1
            while level:  # skip the nested value: count brackets only
                kind, _ = take()
                if not kind:
                    break
                level += 1 if kind == _OPEN else -1 if kind == _CLOSE else 0
            if level:
                break
        elif kind in (_STRING, _SCALAR):
            value = _loads(raw)
            if key == "jsonrpc":
                head.jsonrpc = value
            elif key == "id":
                head.has_id = True
                head.id = _usable_id(value)
            elif key == "method":
                head.method = value
        else:
            break
        if key in ("result", "error"):
            head.response = True
        if take() != (_PUNCT, ","):
            break
    head.deep = frozenset(deep)
    return head


def _loads(token: str) -> Any:
    try:
        return json.loads(token, parse_constant=_no_constant)
    except (RecursionError, ValueError):
        return None


# ---------------------------------------------------------------- transport --


def _claim_stdio() -> tuple[BinaryIO, BinaryIO, Any]:
    """The wire as private copies of fds 0 and 1, which now point at /dev/null
    and stderr: stray reads and prints of any library cannot touch the protocol."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)

    def restore() -> None:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)

    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"), restore


def _read_line(stream: BinaryIO) -> tuple[bytes, bool]:
    """One line (b"" at the end of input) and whether it was cut at the limit."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line, False
    head = line[:_SKIM_BYTES]
    while line and not line.endswith(b"\n"):
        line = stream.readline(MAX_LINE_BYTES)  # read past the rest of it
    return head, True


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) of ``SessionMessage`` for ``Server.run``,
    over ``stdin``/``stdout`` (default: the process's, claimed; see
    :func:`_claim_stdio`). Errors for bad lines go straight to the writer."""
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    restore = None
    if stdin is None or stdout is None:
        stdin, stdout, restore = _claim_stdio()
    wire_in, wire_out = stdin, stdout
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    errors_send = write_send.clone()

    async def reader() -> None:
        async with read_send, errors_send:
            while True:
                raw, cut = await anyio.to_thread.run_sync(
                    _read_line, wire_in, abandon_on_cancel=True
                )
                if not raw:
                    return
                screened = screen_line(raw, truncated=cut)
                if screened is None:
                    continue
                reply = screened.error
                if screened.message is not None:
                    try:
                        message = types.jsonrpc_message_adapter.validate_python(
                            screened.message, by_name=False
                        )
                    except Exception as exc:  # the SDK's models said no: say why
                        reply = refuse_invalid(screened.message, exc).error
                    else:
                        await read_send.send(SessionMessage(message))
                        continue
                if reply is not None:
                    error = types.JSONRPCError.model_validate(reply)
                    await errors_send.send(SessionMessage(error))

    async def writer() -> None:
        async with write_recv:
            async for item in write_recv:
                data = _dump(item.message, types)
                await anyio.to_thread.run_sync(_write, wire_out, data)

    reading = anyio.CancelScope()

    async def read_until_stopped() -> None:
        with reading:
            await reader()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_until_stopped)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                # Stop reading, then let the writer send what is queued: it
                # ends once both senders are closed. A wire that takes no
                # more output does not hold the exit up for long.
                reading.cancel()
                await write_send.aclose()
                tg.cancel_scope.deadline = anyio.current_time() + _DRAIN_SECONDS
    finally:
        if restore is not None:
            restore()


def _dump(message: Any, types: Any) -> bytes:
    """A message as one line; if it cannot be written (a string that is not
    text), an internal error for its request instead of a dead writer."""
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
        return (text + "\n").encode("utf-8")
    except Exception as exc:  # the client must get an answer, not a silence
        log.error("could not write a reply: %r", exc)
        request_id = getattr(message, "id", None)
        error = {"code": INTERNAL_ERROR, "message": "Internal error: the reply was not valid text"}
        reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
        return (json.dumps(reply) + "\n").encode("utf-8")


def _write(stream: BinaryIO, data: bytes) -> None:
    stream.write(data)
    stream.flush()
