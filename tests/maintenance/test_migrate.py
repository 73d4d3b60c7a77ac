# ruff: noqa: E501 - the vault files below are an earlier mdmem's, byte for byte
"""``mdmem admin migrate``: a vault an earlier mdmem wrote, moved to the line format.

The vault here is what mdmem wrote before wave 5, byte for byte (fields on
the lines, retired lines in place, session turns as ``## … · user``
sections), committed in two commits as its agent did. The new mdmem reads it
as it always read; the migration keeps every id, text, kind, status, scope,
tag and field, in one commit, and ``history`` follows a memory across it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.store.vaultdir import template_dir

from ..conftest import git

AGENT = {
    "GIT_AUTHOR_NAME": "orc-1",
    "GIT_AUTHOR_EMAIL": "orc-1@agents.mdmem",
    "GIT_COMMITTER_NAME": "orc-1",
    "GIT_COMMITTER_EMAIL": "orc-1@agents.mdmem",
}

OLD_ATTRIBUTES = """\
daily/*.md merge=mdmem-append
JOURNAL.md merge=mdmem-append
sessions/**/*.md merge=mdmem-append
scopes/**/daily/*.md merge=mdmem-append
scopes/**/JOURNAL.md merge=mdmem-append
scopes/**/sessions/**/*.md merge=mdmem-append
*.md diff=markdown
"""

MEMORY = """\
# Memory

<!-- General long-term facts, one per list item. -->

- Production deploys go out on Tuesdays after the standup. #deploy [kind:: decision] [ticket:: OPS-142] [importance:: 8] ^m-01m8t7q1t200jh
- Decision: the old note that starts with a kind word. ^m-01m8t7q1wb00r7
- The nightly export job fails when the disk is full. [kind:: gotcha] [status:: resolved] [updated:: 2026-12-02] ^m-01m8t7q23s00ep
- The office plant is a monstera. [status:: archived] [updated:: 2026-12-02] ^m-01m8t7q2ar000h
"""
USER = """\
# User

<!-- The user's profile and preferences, one per list item. -->

- The user prefers metric units. #units ^m-01m8t7q17g00j3
- The user prefers tea over coffee in the mornings. [episode:: ^m-01m8t7q3et00t1] [contact:: slack:u42] [session:: standup] [sources:: ^m-01m8t7q3400013] [importance:: 6] [origin_type:: mixed] ^m-01m8t7q3et01y1
- I run on Saturdays. [captured:: human] ^m-01m8t7q43p00ey
"""
WORLD_BEFORE = """\
# World

- The staging database lives on host db-07. ^m-01m8t7q1xv00pb
"""
WORLD = """\
# World

- The staging database lives on host db-07. [status:: superseded] [by:: ^m-01m8t7q20a000f] [updated:: 2026-12-02] ^m-01m8t7q1xv00pb
- The staging database lives on host db-12. ^m-01m8t7q20a000f
"""
SESSION = """\
---
session: standup
source: slack
contact: slack:u42
started: '2026-12-02T02:00:41+00:00'
---
# Session standup

## 2026-12-02 02:00:41 · user
The billing job runs at 02:00 every night. [role:: user] [source:: slack] [contact:: slack:u42] [speaker:: Ana] [event:: e1] ^m-01m8t7q2yk009b

## 2026-12-02 02:00:41 · assistant
Steps:

1. one
2. two

[role:: assistant] [source:: slack] [contact:: slack:u42] ^m-01m8t7q37c002d

## 2026-12-03 09:15:00 · tool Bash
```
line1
```

[kind:: tool_output] [role:: tool] [source:: slack] [contact:: slack:u42] [tool:: Bash] ^m-01m8t7q39y0066
"""
DAILY = """\
# Daily log 2026-12-02

## 02:00 · Research
Compared three vector stores; FAISS wins. [sources:: ^m-01m8t7q2yk009b] ^m-01m8t7q2ew0061
"""
ALICE = """\
# User

