"""A person's lines are blamed on the person, whenever they save during an agent's write.

Each test saves a human line at one moment of the write path: after the vault
lock committed human edits but before the agent reads the file, while the
swap merges, on the replaced inode after the rename, and while ``git commit``
reads the file. ``git blame`` must name the human for every human line and
the agent for every agent line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import mdmem.store.swap as swap_module
from mdmem import Vault
from mdmem.store.gitstore import GitStore, Identity
from mdmem.store.writer import Writer

from ..conftest import git

AGENT_MAIL = "@agents.mdmem"


_TYPED_ID = re.compile(r" \^m-[0-9a-z]+$")


def blame(root: Path, rel: str) -> dict[str, str]:
    """Line text -> author email, from ``git blame --line-porcelain`` at HEAD."""
    out = git(root, "blame", "--line-porcelain", "HEAD", "--", rel)
    authors: dict[str, str] = {}
    mail = ""
    for line in out.splitlines():
        if line.startswith("author-mail "):
            mail = line.split(" ", 1)[1].strip("<>")
        elif line.startswith("\t"):
            # A list item a person typed into a memory file gets an id (issue 25,
            # "a person's words first"), in a commit authored as them: it is
            # still their line, as they typed it.
            text = line[1:] if mail.endswith(AGENT_MAIL) else _TYPED_ID.sub("", line[1:])
            authors[text] = mail
    return authors


def human_append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def assert_blamed(vault: Vault, rel: str, human: list[str], agent_ids: list[str]) -> None:
    vault.admin.commit_human_edits()
    assert git(vault.root, "status", "--porcelain") == ""
    authors = blame(vault.root, rel)
    for line in human:
        assert line in authors, f"{line!r} is not in {rel}"
        assert not authors[line].endswith(AGENT_MAIL), f"{line!r} blamed on {authors[line]}"
    for memory_id in agent_ids:
        mine = [text for text in authors if text.endswith(f"^{memory_id}")]
        assert len(mine) == 1, memory_id
        assert authors[mine[0]].endswith(AGENT_MAIL), mine[0]


def many_files(vault: Vault, n: int) -> None:
    """Enough files that the writer asks git for dirty files instead of stat-scanning."""
    folder = vault.root / "notes"
    folder.mkdir()
    for i in range(n):
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nabout topic {i}\n")
    vault.admin.commit_human_edits()
    vault.admin.refresh()


@pytest.mark.parametrize("files", [0, 520], ids=["stat-scan", "git-status"])
def test_save_after_the_lock_committed_human_edits_is_the_humans(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    """The window between the sync at lock time and the agent's read of the file."""
    if files:
        many_files(vault, files)
    memory_md = vault.root / "MEMORY.md"
    first = vault.remember("the office opens at nine")
    real_load = Writer.load_pending
    typed: list[str] = []

    def save_then_load(self: Writer, rel: str, full: Path) -> object:
        if rel == "MEMORY.md" and not typed:
            typed.append("- a line the human saved just before the agent read the file")
            human_append(memory_md, typed[-1])
        return real_load(self, rel, full)

    monkeypatch.setattr(Writer, "load_pending", save_then_load)
    second = vault.remember("the office closes at six")
    assert typed
    assert_blamed(vault, "MEMORY.md", typed, [first.id, second.id])


