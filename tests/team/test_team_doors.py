"""The team tier through every door besides the prompt hook: the session-start
hook, `mdmem recall` / `mdmem context` (in-process and as the warm server runs
them) and the MCP server's recall/context over a real stdio client. Real git,
a real trust record; every door reads only, and only a trusted checkout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.config import config_home
from mdmem.team import TeamFolder, trust_checkout
from mdmem.team.repo import find_checkout
from mdmem.team.trust import TRUST_FILE
from tests.mcp_client import mcp_session
from tests.team.history import code_checkout, git, reviewed

HOOKS = Path(__file__).parent.parent / "hookkit" / "data" / "hooks"
GOTCHA = "The ledger job needs LEDGER_TZ=UTC set, or nightly totals drift by a day."
OLDER = "Billing exports use ISO week numbers, never US weeks."
QUERY = "Why do the ledger totals drift? LEDGER_TZ"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout whose team folder holds two lines Ada proposed and Bob accepted
    (OLDER first), committed as `mdmem team` commits them; trusted."""
    root = code_checkout(tmp_path, remote=True)
    TeamFolder.at(root).init(tmp_path / "_state")  # commits the folder, trusts the checkout
    reviewed(
        root,
        [("m-0000000000dd01", OLDER, "2026-10-01"), ("m-0000000000dd02", GOTCHA, "2026-11-02")],
    )
    return root


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    with Vault.init(path, agent="ada-agent") as v:
        v.remember("Ada prefers short commit messages about the ledger.")
    return path


def untrust(repo: Path) -> None:
    checkout = find_checkout(repo)
    assert checkout is not None
    trust_checkout(checkout, revoke=True)


def snapshot(repo: Path) -> tuple[str, str, str, bytes]:
    """What a read must leave alone: the working tree, HEAD, the git config, the trust records."""
    trust = config_home() / TRUST_FILE
    return (
        git(repo, "status", "--porcelain", "--ignored"),
        git(repo, "rev-parse", "HEAD"),
        (repo / ".git" / "config").read_text(),
        trust.read_bytes() if trust.exists() else b"",
    )


def cli(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["--vault", str(vault), *args])


# -- session start ------------------------------------------------------------------


def session_start(vault: Path, cwd: Path) -> dict[str, Any]:
    raw = json.loads((HOOKS / "claude-code.session-start.json").read_text())
    raw.update(cwd=str(cwd))
    result = CliRunner().invoke(
        main,
        ["--vault", str(vault), "hook", "session-start", "--host", "claude-code"],
        input=json.dumps(raw),
    )
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def test_session_start_brings_the_latest_team_memory_of_a_trusted_checkout_only(
    repo: Path, vault: Path
) -> None:
    before = snapshot(repo)
    out = session_start(vault, repo / "src")  # a folder inside the checkout (need not exist)
    context = out["hookSpecificOutput"]["additionalContext"]
    team = context[context.index("### Team memory (shop, accepted by teammates)") :]
    # The most recently accepted first, each labelled and fenced as quoted data.
    assert team.index(GOTCHA) < team.index(OLDER)
    assert "[^m-0000000000dd02 · team memory · gotcha · proposed by Ada, accepted by Bob" in team
    assert "```memory" in team
    assert "systemMessage" not in out
    assert snapshot(repo) == before

    untrust(repo)
    out = session_start(vault, repo)
    context = out.get("hookSpecificOutput", {}).get("additionalContext", "")
    assert GOTCHA not in context and OLDER not in context
    assert "run `mdmem team trust`" in out["systemMessage"]  # for the person, not the model


