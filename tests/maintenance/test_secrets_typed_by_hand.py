"""A secret a person types into the vault: the file keeps it (it is theirs),
but no index, embedding request, recall, context, prompt or LLM call carries
it, and doctor reports it with the command that erases it from history."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.agent.prompt import prompt_context
from mdmem.testing import ScriptedOpenAIServer
from tests.conftest import git
from tests.llm_fakes import FakeModel, llm_vault
from tests.secret_samples import FORMATS

_TOKEN = next(s for s in FORMATS if s.name == "GitLab token")
_URL = next(s for s in FORMATS if s.name == "URL credentials with an empty user")
_PEM = next(s for s in FORMATS if s.name == "PEM body without its header")
_HEADER = next(s for s in FORMATS if s.name == "Authorization Bearer header")
_ALL = (_TOKEN, _URL, _PEM, _HEADER)


def _fragments() -> list[str]:
    out = []
    for sample in _ALL:
        out += sample.fragments
        out += [run.lower() for f in sample.fragments for run in re.findall(r"[A-Za-z0-9]{8,}", f)]
    return out


def _carries_a_secret(text: str) -> list[str]:
    lowered = text.lower()
    return [f for f in _fragments() if f in text or f.lower() in lowered]


@pytest.fixture
def edited(
    tmp_path: Path, server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[Vault, str]:
    """A vault whose embedder and LLM are the recording local server, after a
    person typed secrets into a memory, into USER.md and into a note."""
    monkeypatch.delenv("MDMEM_EMBEDDER_PROVIDER", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "local-test-key")
    embedder = {"provider": "openai", "base_url": server.base_url, "model": "e", "dim": 8}
    vault = llm_vault(tmp_path, server, embedder=embedder)
    memory = vault.remember("Deploy notes for the staging cluster live in the wiki.")
    vault.remember("The user likes short answers.", kind="preference")
    memory_file = vault.root / memory.path
    text = memory_file.read_text(encoding="utf-8")
    memory_file.write_text(
        text.replace("live in the wiki.", f"live in the wiki; {_TOKEN.text}; {_HEADER.text}."),
        encoding="utf-8",
    )
    user = vault.root / "USER.md"
    user.write_text(
        user.read_text(encoding="utf-8") + f"\nStaging cache for the user: {_URL.text}\n",
        encoding="utf-8",
    )
    notes = vault.root / "notes"
    notes.mkdir()
    (notes / "infra.md").write_text(
        "# Infra\n\n## Staging cluster\n\nThe staging cluster deploy key:\n\n"
        + "\n".join(_PEM.fragments)
        + "\n\nAsk ops before rotating it.\n",
        encoding="utf-8",
    )
    git(vault.root, "add", "-A", human=True)
    git(vault.root, "commit", "-qm", "my notes", human=True)
    server.requests.clear()
    return vault, memory.id


def test_the_files_keep_what_the_person_typed(edited: tuple[Vault, str]) -> None:
    vault, _ = edited
    assert _TOKEN.fragments[0] in (vault.root / "MEMORY.md").read_text(encoding="utf-8")
    assert _PEM.fragments[0] in (vault.root / "notes" / "infra.md").read_text(encoding="utf-8")


def test_recall_context_and_prompts_never_carry_it(
    edited: tuple[Vault, str], server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    vault, memory_id = edited
    recall = vault.recall("staging cluster deploy notes", k=10)
    ids = [hit.id for hit in recall.items]
    assert memory_id in ids and any(i.startswith("notes/infra.md") for i in ids)
    hit = next(h for h in recall.items if h.id == memory_id)
    assert "[REDACTED:GitLab token]" in hit.text and "live in the wiki" in hit.text
    for item in recall.items:
        assert _carries_a_secret(item.text) == [], item.id
    assert _carries_a_secret(vault.context("staging cluster deploy notes")) == []
    rendered = prompt_context(vault, "staging cluster deploy notes").render()
    assert "Staging cache for the user" in rendered  # USER.md's tail is there...
    assert _carries_a_secret(rendered) == []  # ...without the secret typed into it
    reflection = vault.reflect("what do the staging deploy notes say?")
    assert reflection.memories
    assert _carries_a_secret(reflection.answer) == []
    # Nothing the embedder or the LLM was sent carried it either.
    sent = [json.dumps(request["body"]) for request in server.requests]
    assert any("staging" in body.lower() for body in sent)
    assert [b for b in sent if _carries_a_secret(b)] == []


def test_recall_as_of_a_past_commit_does_not_carry_it(edited: tuple[Vault, str]) -> None:
    vault, memory_id = edited
    head = vault.git.head()
    assert head is not None
    recall = vault.recall("staging cluster deploy notes", as_of=head)
    hit = next(h for h in recall.items if h.id == memory_id)
    assert "[REDACTED:GitLab token]" in hit.text
    for item in recall.items:
        assert _carries_a_secret(item.text) == [], item.id


def test_the_indexes_do_not_hold_it(edited: tuple[Vault, str], tmp_path: Path) -> None:
    vault, memory_id = edited
    vault.reindex(full=True)
    assert vault.recall(_TOKEN.fragments[0], mode="keyword").items == []
    keyword_dir = vault.admin.state_dir / "keyword"
    stored = b"".join(p.read_bytes() for p in keyword_dir.rglob("*") if p.is_file()).lower()
    assert [f for f in _fragments() if f.lower().encode() in stored] == []
    # An edit the live index picks up (no rebuild) is redacted as well.
    memory_file = vault.root / "MEMORY.md"
    memory_file.write_text(
        memory_file.read_text(encoding="utf-8").replace("staging cluster", "staging fleet"),
        encoding="utf-8",
    )
    hit = next(h for h in vault.recall("staging fleet deploy notes").items if h.id == memory_id)
    assert "staging fleet" in hit.text and "[REDACTED:GitLab token]" in hit.text
    stored = b"".join(p.read_bytes() for p in keyword_dir.rglob("*") if p.is_file()).lower()
    assert [f for f in _fragments() if f.lower().encode() in stored] == []


def test_doctor_flags_each_with_the_command_that_erases_it(edited: tuple[Vault, str]) -> None:
    vault, memory_id = edited
    report = vault.admin.doctor()
    assert not report.ok
    found = [p for p in report.problems if p.check == "no secrets in files"]
    details = "\n".join(p.detail for p in found)
    assert _carries_a_secret(details) == []
    assert not any(p.fixable for p in found)  # the text is the person's to change
    memory_line = next(p.detail for p in found if p.detail.startswith("MEMORY.md:"))
    assert "GitLab token" in memory_line and f"`mdmem git purge {memory_id} --yes`" in memory_line
    note_line = next(p.detail for p in found if p.detail.startswith("notes/infra.md:"))
    assert "key material" in note_line and "git filter-repo" in note_line
    assert "mdmem git purge" in note_line
    assert any(p.detail.startswith("USER.md:") and "URL credentials" in p.detail for p in found)
    # The line is where the secret is.
    line = int(memory_line.split(":")[1])
    assert _TOKEN.fragments[0] in (vault.root / "MEMORY.md").read_text().splitlines()[line - 1]


def test_with_the_guard_off_nothing_is_redacted_or_flagged(
    tmp_path: Path, server: ScriptedOpenAIServer
) -> None:
    vault = llm_vault(tmp_path, server, secrets="off")
    memory = vault.remember(f"The staging deploy token: {_TOKEN.text}")
    hit = next(h for h in vault.recall("staging deploy token").items if h.id == memory.id)
    assert _TOKEN.fragments[0] in hit.text
    assert not [p for p in vault.admin.doctor().problems if p.check == "no secrets in files"]
