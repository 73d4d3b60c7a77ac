"""A small agent loop with mdmem memory tools, against any OpenAI-compatible endpoint.

    python examples/agent_loop.py --vault /tmp/agent-vault

With OPENAI_BASE_URL / OPENAI_API_KEY and MDMEM_LLM_MODEL set, the model is
real (OpenAI, Ollama, vLLM, llama.cpp...). With no endpoint configured, the
built-in scripted server plays the model: it calls ``remember`` when asked to
remember something and ``recall`` when asked a question, so you can watch the
round trip — tool calls, the markdown file and line the memory landed in, and
the recall that finds it again.

The loop itself is what you would write in your own agent:

1. before a turn, ``hooks.prefetch(message)`` injects relevant memories;
2. the model gets ``toolset.schemas`` as its tools;
3. each tool call goes through ``toolset.dispatch(name, arguments)``, whose
   JSON result (or structured error) goes back to the model;
4. after the turn, ``hooks.on_turn_complete`` records it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from mdmem import Vault
from mdmem.agent.hooks import MemoryHooks
from mdmem.mcp.tools import Toolset
from mdmem.testing.openai_server import Reply, ScriptedOpenAIServer

SYSTEM = (
    "You are a helpful assistant with long-term memory. Use the `remember` tool to store "
    "durable facts the user tells you, and the `recall` tool to look things up before "
    "answering questions about the user. Cite what you recall."
)

DEMO_TURNS = [
    "Please remember that my cat is called Miso.",
    "What is my cat called?",
]


# ------------------------------------------------------------- the loop ----


def run_turn(
    client: Any, model: str, toolset: Toolset, hooks: MemoryHooks, user: str, max_steps: int = 6
) -> str:
    recalled = hooks.prefetch(user)
    system = SYSTEM + (f"\n\n{recalled}" if recalled else "")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]
    print(f"\nuser> {user}")
    for _ in range(max_steps):
        response = client.chat.completions.create(
            model=model, messages=messages, tools=toolset.schemas
        )
        message = response.choices[0].message
        calls = message.tool_calls or []
        if not calls:
            answer = message.content or ""
            print(f"assistant> {answer}")
            hooks.on_turn_complete(user, answer)
            return answer
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ],
            }
        )
        for call in calls:
            result = toolset.dispatch(call.function.name, call.function.arguments)
            print(f"  tool {call.function.name}({call.function.arguments})")
            print(f"    -> {json.dumps(result, ensure_ascii=False)[:400]}")
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return "(stopped after too many tool steps)"


# ------------------------------------------------- the scripted "model" ----


def scripted_model(body: dict[str, Any]) -> dict[str, Any]:
    """A deterministic stand-in model: remember on "remember", recall on a question."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        result = json.loads(last.get("content") or "{}")
        if "items" in result:
            if not result["items"]:
                return {"content": "I have nothing about that in memory."}
            # Prefer a stored fact over the raw chat turn it came from.
            durable = [i for i in result["items"] if i["source_kind"] != "chat_message"]
            top = (durable or result["items"])[0]
            return {"content": f"From memory: {top['content']} (source: {top['source_ref']})"}
        if result.get("id"):
            where = f"{result.get('path')}:{result.get('line')}"
            return {"content": f"Noted - I stored that in {where}."}
        return {"content": f"The tool said: {json.dumps(result)[:200]}"}
    user = str(last.get("content") or "")
    if re.search(r"\bremember\b", user, re.IGNORECASE):
        fact = re.sub(r"^.*?\bremember\s+(that\s+)?", "", user, flags=re.IGNORECASE).rstrip(".")
        fact = re.sub(r"\bmy\b", "the user's", fact)
        fact = re.sub(r"\bI\b", "the user", fact)
        text = fact[:1].upper() + fact[1:] + "."
        return {"tool": "remember", "arguments": {"content": text, "kind": "preference"}}
    if user.rstrip().endswith("?"):
        return {"tool": "recall", "arguments": {"query": user, "top_k": 3}}
    return {"content": "OK."}


def start_scripted_server() -> ScriptedOpenAIServer:
    """The built-in scripted OpenAI-compatible server, playing :func:`scripted_model`."""
    call_ids = itertools.count(1)

    def responder(body: dict[str, Any]) -> Reply:
        decision = scripted_model(body)
        if "tool" not in decision:
            return Reply(content=decision["content"])
        call = {
            "id": f"call_{next(call_ids)}",
            "type": "function",
            "function": {"name": decision["tool"], "arguments": json.dumps(decision["arguments"])},
        }
        return Reply(tool_calls=[call])

    return ScriptedOpenAIServer(responder=responder).start()


# ----------------------------------------------------------------- main ----


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", required=True, help="Vault folder (created if missing).")
    parser.add_argument("--scope", default="user:demo", help="The one scope the agent may use.")
    parser.add_argument(
        "--message", action="append", help="A user message (repeatable); default: a demo."
    )
    args = parser.parse_args(argv)

    root = Path(args.vault)
    vault = Vault.open(root) if (root / "mdmem.toml").exists() else Vault.init(root)
    toolset = Toolset(vault, allowed_scopes=[args.scope])
    hooks = MemoryHooks(vault, scope=args.scope, llm=None)

    import openai

    server = None
    model = os.environ.get("MDMEM_LLM_MODEL")
    if os.environ.get("OPENAI_BASE_URL") or (os.environ.get("OPENAI_API_KEY") and model):
        client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "not-needed")
        model = model or "gpt-4o-mini"
        print(f"model: {model} at {client.base_url}")
    else:
        server = start_scripted_server()
        client = openai.OpenAI(base_url=server.base_url, api_key="not-needed")
        model = server.model
        print(f"no OPENAI_BASE_URL set: using the built-in scripted model at {server.base_url}")

    try:
        for message in args.message or DEMO_TURNS:
            run_turn(client, model, toolset, hooks, message)
    finally:
        hooks.shutdown()
        vault.close()
        if server is not None:
            server.stop()
    print(f"\nvault: {vault.root} (try: mdmem --vault {vault.root} recall cat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
