"""Team tier histories made with plain git, as `mdmem team` commits them.

A reviewed line is a proposal commit by one person and an acceptance commit
by another, each with the trailers mdmem writes; these helpers make them
directly (authors and dates as given, the text as given, no secret guard),
so a test can set up what a real repository's history holds, or a hostile
variant of it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ADA = ("Ada", "ada@example.org")
BOB = ("Bob", "bob@example.org")
LABELS = {"gotcha": "Gotcha", "decision": "Decision", "fact": "Fact"}


def git(cwd: Path, *args: str) -> str:
    """git in ``cwd``, whatever GIT_* the test runner's own environment sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env
    ).stdout


def code_checkout(parent: Path, *, remote: bool = False, first_file: bool = True) -> Path:
    """A code repository ``parent/shop`` on ``main``, Ada configured, one commit (of
    ``app.py``, or empty), with an ``origin`` remote when asked."""
    root = parent / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", ADA[0])
    git(root, "config", "user.email", ADA[1])
    if remote:
        git(root, "remote", "add", "origin", "git@example.org:acme/shop.git")
    if first_file:
        (root / "app.py").write_text("print('shop')\n")
        git(root, "add", "app.py")
        git(root, "commit", "-q", "-m", "the shop")
    return root


def commit_as(repo: Path, who: tuple[str, str], message: str, on: str = "", *paths: str) -> str:
    """Commit ``paths`` (default: every change) as ``who``, dated ``on`` (YYYY-MM-DD)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME=who[0],
        GIT_AUTHOR_EMAIL=who[1],
        GIT_COMMITTER_NAME=who[0],
        GIT_COMMITTER_EMAIL=who[1],
    )
    if on:
        moment = f"{on}T12:00:00+00:00"
        env.update(GIT_AUTHOR_DATE=moment, GIT_COMMITTER_DATE=moment)

    def run(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
        ).stdout

    run("add", "-A", "--", *(paths or (".",)))
    run("commit", "-q", "--no-verify", "-m", message)
    return run("rev-parse", "HEAD").strip()


def line(memory_id: str, text: str, kind: str, says: str) -> str:
    return f"- {LABELS[kind]}: {text} \u2014 {says} ^{memory_id}\n"


def propose(
    repo: Path,
    memory_id: str,
    text: str,
    kind: str = "gotcha",
    *,
    by: tuple[str, str] = ADA,
    on: str = "",
    file: str = "gotchas.md",
) -> None:
    """Append the line as ``by``'s proposal, committed with mdmem's trailers."""
    path = repo / ".mdmem" / "team" / file
    path.write_text(path.read_text() + line(memory_id, text, kind, f"proposed by {by[0]}"))
    message = f"team: propose ^{memory_id} ({kind})\n\nMemory-Id: {memory_id}\nOp: team-propose"
    commit_as(repo, by, message, on)


def accept(
    repo: Path,
    memory_id: str,
    *,
    by: tuple[str, str] = BOB,
    on: str = "",
    file: str = "gotchas.md",
) -> None:
    """Rewrite the line's phrase and commit it as ``by``'s acceptance."""
    path = repo / ".mdmem" / "team" / file
    lines = path.read_text().splitlines(keepends=True)
    for n, text in enumerate(lines):
        if text.rstrip().endswith(f"^{memory_id}"):
            head, _, _ = text.rpartition(" \u2014 ")
            lines[n] = f"{head} \u2014 accepted by {by[0]} ^{memory_id}\n"
    path.write_text("".join(lines))
    message = f"team: accept ^{memory_id}\n\nMemory-Id: {memory_id}\nOp: team-accept"
    commit_as(repo, by, message, on)


def reviewed(
    repo: Path,
    items: list[tuple[str, str, str]],
    *,
    kind: str = "gotcha",
    proposer: tuple[str, str] = ADA,
    acceptor: tuple[str, str] = BOB,
    file: str = "gotchas.md",
) -> None:
    """(id, text, date) lines proposed by ``proposer`` and accepted by ``acceptor``
    on that date, in this order."""
    for memory_id, text, on in items:
        propose(repo, memory_id, text, kind, by=proposer, on=on, file=file)
    for memory_id, _text, on in items:
        accept(repo, memory_id, by=acceptor, on=on, file=file)