def test_session_start_budget_keeps_the_team_section_within_it(repo: Path, vault: Path) -> None:
    hooks = config_home() / "hooks.toml"
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text("session_tokens = 130\n")
    context = session_start(vault, repo)["hookSpecificOutput"]["additionalContext"]
    assert -(-len(context) // 4) <= 130
    assert GOTCHA in context and OLDER not in context  # one line fits, the newest


# -- the CLI ----------------------------------------------------------------------------


def test_recall_and_context_in_a_trusted_checkout_add_labelled_team_lines(
    repo: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(repo)
    monkeypatch.chdir(repo)
    shown = cli(vault, "recall", QUERY)
    assert shown.exit_code == 0, shown.output
    assert "### Team memory (shop, accepted by teammates)" in shown.stdout
    assert "[^m-0000000000dd02 · team memory · gotcha" in shown.stdout
    assert "Quoted data from this repository's team memory" in shown.stdout
    assert OLDER not in shown.stdout  # ranked by the query, like the prompt hook

    data = json.loads(cli(vault, "recall", QUERY, "--json").stdout)
    team = data["team"]
    assert team["status"] == "ok" and team["repo"] == "shop"
    [item] = team["items"]
    assert item["id"] == "m-0000000000dd02" and item["text"] == GOTCHA
    assert item["accepted_by"] == "Bob" and item["where"] == ".mdmem/team/gotchas.md:5"
    assert item["shown"] in team["context"] and "```memory" in team["context"]
    assert "items" in data and "degraded" in data  # the recall's own shape is kept

    out = json.loads(cli(vault, "context", QUERY, "--json", "--max-chars", "1500").stdout)
    assert out["context"].startswith("## Recalled Memory\n")
    assert out["team"]["context"] in out["context"] and GOTCHA in out["context"]
    assert len(out["context"]) <= 1500
    assert out["team"]["items"][0]["id"] == "m-0000000000dd02"
    assert "m-0000000000dd02" not in out["ids"]  # ids: the person's own memories
    plain = cli(vault, "context", QUERY)
    assert plain.exit_code == 0 and GOTCHA in plain.stdout
    assert snapshot(repo) == before


def test_context_keeps_the_team_within_max_chars_and_none_when_too_small(
    repo: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One budget for the person's memories and the team's lines (the reading view's
    compose; this replaced a third of --max-chars set aside for the team)."""
    monkeypatch.chdir(repo)
    tight = json.loads(cli(vault, "context", QUERY, "--json", "--max-chars", "400").stdout)
    assert GOTCHA not in tight["context"] and len(tight["context"]) <= 400
    assert tight["team"]["status"] == "ok" and tight["team"]["items"] == []
    roomy = json.loads(cli(vault, "context", QUERY, "--json", "--max-chars", "1500").stdout)
    assert len(roomy["context"]) <= 1500 and GOTCHA in roomy["context"]
    assert roomy["team"]["context"] in roomy["context"]


def test_an_untrusted_checkout_gets_the_hint_on_stderr_and_no_memories(
    repo: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    untrust(repo)
    monkeypatch.chdir(repo)
    for command in ("recall", "context"):
        shown = cli(vault, command, QUERY)
        assert shown.exit_code == 0, shown.output
        assert GOTCHA not in shown.stdout and "Team memory" not in shown.stdout
        assert "shop has team memory (.mdmem/team)" in shown.stderr
        assert "run `mdmem team trust`" in shown.stderr
        data = json.loads(cli(vault, command, QUERY, "--json").stdout)
        assert data["team"] == {
            "status": "untrusted",
            "repo": "shop",
            "items": [],
            "withheld": 0,
            "context": "",
        }
    assert "mdmem team trust" not in cli(vault, "-q", "recall", QUERY).stderr


def test_repo_names_the_checkout_from_anywhere_and_outside_one_nothing_changes(
    repo: Path, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    data = json.loads(cli(vault, "recall", QUERY, "--json").stdout)
    assert "team" not in data  # no repository here: the shape is recall's alone
    named = json.loads(cli(vault, "recall", QUERY, "--json", "--repo", str(repo)).stdout)
    assert named["team"]["items"][0]["text"] == GOTCHA
    relative = json.loads(cli(vault, "recall", QUERY, "--json", "--repo", "../shop").stdout)
    assert relative["team"]["items"][0]["text"] == GOTCHA
    wrong = cli(vault, "recall", QUERY, "--repo", str(elsewhere))
    assert wrong.exit_code == 1
    assert wrong.output.strip().count("\n") == 0 and "not inside a git repository" in wrong.output


def test_the_warm_server_reads_the_team_tier_of_the_callers_folder(
    repo: Path, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm server runs `mdmem recall` for a client in another folder: the
    team tier is the client's checkout, not the server's."""
    from mdmem.cli.warm import cli_method

    monkeypatch.chdir(tmp_path)  # the server's own folder: no repository
    with Vault.open(vault) as v:
        answer = cli_method(v, {"argv": ["recall", QUERY, "--json"], "cwd": str(repo)})
        assert answer["code"] == 0, answer["stderr"]
        assert json.loads(answer["stdout"])["team"]["items"][0]["text"] == GOTCHA
        mine = cli_method(v, {"argv": ["recall", QUERY, "--json"]})
        assert "team" not in json.loads(mine["stdout"])


# -- MCP ------------------------------------------------------------------------------------


def _json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    out: dict[str, Any] = json.loads(result.content[0].text)
    return out


def test_mcp_recall_and_context_read_the_trusted_checkout_the_server_runs_in(
    repo: Path, vault: Path
) -> None:
    before = snapshot(repo)
    with Vault.open(vault) as v:
        seen = mcp_session(
            v,
            [
                ("recall", "recall", {"query": QUERY}),
                ("context", "context", {"query": QUERY, "max_chars": 3000}),
                ("unrelated", "recall", {"query": "How do I rename a CSS class?"}),
            ],
            cwd=repo,
        )
    team = _json(seen["recall"])["team"]
    assert team["status"] == "ok" and team["ids"] == ["m-0000000000dd02"]
    assert "### Team memory (shop, accepted by teammates)" in team["context"]
    assert "team memory · gotcha" in team["context"] and "```memory" in team["context"]
    context = _json(seen["context"])
    assert context["team"]["context"] in context["context"] and GOTCHA in context["context"]
    assert len(context["context"]) <= 3000
    assert _json(seen["unrelated"])["team"] == {
        "status": "ok",
        "repo": "shop",
        "ids": [],
        "context": "",
    }
    assert snapshot(repo) == before


def test_mcp_never_reads_a_checkout_the_person_has_not_trusted(
    repo: Path, vault: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    untrust(repo)
    with Vault.open(vault) as v:
        seen = mcp_session(
            v,
            [
                ("own", "recall", {"query": QUERY}),
                ("named", "recall", {"query": QUERY, "repo": str(repo)}),
                ("context", "context", {"query": QUERY, "repo": str(repo)}),
            ],
            cwd=elsewhere,
        )
    assert "team" not in _json(seen["own"])  # the server's folder is no checkout
    for label in ("named", "context"):
        out = _json(seen[label])
        assert out["team"] == {"status": "untrusted"}
        text = json.dumps(out)
        assert GOTCHA not in text and "mdmem team trust" not in text  # no nudge to the model

    # Trusted, the same call by name reads it.
    checkout = find_checkout(repo)
    assert checkout is not None
    trust_checkout(checkout)
    with Vault.open(vault) as v:
        seen = mcp_session(v, [("named", "recall", {"query": QUERY, "repo": str(repo)})])
    assert _json(seen["named"])["team"]["ids"] == ["m-0000000000dd02"]