def test_save_while_git_commit_reads_the_file_is_the_humans(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window between the agent's rename and git reading the file."""
    memory_md = vault.root / "MEMORY.md"
    real_commit = GitStore.commit
    typed: list[str] = []

    def save_then_commit(
        self: GitStore, message: str, author: Identity, *args: object, **kwargs: object
    ) -> object:
        if author.is_agent and len(typed) < 2:
            typed.append(f"- typed while git committed {len(typed)}")
            human_append(memory_md, typed[-1])
        return real_commit(self, message, author, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(GitStore, "commit", save_then_commit)
    # Two unrelated facts: a changed value ("floor 0" -> "floor 1") would retire the first.
    facts = ["the server room is on floor 3", "the printer needs blue toner"]
    ids = [vault.remember(fact).id for fact in facts]
    assert len(typed) == 2
    assert vault.get(ids[1]).text == facts[1]
    assert_blamed(vault, "MEMORY.md", typed, ids)


def test_lines_merged_under_ours_are_committed_as_theirs_first(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap's merge: their appends stay and ours go after them, in two commits."""
    user_md = vault.root / "USER.md"
    real_write_temp = swap_module.write_temp
    typed: list[str] = []

    def type_while_staging(path: Path, data: bytes, **kwargs: object) -> Path:
        # Each staging of our copy races one more save: a replay, then a merge.
        if path == user_md and len(typed) < 2:
            typed.append(f"- typed while mdmem staged {len(typed)}")
            human_append(user_md, typed[-1])
        return real_write_temp(path, data, **kwargs)  # type: ignore[arg-type]

    first = vault.remember("prefers tea", kind="preference")
    monkeypatch.setattr(swap_module, "write_temp", type_while_staging)
    second = vault.remember("prefers green tea", kind="preference")
    assert len(typed) == 2
    text = user_md.read_text(encoding="utf-8")
    assert text.index(typed[1]) < text.index(f"^{second.id}")
    assert_blamed(vault, "USER.md", typed, [first.id, second.id])
    # Theirs first: the commit before the agent's is the human's.
    # (Not counting the commit that gave their typed lines ids, also theirs.)
    mails = git(
        vault.root,
        "log",
        "-2",
        "--format=%ae",
        "--invert-grep",
        "--grep=typed by a person",
        "--",
        "USER.md",
    ).split()
    assert mails[0].endswith(AGENT_MAIL) and not mails[1].endswith(AGENT_MAIL)


def test_bytes_written_to_the_replaced_file_after_the_rename_are_theirs(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor holding the old file open appends after our rename: we put its
    bytes after ours, but git must not see them as the agent's."""
    memory_md = vault.root / "MEMORY.md"
    real_install = swap_module.install_temp
    typed: list[str] = []

    def install_while_an_editor_holds_the_old_file(tmp: Path, path: Path) -> None:
        if path != memory_md or typed:
            real_install(tmp, path)
            return
        with open(path, "a", encoding="utf-8") as editor:
            real_install(tmp, path)
            typed.append("- saved into the replaced file by an open editor")
            editor.write(typed[-1] + "\n")

    monkeypatch.setattr(swap_module, "install_temp", install_while_an_editor_holds_the_old_file)
    memory = vault.remember("backups run at midnight")
    assert typed and typed[0] in memory_md.read_text(encoding="utf-8")
    assert_blamed(vault, "MEMORY.md", typed, [memory.id])


def _typist(
    path: Path, stop: threading.Event, typed: list[str], pause: float
) -> Callable[[], None]:
    def run() -> None:
        n = 0
        while not stop.is_set():
            typed.append(f"- human line {n} typed at {time.monotonic():.6f}")
            human_append(path, typed[-1])
            n += 1
            time.sleep(pause)

    return run


def test_a_person_typing_while_the_agent_writes_keeps_every_line(vault: Vault) -> None:
    """No window left: a save every few ms during 15 writes, every line blamed right."""
    memory_md = vault.root / "MEMORY.md"
    stop = threading.Event()
    typed: list[str] = []
    thread = threading.Thread(target=_typist(memory_md, stop, typed, 0.003))
    thread.start()
    try:
        ids = [vault.remember(f"the agent's fact number {n}").id for n in range(15)]
    finally:
        stop.set()
        thread.join()
    assert len(typed) > 15
    assert_blamed(vault, "MEMORY.md", typed, ids)


def test_the_agent_commit_has_only_the_agents_change_in_a_shared_file(vault: Vault) -> None:
    """Per commit, not only per line: each agent commit's diff adds exactly its memory."""
    memory_md = vault.root / "MEMORY.md"
    start = git(vault.root, "rev-parse", "HEAD").strip()
    stop = threading.Event()
    typed: list[str] = []
    thread = threading.Thread(target=_typist(memory_md, stop, typed, 0.004))
    thread.start()
    try:
        ids = [vault.remember(f"agent note {n}").id for n in range(12)]
    finally:
        stop.set()
        thread.join()
    vault.admin.commit_human_edits()
    shas = git(vault.root, "log", f"--author={AGENT_MAIL}", "--format=%H", f"{start}..").split()
    assert len(shas) == 12
    for sha in shas:
        diff = git(vault.root, "show", "--format=", "--unified=0", sha, "--", "MEMORY.md")
        added = [line for line in diff.splitlines() if line.startswith("+- ")]
        assert added and all(any(f"^{i}" in line for i in ids) for line in added), diff


def test_exact_commit_leaves_the_working_tree_and_other_paths_alone(vault: Vault) -> None:
    """GitStore.commit_contents commits the bytes given, not the file."""
    vault.remember("something to have a MEMORY.md")
    memory_md = vault.root / "MEMORY.md"
    on_disk = memory_md.read_bytes() + b"- unsaved-to-git human line\n"
    memory_md.write_bytes(on_disk)
    (vault.root / "USER.md").write_bytes(b"# User\n\n- staged elsewhere\n")
    wanted = on_disk.replace(b"- unsaved-to-git human line\n", b"- exact line\n")
    sha = vault.admin.store.git.commit_contents(
        "exact\n", Identity("Ada Human", "ada@example.org"), {"MEMORY.md": wanted}
    )
    assert sha is not None
    assert git(vault.root, "show", "HEAD:MEMORY.md").encode() == wanted
    assert memory_md.read_bytes() == on_disk  # the file is untouched
    status = git(vault.root, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M MEMORY.md", " M USER.md"]
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["MEMORY.md"]
    assert (
        vault.admin.store.git.commit_contents("again\n", Identity.agent("a"), {"MEMORY.md": wanted})
        is None
    )
    assert os.environ.get("GIT_INDEX_FILE") is None


AGENT = """
import sys
from mdmem import Vault
vault = Vault.open(sys.argv[1], agent=sys.argv[2])
for i in range(int(sys.argv[3])):
    vault.remember(f"{sys.argv[2]} fact number {i}")
"""


@pytest.mark.slow
def test_agents_in_two_processes_and_a_person_typing_every_line_blamed_right(
    vault: Vault,
) -> None:
    """The reported case: people editing MEMORY.md while agents write to it."""
    memory_md = vault.root / "MEMORY.md"
    stop = threading.Event()
    typed: list[str] = []
    thread = threading.Thread(target=_typist(memory_md, stop, typed, 0.01))
    thread.start()
    try:
        agents = [
            subprocess.Popen(
                [sys.executable, "-c", AGENT, str(vault.root), f"agent-{n}", "25"],
                stderr=subprocess.PIPE,
            )
            for n in range(2)
        ]
        for proc in agents:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err.decode()
    finally:
        stop.set()
        thread.join()
    vault.admin.commit_human_edits()
    authors = blame(vault.root, "MEMORY.md")
    wrong = [line for line in typed if authors.get(line, "").endswith(AGENT_MAIL)]
    missing = [line for line in typed if line not in authors]
    print(f"{len(typed)} human lines, {len(wrong)} blamed on an agent, {len(missing)} lost")
    assert not wrong and not missing
    agent_lines = [text for text in authors if " fact number " in text]
    assert len(agent_lines) == 50
    assert all(authors[text].endswith(AGENT_MAIL) for text in agent_lines)
