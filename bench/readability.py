"""How much of each memory line is text a person reads, on a fresh vault used as a new user would.

Usage: python bench/readability.py [--json] [--show]

Builds a vault in a scratch folder and does what a first week does:
``remember`` with a kind, tags, importance and fields; a recorded chat with two
speakers, consolidated (extractive, no model); a supersede and a resolve; a
failed test run captured by the coding-agent hook from a recorded Claude Code
payload; a line typed by hand into ``USER.md``; a memory proposed to and
accepted into a repository's team tier. Then it reads every line of every
memory block (as the parser finds them) and reports how much of it is
readable text: the line without its ``^id``, minus machine text (Dataview
``[key:: value]`` / ``(key:: value)`` runs, ``%%…%%`` comments, HTML
comments). The target (issue 39): every memory line >= 70 %, team lines >= 60 %.
``--show`` prints the files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

_ID = re.compile(r"(?:^|\s)\^m-[0-9a-z]{6,32}\s*$")
_MACHINE = re.compile(r"\[[\w-]+::[^\]]*\]|\([\w-]+::[^)]*\)|%%.*?%%|<!--.*?-->")
HOOKS = Path(__file__).resolve().parent.parent / "tests" / "hookkit" / "data"


def readable_share(line: str) -> float | None:
    """Share of the line (id aside, surrounding space ignored) that is not machine text."""
    body = _ID.sub("", line.rstrip("\r\n")).strip()
    if not body:
        return None
    machine = sum(len(m.group(0)) for m in _MACHINE.finditer(body))
    return 1 - machine / len(body)


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, env=env, capture_output=True)


def build(root: Path) -> tuple[Path, Path | None]:
    from mdmem import Vault

    vault_dir, repo = root / "vault", root / "repo"
    Vault.init(vault_dir)
    vault = Vault.open(vault_dir, agent="orc-1")
    try:
        vault.remember("The user prefers metric units.", kind="preference", tags=["units"])
        vault.remember(
            "Production deploys go out on Tuesdays after the standup.",
            kind="decision",
            tags=["deploy", "ops"],
            importance=8,
            fields=[("ticket", "OPS-142")],
        )
        old = vault.remember("The staging database lives on host db-07.", kind="world")
        vault.supersede(old.id, "The staging database lives on host db-12.")
        flaky = vault.remember("The nightly export job fails when the disk is full.", kind="gotcha")
        vault.resolve(flaky.id)
        vault.log("Compared three vector stores; FAISS wins for a local sidecar.", "Research")
        vault.journal("I should ask before deleting branches.")
        vault.learn("Git", "Rebase rewrites history; never rebase shared branches.")
        session = vault.session("standup", source="slack", contact="slack:u42")
        session.record("user", "The billing job runs at 02:00 every night.", speaker="Ana")
        session.record("user", "I prefer tea over coffee in the mornings.")
        session.record("assistant", "Noted: tea in the mornings, billing job at 02:00.")
        session.record("user", "My manager is Joao and I live in Lisbon.", speaker="Ana")
        vault.consolidate()
        _capture_failure(vault, root)
        with (vault_dir / "USER.md").open("a", encoding="utf-8") as fh:
            fh.write("- I run on Saturdays.\n")
        vault.admin.commit_human_edits()
        repo = _team(vault, root)
    finally:
        vault.close()
    return vault_dir, repo


def _capture_failure(vault: object, root: Path) -> None:
    from mdmem.hookkit.policy import Policy
    from mdmem.hookkit.runner import run_event

    code = root / "code"
    code.mkdir()
    _git(code, "init", "-q")
    text = (HOOKS / "hooks" / "claude-code.post-tool-use.json").read_text(encoding="utf-8")
    payload = json.loads(text.replace("{CWD}", str(code)).replace("{TRANSCRIPT}", ""))
    payload["tool_input"]["command"] = "pytest -q tests/test_cart.py"
    payload["tool_response"]["stdout"] = (HOOKS / "failures" / "pytest.txt").read_text("utf-8")
    run_event(vault, "claude-code", "post-tool-use", payload, Policy())  # type: ignore[arg-type]


def _team(vault: object, root: Path) -> Path | None:
    """Propose and accept one memory into a repository's team tier, as ``mdmem team`` does."""
    from mdmem.team import Source
    from mdmem.team.folder import TeamFolder

    repo = root / "teamrepo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.name", "Dev")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "init")
    memory = vault.recall("deploys Tuesdays", k=1).items[0]  # type: ignore[attr-defined]
    folder = TeamFolder.at(repo)
    folder.init(vault.admin.state_dir)  # type: ignore[attr-defined]
    source = Source(
        id=memory.id,
        text=memory.text,
        kind=memory.kind,
        tags=memory.tags,
        scope=memory.scope,
        fields=(),
        created=memory.created,
        captured_by="agent orc-1",
    )
    folder.propose(source)
    other = vault.remember("Run the linters before every push.", kind="decision")  # type: ignore[attr-defined]
    folder.propose(
        Source(other.id, other.text, other.kind, (), "", (), other.created, "person Dev")
    )
    # Accepting is a teammate's (an acceptance by the proposer does not count).
    _git(repo, "config", "user.name", "Rev")
    _git(repo, "config", "user.email", "rev@example.com")
    TeamFolder.at(repo).accept([memory.id])
    return repo


