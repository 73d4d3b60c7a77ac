"""The team tier end to end, with real git: two people, two clones of one bare
repository, two personal vaults, the real `mdmem` CLI and the real prompt hook
driven by a recorded Claude Code payload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.config import config_home

HOOKS = Path(__file__).parent.parent / "hookkit" / "data" / "hooks"
GOTCHA = "The payments service needs PAYMENTS_SANDBOX=1 in its tests, or charges hit Stripe."
PROMPT = "Why do the payments service tests charge real cards? Check PAYMENTS_SANDBOX."
# A GitHub token shape the secret guard knows (made up, never valid).
TOKEN = "ghp_" + "Zq7XvB2mK9pL4wR8tY1nC6dF3hJ5sA0eG2uQ"


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=env
    )


@dataclass
class Person:
    name: str
    clone: Path
    vault: Path

    def mdmem(self, *args: str, ok: bool = True) -> Any:
        result = CliRunner().invoke(main, ["--vault", str(self.vault), *args])
        if ok:
            assert result.exit_code == 0, result.output
        return result

    def team(self, *args: str, ok: bool = True) -> Any:
        return self.mdmem("team", *args, "--repo", str(self.clone), ok=ok)

    def team_json(self, *args: str) -> Any:
        return json.loads(self.team(*args, "--json").output)

    def hook(self, prompt: str = PROMPT) -> str:
        """What Claude Code's UserPromptSubmit hook injects for this person here."""
        raw = json.loads((HOOKS / "claude-code.prompt-submit.json").read_text())
        raw.update(cwd=str(self.clone), prompt=prompt)
        result = CliRunner().invoke(
            main,
            ["--vault", str(self.vault), "hook", "prompt-submit", "--host", "claude-code"],
            input=json.dumps(raw),
        )
        assert result.exit_code == 0, result.output
        out = json.loads(result.output) if result.output.strip() else {}
        return str(out.get("hookSpecificOutput", {}).get("additionalContext", ""))

    def session_start(self) -> Any:
        raw = json.loads((HOOKS / "claude-code.session-start.json").read_text())
        raw.update(cwd=str(self.clone))
        result = CliRunner().invoke(
            main,
            ["--vault", str(self.vault), "hook", "session-start", "--host", "claude-code"],
            input=json.dumps(raw),
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.output)

    def remember(self, text: str, **kw: Any) -> str:
        with Vault.open(self.vault, agent=f"{self.name.lower()}-agent") as v:
            return v.remember(text, **kw).id

    def pull(self) -> subprocess.CompletedProcess[str]:
        return git(self.clone, "pull", "--no-rebase", "-q", "origin", "main", check=False)

    def push(self) -> None:
        git(self.clone, "push", "-q", "origin", "HEAD:main")


def _clone(tmp: Path, origin: Path, name: str) -> Person:
    clone = tmp / name.lower()
    git(tmp, "clone", "-q", str(origin), str(clone))
    git(clone, "config", "user.name", name)
    git(clone, "config", "user.email", f"{name.lower()}@example.org")
    Vault.init(tmp / f"vault-{name.lower()}", agent=f"{name.lower()}-agent").close()
    return Person(name, clone, tmp / f"vault-{name.lower()}")


@pytest.fixture
def team(tmp_path: Path) -> tuple[Person, Person]:
    """Ada set up the team folder and pushed it; Bob cloned afterwards."""
    origin = tmp_path / "shop.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    ada = _clone(tmp_path, origin, "Ada")
    (ada.clone / "app.py").write_text("print('shop')\n")
    git(ada.clone, "add", "app.py")
    git(ada.clone, "commit", "-q", "-m", "the shop")
    git(ada.clone, "branch", "-M", "main")
    done = ada.team_json("init")
    assert set(done["created"]) >= {".mdmem/team/gotchas.md", ".gitattributes"}
    ada.push()
    bob = _clone(tmp_path, origin, "Bob")
    # This flow checks what is injected, not how fast (bench/ measures that): a cold
    # `python -m mdmem hook` on a loaded CI machine may take longer than the default
    # 300 ms, and would then rightly answer "degraded" instead of the memories.
    config_home().mkdir(parents=True, exist_ok=True)
    (config_home() / "hooks.toml").write_text("prompt_latency_ms = 60000\n")
    return ada, bob


def team_part(context: str) -> str:
    """The team section of an injected block ("" without one)."""
    at = context.find("### Team memory")
    return context[at:] if at >= 0 else ""


