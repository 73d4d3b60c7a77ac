"""Shared LLM test doubles: a deterministic model behind the real local server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdmem import Vault
from mdmem.providers.llm import LLMClient, LLMConfig
from mdmem.testing import Reply, ScriptedOpenAIServer

DATA = re.compile(r"<<<MDMEM_DATA ([^\n]*)\n(.*?)\nMDMEM_DATA>>>", re.DOTALL)


def data_blocks(body: dict[str, Any]) -> dict[str, str]:
    """The delimited data blocks of a chat request, by label."""
    text = "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] != "system")
    return {label: payload for label, payload in DATA.findall(text)}


def system_of(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")


class FakeModel:
    """A deterministic stand-in LLM that understands mdmem's four prompts.

    Each behaviour can be replaced per test (``judge``, ``consolidate``...).
    """

    def __init__(self) -> None:
        self.judge: Callable[[str, dict[str, str]], list[str]] = lambda new, cands: []
        self.consolidate: Callable[[dict[str, str]], dict[str, Any]] = self._consolidate
        self.reflect: Callable[[str, str], dict[str, Any]] = lambda q, mems: {
            "answer": "No idea.",
            "citations": [],
        }
        self.flush: Callable[[str], dict[str, Any]] = lambda t: {"facts": [], "preferences": []}
        self.calls: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = system_of(body)
        blocks = data_blocks(body)
        if "contradiction judge" in system:
            kind = "judge"
            cands = dict(
                line.split(": ", 1) for line in blocks["candidates"].splitlines() if ": " in line
            )
            reply: dict[str, Any] = {"contradicted": self.judge(blocks["new memory"], cands)}
        elif "memory consolidator" in system:
            kind = "consolidate"
            reply = self.consolidate(blocks)
        elif "reflection step" in system:
            kind = "reflect"
            reply = self.reflect(blocks["question"], blocks["memories"])
        elif "memory flush" in system:
            kind = "flush"
            reply = self.flush(blocks["messages"])
        elif "session summarizer" in system:
            # Plain text, like a real model: one line per session transcript.
            self.calls["summary"] = self.calls.get("summary", 0) + 1
            (transcript,) = blocks.values()
            turns = len(transcript.splitlines())
            return Reply(content=f"The agent worked through {turns} turns and finished the task.")
        else:  # pragma: no cover - a prompt this fake does not know
            raise AssertionError(f"unexpected prompt: {system[:80]}")
        self.calls[kind] = self.calls.get(kind, 0) + 1
        return Reply(content=json.dumps(reply))

    @staticmethod
    def _consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        entries = blocks["entries"]
        # A faithful model: restates known facts and carries open items forward.
        facts = [x[2:] for x in blocks.get("known facts", "").splitlines() if x.startswith("- ")]
        pending = [x[2:] for x in blocks.get("open items", "").splitlines() if x.startswith("- ")]
        prefs: list[str] = []
        for match in re.finditer(r"user: My (\w+) is (\w+)", entries):
            facts.append(f"The user's {match.group(1)} is {match.group(2)}.")
        for match in re.finditer(r"user: I prefer ([\w ]+?)\.", entries):
            prefs.append(f"The user prefers {match.group(1)}.")
        turns = len(re.findall(r"^\[\d\d:\d\d:\d\d\]", entries, re.MULTILINE))
        return {
            "summary": f"The user and the agent talked about the project over {turns} turns.",
            "facts": sorted(set(facts)),
            "pending": pending
            or (["Send the deploy checklist."] if "checklist" in entries else []),
            "preferences": sorted(set(prefs)),
            "tone": "friendly",
            "confidence": 0.9,
        }


def llm_vault(tmp_path: Path, srv: ScriptedOpenAIServer, **overrides: Any) -> Vault:
    """A vault whose mdmem settings point at the local server (auto-consolidation off)."""
    llm = {"base_url": srv.base_url, "model": "local-test", "timeout": 5.0, "max_retries": 1}
    llm.update(overrides.pop("llm", {}))
    consolidation = {"auto": False, **overrides.pop("consolidation", {})}
    return Vault.init(
        tmp_path / "vault", agent="test-agent", llm=llm, consolidation=consolidation, **overrides
    )


def client(srv: ScriptedOpenAIServer, **kw: Any) -> LLMClient:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("max_retries", 1)
    return LLMClient(LLMConfig(base_url=srv.base_url, model="local-test", api_key="sk-x", **kw))