def memory_lines(vault_dir: Path) -> list[tuple[str, int, str]]:
    """(path, line number, line) of every line of every memory block of the vault."""
    from mdmem.files.blocks import parse
    from mdmem.files.textfile import decode

    out = []
    for path in sorted(vault_dir.rglob("*.md")):
        rel = path.relative_to(vault_dir).as_posix()
        if rel.startswith((".git/", "templates/", ".obsidian/")):
            continue
        tf = decode(path.read_bytes())
        for block in parse(rel, tf).memories():
            for n in range(block.line_start, block.line_end + 1):
                line = tf.lines[n - 1].rstrip("\r\n")
                if line.strip():
                    out.append((rel, n, line))
    return out


def team_lines(repo: Path | None) -> list[tuple[str, int, str]]:
    if repo is None:
        return []
    out = []
    for path in sorted((repo / ".mdmem").rglob("*.md")):
        rel = path.relative_to(repo).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _ID.search(line):
                out.append((rel, n, line))
    return out


def summarise(name: str, lines: list[tuple[str, int, str]], target: float) -> dict[str, object]:
    shares = [
        (s, rel, n, line) for rel, n, line in lines if (s := readable_share(line)) is not None
    ]
    below = [x for x in shares if x[0] < target]
    worst = min(shares, default=None)
    return {
        "set": name,
        "lines": len(shares),
        "mean": sum(s for s, *_ in shares) / len(shares) if shares else float("nan"),
        "min": worst[0] if worst else float("nan"),
        "below": len(below),
        "worst": f"{worst[1]}:{worst[2]} {worst[3][:90]}" if worst else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="print every memory line")
    args = parser.parse_args()
    root = scratch_dir("mdmem-readability-")
    vault_dir, repo = build(root)
    if True:
        lines, team = memory_lines(vault_dir), team_lines(repo)
        rows = [summarise("vault memory lines", lines, 0.7), summarise("team lines", team, 0.6)]
        if args.show:
            for rel, n, line in [*lines, *team]:
                share = readable_share(line)
                print(f"{share if share is not None else 1:5.0%}  {rel}:{n}  {line}")
        if args.json:
            emit_json(rows)
            return
        print_table(
            "Readable share of memory lines (target: vault >= 70 %, team >= 60 %)",
            ["set", "lines", "mean", "min", "below target", "worst line"],
            [
                [
                    r["set"], r["lines"], f"{r['mean']:.0%}", f"{r['min']:.0%}", r["below"],
                    r["worst"],
                ]
                for r in rows
            ],
        )


if __name__ == "__main__":
    main()
