"""A real, scripted HTTP server speaking the OpenAI protocol.

Tests, examples and demos point the real ``openai`` SDK at it instead of
mocking the SDK, so retries, timeouts, status codes and JSON parsing are
exercised exactly as they are against a provider::

    with ScriptedOpenAIServer(["hello", Reply(status=429), {"a": 1}]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x")
        ...
        srv.requests   # every request seen: path, parsed body, headers

Endpoints: ``POST /v1/chat/completions`` (non-streaming only),
``POST /v1/embeddings`` and ``GET /v1/models``. Chat replies come from the
scripted queue, then from ``responder(body)``, then from a default echo.

Run standalone (for demos) with ``python -m mdmem.testing.openai_server
--port 8765``; that uses :func:`rule_based_responder`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedOpenAIServer", "hash_embedding", "main", "rule_based_responder"]

log = logging.getLogger("mdmem.testing.openai_server")

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "not_found"),
    408: ("timeout", "timeout"),
    409: ("conflict", "conflict"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}


@dataclass
class Reply:
    """One scripted answer to a chat-completions request.

    ``content`` is the assistant message for a 2xx status; for an error status
    it becomes the ``error.message`` of an OpenAI-style error body.
    ``tool_calls`` (OpenAI shape: ``{"id", "type": "function", "function":
    {"name", "arguments"}}``) makes the reply a tool-call turn: the message
    carries them and ``finish_reason`` is ``"tool_calls"``.
    """

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] | None = None


def _as_reply(value: Reply | str | dict[str, Any]) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    if isinstance(value, dict):
        return Reply(content=json.dumps(value))
    raise TypeError(f"a scripted reply must be Reply, str or dict, not {type(value).__name__}")


def _text_of(content: Any) -> str:
    """Text of a message ``content``: a string or a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return str(content)


def _approx_tokens(text: str) -> int:
    # Crude but deterministic, so clients can assert exact usage totals.
    return len(text) // 4