- Alice takes her coffee black. #coffee ^m-01m8t7q2va00ps
"""


def _commit(root: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env={**_env(), **AGENT})
    subprocess.run(
        ["git", "commit", "-qm", message], cwd=root, check=True, env={**_env(), **AGENT}
    )


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def _old_vault(root: Path) -> Path:
    """A vault as mdmem wrote it before the line format: two commits."""
    root.mkdir()
    template = template_dir()
    for name in ("mdmem.toml", ".gitignore"):
        (root / name).write_bytes((template / name).read_bytes())
    (root / ".gitattributes").write_text(OLD_ATTRIBUTES)
    (root / "MEMORY.md").write_text(MEMORY)
    (root / "USER.md").write_text(USER)
    (root / "WORLD.md").write_text(WORLD_BEFORE)
    for rel, text in (
        ("sessions/standup.md", SESSION),
        ("daily/2026-12-02.md", DAILY),
        ("scopes/user/alice/USER.md", ALICE),
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    _commit(root, "remember: the first week")
    (root / "WORLD.md").write_text(WORLD)
    _commit(root, "supersede world: The staging database lives on host db-12.")
    return root


def _read(vault: Vault) -> dict[str, dict[str, object]]:
    return {
        m.id: {
            "text": m.text,
            "kind": m.kind,
            "status": m.status,
            "scope": m.scope,
            "tags": sorted(m.tags),
            "fields": dict(m.fields),
        }
        for m in vault.admin.store.memories()
    }


@pytest.fixture
def old(tmp_path: Path) -> Vault:
    return Vault.open(_old_vault(tmp_path / "vault"), agent="orc-2")


def test_an_older_vault_reads_as_it_always_did(old: Vault) -> None:
    got = _read(old)
    assert len(got) == 14
    decision = got["m-01m8t7q1t200jh"]
    assert decision["kind"] == "decision" and decision["text"].startswith("Production deploys")
    assert decision["fields"]["ticket"] == "OPS-142" and "deploy" in decision["tags"]  # type: ignore[operator,index]
    assert got["m-01m8t7q1wb00r7"]["text"] == "Decision: the old note that starts with a kind word."
    assert got["m-01m8t7q1xv00pb"]["status"] == "superseded"
    assert got["m-01m8t7q2yk009b"]["fields"]["speaker"] == "Ana"  # type: ignore[index]
    assert got["m-01m8t7q2va00ps"]["scope"] == "user:alice"
    assert got["m-01m8t7q39y0066"]["kind"] == "tool_output"


def test_doctor_names_the_older_format_until_it_is_migrated(old: Vault) -> None:
    report = old.admin.doctor()
    assert report.ok  # an older format is read, not wrong
    assert any("mdmem admin migrate" in n and "MEMORY.md" in n for n in report.notices)
    old.admin.migrate(apply=True)
    assert old.admin.doctor().notices == []


def test_a_dry_run_shows_the_diff_and_writes_nothing(old: Vault) -> None:
    head = git(old.root, "rev-parse", "HEAD")
    files = {p: p.read_bytes() for p in old.root.rglob("*") if ".git" not in p.parts and p.is_file()}
    dry = old.admin.migrate()
    assert not dry.applied and dry.memories == 10 and dry.archived == 3 and dry.transcripts == 1
    assert "+- Decision: Production deploys go out on Tuesdays after the standup. #deploy ^m-" in dry.diff
    assert "+++ b/.fields/MEMORY.md.jsonl" in dry.diff
    assert git(old.root, "rev-parse", "HEAD") == head
    now = {p: p.read_bytes() for p in old.root.rglob("*") if ".git" not in p.parts and p.is_file()}
    assert now == files


def test_the_migration_keeps_every_memory_and_history_follows_it(old: Vault) -> None:
    before = _read(old)
    done = old.admin.migrate(apply=True)
    assert done.applied and done.commit is not None and done.memories == 10
    after = _read(old)
    assert after.keys() == before.keys()
    for memory_id, was in before.items():
        now = after[memory_id]
        assert {k: now[k] for k in ("text", "kind", "status", "scope")} == {
            k: was[k] for k in ("text", "kind", "status", "scope")
        }, memory_id
        assert set(was["tags"]) <= set(now["tags"]), memory_id  # type: ignore[arg-type]
        assert now["fields"] == was["fields"], memory_id
    # The same through a fresh process with no derived state at all.
    fresh = Vault.open(old.root, state_dir=str(old.root.parent / "fresh-state"))
    assert _read(fresh) == after
    fresh.close()
    # One commit, revertible; then the commit naming it for git blame.
    log = git(old.root, "log", "--format=%s", "-2").splitlines()
    assert log == [
        "migrate: git blame looks past the migration",
        "migrate: the line format (10 memories)",
    ]
    assert done.commit in (old.root / ".git-blame-ignore-revs").read_text()
    # The files read as notes now.
    memory_md = (old.root / "MEMORY.md").read_text()
    assert "::" not in memory_md and "monstera" not in memory_md
    # A line with no field but its file's kind reads the same in both formats: as it was.
    assert "- Decision: the old note that starts with a kind word. ^m-01m8t7q1wb00r7" in memory_md
    earlier = (old.root / "WORLD.earlier.md").read_text()
    assert "db-07. → [[WORLD.md#^m-01m8t7q20a000f|newer]] ^m-01m8t7q1xv00pb" in earlier
    session = (old.root / "sessions/standup.md").read_text()
    assert "**Ana** (02:00): The billing job runs at 02:00 every night. ^m-01m8t7q2yk009b" in session
    assert "## 2026-12-03" in session and "### Bash output (09:15)" in session
    # History follows a memory across the migration: versions from before it too.
    versions = old.history("m-01m8t7q1xv00pb")
    assert [(v.status, v.path) for v in versions] == [
        ("active", "WORLD.md"),
        ("superseded", "WORLD.md"),  # read from its inline fields, before the migration
        ("superseded", "WORLD.earlier.md"),  # moved by the migration commit
    ]
    assert versions[-1].commit == done.commit
    assert old.history("m-01m8t7q1t200jh")[0].text == before["m-01m8t7q1t200jh"]["text"]
    # Nothing left to do; and revertible with git.
    assert old.admin.migrate().nothing_to_do
    old.close()
    git(old.root, "revert", "--no-edit", "HEAD~1")
    reverted = Vault.open(old.root, agent="orc-2")
    assert _read(reverted) == before
    reverted.close()


def test_the_cli_migrates_with_yes(old: Vault) -> None:
    old.close()
    runner = CliRunner()
    base = ["--vault", str(old.root), "admin", "migrate"]
    dry = runner.invoke(main, base)
    assert dry.exit_code == 0, dry.output
    assert "would migrate 10 memories" in dry.output and "+++ b/.fields/USER.md.jsonl" in dry.output
    done = runner.invoke(main, [*base, "--yes", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["applied"] is True and data["memories"] == 10 and data["commit"]
    again = runner.invoke(main, base)
    assert "nothing to migrate" in again.output


def test_a_vault_this_mdmem_wrote_needs_no_migration(vault: Vault, tmp_path: Path) -> None:
    """Chunks and episodes keep no fields of their own: they are not an older format."""
    guide = tmp_path / "guide.md"
    guide.write_text("# Guide\n\n## Setup\n\nInstall it with care.\n\n## Use\n\nRun it daily.\n")
    vault.library.ingest(guide)
    vault.remember("We chose FAISS for the sidecar.", kind="decision")
    chat = vault.session("s1", source="slack", contact="slack:u1")
    chat.record("user", "the build is red again", speaker="Ana")
    vault.consolidate(llm=None)
    assert vault.admin.doctor().notices == []
    dry = vault.admin.migrate()
    assert dry.memories == 0 and dry.files == [] and not dry.diff


def test_a_line_without_fields_keeps_its_reading_when_its_fields_change(old: Vault) -> None:
    """An older line that opens with a kind's word is a fact's text; when its status
    changes and its fields go beside it, the word stays text (escaped), not a kind."""
    old.admin.migrate(apply=True)
    memory_id = "m-01m8t7q1wb00r7"
    old.resolve(memory_id)
    now = old.get(memory_id)
    assert (now.text, now.kind, now.status) == (
        "Decision: the old note that starts with a kind word.",
        "fact",
        "resolved",
    )
    fresh = Vault.open(old.root, state_dir=str(old.root.parent / "fresh-state"))
    again = fresh.get(memory_id)
    assert (again.text, again.kind, again.status) == (now.text, now.kind, now.status)
    fresh.close()
