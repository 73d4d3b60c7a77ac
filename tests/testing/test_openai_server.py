"""The scripted OpenAI-compatible server, exercised over real HTTP with the real SDK."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from mdmem.testing import Reply, ScriptedOpenAIServer, rule_based_responder
from mdmem.testing.openai_server import hash_embedding

USER: Any = [{"role": "user", "content": "hello there, server"}]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def sdk(srv: ScriptedOpenAIServer, **kw: Any) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-test", **kw)


def post(url: str, body: Any, timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# -- chat ---------------------------------------------------------------------


def test_chat_serves_queue_in_order_then_default_echo(server: ScriptedOpenAIServer) -> None:
    server.push("first", {"answer": 42}, Reply(content="third"))
    client = sdk(server)
    got = [
        client.chat.completions.create(model="m", messages=USER).choices[0].message.content
        for _ in range(4)
    ]
    assert got[0] == "first"
    assert json.loads(got[1] or "") == {"answer": 42}
    assert got[2] == "third"
    assert got[3] == "echo: hello there, server"
    assert server.pending == 0


def test_chat_response_shape_usage_and_recorded_request(server: ScriptedOpenAIServer) -> None:
    server.push("abcdefghij")  # 10 chars -> 2 completion tokens
    client = sdk(server)
    resp = client.chat.completions.create(model="my-model", messages=USER, temperature=0.3)
    assert resp.model == "my-model"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.choices[0].message.role == "assistant"
    assert resp.usage is not None
    assert resp.usage.prompt_tokens == len("hello there, server") // 4
    assert resp.usage.completion_tokens == 10 // 4
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens

    [req] = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["messages"] == USER
    assert req["body"]["temperature"] == 0.3
    assert req["headers"]["authorization"] == "Bearer sk-test"


def test_reply_with_tool_calls_reaches_the_sdk_as_a_tool_call_turn(
    server: ScriptedOpenAIServer,
) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "recall", "arguments": json.dumps({"query": "cat"})},
    }
    server.push(Reply(tool_calls=[call]), Reply(content="Checking.", tool_calls=[call]))
    client = sdk(server)
    bare = client.chat.completions.create(model="m", messages=USER).choices[0]
    assert bare.finish_reason == "tool_calls"
    assert bare.message.content is None
    assert bare.message.tool_calls is not None
    [got] = bare.message.tool_calls
    assert got.type == "function"
    assert (got.id, got.function.name) == ("call_1", "recall")
    assert json.loads(got.function.arguments) == {"query": "cat"}
    with_text = client.chat.completions.create(model="m", messages=USER).choices[0]
    assert with_text.finish_reason == "tool_calls"
    assert with_text.message.content == "Checking."


def test_responder_is_used_when_queue_is_empty(server: ScriptedOpenAIServer) -> None:
    seen: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> str:
        seen.append(body)
        return f"model={body['model']}"

    server.responder = responder
    server.push("queued")
    client = sdk(server)
    first = client.chat.completions.create(model="a", messages=USER).choices[0].message.content
    second = client.chat.completions.create(model="b", messages=USER).choices[0].message.content
    assert (first, second) == ("queued", "model=b")
    assert len(seen) == 1


def test_failing_responder_gives_500_and_server_survives(server: ScriptedOpenAIServer) -> None:
    def boom(body: dict[str, Any]) -> str:
        raise RuntimeError("scripted failure")

    server.responder = boom
    status, body = post(server.base_url + "/chat/completions", {"model": "m", "messages": USER})
    assert status == 500
    assert "scripted failure" in body["error"]["message"]
    server.responder = None
    status, body = post(server.base_url + "/chat/completions", {"model": "m", "messages": USER})
    assert status == 200


def test_stream_true_is_rejected_with_400(server: ScriptedOpenAIServer) -> None:
    status, body = post(
        server.base_url + "/chat/completions", {"model": "m", "messages": USER, "stream": True}
    )
    assert status == 400
    assert "stream" in body["error"]["message"]
    with pytest.raises(openai.BadRequestError):
        sdk(server).chat.completions.create(model="m", messages=USER, stream=True)


def test_bad_requests_get_openai_style_errors(server: ScriptedOpenAIServer) -> None:
    status, body = post(server.base_url + "/chat/completions", {"model": "m"})
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = post(server.base_url + "/nope", {"x": 1})
    assert status == 404 and "error" in body
    req = urllib.request.Request(server.base_url + "/embeddings", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 400


# -- scripted errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_scripted_error_status_maps_to_sdk_exception(
    server: ScriptedOpenAIServer, status: int, exc_type: type[Exception]
) -> None:
    server.push(Reply(status=status, content=f"scripted {status}"))
    with pytest.raises(exc_type) as info:
        sdk(server).chat.completions.create(model="m", messages=USER)
    assert f"scripted {status}" in str(info.value)


def test_error_body_and_custom_headers(server: ScriptedOpenAIServer) -> None:
    server.push(Reply(status=429, headers={"retry-after": "7"}))
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps({"model": "m", "messages": USER}).encode(),
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 429
    assert info.value.headers["retry-after"] == "7"
    body = json.loads(info.value.read())
    assert body["error"]["code"] == "rate_limit_exceeded"
    assert body["error"]["message"] == "Too Many Requests"


def test_sdk_retries_through_scripted_429(server: ScriptedOpenAIServer) -> None:
    server.push(Reply(status=429, headers={"retry-after-ms": "10"}), "recovered")
    resp = sdk(server, max_retries=2).chat.completions.create(model="m", messages=USER)
    assert resp.choices[0].message.content == "recovered"
    assert len(server.chat_requests()) == 2


def test_delay_makes_client_time_out(server: ScriptedOpenAIServer) -> None:
    server.push(Reply(content="too late", delay=2.0))
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        sdk(server, timeout=0.3).chat.completions.create(model="m", messages=USER)
    assert time.monotonic() - start < 1.5


# -- embeddings and models --------------------------------------------------------


def test_embeddings_list_input_deterministic_unit_vectors(server: ScriptedOpenAIServer) -> None:
    client = sdk(server)
    texts = ["the cat sat on the mat", "the cat sat on a mat", "quarterly tax filing deadline"]
    resp = client.embeddings.create(model="emb", input=texts)
    vecs = [d.embedding for d in resp.data]
    assert [d.index for d in resp.data] == [0, 1, 2]
    assert all(len(v) == server.embed_dim for v in vecs)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5) for v in vecs)
    again = client.embeddings.create(model="emb", input=texts[0]).data[0].embedding
    assert again == pytest.approx(vecs[0], abs=1e-6)
    # Stable across server instances and processes (hash based, not hash()).
    assert hash_embedding(texts[0], 8) == pytest.approx(vecs[0], abs=1e-6)
    assert resp.usage.prompt_tokens == sum(len(t) // 4 for t in texts)
    assert vecs[0] != pytest.approx(vecs[1], abs=1e-6)


def test_embeddings_share_words_means_closer() -> None:
    a = hash_embedding("alice prefers metric units and dark mode", 64)
    b = hash_embedding("alice prefers metric units", 64)
    c = hash_embedding("the deploy pipeline failed on friday", 64)
    assert cosine(a, b) > cosine(a, c) + 0.2


def test_embeddings_float_and_base64_formats_and_dimensions(
    server: ScriptedOpenAIServer,
) -> None:
    url = server.base_url + "/embeddings"
    status, body = post(url, {"model": "e", "input": "hi there", "encoding_format": "float"})
    assert status == 200
    floats = body["data"][0]["embedding"]
    status, body = post(url, {"model": "e", "input": "hi there", "encoding_format": "base64"})
    raw = base64.b64decode(body["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(floats)}f", raw)) == pytest.approx(floats, abs=1e-6)
    status, body = post(url, {"model": "e", "input": ["x"], "dimensions": 32})
    assert len(body["data"][0]["embedding"]) == 32
    status, body = post(url, {"model": "e", "input": [1, 2]})
    assert status == 400


def test_custom_embed_dim_and_models_endpoint() -> None:
    with ScriptedOpenAIServer(embed_dim=384, model="tiny") as srv:
        client = sdk(srv)
        assert len(client.embeddings.create(model="x", input="a").data[0].embedding) == 384
        assert [m.id for m in client.models.list().data] == ["tiny"]
        assert client.models.retrieve("tiny").id == "tiny"


# -- concurrency and lifecycle ------------------------------------------------------


def test_ten_parallel_requests_each_get_one_distinct_reply() -> None:
    replies = [Reply(content=f"reply-{i}", delay=0.3) for i in range(10)]
    with ScriptedOpenAIServer(replies) as srv:
        client = sdk(srv)

        def ask(_: int) -> str:
            resp = client.chat.completions.create(model="m", messages=USER)
            return resp.choices[0].message.content or ""

        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=10) as pool:
            got = list(pool.map(ask, range(10)))
        elapsed = time.monotonic() - start
        assert sorted(got) == sorted(f"reply-{i}" for i in range(10))
        assert len(srv.chat_requests()) == 10
        assert srv.pending == 0
        # Ten 0.3 s replies served one at a time would take 3 s.
        assert elapsed < 2.0


def test_push_is_thread_safe_under_concurrent_consumers() -> None:
    with ScriptedOpenAIServer() as srv:
        client = sdk(srv)
        pushers = [
            threading.Thread(target=srv.push, args=tuple(f"p{t}-{i}" for i in range(5)))
            for t in range(4)
        ]
        for t in pushers:
            t.start()
        for t in pushers:
            t.join()
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(
                pool.map(
                    lambda _: (
                        client.chat.completions.create(model="m", messages=USER)
                        .choices[0]
                        .message.content
                        or ""
                    ),
                    range(20),
                )
            )
        assert sorted(got) == sorted(f"p{t}-{i}" for t in range(4) for i in range(5))


def test_stop_refuses_connections_and_restart_reuses_port() -> None:
    srv = ScriptedOpenAIServer(["before"])
    srv.start()
    url = srv.base_url
    assert sdk(srv).chat.completions.create(model="m", messages=USER).choices[0].message.content
    srv.stop()
    assert not srv.running
    with pytest.raises(urllib.error.URLError):
        post(url + "/chat/completions", {"model": "m", "messages": USER}, timeout=2)
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.push("after")
    srv.start()
    try:
        assert srv.base_url == url
        resp = sdk(srv).chat.completions.create(model="m", messages=USER)
        assert resp.choices[0].message.content == "after"
    finally:
        srv.stop()
    srv.stop()  # idempotent


def test_stop_does_not_wait_for_scripted_delays() -> None:
    srv = ScriptedOpenAIServer([Reply(content="slow", delay=30)])
    srv.start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            post(srv.base_url + "/chat/completions", {"model": "m", "messages": USER}, timeout=40)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=call)
    t.start()
    while not srv.chat_requests():
        time.sleep(0.01)
    start = time.monotonic()
    srv.stop()
    t.join(timeout=5)
    assert time.monotonic() - start < 3
    assert not t.is_alive()
    assert errors  # the in-flight request was dropped, not answered


# -- rule-based responder and standalone main ----------------------------------------


def test_rule_based_responder_answers_json_when_asked() -> None:
    body = {
        "messages": [
            {"role": "system", "content": 'Return JSON like {"facts": [], "title": ""}.'},
            {"role": "user", "content": "Alice moved to Lisbon."},
        ]
    }
    reply = rule_based_responder(body)
    assert json.loads(reply.content or "") == {"facts": [], "title": ""}
    body["messages"][0]["content"] = "Answer in JSON."
    assert json.loads(rule_based_responder(body).content or "")["summary"].startswith("Alice")
    plain = rule_based_responder({"messages": [{"role": "user", "content": "Note this."}]})
    assert plain.content == "Summary: Note this."
    json_mode = rule_based_responder(
        {"messages": plain_messages(), "response_format": {"type": "json_object"}}
    )
    assert isinstance(json.loads(json_mode.content or ""), dict)


def plain_messages() -> list[dict[str, Any]]:
    return [{"role": "user", "content": "hi"}]


def test_module_main_serves_standalone() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mdmem.testing.openai_server", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"(http://\S+/v1)", line)
        assert match, line
        status, body = post(
            match.group(1) + "/chat/completions",
            {
                "model": "m",
                "messages": [
                    {"role": "system", "content": "Reply with a JSON object."},
                    {"role": "user", "content": "remember the milk"},
                ],
            },
        )
        assert status == 200
        assert isinstance(json.loads(body["choices"][0]["message"]["content"]), dict)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
