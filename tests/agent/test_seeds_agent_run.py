"""Issue 18's acceptance check as ONE scripted agent run over two sessions.

"A scripted agent run (a real local OpenAI-compatible server) over two sessions
with tool failures, a fix, a long document and two platforms for one contact
produces: one session summary per session, a gotcha and a linked bug_fix,
document chunks recallable by content, one contact profile with both platform
ids, and a session-start context listing what changed since the first session."

The host here is a coding agent reached over two chat platforms (Telegram in
session 1, WhatsApp in session 2) by the same person. It uses the surfaces a
host has: the Vault API (contacts, ingest, the chat session's turns), the
Claude Code hook kit (``run_event``: session start, post tool use, session
end, payloads in Claude Code's format), and mdmem's agent tools
(``Toolset``), which the scripted model calls through the real local
OpenAI-protocol server. The read side is then checked again over MCP (stdio).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai import OpenAI

from mdmem import Vault
from mdmem.hookkit.log import HookLog
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.mcp.tools import Toolset
from mdmem.testing import Reply, ScriptedOpenAIServer
from tests.agent.scripted_agent import HOST_TOOLS, TOPICS, Repo, long_manual, tool_call
from tests.conftest import git
from tests.llm_fakes import FakeModel, llm_vault, system_of
from tests.mcp_client import mcp_session

AGENT_SYSTEM = "You are a coding agent reached over chat."
HOST = "claude-code"
PERSON = "user:alice"


class Model(FakeModel):
    """mdmem's own prompts as FakeModel answers them; the agent's turns from a script."""

    def __init__(self) -> None:
        super().__init__()
        self.script: list[Reply] = []
        self.agent_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if system_of(body).startswith(AGENT_SYSTEM):
            self.agent_bodies.append(body)
            return self.script.pop(0)
        if system_of(body).startswith("Summarise this coding session"):
            # The hook kit's transcript summary, in the same words for both sessions:
            # each session must still get its own (identical text is stored once).
            return Reply(content="The agent worked through the session and finished the task.")
        return super().__call__(body)


class Host:
    """A chat host running the agent loop, recording turns and firing Claude Code hooks."""

    def __init__(self, vault: Vault, srv: ScriptedOpenAIServer, cwd: Path) -> None:
        self.vault = vault
        self.cwd = cwd
        self.repo = Repo()
        # The person's scope: their chat, the captured gotchas and the summaries live there.
        self.policy = Policy(scope=PERSON, capture="summaries")
        self.tools = Toolset(
            vault, allowed_scopes=[PERSON, "root"], tools=["recall", "contact_profile", "changes"]
        )
        self.client = OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0)
        self.chats: dict[str, Any] = {}

    def hook(self, sid: str, event: str, **extra: Any) -> str:
        names = {
            "session-start": "SessionStart",
            "post-tool-use": "PostToolUse",
            "session-end": "SessionEnd",
        }
        payload = {
            "session_id": sid,
            "transcript_path": str(self.cwd / f"{sid}.jsonl"),
            "cwd": str(self.cwd),
            "permission_mode": "default",
            "hook_event_name": names[event],
            **extra,
        }
        return run_event(self.vault, HOST, event, payload, self.policy, warm=False)

    def transcript(self, sid: str, turns: list[tuple[str, str]]) -> None:
        """The host's own transcript file, in Claude Code's JSONL shape."""
        with (self.cwd / f"{sid}.jsonl").open("w", encoding="utf-8") as f:
            for n, (role, text) in enumerate(turns):
                entry = {
                    "type": role,
                    "sessionId": sid,
                    "uuid": f"{sid}-{n}",
                    "timestamp": f"2026-11-2{n % 10}T10:00:00.000Z",
                    "message": {"role": role, "content": text},
                }
                f.write(json.dumps(entry) + "\n")

    def session(self, sid: str, platform_id: str, task: str) -> str:
        """One session; returns the session-start context the hook injected."""
        started = json.loads(self.hook(sid, "session-start", source="startup"))
        context = started.get("hookSpecificOutput", {}).get("additionalContext", "")
        chat = self.vault.session(
            f"{HOST}-{sid}", source=platform_id.split(":")[0], contact=platform_id
        )
        self.chats[sid] = chat
        chat.record("user", task)
        turns = [("user", task)]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"{AGENT_SYSTEM}\n\n{context}"},
            {"role": "user", "content": task},
        ]
        for _ in range(12):
            message = (
                self.client.chat.completions.create(
                    model="local-test",
                    messages=messages,  # type: ignore[arg-type]
                    tools=HOST_TOOLS + self.tools.schemas,  # type: ignore[arg-type]
                )
                .choices[0]
                .message
            )
            if not message.tool_calls:
                chat.record("assistant", message.content or "")
                turns.append(("assistant", message.content or ""))
                break
            messages.append(message.model_dump(exclude_none=True))
            for tc in message.tool_calls:
                args = json.loads(tc.function.arguments)
                if tc.function.name in ("Bash", "Edit"):
                    output, code = self.repo.run(tc.function.name, args)
                    # As Claude Code reports a Bash call: its streams, or for a failed
                    # command the tool error text that starts "Exit code N".
                    response: Any = {
                        "stdout": output,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    }
                    if code:
                        response = f"Exit code {code}\n{output}"
                    out = self.hook(
                        sid,
                        "post-tool-use",
                        tool_name=tc.function.name,
                        tool_input=args,
                        tool_response=response,
                    )
                    assert json.loads(out) == {}  # nothing to tell the model
                else:
                    output = json.dumps(self.tools.dispatch(tc.function.name, args))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": output})
        self.transcript(sid, turns)
        self.hook(sid, "session-end", reason="prompt_input_exit")
        self.hook(sid, "session-end", reason="prompt_input_exit")  # twice: no second summary
        return context


def test_two_sessions_two_platforms_failures_fix_document(tmp_path: Path) -> None:
    model = Model()
    cwd = tmp_path / "repo"
    cwd.mkdir()
    with ScriptedOpenAIServer(responder=model) as srv:
        vault = llm_vault(tmp_path, srv)
        vault.contacts.link("telegram:123", PERSON, display_name="Alice")
        vault.contacts.link("whatsapp:+15550100", PERSON)
        manual = long_manual(tmp_path / "manual.md")
        assert manual.stat().st_size > 8_000
        ingested = vault.library.ingest(manual)[0]
        assert len(ingested.chunks) == len(TOPICS) + 1
        host = Host(vault, srv, cwd)
        before_s1 = git(vault.root, "rev-parse", "HEAD").strip()

        model.script = [
            tool_call(1, "Bash", command="pytest"),
            tool_call(2, "Bash", command="pytest"),  # a second failure, same error
            tool_call(3, "Edit", file_path="/work/repo/src/app.py", new_string="int(x)"),
            tool_call(4, "Bash", command="pytest"),
            tool_call(5, "recall", query="wombat valve torque Nm", source_kinds=["document_chunk"]),
            Reply(content="Fixed the type error in src/app.py; the valve takes 40 Nm."),
        ]
        first = host.session(
            "s1", "telegram:123", "Make the suite pass, and check the valve torque."
        )
        recall_result = json.loads(model.agent_bodies[-1]["messages"][-1]["content"])

        # Between the sessions another agent learns something.
        other = Vault.open(vault.root, agent="reviewer-bot")
        news = other.remember("Release 2.1 is frozen; only bug fixes may merge.")
        other.close()

        model.script = [
            tool_call(6, "contact_profile", who="whatsapp:+15550100"),
            tool_call(7, "changes"),
            Reply(content="Hello again Alice; the release is frozen."),
        ]
        start = host.session("s2", "whatsapp:+15550100", "Anything new since yesterday?")
        profile_result = json.loads(model.agent_bodies[-2]["messages"][-1]["content"])
        changes_result = json.loads(model.agent_bodies[-1]["messages"][-1]["content"])

    # Every hook answered without an error: 2 starts, 4 tool calls, 4 session ends.
    entries = HookLog(vault.admin.state_dir).entries(100)
    assert len(entries) == 10 and not [e for e in entries if "error" in e]
    memories = vault.library.list()
    # One session summary per session, each linked to its session; the LLM wrote them.
    # (Every status counted: the second session-end must not have written and retired one.)
    summaries = [m for m in memories if m.kind == "session_summary"]
    by_session = {vault.get(m.id).field("session"): m for m in summaries}
    assert len(summaries) == 2 and set(by_session) == {f"{HOST}-s1", f"{HOST}-s2"}
    assert all(m.status == "active" for m in summaries)
    assert all(m.text.startswith("Session summary (LLM): The agent worked") for m in summaries)
    # The first session's start had nothing to report; its summary is the LLM's.
    assert "Changed since your last session" not in first

    # A gotcha (the two identical failures are one) and a bug_fix linked to it by id.
    (gotcha,) = [m for m in memories if m.kind == "gotcha"]
    (fix,) = [m for m in memories if m.kind == "bug_fix"]
    assert "TypeError" in gotcha.text and "pytest" in gotcha.text
    assert vault.get(fix.id).field("fixes") == f"^{gotcha.id}"
    assert "src/app.py" in fix.text
    assert vault.get(gotcha.id).field("session") == f"{HOST}-s1"

    # Document chunks are recallable by content: in the agent's tool call and by the API.
    assert recall_result["items"][0]["id"] in ingested.chunks
    assert "40 Nm" in recall_result["items"][0]["content"]
    hit = vault.recall("how tight should the wombat valve be", kinds="document_chunk").items[0]
    assert hit.id in ingested.chunks and "40 Nm" in hit.text
    assert hit.heading == "Pump station manual › 6. Valves"

    # One contact profile with both platform ids; both chat sessions resolve to the person.
    [profile] = vault.contacts.list()
    assert profile.person == PERSON
    assert profile.platform_ids == ["telegram:123", "whatsapp:+15550100"]
    assert profile_result["platform_ids"] == profile.platform_ids
    assert profile_result["display_name"] == "Alice"
    entries = [m for chat in host.chats.values() for m in chat.entries()]
    assert len(entries) == 4 and {m.scope for m in entries} == {PERSON}

    # Session 2 started with what changed since session 1, each by id.
    assert "Changed since your last session" in start
    s1_summary = by_session[f"{HOST}-s1"]
    for memory in (s1_summary, gotcha, fix, news):
        assert f"^{memory.id}" in start, memory
    assert start in system_of(model.agent_bodies[-3])  # the model saw it
    # The agent's own `changes` tool call in session 2 saw the other agent's news too.
    assert news.id in json.dumps(changes_result)

    # The read side again over MCP, as another host would see this vault.
    # (The agent has caught up by now, so "last-session" is empty: ask since before session 1.)
    seen = mcp_read(vault, "wombat valve torque Nm", since=before_s1)
    chunk = seen["recall"]["items"][0]
    assert chunk["id"] in ingested.chunks and "40 Nm" in chunk["content"]
    assert seen["profile"]["platform_ids"] == ["telegram:123", "whatsapp:+15550100"]
    for memory in (s1_summary, gotcha, fix, news):
        assert memory.id in json.dumps(seen["changes"]), memory


def mcp_read(vault: Vault, query: str, since: str) -> dict[str, Any]:
    calls = (
        ("recall", "recall", {"query": query, "source_kinds": ["document_chunk"]}),
        ("profile", "contact_profile", {"who": "telegram:123"}),
        ("changes", "changes", {"since": since}),
    )
    # The host's scopes, as the Toolset's.
    results = mcp_session(vault, calls, PERSON, "root")
    seen: dict[str, Any] = {}
    for key, name, _ in calls:
        assert not results[key].is_error, (name, results[key])
        seen[key] = results[key].structured_content
    return seen
