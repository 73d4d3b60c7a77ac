"""Vault writes: routing, formats, idempotency, lifecycle ops, safety and git trail."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mdmem import (
    InvalidInputError,
    MemoryNotFoundError,
    PathOutsideVaultError,
    SecretRefusedError,
    Vault,
    VaultExistsError,
    VaultFileError,
    VaultNotFoundError,
)
from mdmem.files.ids import is_memory_id
from mdmem.store.gitattributes import union_lines

from .conftest import git, kept_fields


def read(vault: Vault, rel: str) -> str:
    return (vault.root / rel).read_text(encoding="utf-8")


def commits(vault: Vault) -> list[str]:
    return git(vault.root, "log", "--format=%an|%ae|%s").splitlines()


# ------------------------------------------------------------- init/open ----


def test_init_copies_the_template_and_commits(vault: Vault) -> None:
    for name in ["MEMORY.md", "USER.md", "LEARNING.md", "WORLD.md", "JOURNAL.md", "mdmem.toml"]:
        assert (vault.root / name).is_file()
    for folder in ["daily", "episodes", "sessions", "templates", ".obsidian"]:
        assert (vault.root / folder).is_dir()
    daily = (vault.root / ".obsidian" / "daily-notes.json").read_text()
    assert '"folder": "daily"' in daily and '"format": "YYYY-MM-DD"' in daily
    attributes = (vault.root / ".gitattributes").read_text()
    assert "daily/*.md merge=mdmem-append" in attributes
    # git's union only where it is the merge (fields files, archives), never for entries
    assert union_lines(attributes) == [] and "**/.fields/*.jsonl merge=union" in attributes
    log = commits(vault)
    assert len(log) == 1 and log[0].startswith("test-agent|test-agent@agents.mdmem|init")
    assert git(vault.root, "status", "--porcelain") == ""


def test_template_folder_is_exactly_what_init_copies(vault: Vault) -> None:
    template = Path(__file__).resolve().parent.parent / "vault_template"
    expected = sorted(
        p.relative_to(template).as_posix() for p in template.rglob("*") if p.is_file()
    )
    tracked = sorted(git(vault.root, "ls-files").split())
    assert tracked == expected


def test_init_twice_is_an_error(vault: Vault) -> None:
    with pytest.raises(VaultExistsError):
        Vault.init(vault.root)
    assert Vault.init(vault.root, exist_ok=True).root == vault.root


def test_open_finds_settings_and_env_overrides(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDMEM_RECALL_K", "9")
    monkeypatch.setenv("MDMEM_AGENT", "env-agent")
    opened = Vault.open(vault.root)
    assert opened.settings.recall.k == 9
    assert opened.settings.agent == "env-agent"
    assert Vault.open(vault.root, agent="explicit").settings.agent == "explicit"


def test_open_walks_up_from_the_cwd(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(vault.root / "daily")
    assert Vault.open().root == vault.root


def test_open_a_folder_without_a_vault(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        Vault.open(tmp_path)


def test_state_lives_outside_the_vault(vault: Vault) -> None:
    assert vault.root not in vault.admin.state_dir.parents
    assert not any(p.name.endswith(".lock") for p in vault.root.rglob("*") if ".git" not in p.parts)


# ---------------------------------------------------------------- writes ----


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("preference", "USER.md"),
        ("world", "WORLD.md"),
        ("fact", "MEMORY.md"),
        ("decision", "MEMORY.md"),
        ("gotcha", "MEMORY.md"),
    ],
)
def test_remember_routes_by_kind(vault: Vault, kind: str, path: str) -> None:
    memory = vault.remember(f"A {kind} worth keeping", kind=kind, tags=["t1"])
    assert memory.path == path and memory.kind == kind and memory.was_new
    assert is_memory_id(memory.id)
    line = read(vault, path).splitlines()[memory.line - 1]
    # A kind that is not the file's own reads as its word, never as a field.
    word = {"decision": "Decision: ", "gotcha": "Gotcha: "}.get(kind, "")
    assert line.startswith(f"- {word}A {kind} worth keeping") and line.endswith(f"^{memory.id}")
    assert "#t1" in line and "::" not in line
    assert vault.get(memory.id).text.startswith(f"A {kind} worth keeping")


def test_scopes_have_their_own_files(vault: Vault) -> None:
    a = vault.remember("Launch is in May", scope="project:marketing")
    b = vault.remember("Launch is in May", scope="user:alice")
    c = vault.remember("Launch is in May")
    assert a.path == "scopes/project/marketing/MEMORY.md"
    assert b.path == "scopes/user/alice/MEMORY.md"
    assert c.path == "MEMORY.md"
    assert len({a.id, b.id, c.id}) == 3
    assert vault.get(a.id).scope == "project:marketing"
    with pytest.raises(InvalidInputError):
        vault.remember("x", scope="../../etc")


def test_remember_is_idempotent_per_scope(vault: Vault) -> None:
    first = vault.remember("The user prefers metric units.", kind="preference")
    again = vault.remember("  the user prefers METRIC units ", kind="preference")
    assert again.id == first.id and not again.was_new
    assert read(vault, "USER.md").count("metric") == 1
    assert len(commits(vault)) == 2  # init + one remember


def test_log_appends_to_todays_daily_file(vault: Vault) -> None:
    before = datetime.now().astimezone()
    entry = vault.log("Searched the docs.\n- found one\n- found two", category="Research")
    after = datetime.now().astimezone()
    assert entry.path in {f"daily/{t:%Y-%m-%d}.md" for t in (before, after)}
    assert entry.kind == "log"
    lines = read(vault, entry.path).splitlines()
    assert lines[0] == f"# Daily log {entry.path[6:16]}"
    assert lines[entry.line - 1] in {f"## {t:%H:%M} · Research" for t in (before, after)}
    assert vault.get(entry.id).text == "Searched the docs.\n- found one\n- found two"
    second = vault.log("More.", category="Research")
    assert vault.get(second.id).line > vault.get(entry.id).line_end


def test_journal_and_learn(vault: Vault) -> None:
    j = vault.journal("I should ask before deleting files.")
    assert j.path == "JOURNAL.md" and j.kind == "journal"
    a = vault.learn("Docker", "Use multi-stage builds.")
    vault.learn("Python", "Use virtual environments.")
    b = vault.learn("docker", "Volumes persist data.")
    text = read(vault, "LEARNING.md")
    assert text.count("## Topic: Docker") == 1 and "## Topic: Python" in text
    docker = text.index("## Topic: Docker")
    assert docker < text.index("Volumes persist data.") < text.index("## Topic: Python")
    assert vault.admin.store.block(b.id).heading
    assert (
        vault.admin.store.block(a.id).heading
        == "Topic: Docker"
        == vault.admin.store.block(b.id).heading
    )


def test_forget_removes_only_that_block(vault: Vault) -> None:
    keep = vault.remember("Keep me")
    gone = vault.remember("Forget me")
    before = read(vault, "MEMORY.md")
    vault.forget(gone.id, reason="wrong")
    after = read(vault, "MEMORY.md")
    assert "Forget me" not in after and "Keep me" in after
    assert after == before.replace(before.splitlines(keepends=True)[gone.line - 1], "")
    with pytest.raises(MemoryNotFoundError):
        vault.get(gone.id)
    assert vault.get(keep.id).text == "Keep me"
    assert "Reason: wrong" in git(vault.root, "log", "-1", "--format=%B")


def test_supersede_and_resolve(vault: Vault) -> None:
    old = vault.remember("Deploys happen on Tuesdays", kind="decision", tags=["deploy"])
    new = vault.supersede(old.id, "Deploys happen on Thursdays")
    assert new.superseded == (old.id,) and new.kind == "decision" and "deploy" in new.tags
    block = vault.admin.store.block(old.id)
    assert block.status == "superseded" and block.field("by") == f"^{new.id}"
    msg = git(vault.root, "log", "-1", "--format=%B")
    assert "Op: supersede" in msg and f"Supersedes: {old.id}" in msg
    assert len(commits(vault)) == 3  # init, remember, supersede (one commit)
    resolved = vault.resolve(new.id)
    assert resolved.status == "resolved"
    assert vault.resolve(new.id, status="active").status == "active"


def test_supersede_and_resolve_set_updated(vault: Vault) -> None:
    days = {datetime.now(UTC).date()}
    old = vault.remember("Deploys happen on Tuesdays")
    assert vault.admin.store.block(old.id).updated is None
    new = vault.supersede(old.id, "Deploys happen on Thursdays")
    vault.resolve(new.id)
    days.add(datetime.now(UTC).date())
    for memory_id in (old.id, new.id):
        updated = vault.admin.store.block(memory_id).updated
        assert updated is not None and updated.date() in days
    # Kept beside the lines (both retired: in MEMORY.md's archive), not on them.
    kept = kept_fields(vault.root, "MEMORY.earlier.md")
    assert kept[new.id]["updated"] == updated.date().isoformat() and "updated" in kept[old.id]
    assert "::" not in read(vault, "MEMORY.earlier.md")


def test_every_write_is_one_commit_with_trailers(vault: Vault) -> None:
    m = vault.remember("Bob is the team lead", kind="fact", scope="project:web")
    body = git(vault.root, "log", "-1", "--format=%an%n%ae%n%B")
    assert body.startswith(
        "test-agent\ntest-agent@agents.mdmem\nremember fact: Bob is the team lead"
    )
    for trailer in (f"Memory-Id: {m.id}", "Kind: fact", "Scope: project:web", "Op: remember"):
        assert trailer in body


def test_batch_is_one_commit(vault: Vault) -> None:
    with vault.batch():
        ids = [vault.remember(f"bulk fact number {i}").id for i in range(50)]
        vault.log("bulk import done")
    assert len(commits(vault)) == 2
    assert len(set(ids)) == 50
    assert all(vault.get(i).text.startswith("bulk fact") for i in ids)
    assert git(vault.root, "status", "--porcelain") == ""


def test_history_lists_versions_and_follows_moves(vault: Vault) -> None:
    m = vault.remember("Alice works on search")
    # A human moves the memory to another file and edits it.
    text = read(vault, "MEMORY.md")
    line = text.splitlines()[m.line - 1]
    (vault.root / "MEMORY.md").write_text(text.replace(line + "\n", ""), encoding="utf-8")
    (vault.root / "people.md").write_text(
        f"# People\n\n{line.replace('search', 'search and ranking')}\n", encoding="utf-8"
    )
    vault.admin.commit_human_edits()
    vault.resolve(m.id)
    versions = vault.history(m.id)
    assert [v.path for v in versions] == ["MEMORY.md", "people.md", "people.md"]
    assert versions[0].text == "Alice works on search"
    assert versions[1].text == "Alice works on search and ranking" and not versions[1].is_agent
    assert versions[2].status == "resolved" and versions[2].is_agent
    vault.forget(m.id)
    assert vault.history(m.id)[-1].text is None


def test_status_counts(vault: Vault) -> None:
    vault.remember("a fact")
    vault.remember("a preference", kind="preference")
    vault.remember("scoped", scope="agent:orc-1")
    (vault.root / "scratch.md").write_text("# Scratch\n")
    st = vault.status()
    assert st.memories == 3
    assert st.by_kind == {"fact": 2, "preference": 1}
    assert st.by_scope == {"(root)": 2, "agent:orc-1": 1}
    assert st.dirty == ["scratch.md"]
    assert st.last_commit is not None and st.last_commit.author == "test-agent"


# ------------------------------------------------------------ bad input ----


@pytest.mark.parametrize(
    "text",
    [
        "my key is sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----",
        "password = hunter2hunter2",
        "aws AKIAIOSFODNN7EXAMPLE here",
    ],
)
def test_secrets_are_refused_and_never_written(vault: Vault, text: str) -> None:
    with pytest.raises(SecretRefusedError):
        vault.remember(text)
    assert len(commits(vault)) == 1
    assert "hunter2" not in read(vault, "MEMORY.md")


def test_secrets_can_be_redacted(vault: Vault) -> None:
    m = vault.remember("db password = hunter2hunter2 for staging", secrets="redact")
    assert "hunter2" not in read(vault, "MEMORY.md")
    assert "[REDACTED:password assignment]" in m.text
    assert "hunter2" not in git(vault.root, "log", "-p")


_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
_PASSWORD = "hunter2hunter2"

# Where a secret can hide around a memory's text; each writer gets the
# secrets mode, so redaction is shown not to let metadata through.
_METADATA_WRITES: dict[str, Callable[[Vault, str], object]] = {
    "tag": lambda v, mode: v.remember("deploy notes", tags=[_KEY], secrets=mode),
    "field value": lambda v, mode: v.remember(
        "deploy notes", fields=[("note", f"password={_PASSWORD}")], secrets=mode
    ),
    "field key": lambda v, mode: v.remember(
        "deploy notes", fields=[("password", _PASSWORD)], secrets=mode
    ),
    "topic": lambda v, mode: v.learn(f"password = {_PASSWORD}", "rotate it", secrets=mode),
    "category": lambda v, mode: v.log("rotated", category=_KEY, secrets=mode),
    "log tag": lambda v, mode: v.log("rotated", tags=[_KEY], secrets=mode),
    "journal tag": lambda v, mode: v.journal("reflecting", tags=[_KEY], secrets=mode),
    "scope": lambda v, mode: v.remember("deploy notes", scope=f"user:{_KEY}", secrets=mode),
    "session id": lambda v, mode: v.session(_KEY).record("user", "hi", secrets=mode),
    "session contact": lambda v, mode: v.session("s1", contact=f"password={_PASSWORD}").record(
        "user", "hi", secrets=mode
    ),
    "event id": lambda v, mode: v.session("s1").record("user", "hi", _KEY, secrets=mode),
    "tool name": lambda v, mode: v.session("s1").record_tool_output(
        _KEY, "x" * 50_000, secrets=mode
    ),
    "forget reason": lambda v, mode: v.forget(
        v.remember("to forget").id, reason=f"password={_PASSWORD}"
    ),
}


def _secret_anywhere(vault: Vault) -> list[str]:
    """Files, file names and git history (every version) that mention the secret."""
    found = []
    for path in vault.root.rglob("*"):
        if ".git" in path.relative_to(vault.root).parts:
            continue
        name = path.relative_to(vault.root).as_posix()
        data = path.read_bytes() if path.is_file() else b""
        if _KEY in name or _KEY.encode() in data or _PASSWORD.encode() in data:
            found.append(name)
    history = git(vault.root, "log", "-p", "--all", "--format=%B")
    if _KEY in history or _PASSWORD in history:
        found.append("git log -p")
    return found


@pytest.mark.parametrize("mode", ["refuse", "redact"])
@pytest.mark.parametrize("where", list(_METADATA_WRITES))
def test_secrets_in_metadata_are_always_refused(vault: Vault, where: str, mode: str) -> None:
    if where == "forget reason":
        vault.remember("to forget")  # its own commit, before the refused one
    before = commits(vault)
    with pytest.raises(SecretRefusedError, match="redaction applies to the memory text only"):
        _METADATA_WRITES[where](vault, mode)
    assert commits(vault) == before
    assert _secret_anywhere(vault) == []
    assert git(vault.root, "status", "--porcelain") == ""
    assert vault.recall(_KEY).items == [] and vault.recall(_PASSWORD).items == []


def test_session_turns_and_tool_outputs_go_through_the_guard(vault: Vault) -> None:
    s = vault.session("s1")
    with pytest.raises(SecretRefusedError):
        s.record("user", f"my key is {_KEY}")
    with pytest.raises(SecretRefusedError):
        s.record_tool_output("env", f"OPENAI={_KEY}\n" + "x" * 50_000)
    assert len(commits(vault)) == 1
    # Redacted, a large output is clean in its session preview and in the full copy.
    m = s.record_tool_output("env", f"OPENAI={_KEY}\n" + "x" * 50_000, secrets="redact")
    assert vault.get(m.id).field("tout")
    assert _secret_anywhere(vault) == []


def test_ordinary_text_around_metadata_is_not_a_secret(vault: Vault) -> None:
    # The text is checked on its own: "password is" followed by a tag is no secret.
    m = vault.remember("The password is", tags=["security"], fields=[("source", "wiki")])
    assert m.was_new and m.tags == ("security",)


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "x" * 20_001])
def test_bad_text_is_rejected(vault: Vault, bad: str) -> None:
    with pytest.raises(InvalidInputError):
        vault.remember(bad)


def test_bad_kind_tag_and_id(vault: Vault) -> None:
    with pytest.raises(InvalidInputError, match="unknown kind"):
        vault.remember("x", kind="nonsense")
    with pytest.raises(InvalidInputError, match="invalid tag"):
        vault.remember("x", tags=["no spaces allowed"])
    with pytest.raises(InvalidInputError):
        vault.get("../../etc/passwd")
    with pytest.raises(MemoryNotFoundError):
        vault.forget("m-01jd3k5x7q0000")


def test_symlink_out_of_the_vault_is_refused(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n")
    target = vault.root / "scopes" / "user" / "eve"
    target.parent.mkdir(parents=True)
    target.symlink_to(tmp_path)
    with pytest.raises(PathOutsideVaultError):
        vault.remember("should not escape", scope="user:eve")
    assert outside.read_text() == "# Outside\n"


@pytest.mark.parametrize("target_exists", [True, False])
def test_file_symlink_out_of_the_vault_is_refused(
    vault: Vault, tmp_path: Path, target_exists: bool
) -> None:
    outside = tmp_path / "x.md"
    if target_exists:
        outside.write_text("# Outside\n")
    world = vault.root / "WORLD.md"
    world.unlink()
    world.symlink_to(outside)
    with pytest.raises(PathOutsideVaultError, match=r"WORLD\.md"):
        vault.remember("The staging server is down", kind="world")
    assert world.is_symlink()
    if target_exists:
        assert outside.read_text() == "# Outside\n"
    else:
        assert not outside.exists()
    assert "staging server" not in git(vault.root, "log", "-p", "--all")


def test_malformed_files_are_skipped_not_fatal(
    vault: Vault, caplog: pytest.LogCaptureFixture
) -> None:
    (vault.root / "broken.md").write_bytes(b"---\ntitle: [oops\n---\nbody\n")
    (vault.root / "binary.md").write_bytes(b"\x00\x01\x02")
    (vault.root / "latin1.md").write_bytes(b"caf\xe9\n")
    vault.remember("still works")
    st = vault.status()
    # A byte that isn't UTF-8 costs its line, not the file (files/textfile.py).
    assert set(st.skipped) == {"broken.md", "binary.md"}
    assert any("skipping broken.md" in r.message for r in caplog.records)


def test_writing_into_a_malformed_file_is_a_clear_error(vault: Vault) -> None:
    (vault.root / "USER.md").write_bytes(b"---\nname: [broken\n---\n# User\n")
    with pytest.raises(VaultFileError, match=r"USER\.md"):
        vault.remember("likes tea", kind="preference")
    assert (vault.root / "USER.md").read_bytes() == b"---\nname: [broken\n---\n# User\n"


def test_unclosed_code_fence_does_not_swallow_new_memories(vault: Vault) -> None:
    with open(vault.root / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write("\n```python\nprint('left open')\n")
    m = vault.remember("After the fence")
    assert vault.get(m.id).text == "After the fence"


# --------------------------------------------------------- humans + git ----


def test_human_edits_are_committed_first_as_the_human(vault: Vault) -> None:
    vault.remember("agent fact one")
    with open(vault.root / "USER.md", "a", encoding="utf-8") as fh:
        fh.write("- Human says: call me Ada\n")
    vault.remember("agent fact two")
    log = commits(vault)
    assert log[0].startswith("test-agent|") and "agent fact two" in log[0]
    assert log[1].split("|")[2].startswith("edit: USER.md")
    assert "@agents.mdmem" not in log[1]


def test_human_appending_while_agent_writes_loses_nothing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compare-and-swap: a human edit lands between our read and our replace."""
    import mdmem.store.writer as writer_module

    real_swap = writer_module.swap
    calls = {"n": 0}

    def racing_swap(full: Path, pending: object, *args: object, **kwargs: bool) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            with open(vault.root / "USER.md", "a", encoding="utf-8") as fh:
                fh.write("- typed by the human mid-write\n")
        return real_swap(full, pending, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module, "swap", racing_swap)
    m = vault.remember("The user prefers tea", kind="preference")
    text = read(vault, "USER.md")
    assert "typed by the human mid-write" in text and "The user prefers tea" in text
    assert vault.get(m.id).text == "The user prefers tea"
    authors = {line.split("|")[0] for line in commits(vault)[:2]}
    assert len(authors) == 2
    assert git(vault.root, "status", "--porcelain") == ""


