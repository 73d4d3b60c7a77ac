"""The OpenAI-style tool set: schemas, dispatch, structured errors, scope rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mdmem import InvalidInputError, ScopeDeniedError, Vault
from mdmem.mcp.tools import DEFAULT_TOOLS, MAX_CONTENT_CHARS, Toolset


def _line(vault: Vault, path: str, line: int) -> str:
    return (vault.root / path).read_text(encoding="utf-8").splitlines()[line - 1]


def _assert_error(result: dict[str, Any], kind: str) -> None:
    assert set(result) == {"error"}, result  # an error carries no data
    assert result["error"]["type"] == kind, result
    assert isinstance(result["error"]["message"], str) and result["error"]["message"]
    json.dumps(result)


def test_schemas_are_openai_function_tools(vault: Vault) -> None:
    schemas = Toolset(vault).schemas
    assert [s["function"]["name"] for s in schemas] == list(DEFAULT_TOOLS)
    for schema in schemas:
        assert schema["type"] == "function"
        fn = schema["function"]
        assert len(fn["description"]) > 40
        params = fn["parameters"]
        assert params["type"] == "object"
        assert params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["description"]
    recall = next(s for s in schemas if s["function"]["name"] == "recall")
    props = recall["function"]["parameters"]["properties"]
    assert props["top_k"]["maximum"] == 20 and props["top_k"]["default"] == 5
    json.dumps(schemas)


def test_allowed_scopes_are_named_in_descriptions(vault: Vault) -> None:
    schemas = Toolset(vault, allowed_scopes=["user:alice", "root"]).schemas
    recall = next(s for s in schemas if s["function"]["name"] == "recall")
    assert "user:alice, root" in recall["function"]["description"]


def test_remember_then_recall_cites_file_and_line(vault: Vault) -> None:
    tools = Toolset(vault)
    stored = tools.dispatch(
        "remember",
        {"content": "The user prefers metric units.", "kind": "preference", "tags": ["units"]},
    )
    assert stored["was_new"] is True and stored["id"].startswith("m-")
    again = tools.dispatch(
        "remember", {"content": "The user prefers metric units.", "kind": "preference"}
    )
    assert again == {**stored, "was_new": False}

    result = tools.dispatch("recall", {"query": "metric units"})
    assert result["total"] == len(result["items"]) == 1
    assert result["degraded"] is False and result["reranked"] is False
    item = result["items"][0]
    assert set(item) >= {
        "id",
        "source_kind",
        "source_ref",
        "content",
        "event_time",
        "score",
        "path",
        "line",
    }
    assert item["id"] == stored["id"]
    assert item["source_kind"] == "preference"
    assert item["source_ref"] == f"USER.md#^{stored['id']}"
    assert item["content"].startswith("The user prefers metric units.")
    assert item["tags"] == ["units"]
    # The citation points at the real line of the markdown file.
    assert f"^{stored['id']}" in _line(vault, item["path"], item["line"])
    json.dumps(result)


def test_arguments_may_be_a_json_string_and_numbers_may_be_quoted(vault: Vault) -> None:
    tools = Toolset(vault)
    for i in range(4):
        tools.dispatch("remember", json.dumps({"content": f"Deploy note {i}: ship on Tuesday."}))
    result = tools.dispatch("recall", '{"query": "deploy Tuesday", "top_k": "2"}')
    assert result["total"] == 2


def test_recall_filters_by_kind_and_since(vault: Vault) -> None:
    tools = Toolset(vault)
    tools.dispatch("remember", {"content": "Tea is preferred over coffee.", "kind": "preference"})
    tools.dispatch("remember", {"content": "The tea supplier changed in March.", "kind": "fact"})
    result = tools.dispatch("recall", {"query": "tea", "source_kinds": ["fact"]})
    assert [i["source_kind"] for i in result["items"]] == ["fact"]
    assert tools.dispatch("recall", {"query": "tea", "since": "2999-01-01"})["items"] == []


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("recall", {}, "invalid_arguments"),
        ("recall", {"query": "   "}, "invalid_arguments"),
        ("recall", {"query": "x", "top_k": 21}, "invalid_arguments"),
        ("recall", {"query": "x", "top_k": 0}, "invalid_arguments"),
        ("recall", {"query": "x", "top_k": "many"}, "invalid_arguments"),
        ("recall", {"query": "x", "top_k": True}, "invalid_arguments"),
        ("recall", {"query": "x", "source_kinds": ["gossip"]}, "invalid_arguments"),
        ("recall", {"query": "x", "since": "last tuesday-ish"}, "invalid_arguments"),
        ("recall", {"query": "x", "scope": "Not A Scope"}, "invalid_arguments"),
        ("recall", {"query": "x", "limit": 3}, "invalid_arguments"),
        ("recall", "{not json", "invalid_arguments"),
        ("recall", "[1, 2]", "invalid_arguments"),
        ("recall", {"query": 42}, "invalid_arguments"),
        ("remember", {"content": ""}, "invalid_arguments"),
        ("remember", {"content": "x", "kind": "gossip"}, "invalid_arguments"),
        ("remember", {"content": "x", "tags": ["no spaces allowed"]}, "invalid_arguments"),
        ("remember", {"content": "x", "scope": "any"}, "invalid_arguments"),
        (
            "remember",
            {"content": "api key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"},
            "secret_refused",
        ),
        ("forget", {"memory_id": "m-0000000000000"}, "not_found"),
        ("get", {"memory_id": "not an id!"}, "invalid_arguments"),
        ("drop_tables", {}, "unknown_tool"),
        ("history", {"memory_id": "m-x"}, "unknown_tool"),  # not in the default set
    ],
)
def test_bad_calls_return_structured_errors(
    vault: Vault, name: str, arguments: Any, kind: str
) -> None:
    _assert_error(Toolset(vault).dispatch(name, arguments), kind)


# Not digits alone: ids, scores and timestamps in the answers hold those by chance.
BOB = "4711-bravo"


def test_scope_check_from_the_issue(vault: Vault) -> None:
    vault.remember(f"Bob's door code is {BOB}.", scope="user:bob")
    alice = vault.remember("Alice's door code is 1234.", scope="user:alice")
    tools = Toolset(vault, allowed_scopes=["user:alice"])

    refused = tools.dispatch("recall", {"query": "door code", "scope": "user:bob"})
    _assert_error(refused, "scope_denied")
    assert BOB not in json.dumps(refused)

    # No scope, or "any", searches only what the host allowed: unconfined, the
    # query finds both codes; confined to Alice, only hers comes back.
    unconfined = Toolset(vault).dispatch("recall", {"query": "door code 4711"})["items"]
    assert {i["scope"] for i in unconfined} == {"user:alice", "user:bob"}
    for args in ({"query": "door code 4711"}, {"query": "door code 4711", "scope": "any"}):
        items = tools.dispatch("recall", args)["items"]
        assert [i["id"] for i in items] == [alice.id]
        assert BOB not in json.dumps(items)


def test_model_scope_can_only_narrow(vault: Vault) -> None:
    vault.remember("Shared fact: the office is in Lisbon.")
    vault.remember("Alice works remotely from Porto.", scope="user:alice")
    tools = Toolset(vault, allowed_scopes=["root", "user:alice"])
    both = tools.dispatch("recall", {"query": "office Lisbon Porto remotely"})["items"]
    assert {i["scope"] for i in both} == {"root", "user:alice"}
    narrowed = tools.dispatch(
        "recall", {"query": "office Lisbon Porto remotely", "scope": "user:alice"}
    )
    assert {i["scope"] for i in narrowed["items"]} == {"user:alice"}
    _assert_error(
        tools.dispatch("recall", {"query": "x", "scope": "project:secret"}), "scope_denied"
    )


def test_writes_land_in_the_default_scope_and_never_outside(vault: Vault) -> None:
    tools = Toolset(vault, allowed_scopes=["user:alice", "project:x"], default_scope="project:x")
    stored = tools.dispatch("remember", {"content": "Kick-off is on Monday."})
    assert stored["scope"] == "project:x"
    assert stored["path"] == "scopes/project/x/MEMORY.md"
    narrowed = tools.dispatch("remember", {"content": "Alice likes jazz.", "scope": "user:alice"})
    assert narrowed["scope"] == "user:alice"

    _assert_error(
        tools.dispatch("remember", {"content": "Bob owes 10 EUR.", "scope": "user:bob"}),
        "scope_denied",
    )
    _assert_error(
        tools.dispatch("remember", {"content": "Root fact.", "scope": "root"}), "scope_denied"
    )
    assert not (vault.root / "scopes" / "user" / "bob").exists()
    assert vault.recall("owes EUR").items == []


def test_forget_and_get_refuse_other_scopes(vault: Vault) -> None:
    bob = vault.remember("Bob's passport expires in June.", scope="user:bob")
    tools = Toolset(vault, allowed_scopes=["user:alice"])
    for name in ("get", "forget"):
        result = tools.dispatch(name, {"memory_id": bob.id})
        _assert_error(result, "scope_denied")
        assert "passport" not in json.dumps(result)
    assert vault.get(bob.id).text == "Bob's passport expires in June."  # still there


def test_get_and_forget_in_scope(vault: Vault) -> None:
    tools = Toolset(vault, allowed_scopes=["user:alice"])
    stored = tools.dispatch("remember", {"content": "Alice is allergic to peanuts."})
    got = tools.dispatch("get", {"memory_id": stored["id"]})
    assert got["content"] == "Alice is allergic to peanuts."
    assert got["status"] == "active" and got["scope"] == "user:alice"
    assert tools.dispatch("forget", {"memory_id": stored["id"]}) == {
        "id": stored["id"],
        "forgotten": True,
    }
    assert tools.dispatch("recall", {"query": "peanuts allergic"})["items"] == []
    _assert_error(tools.dispatch("get", {"memory_id": stored["id"]}), "not_found")


def test_long_items_are_shortened_in_recall_but_whole_in_get(vault: Vault) -> None:
    text = "Long note about the migration plan. " + "details " * 1200
    memory = vault.remember(text)
    tools = Toolset(vault)
    item = tools.dispatch("recall", {"query": "migration plan"})["items"][0]
    assert item["truncated"] is True and len(item["content"]) <= MAX_CONTENT_CHARS
    assert tools.dispatch("get", {"memory_id": memory.id})["content"] == text.strip()


def test_history_and_context_tools(vault: Vault) -> None:
    tools = Toolset(vault, tools=["remember", "history", "context"])
    stored = tools.dispatch("remember", {"content": "The staging DB resets nightly."})
    history = tools.dispatch("history", {"memory_id": stored["id"]})
    assert history["versions"][0]["text"] == "The staging DB resets nightly."
    context = tools.dispatch("context", {"query": "staging DB", "max_chars": 500})
    assert context["context"].startswith("## Recalled Memory")
    assert f"^{stored['id']}" in context["context"]
    assert len(context["context"]) <= 500


def test_host_configuration_errors_raise(vault: Vault) -> None:
    with pytest.raises(ScopeDeniedError):
        Toolset(vault, allowed_scopes=["user:alice"], default_scope="user:bob")
    with pytest.raises(InvalidInputError):
        Toolset(vault, allowed_scopes=[])
    with pytest.raises(InvalidInputError):
        Toolset(vault, allowed_scopes=["Alice"])
    with pytest.raises(InvalidInputError):
        Toolset(vault, tools=["recall", "nope"])


def test_reflect_without_llm_lists_memories_of_allowed_scopes_only(vault: Vault) -> None:
    vault.remember("Alice travels by train.", scope="user:alice")
    vault.remember("Bob travels by plane.", scope="user:bob")
    result = Toolset(vault, allowed_scopes=["user:alice"]).dispatch(
        "reflect", {"query": "How does the user travel?"}
    )
    assert result["synthesized"] is False
    assert "train" in result["answer"] and "plane" not in result["answer"]
    assert all(c.startswith("scopes/user/alice/") for c in result["citations"])


def test_reflect_with_a_scripted_llm(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from mdmem.testing.openai_server import ScriptedOpenAIServer

    memory = vault.remember("The user travels by train to Porto every month.")
    citation = f"MEMORY.md#^{memory.id}"
    with ScriptedOpenAIServer([{"answer": "By train, monthly.", "citations": [citation]}]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("MDMEM_LLM_MODEL", "scripted-model")
        reopened = Vault.open(vault.root)
        result = Toolset(reopened).dispatch("reflect", {"query": "How does the user travel?"})
    assert result == {"answer": "By train, monthly.", "citations": [citation], "synthesized": True}


def test_read_tool_output_respects_scopes(vault: Vault) -> None:
    big = "row,value\n" + "".join(f"{i},{i * i}\n" for i in range(3000))
    entry = vault.session("s-1", scope="user:alice").record_tool_output("sql", big)
    key = vault.get(entry.id).field("tout")
    assert key is not None
    recalled = Toolset(vault).dispatch("recall", {"query": "sql", "source_kinds": ["tool_output"]})
    assert recalled["items"][0]["tool_output_key"] == key
    alice = Toolset(vault, allowed_scopes=["user:alice"])
    (schema,) = [s for s in alice.schemas if s["function"]["name"] == "read_tool_output"]
    assert schema["function"]["parameters"]["required"] == ["key"]
    assert list(schema["function"]["parameters"]["properties"]) == ["key"]
    assert alice.dispatch("read_tool_output", {"key": key})["content"] == big
    assert alice.dispatch("read_tool_output", json.dumps({"key": key}))["content"] == big
    # The argument's old name still works, alone or repeating the same key, with a warning.
    with pytest.warns(DeprecationWarning, match=r"tool_output_key=…\) is deprecated") as record:
        assert alice.dispatch("read_tool_output", {"tool_output_key": key})["content"] == big
    assert "removed in 0.2.0: use key=…" in str(record[0].message)
    assert record[0].filename == __file__
    with pytest.warns(DeprecationWarning):
        both = alice.dispatch("read_tool_output", {"key": key, "tool_output_key": key})
    assert both["content"] == big
    _assert_error(
        alice.dispatch("read_tool_output", {"key": key, "tool_output_key": "tout_" + "0" * 20}),
        "invalid_arguments",
    )
    _assert_error(alice.dispatch("read_tool_output", {}), "invalid_arguments")
    for args in ({"key": key}, {"tool_output_key": key}):
        denied = Toolset(vault, allowed_scopes=["user:bob"]).dispatch("read_tool_output", args)
        _assert_error(denied, "scope_denied")
        assert big not in json.dumps(denied)
    _assert_error(alice.dispatch("read_tool_output", {"key": "../etc"}), "invalid_arguments")


def test_example_agent_loop_remembers_and_recalls(tmp_path: Path) -> None:
    """examples/agent_loop.py end to end against the built-in scripted model."""
    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.pop("MDMEM_LLM_MODEL", None)
    # The example must run against this checkout's mdmem, not whichever copy is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    target = tmp_path / "agent-vault"
    proc = subprocess.run(
        [sys.executable, str(repo / "examples" / "agent_loop.py"), "--vault", str(target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tool remember(" in out and "tool recall(" in out
    assert out.index("tool remember(") < out.index("tool recall(")
    assert "From memory: The user's cat is called Miso." in out
    stored = (target / "scopes" / "user" / "demo" / "USER.md").read_text(encoding="utf-8")
    assert "The user's cat is called Miso." in stored


def test_get_and_history_hide_a_secret_a_person_typed_into_a_memory(vault: Vault) -> None:
    from ..conftest import git
    from ..secret_samples import FORMATS

    sample = FORMATS[0]
    m = vault.remember("The deploy token for staging lives in the vault notes.")
    path = vault.root / m.path
    # A person pastes the token into the memory's line in their editor.
    path.write_text(
        path.read_text().replace("in the vault notes.", f"in the vault notes. {sample.text}")
    )
    git(vault.root, "commit", "-qam", "edit by hand")
    tools = Toolset(vault, tools=["get", "history"])
    content = tools.dispatch("get", {"memory_id": m.id})["content"]
    assert sample.text in path.read_text()  # the file keeps what they typed...
    assert not any(f in content for f in sample.fragments)  # ...the model never sees it
    assert not any(f in vault.get(m.id).text for f in sample.fragments)  # nor vault.get
    versions = tools.dispatch("history", {"memory_id": m.id})["versions"]
    assert versions and not any(f in json.dumps(versions) for f in sample.fragments)
