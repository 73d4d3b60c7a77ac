"""End to end (issue 18, "How it will be checked"): a scripted coding agent over two sessions.

A real local OpenAI-protocol server plays the agent's model (tool calls
from a script) and mdmem's own prompts (summaries, flush). The host loop
records turns and tool outputs, hands every tool call to
``capture_tool_results`` as a post-tool-use hook would, ends each session
through ``MemoryHooks.on_session_end`` and starts each with the
session-start context. Expected: one summary per session, a gotcha and a
linked bug fix, and a session-2 context listing what changed since session 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai import OpenAI

from mdmem import Vault
from mdmem.agent.hooks import MemoryHooks
from mdmem.agent.prompt import prompt_context
from mdmem.memory.capture.toolcalls import ToolCall
from mdmem.testing import Reply, ScriptedOpenAIServer
from tests.agent.scripted_agent import HOST_TOOLS, Repo, tool_call
from tests.llm_fakes import FakeModel, llm_vault, system_of

AGENT_SYSTEM = "You are a coding agent working in a repository."


class Model(FakeModel):
    """mdmem's prompts as FakeModel answers them; the agent's turns from a script."""

    def __init__(self) -> None:
        super().__init__()
        self.script: list[Reply] = []
        self.agent_systems: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = system_of(body)
        if system.startswith(AGENT_SYSTEM):
            self.agent_systems.append(system)
            return self.script.pop(0)
        if "extract durable memories" in system:
            return Reply(content="NONE")
        return super().__call__(body)


def _session(vault: Vault, srv: ScriptedOpenAIServer, repo: Repo, sid: str, task: str) -> str:
    """One agent session, as a host runs it; returns the session-start context."""
    hooks = MemoryHooks(vault, session_id=sid, background=False)
    start = prompt_context(vault, task, session_start=True, session=sid).render()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"{AGENT_SYSTEM}\n\n{start}"},
        {"role": "user", "content": task},
    ]
    model = OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
    session = vault.session(sid)
    for _ in range(10):
        reply = model.chat.completions.create(
            model="local-test",
            messages=messages,  # type: ignore[arg-type]
            tools=HOST_TOOLS,  # type: ignore[arg-type]
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            hooks.on_turn_complete(task, message.content or "")
            break
        messages.append(message.model_dump(exclude_none=True))
        for tc in message.tool_calls:
            args = json.loads(tc.function.arguments)
            output, code = repo.run(tc.function.name, args)
            session.record_tool_output(tc.function.name, output)
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": output})
            # The post-tool-use hook: one call at a time.
            vault.sessions.capture_tool_results(
                sid, [ToolCall(tc.function.name, args, output, exit_code=code, id=tc.id)]
            )
    hooks.on_session_end(messages)
    hooks.on_session_end(messages)  # a host calling it twice writes no second summary
    hooks.shutdown()
    return start


def test_two_sessions_with_a_failure_and_a_fix(tmp_path: Path) -> None:
    model = Model()
    with ScriptedOpenAIServer(responder=model) as srv:
        vault = llm_vault(tmp_path, srv)
        repo = Repo()
        model.script = [
            tool_call(1, "Bash", command="pytest"),
            tool_call(2, "Edit", file_path="/work/repo/src/app.py", new_string="int(x)"),
            tool_call(3, "Bash", command="pytest"),
            Reply(content="Fixed the type error in src/app.py; the tests pass."),
        ]
        _session(vault, srv, repo, "s1", "Make the test suite pass.")
        # Between the sessions another agent learns something.
        other = Vault.open(vault.root, agent="reviewer-bot")
        news = other.remember("Release 2.1 is frozen; only bug fixes may merge.")
        other.close()
        model.script = [Reply(content="The suite is green; nothing to do.")]
        start = _session(vault, srv, repo, "s2", "Check the test suite again.")

    memories = vault.library.list()
    summaries = [m for m in memories if m.kind == "session_summary"]
    assert sorted(vault.get(m.id).field("session") or "" for m in summaries) == ["s1", "s2"]
    (gotcha,) = [m for m in memories if m.kind == "gotcha"]
    (fix,) = [m for m in memories if m.kind == "bug_fix"]
    assert "TypeError" in gotcha.text and "pytest" in gotcha.text
    assert vault.get(fix.id).field("fixes") == f"^{gotcha.id}"
    assert "src/app.py" in fix.text
    s1_summary = next(m for m in summaries if vault.get(m.id).field("session") == "s1")
    assert "worked through" in s1_summary.text  # the LLM's summary, not extractive
    # Session 2 started with what changed since session 1: its summary, the
    # gotcha and the fix, and the other agent's news, each by id and author.
    assert "## Changed since your last session" in start
    for memory in (s1_summary, gotcha, fix, news):
        assert f"^{memory.id}" in start
    assert "reviewer-bot" in start
    assert start in model.agent_systems[-1]  # the model saw it
    assert vault.recall("unsupported operand TypeError", kinds=["gotcha", "bug_fix"]).items