def _line_number(path: Path, memory_id: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if memory_id in line:
            return number
    raise AssertionError(f"{memory_id} not in {path}")


def test_propose_review_accept_pull_inject_blame_delete(team: tuple[Person, Person]) -> None:
    ada, bob = team
    gotcha = ada.remember(GOTCHA, kind="gotcha")
    proposed = ada.team_json("propose", gotcha, "--note", "cost us a refund run")
    assert proposed["files"] == [".mdmem/team/gotchas.md"]
    author = git(ada.clone, "log", "-1", "--format=%an|%s").stdout.strip()
    assert author == f"Ada|team: propose ^{gotcha} (gotcha)"
    ada.push()
    # A proposal is no team memory yet: nobody's agent sees it (Ada's own vault has it).
    assert "team memory" not in ada.hook().lower()

    assert bob.pull().returncode == 0
    # A freshly cloned repository is a stranger's text until Bob trusts it.
    assert "team memory" not in bob.hook().lower()
    # Bob (not his agent) is told once a session how to let it in.
    assert "run `mdmem team trust`" in bob.session_start()["systemMessage"]
    bob.team("trust")
    assert "systemMessage" not in bob.session_start()
    [open_] = bob.team_json("review")["proposals"]
    assert open_["id"] == gotcha and open_["text"] == GOTCHA
    assert open_["captured_by"] == "agent ada-agent" and open_["proposed_by"] == "Ada"
    assert open_["note"] == "cost us a refund run"
    assert "PAYMENTS_SANDBOX" not in bob.hook()
    assert "team memory" not in ada.hook().lower()

    accepted = bob.team_json("accept", gotcha)
    assert accepted["by"] == "Bob" and accepted["lines"][0]["accepted_by"] == "Bob"
    assert bob.team_json("review")["proposals"] == []
    bob.push()
    assert ada.pull().returncode == 0

    for person in (ada, bob):
        context = person.hook()
        assert GOTCHA in context, context
        # Ada's own copy of the memory is not shown beside the team's line.
        assert context.count(GOTCHA) == 1, context
        assert "### Team memory (shop, accepted by teammates)" in context
        # Who proposed and accepted it: git's commits, never the line's words.
        label = f"[^{gotcha} · team memory · gotcha · proposed by Ada, accepted by Bob on "
        assert label in context
        # Fenced as quoted data like every injected memory.
        assert "```memory" in context
        # Unrelated prompts get no team memory.
        assert "team memory" not in person.hook("How do I rename a CSS class?").lower()

    # The same through the command a host runs (a fresh `python -m mdmem hook` process).
    raw = json.loads((HOOKS / "claude-code.prompt-submit.json").read_text())
    raw.update(cwd=str(bob.clone), prompt=PROMPT)
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, "-m", "mdmem", "--vault", str(bob.vault), "hook", "prompt-submit"],
        input=json.dumps(raw).encode(),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": root},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert GOTCHA in team_part(context) and "accepted by Bob" in context

    gotchas = ada.clone / ".mdmem" / "team" / "gotchas.md"
    number = _line_number(gotchas, gotcha)
    blame = git(ada.clone, "blame", "--line-porcelain", f"-L{number},{number}", str(gotchas))
    assert "author Bob\n" in blame.stdout

    # Bob deletes the line by hand in a reviewed commit; Ada's agent forgets it after a pull.
    path = bob.clone / ".mdmem" / "team" / "gotchas.md"
    path.write_text("".join(x for x in path.read_text().splitlines(True) if gotcha not in x))
    git(bob.clone, "commit", "-q", "-am", "team: drop the sandbox gotcha (fixed in CI)")
    bob.push()
    assert GOTCHA in team_part(ada.hook())  # hooks never pull on their own
    assert ada.pull().returncode == 0
    assert team_part(ada.hook()) == ""


def test_secrets_and_personal_memories_are_refused_and_check_names_the_line(
    team: tuple[Person, Person],
) -> None:
    ada, _ = team
    # A secret a person typed into their vault by hand (the writer never stores one).
    memory = ada.vault / "MEMORY.md"
    memory.write_text(memory.read_text() + f"- The deploy token is {TOKEN} ^m-0000000000aa01\n")
    refused = ada.team("propose", "m-0000000000aa01", ok=False)
    assert refused.exit_code == 1 and "secret" in refused.output
    assert TOKEN not in refused.output

    personal = ada.remember("Ada's manager is Carol; Ada reports on Fridays.", scope="user:ada")
    refused = ada.team("propose", personal, ok=False)
    assert refused.exit_code == 1 and "personal scope user:ada" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    gotchas = ada.clone / ".mdmem" / "team" / "gotchas.md"
    assert "m-" not in gotchas.read_text()
    # An explicit flag lets it in, with nothing personal on the line.
    ada.team("propose", personal, "--allow-personal")
    line = next(
        x
        for x in (ada.clone / ".mdmem/team/conventions.md").read_text().splitlines()
        if personal in x
    )
    assert "user:ada" not in line and "scope" not in line
    assert ada.team_json("check")["ok"] is True

    # A secret planted by hand in the team folder fails the check, naming file and line.
    conventions = ada.clone / ".mdmem" / "team" / "conventions.md"
    conventions.write_text(conventions.read_text() + f"- CI uses {TOKEN} ^m-0000000000aa02\n")
    checked = ada.team("check", ok=False)
    assert checked.exit_code == 1
    number = len(conventions.read_text().splitlines())
    assert f".mdmem/team/conventions.md:{number}: secret" in checked.output
    assert TOKEN not in checked.output