def hash_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector for ``text`` (stable across processes).

    Words are feature-hashed into signed buckets, so texts sharing words get a
    positive cosine; a small whole-string component keeps distinct strings
    distinct. Not a semantic model - just enough structure for tests.
    """
    if dim < 1:
        raise ValueError("dim must be >= 1")
    vec = [0.0] * dim
    for token in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dim
        vec[bucket] += 1.0 if digest[4] & 1 else -1.0
    # Whole-string component: a pseudo-random direction seeded by the text.
    noise_weight = 0.1 if any(vec) else 1.0
    seed = hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()
    stream = b""
    counter = 0
    while len(stream) < 4 * dim:
        stream += hashlib.blake2b(seed + counter.to_bytes(4, "little"), digest_size=64).digest()
        counter += 1
    for i in range(dim):
        raw = int.from_bytes(stream[4 * i : 4 * i + 4], "little")
        vec[i] += noise_weight * (raw / 0xFFFFFFFF * 2.0 - 1.0)
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


_JSON_EXAMPLE = re.compile(r"\{.*\}", re.DOTALL)


def rule_based_responder(body: dict[str, Any]) -> Reply:
    """A deterministic stand-in model for demos.

    When JSON is asked for (``response_format`` json_object, or "json" in a
    system message), answers a valid JSON object: the first JSON object example
    found in the system prompt if there is one, else a minimal
    ``{"result": "ok", "summary": ...}``. Otherwise answers a short extractive
    summary of the last user message.
    """
    messages = body.get("messages") or []
    system = "\n".join(
        _text_of(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "system"
    )
    last_user = ""
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            last_user = _text_of(m.get("content"))
            break
    rf = body.get("response_format")
    wants_json = (isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema")) or (
        "json" in system.lower()
    )
    excerpt = " ".join(last_user.split())[:200]
    if wants_json:
        for match in _JSON_EXAMPLE.finditer(system):
            try:
                example = json.loads(match.group(0))
            except ValueError:
                continue
            if isinstance(example, dict):
                return Reply(content=json.dumps(example))
        return Reply(content=json.dumps({"result": "ok", "summary": excerpt}))
    return Reply(content=f"Summary: {excerpt}" if excerpt else "OK.")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default backlog of 5 drops bursts of parallel connects into 1 s SYN retries.
    request_queue_size = 128
    owner: ScriptedOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0 closes every connection after its response, so no idle
    # keep-alive thread can keep answering after stop().
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    # -- plumbing ---------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{self.server.owner._next_id()}")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (e.g. its timeout fired during a scripted delay).
            pass

    def _send_error(
        self, status: int, message: str | None, headers: dict[str, str] | None = None
    ) -> None:
        err_type, code = _ERROR_TYPES.get(
            status, ("server_error" if status >= 500 else "error", None)
        )
        if message is None:
            try:
                message = HTTPStatus(status).phrase
            except ValueError:
                message = f"HTTP {status}"
        body = {"error": {"message": message, "type": err_type, "param": None, "code": code}}
        self._send_json(status, body, headers)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        return json.loads(raw.decode("utf-8"))

    def _record(self, body: Any) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.owner._record({"path": self.path, "body": body, "headers": headers})

    # -- verbs ------------------------------------------------------------
    def do_GET(self) -> None:
        self._record(None)
        path = self.path.split("?", 1)[0].rstrip("/")
        owner = self.server.owner
        if path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [owner._model_card()]})
        elif path == f"/v1/models/{owner.model}":
            self._send_json(200, owner._model_card())
        else:
            self._send_error(404, f"no route GET {path}")

    def do_POST(self) -> None:
        try:
            body = self._read_body()
        except (ValueError, UnicodeDecodeError) as exc:
            self._record(None)
            self._send_error(400, f"request body is not valid JSON: {exc}")
            return
        self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if not isinstance(body, dict):
            self._send_error(400, "request body must be a JSON object")
        elif path == "/v1/chat/completions":
            self._chat(body)
        elif path == "/v1/embeddings":
            self._embeddings(body)
        else:
            self._send_error(404, f"no route POST {path}")

    def _chat(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        if body.get("stream"):
            self._send_error(400, "stream=true is not supported by ScriptedOpenAIServer")
            return
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            self._send_error(400, "'messages' must be a non-empty list")
            return
        try:
            reply = owner._next_reply(body)
        except Exception as exc:  # a broken responder must not kill the server
            log.exception("scripted responder failed")
            self._send_error(500, f"responder failed: {type(exc).__name__}: {exc}")
            return
        if reply.delay > 0 and owner._stopping.wait(reply.delay):
            return  # server is stopping: drop the request
        if reply.status >= 400:
            self._send_error(reply.status, reply.content, reply.headers)
            return
        message: dict[str, Any]
        if reply.tool_calls:
            # Like OpenAI, a tool-call turn keeps null content unless the script
            # gave text, so clients see the same shapes they must handle live.
            message = {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": reply.tool_calls,
            }
            finish_reason = "tool_calls"
            completion_text = (reply.content or "") + json.dumps(reply.tool_calls)
        else:
            content = reply.content if reply.content is not None else ""
            message = {"role": "assistant", "content": content}
            finish_reason = "stop"
            completion_text = content
        prompt_text = "".join(_text_of(m.get("content")) for m in messages if isinstance(m, dict))
        prompt_tokens = _approx_tokens(prompt_text)
        completion_tokens = _approx_tokens(completion_text)
        payload = {
            "id": f"chatcmpl-{owner._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or owner.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        self._send_json(reply.status, payload, reply.headers)

    def _embeddings(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(s, str) for s in inputs)
        ):
            self._send_error(400, "'input' must be a string or a non-empty list of strings")
            return
        dim = body.get("dimensions") or owner.embed_dim
        if not isinstance(dim, int) or dim < 1:
            self._send_error(400, "'dimensions' must be a positive integer")
            return
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(inputs):
            vec = hash_embedding(text, dim)
            emb: Any = (
                base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii")
                if as_base64
                else vec
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(_approx_tokens(s) for s in inputs)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or owner.model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


class ScriptedOpenAIServer:
    """Local OpenAI-compatible server answering from a script.

    Use as a context manager, or call :meth:`start` / :meth:`stop` (it can be
    started again after a stop, on the same port). Thread-safe: replies are
    taken from the queue under a lock, one per chat request.
    """

    def __init__(
        self,
        replies: Iterable[Reply | str | dict[str, Any]] | None = None,
        *,
        responder: Callable[[dict[str, Any]], Reply | str | dict[str, Any]] | None = None,
        embed_dim: int = 8,
        model: str = "scripted-model",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.responder = responder
        self.embed_dim = embed_dim
        self.model = model
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Reply] = deque(_as_reply(r) for r in (replies or ()))
        self._lock = threading.Lock()
        self._counter = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- public -----------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not running; call start() first")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def pending(self) -> int:
        """Number of scripted chat replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    def push(self, *replies: Reply | str | dict[str, Any]) -> None:
        """Queue more scripted chat replies (served in order, first in first out)."""
        converted = [_as_reply(r) for r in replies]
        with self._lock:
            self._queue.extend(converted)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The recorded chat-completions requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r["path"].startswith("/v1/chat/completions")]

    def start(self) -> ScriptedOpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping = threading.Event()
        httpd = _Server((self.host, self.port), _Handler)
        httpd.owner = self
        self.port = httpd.server_address[1]  # remember the ephemeral port for restarts
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"ScriptedOpenAIServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()  # release handlers sleeping in a scripted delay
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- used by the handler ----------------------------------------------
    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return _as_reply(self.responder(body))
        return _default_reply(body)

    def _model_card(self) -> dict[str, Any]:
        return {"id": self.model, "object": "model", "created": 0, "owned_by": "mdmem"}


def _default_reply(body: dict[str, Any]) -> Reply:
    last_user = ""
    for m in reversed(body.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            last_user = _text_of(m.get("content"))
            break
    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema"):
        return Reply(content=json.dumps({"echo": last_user}))
    return Reply(content=f"echo: {last_user}")


def main(argv: list[str] | None = None) -> int:
    """Serve a rule-based OpenAI-compatible endpoint until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m mdmem.testing.openai_server",
        description="Local OpenAI-compatible server with a deterministic rule-based model.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--embed-dim", type=int, default=8)
    args = parser.parse_args(argv)
    server = ScriptedOpenAIServer(
        responder=rule_based_responder,
        embed_dim=args.embed_dim,
        model=args.model,
        host=args.host,
        port=args.port,
    )
    server.start()
    print(
        f"serving OpenAI-compatible API at {server.base_url} (model {server.model}); Ctrl-C stops",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