def test_repository_hooks_never_run(vault: Vault) -> None:
    marker = vault.root.parent / "hook-ran"
    hook = vault.root / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    post = vault.root / ".git" / "hooks" / "post-commit"
    post.write_text(f"#!/bin/sh\ntouch {marker}\n")
    post.chmod(0o755)
    vault.remember("no hooks please")
    assert not marker.exists()


def test_git_calls_disable_fsmonitor_and_fsync_committed(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git.cmd import Git

    marker = vault.root.parent / "fsmonitor-ran"
    hook = vault.root.parent / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(vault.root, "config", "core.fsmonitor", str(hook))
    git(vault.root, "status")
    assert marker.exists()  # the control: plain git runs the repository's fsmonitor
    marker.unlink()

    commands: list[list[str]] = []
    real_execute = Git.execute

    def spy(self: Git, command: Any, *args: Any, **kwargs: Any) -> Any:
        commands.append(list(command))
        return real_execute(self, command, *args, **kwargs)

    monkeypatch.setattr(Git, "execute", spy)
    (vault.root / "notes.md").write_text("# Notes\n")  # a human edit, committed first
    m = vault.remember("fsmonitor stays off")
    vault.history(m.id)
    vault.status()
    assert commands and any("commit" in c for c in commands)
    for command in commands:
        pairs = set(itertools.pairwise(command))
        assert ("-c", "core.fsmonitor=false") in pairs, command
        assert ("-c", "core.fsync=committed") in pairs, command
    assert not marker.exists()
    assert vault.admin.store.git.run("config", "core.fsync") == "committed"
    assert vault.admin.store.git.run("config", "core.fsmonitor") == "false"


def test_no_git_children_are_left_running(vault: Vault) -> None:
    for i in range(5):
        vault.remember(f"fact {i}")
    vault.history(vault.remember("x").id)
    children = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and "git" in stat:
            children.append(stat)
    assert children == []


def test_git_fsck_is_clean_after_writes(vault: Vault) -> None:
    for i in range(10):
        vault.remember(f"fact {i}")
    out = subprocess.run(
        ["git", "fsck", "--strict"], cwd=vault.root, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


def test_human_identity_comes_from_git_config(vault: Vault) -> None:
    git(vault.root, "config", "user.name", "Grace Hopper")
    git(vault.root, "config", "user.email", "grace@example.org")
    reopened = Vault.open(vault.root, agent="a1")
    (vault.root / "notes.md").write_text("# Notes\n")
    reopened.remember("x")
    assert "Grace Hopper|grace@example.org|edit: notes.md" in commits(reopened)[1]


def _catalog_matches_a_fresh_parse(vault: Vault, rel: str) -> None:
    from mdmem.files import blocks as blk
    from mdmem.files.sidecar import parse_records, resolve, sidecar_of
    from mdmem.files.textfile import decode

    # A fresh parse of the file and of the fields beside it, as a new process reads them.
    records, _ = parse_records((vault.root / sidecar_of(rel)).read_text().splitlines())
    beside = resolve(records)
    fresh = blk.parse(rel, decode((vault.root / rel).read_bytes()), beside=beside).blocks
    held = vault.admin.store.catalog.files[rel].parsed.blocks
    assert [(b.id, b.status, b.fields, b.text, b.line_start, b.line_end) for b in held] == [
        (b.id, b.status, b.fields, b.text, b.line_start, b.line_end) for b in fresh
    ]


def test_a_field_change_rewrites_one_block_without_reparsing_the_file(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A crafted file: CRLF, a BOM, frontmatter tags, a task item, a multi-line
    # item, an item under a later heading, and a daily-log entry.
    (vault.root / "MEMORY.md").write_bytes(
        "\ufeff---\r\ntags: [team]\r\n---\r\n# Memory\r\n\r\n"
        "- [ ] Ship the report #work ^m-0000000001aaaa\r\n"
        "- Bob owns billing\r\n  and the invoice export ^m-0000000002aaaa\r\n\r\n"
        "## Later\r\n\r\n* Carol moved to Oslo [scope:: user:carol] ^m-0000000003aaaa\r\n".encode()
    )
    vault.admin.commit_human_edits()
    logged = vault.log("Compared two queues.", category="Research")
    vault.admin.refresh()
    from mdmem.files import blocks as blk

    parses = []
    real_parse = blk.parse
    monkeypatch.setattr(blk, "parse", lambda *a, **k: parses.append(a[0]) or real_parse(*a, **k))
    for memory_id in ("m-0000000001aaaa", "m-0000000002aaaa", "m-0000000003aaaa", logged.id):
        vault.resolve(memory_id)
    vault.supersede("m-0000000002aaaa", "Dana owns billing now")
    assert parses == []  # every field change took the one-block path
    # (The retired items left MEMORY.md for its archive, without a parse either.)
    for rel in ("MEMORY.md", "MEMORY.earlier.md", logged.path):
        _catalog_matches_a_fresh_parse(vault, rel)
    raw = (vault.root / "MEMORY.md").read_bytes()
    assert (
        raw.startswith("\ufeff".encode())
        and b"\r\n" in raw
        and b"\n" not in raw.replace(b"\r\n", b"")
    )
    assert not vault.recall("Carol Oslo", mode="keyword").items  # resolved: not recalled
    assert vault.recall("Carol Oslo", mode="keyword", include_inactive=True).items
    assert vault.admin.doctor().ok, vault.admin.doctor().problems


def test_a_memory_remembered_and_resolved_in_one_batch_is_indexed_as_it_ends(
    vault: Vault,
) -> None:
    with vault.batch("import"):
        kept = vault.remember("Herons nest in the old oak.")
        gone = vault.remember("Herons nest in the old pine.")
        vault.resolve(gone.id)
    assert [h.id for h in vault.recall("herons nest", mode="keyword").items] == [kept.id]
    _catalog_matches_a_fresh_parse(vault, "MEMORY.md")
    assert vault.admin.doctor().ok, vault.admin.doctor().problems