def test_check_names_personal_fields_duplicates_and_unreadable_lines(
    team: tuple[Person, Person],
) -> None:
    ada, _ = team
    decisions = ada.clone / ".mdmem" / "team" / "decisions.md"
    decisions.write_text(
        decisions.read_text()
        + "- Use Postgres 16. [speaker:: Carol] ^m-0000000000bb01\n"
        + "- Use Postgres 16. ^m-0000000000bb01\n"
        + "- A line someone typed without an id\n"
    )
    checked = ada.team("check", "--json", ok=False)
    assert checked.exit_code == 1
    findings = json.loads(checked.output)["findings"]
    got = {(f["line"], f["problem"]) for f in findings}
    # Typed by hand, the line is also one no proposal in git put there (unreviewed:
    # this finding is new with provenance from git).
    assert got == {(4, "personal"), (4, "unreviewed"), (5, "duplicate"), (6, "unparseable")}, (
        findings
    )
    assert all(f["path"] == ".mdmem/team/decisions.md" for f in findings)


def test_two_concurrent_proposals_to_one_file_merge_and_a_real_conflict_stays_one(
    team: tuple[Person, Person],
) -> None:
    ada, bob = team
    bob.team("trust")  # registers the merge driver in Bob's own git config
    first = ada.remember(
        "The cart service caches prices for 60s; bust it after imports.", kind="gotcha"
    )
    second = bob.remember("Run migrations with ALEMBIC_LOCK=1 or two pods race.", kind="gotcha")
    ada.team("propose", first)
    bob.team("propose", second)
    ada.push()
    pulled = bob.pull()
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    text = (bob.clone / ".mdmem" / "team" / "gotchas.md").read_text()
    assert first in text and second in text and "<<<<<<<" not in text
    assert bob.team_json("check")["ok"] is True
    assert {p["id"] for p in bob.team_json("review")["proposals"]} == {first, second}
    bob.push()

    # Both accept the same proposal differently edited: a conflict, reported as one.
    assert ada.pull().returncode == 0
    for person, words in ((ada, "sixty seconds"), (bob, "one minute")):
        path = person.clone / ".mdmem" / "team" / "gotchas.md"
        path.write_text(path.read_text().replace("60s", words))
        git(person.clone, "commit", "-q", "-am", f"team: reword ({person.name})")
    ada.push()
    clash = bob.pull()
    assert clash.returncode != 0 and "CONFLICT" in clash.stdout + clash.stderr
    assert "<<<<<<<" in (bob.clone / ".mdmem" / "team" / "gotchas.md").read_text()
    checked = bob.team("check", ok=False)
    assert checked.exit_code == 1 and "unparseable: a merge conflict marker" in checked.output


def test_outside_a_repository_every_command_says_so_in_one_line(tmp_path: Path) -> None:
    Vault.init(tmp_path / "v").close()
    for args in (["review"], ["check"], ["init"], ["trust"], ["accept", "m-0000000000aa01"]):
        result = CliRunner().invoke(
            main, ["--vault", str(tmp_path / "v"), "team", *args, "--repo", str(tmp_path)]
        )
        assert result.exit_code == 1
        assert result.output.strip().count("\n") == 0
        assert "not inside a git repository" in result.output


def test_reject_accept_many_and_remove_are_commits_by_the_person(
    team: tuple[Person, Person],
) -> None:
    ada, bob = team
    ids = [
        ada.remember(f"Service {n} needs WORKERS_{n}=4 in staging.", kind="gotcha")
        for n in (1, 2, 3)
    ]
    for memory_id in ids:
        ada.team("propose", memory_id)
    rejected = ada.team("reject", ids[0], "--reason", "only true on my laptop")
    assert rejected.output.startswith(f"rejected ^{ids[0]} as Ada")
    log = git(ada.clone, "log", "-1", "--format=%an|%s|%b").stdout
    assert log.startswith(f"Ada|team: reject ^{ids[0]}|Reason: only true on my laptop")
    assert ada.team("accept", ok=False).exit_code == 2  # neither ids nor --all
    # Acceptance is a second person's: Ada's own proposals wait for a teammate.
    own = ada.team("accept", "--all", ok=False)
    assert own.exit_code == 1 and "your own proposal" in own.output
    ada.push()
    assert bob.pull().returncode == 0
    both = bob.team_json("accept", "--all")
    assert both["ids"] == ids[1:] and len(both["files"]) == 1 and both["by"] == "Bob"
    assert (
        git(bob.clone, "rev-list", "--count", "HEAD").stdout.strip() == "7"
    )  # code, init, 3 proposals, reject, one accept
    # A rejected or accepted proposal can't be decided again; an accepted line is removed.
    assert "no open proposal" in bob.team("accept", ids[1], ok=False).output
    assert "no team memory" in bob.team("reject", ids[0], ok=False).output
    bob.team("remove", ids[1])
    text = (bob.clone / ".mdmem" / "team" / "gotchas.md").read_text()
    assert ids[0] not in text and ids[1] not in text and ids[2] in text
    # A team file with uncommitted edits is never swept into a command's commit.
    path = bob.clone / ".mdmem" / "team" / "gotchas.md"
    path.write_text(text + "\nA draft paragraph.\n")
    refused = bob.team("remove", ids[2], ok=False)
    assert "uncommitted changes" in refused.output and path.read_text().endswith(
        "draft paragraph.\n"
    )
