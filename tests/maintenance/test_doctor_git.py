"""doctor's git checks: files given git's lossy union merge, and .git/config
settings that would run a program."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main

from ..conftest import git

OLD_ATTRIBUTES = (
    "# Append-only files merge by union, so agents on two machines appending to the\n"
    "# same day's log never conflict (mdmem sync).\n"
    "daily/*.md merge=union\n"
    "JOURNAL.md merge=union\n"
    "sessions/**/*.md   merge=union -text\r\n"
    "notes/*.md merge=binary\n"
    "*.md diff=markdown\n"
)


def old_style(vault: Vault) -> None:
    """The vault as `mdmem init` made it before the driver was renamed."""
    (vault.root / ".gitattributes").write_text(OLD_ATTRIBUTES, encoding="utf-8", newline="")
    (vault.root / "scopes" / "project-x").mkdir(parents=True)
    (vault.root / "scopes" / "project-x" / ".gitattributes").write_text(
        "daily/*.md merge=union\n", encoding="utf-8"
    )
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "old template", human=True)


def test_a_new_vault_has_no_git_problems(vault: Vault) -> None:
    report = vault.admin.doctor()
    assert {"merge drivers", "git config"} <= set(report.checks)
    assert report.ok, report.problems


def test_doctor_reports_and_fixes_union_merge_lines(vault: Vault) -> None:
    m = vault.remember("Written before the repair")
    old_style(vault)
    report = vault.admin.doctor()
    lossy = [p for p in report.problems if p.check == "merge drivers"]
    assert [p.detail.split(" gives ")[0] for p in lossy] == [
        ".gitattributes:3",
        ".gitattributes:4",
        ".gitattributes:5",
        "scopes/project-x/.gitattributes:1",
    ]
    assert all(p.fixable for p in lossy) and not report.ok

    fixed = vault.admin.doctor(fix=True)
    assert len(fixed.fixed) == 4
    text = (vault.root / ".gitattributes").read_bytes().decode("utf-8")
    assert text.splitlines(keepends=True)[-5:] == [
        "daily/*.md merge=mdmem-append\n",
        "JOURNAL.md merge=mdmem-append\n",
        "sessions/**/*.md   merge=mdmem-append -text\r\n",  # spacing and CRLF kept
        "notes/*.md merge=binary\n",
        "*.md diff=markdown\n",
    ]
    assert "merge by union" not in text  # the comment that explained union went too
    nested = (vault.root / "scopes" / "project-x" / ".gitattributes").read_text()
    assert nested == "daily/*.md merge=mdmem-append\n"
    # One commit of its own, by the agent, marked as a repair.
    message = git(vault.root, "log", "-1", "--format=%an%n%B")
    assert message.startswith("test-agent\nrepair: merge=union -> merge=mdmem-append")
    assert "Op: repair" in message
    changed = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == [".gitattributes", "scopes/project-x/.gitattributes"]
    assert git(vault.root, "status", "--porcelain") == ""
    again = vault.admin.doctor()
    assert again.ok, again.problems
    assert vault.get(m.id).text == "Written before the repair"


def test_doctor_cli_lists_git_problems(vault: Vault) -> None:
    old_style(vault)
    git(vault.root, "config", "diff.evil.textconv", "sh -c 'echo planted'")
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(vault.root), "doctor", "--json"])
    assert out.exit_code == 1
    problems = json.loads(out.output)["problems"]
    checks = {p["check"] for p in problems}
    assert {"merge drivers", "git config"} <= checks
    planted = [p for p in problems if p["check"] == "git config"]
    assert len(planted) == 1 and "diff.evil.textconv" in planted[0]["detail"]
    assert planted[0]["fixable"] is False
    # --fix repairs the attributes; the config setting is the owner's to remove.
    fixed = runner.invoke(main, ["--vault", str(vault.root), "doctor", "--fix", "--json"])
    left = {p["check"] for p in json.loads(fixed.output)["problems"]}
    assert "git config" in left
    assert "merge=union" not in (vault.root / ".gitattributes").read_text()
