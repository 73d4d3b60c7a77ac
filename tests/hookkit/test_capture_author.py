"""One author per hook capture: the same whether the warm server or the hook's own
process made it (issue 35; it was ``mdmem`` or ``claude-code-hooks``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.hookkit.cold import answer_hook
from mdmem.hookkit.policy import Policy, policy_to_json
from mdmem.hookkit.runner import serve_hook

from ..conftest import git

DATA = Path(__file__).parent / "data" / "hooks"


def _payload(event: str, cwd: Path) -> dict:
    text = (DATA / f"claude-code.{event}.json").read_text(encoding="utf-8")
    return json.loads(text.replace("{CWD}", str(cwd)).replace("{TRANSCRIPT}", ""))


def _authors(vault: Vault, needle: str) -> set[str]:
    ids = [m.id for m in vault.library.list() if needle in m.text]
    assert ids, needle
    return {
        git(vault.root, "log", "-1", "--format=%an", "-S", memory_id).strip() for memory_id in ids
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    return path


def test_cold_and_warm_captures_have_the_same_author(vault: Vault, repo: Path) -> None:
    root = vault.root
    vault.close()
    # The hook's own process (no warm server: MDMEM_SERVER=off in tests).
    raw = json.dumps(_payload("post-tool-use", repo)).encode()
    answer_hook(str(root), None, "claude-code", "post-tool-use", raw)
    # What the warm server runs for a hook request, on the vault it keeps open.
    with Vault.open(root) as warm:
        params = {
            "host": "claude-code",
            "event": "post-tool-failure",
            "payload": _payload("post-tool-failure", repo),
            "policy": policy_to_json(Policy()),
        }
        serve_hook(warm, params)
        cold_author = _authors(warm, "test_total")
        warm_author = _authors(warm, "0042")
    assert cold_author == {"test-agent"}
    assert warm_author == cold_author
