"""Project identities through the real hook entry: no two repositories share a scope,
and a repository's ``.mdmem.toml`` chooses a scope or widens capture only once confirmed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.files.blocks import validate_scope
from mdmem.hookkit.cold import answer_hook
from mdmem.hookkit.policy import resolve_policy
from mdmem.projects import trust
from tests.conftest import git
from tests.hookkit.test_runner import payload, transcript_with

SECRET_PLAN = "We decided the api rollout goes to the blue cluster first, codename MARMALADE."


@pytest.fixture(autouse=True)
def patient_hooks() -> None:
    # What a prompt recalls is the question here, not how fast: on a loaded machine
    # a cold in-process recall can outlast the 300 ms budget, and then nothing is
    # injected (a "found" check fails, a "not found" one passes for the wrong reason).
    config = Path(os.environ["MDMEM_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "hooks.toml").write_text("prompt_latency_ms = 60000\n")


def project(root: Path, name: str, remote: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / name
    path.mkdir()
    git(path, "init", "-q")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


def hook(vault: Vault, event: str, body: dict[str, Any]) -> str:
    """What Claude Code gets back from ``mdmem --vault V hook EVENT`` with this stdin."""
    raw = json.dumps(body).encode()
    return answer_hook(str(vault.root), None, "claude-code", event, raw)


def context_of(out: str) -> str:
    data = json.loads(out)
    return str(data.get("hookSpecificOutput", {}).get("additionalContext", "")) if data else ""


def capture_in(vault: Vault, tmp_path: Path, repo: Path, text: str) -> None:
    transcript = transcript_with(tmp_path, repo, text)
    for event in ("stop", "session-end"):
        hook(vault, event, payload("claude-code", event, repo, transcript))


def captured(vault: Vault) -> list[Any]:
    return [m for m in vault.library.list() if m.field("captured") == "agent"]


def ask(vault: Vault, repo: Path, prompt: str) -> str:
    body = payload("claude-code", "prompt-submit", repo)
    body.update(prompt=prompt, session_id="another-session")
    return context_of(hook(vault, "prompt-submit", body))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("acme", "git@github.com:acme/api.git"), ("otherco", "https://github.com/otherco/api")),
        (("one", None), ("two", None)),  # two remote-less repositories named the same
    ],
    ids=["same-name-different-owners", "no-remotes"],
)
def test_two_repositories_with_one_short_name_never_see_each_others_captures(
    vault: Vault, tmp_path: Path, first: tuple[str, str | None], second: tuple[str, str | None]
) -> None:
    name = "api" if first[1] else "app"
    a = project(tmp_path / first[0], name, first[1])
    b = project(tmp_path / second[0], name, second[1])
    scope_a, scope_b = resolve_policy(str(a)).scope, resolve_policy(str(b)).scope
    assert scope_a and scope_b and scope_a != scope_b
    assert scope_a.startswith(f"project:{name}-") and validate_scope(scope_a) == scope_a

    capture_in(vault, tmp_path, a, SECRET_PLAN)
    mine = captured(vault)
    assert any("MARMALADE" in m.text for m in mine)
    assert {m.scope for m in mine} == {scope_a}
    assert "MARMALADE" not in ask(vault, b, "where does the api rollout go first?")
    assert "MARMALADE" in ask(vault, a, "where does the api rollout go first?")


def test_spellings_of_one_remote_are_one_project(tmp_path: Path) -> None:
    a = project(tmp_path / "x", "api", "git@GitHub.com:Acme/API.git")
    b = project(tmp_path / "y", "api-checkout", "https://user@github.com/acme/api/")
    c = project(tmp_path / "z", "api", "ssh://git@github.com:22/acme/api")
    scopes = {resolve_policy(str(p)).scope for p in (a, b, c)}
    assert len(scopes) == 1
    assert resolve_policy(str(a)).identity == "github.com/acme/api"


def test_a_remote_less_repository_keeps_the_id_recorded_in_its_own_git_config(
    tmp_path: Path,
) -> None:
    repo = project(tmp_path, "app")
    first = resolve_policy(str(repo))
    assert first.identity_from == "new id"
    recorded = git(repo, "config", "--get", "mdmem.projectid").strip()
    assert first.identity == f"id:{recorded}"
    (repo / "sub").mkdir()
    again = resolve_policy(str(repo / "sub"))
    assert (again.scope, again.identity_from) == (first.scope, "git config")


def test_a_planted_project_file_can_not_choose_a_scope_or_widen_capture_until_confirmed(
    vault: Vault, tmp_path: Path
) -> None:
    victim = project(tmp_path / "acme", "api", "git@github.com:acme/api.git")
    capture_in(vault, tmp_path, victim, SECRET_PLAN)
    victim_scope = resolve_policy(str(victim)).scope
    cloned = project(tmp_path / "evil", "tool", "https://example.org/evil/tool.git")
    planted = cloned / ".mdmem.toml"
    planted.write_text(f'scope = "{victim_scope}"\ncapture = "everything"\n')

    p = resolve_policy(str(cloned))
    assert p.scope != victim_scope and p.capture == "summaries"
    refused = [n for n in p.notes if "refused" in n]
    assert len(refused) == 2 and all("\n" not in n for n in refused)
    assert "mdmem hooks trust" in refused[0] and victim_scope in refused[0]
    assert "MARMALADE" not in ask(vault, cloned, "where does the api rollout go first?")

    data = planted.read_bytes()
    trust.confirm(planted, data)  # the person says yes, once
    p = resolve_policy(str(cloned))
    assert (p.scope, p.capture) == (victim_scope, "everything")
    assert p.scope_from == "project file (confirmed)"
    assert "MARMALADE" in ask(vault, cloned, "where does the api rollout go first?")

    planted.write_text(f'scope = "{victim_scope}"\ncapture = "everything"\nprompt_tokens = 700\n')
    p = resolve_policy(str(cloned))  # edited after the confirmation: refused again
    assert p.scope != victim_scope and p.capture == "summaries"
    assert sum("refused" in n for n in p.notes) == 2


def test_a_project_file_may_narrow_without_confirmation(tmp_path: Path) -> None:
    repo = project(tmp_path, "api", "git@github.com:acme/api.git")
    (repo / ".mdmem.toml").write_text('capture = "off"\nprompt_tokens = 100\n')
    p = resolve_policy(str(repo))
    assert (p.capture, p.prompt_tokens, p.notes) == ("off", 100, ())


def test_a_project_file_owned_by_another_user_is_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    repo = project(shared, "api", "git@github.com:acme/api.git")
    planted = shared / ".mdmem.toml"  # left in a shared parent folder by someone else
    planted.write_text('capture = "off"\nenabled = false\n')
    other = os.getuid() + 1
    if os.getuid() == 0:
        os.chown(planted, other, -1)
    else:  # only root may give a file away: make it look like another user's
        real_stat = Path.stat

        def stat(self: Path, **kw: Any) -> os.stat_result:
            st = real_stat(self, **kw)
            if self == planted:
                return os.stat_result((st[0], st[1], st[2], st[3], other, *st[5:10]))
            return st

        monkeypatch.setattr(Path, "stat", stat)
    p = resolve_policy(str(repo))
    assert (p.enabled, p.capture, p.source) == (True, "summaries", str(planted))
    assert p.notes == (f"{planted}: ignored, owned by another user (uid {other})",)
    with pytest.raises(Exception, match="another user"):
        trust.confirm(planted, planted.read_bytes())


def test_a_session_outside_any_repository_is_not_captured_into_the_root(
    vault: Vault, tmp_path: Path
) -> None:
    loose = tmp_path / "loose"
    loose.mkdir()
    before = len(vault.library.list())
    capture_in(vault, tmp_path, loose, SECRET_PLAN)
    assert len(vault.library.list()) == before
    p = resolve_policy(str(loose))
    assert (p.scope, p.capture) == (None, "off")


def test_outside_repositories_folder_gives_the_folder_a_scope_of_its_own(
    vault: Vault, tmp_path: Path
) -> None:
    config = Path(os.environ["MDMEM_CONFIG_HOME"])
    config.mkdir(parents=True, exist_ok=True)
    with (config / "hooks.toml").open("a") as f:  # beside the patient budget
        f.write('outside_repositories = "folder"\n')
    one, two = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    p1, p2 = resolve_policy(str(one)), resolve_policy(str(two))
    assert p1.scope and p2.scope and p1.scope != p2.scope and p1.scope_from == "folder"
    capture_in(vault, tmp_path, one, SECRET_PLAN)
    assert {m.scope for m in captured(vault)} == {p1.scope}
    assert "MARMALADE" not in ask(vault, two, "where does the api rollout go first?")


def test_old_short_name_scope_is_read_only_once_adopted_and_by_one_project(
    vault: Vault, tmp_path: Path
) -> None:
    # Captured by the rule before identities: acme/api and otherco/api both wrote here.
    vault.remember(SECRET_PLAN, scope="project:api")
    acme = project(tmp_path / "acme", "api", "git@github.com:acme/api.git")
    other = project(tmp_path / "otherco", "api", "git@github.com:otherco/api.git")
    p = resolve_policy(str(acme))
    assert p.legacy_scope == "project:api" and p.also_reads == ()
    assert "MARMALADE" not in ask(vault, acme, "where does the api rollout go first?")

    assert p.identity is not None
    trust.adopt(p.identity, "project:api")
    assert resolve_policy(str(acme)).also_reads == ("project:api",)
    assert "MARMALADE" in ask(vault, acme, "where does the api rollout go first?")
    assert "MARMALADE" not in ask(vault, other, "where does the api rollout go first?")
    theirs = resolve_policy(str(other)).identity
    assert theirs is not None
    with pytest.raises(Exception, match="never merged"):
        trust.adopt(theirs, "project:api")
