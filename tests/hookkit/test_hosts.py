"""Each host is one module with recorded payloads; what differs between hosts is data."""

from __future__ import annotations

import json
import pkgutil
from dataclasses import replace
from pathlib import Path

import pytest

import mdmem.hookkit.hosts as hosts_pkg
from mdmem.hookkit.hosts import (
    HOSTS,
    Fields,
    can_inject,
    context_of,
    parse_input,
    render_output,
)

DATA = Path(__file__).parent / "data" / "hooks"


def test_every_host_module_is_registered() -> None:
    modules = {m.name for m in pkgutil.iter_modules(hosts_pkg.__path__)} - {"base"}
    registered = {h.name.replace("-", "_") for h in HOSTS.values()}
    assert modules == registered


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_every_event_of_a_host_has_a_recorded_payload(name: str) -> None:
    host = HOSTS[name]
    for event in host.events:
        path = DATA / f"{name}.{event}.json"
        assert path.exists(), f"{path.name}: record the host's stdin for this event"
        data = json.loads(
            path.read_text(encoding="utf-8").replace("{CWD}", "/w").replace("{TRANSCRIPT}", "")
        )
        assert data.get("hook_event_name") == host.native(event), path.name
        parsed = parse_input(name, event, data)
        assert parsed.host == name and parsed.session_id != "unknown", path.name


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_an_answer_carries_context_exactly_where_the_host_reads_it(name: str) -> None:
    for event in HOSTS[name].events:
        out = render_output(name, event, context="CTX", notice="")
        assert json.loads(out) is not None
        assert (context_of(name, out) == "CTX") == can_inject(name, event), (name, event)


def test_cursor_differs_by_data_not_by_branches() -> None:
    cursor, claude = HOSTS["cursor"], HOSTS["claude-code"]
    assert not can_inject("cursor", "prompt-submit") and can_inject("claude-code", "prompt-submit")
    assert json.loads(render_output("cursor", "stop", notice="hi")) == {}
    assert json.loads(render_output("cursor", "pre-compact", notice="hi")) == {"user_message": "hi"}
    assert json.loads(render_output("claude-code", "stop", notice="hi")) == {"systemMessage": "hi"}
    assert cursor.fields.tool_output == "tool_output"
    assert claude.fields.tool_output == "tool_response"
    shell = parse_input("cursor", "post-tool-use", {"command": "ls", "output": "a b"})
    assert shell.tool_name == "Shell" and shell.tool_output == "a b"
    assert parse_input("claude-code", "post-tool-use", {"command": "ls"}).tool_name is None


def test_a_host_that_names_its_fields_otherwise_needs_no_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # parse_input reads where the Host says, not where Claude Code or Cursor keep things.
    other = replace(
        HOSTS["claude-code"],
        name="other",
        fields=Fields(
            session=("thread",),
            cwd=("roots",),
            folder_lists=frozenset({"roots"}),
            transcript="log",
            prompt="text",
            tool_name="tool",
            tool_input="args",
            tool_output="result",
            error="failure",
            call_id="call",
            interrupted="stopped",
            refused=("why", "denied"),
        ),
    )
    monkeypatch.setitem(HOSTS, "other", other)
    data = {
        "thread": "t-1",
        "roots": ["/work/p", "/work/q"],
        "log": "/tmp/t.jsonl",
        "text": "hello",
        "tool": "Bash",
        "args": {"command": "make"},
        "result": "ok",
        "failure": "boom",
        "call": "c-9",
        "why": "denied",
        # Claude Code's names mean nothing for this host.
        "session_id": "s-claude",
        "cwd": "/elsewhere",
        "prompt": "not this",
        "tool_response": "not this",
        "is_interrupt": False,
    }
    inp = parse_input("other", "post-tool-failure", data)
    assert (inp.session_id, inp.cwd, inp.transcript_path) == ("t-1", "/work/p", "/tmp/t.jsonl")
    assert (inp.tool_name, inp.tool_input, inp.tool_output) == ("Bash", {"command": "make"}, "ok")
    assert (inp.error, inp.call_id, inp.interrupted) == ("boom", "c-9", True)
    assert parse_input("other", "prompt-submit", data).prompt == "hello"
    assert parse_input("other", "stop", {"session_id": "s"}).session_id == "unknown"
