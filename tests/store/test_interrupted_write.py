"""kill -9 between a write's file replaces and its commit: the next writer finishes it.

The child process is killed for real (SIGKILL) at the worst moment: after
the first file of a transaction was replaced (the writer's ``swap``, wrapped),
before the rest and before the commit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdmem import Vault

KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import mdmem.store.writer as writer
    from mdmem import Vault

    real = writer.swap
    calls = []

    def swap_then_die(*args, **kwargs):
        done = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == int(os.environ["KILL_AFTER"]):
            os.kill(os.getpid(), signal.SIGKILL)
        return done

    writer.swap = swap_then_die
    vault = Vault.open(sys.argv[1], agent="crashy")
    exec(sys.argv[2])
    """
)


def run_killed(
    root: Path, code: str, kill_after: int, extra_env: dict[str, str] | None = None
) -> None:
    env = {**os.environ, **(extra_env or {}), "KILL_AFTER": str(kill_after)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(root), code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]


def log(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "log", "--format=%an|%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def test_a_two_file_write_killed_halfway_is_finished_as_the_agents(tmp_path: Path) -> None:
    root = tmp_path / "v"
    Vault.init(root, agent="setup").close()
    code = (
        "with vault.batch('two files'):\n"
        "    vault.remember('The deploy window is Tuesday', kind='fact')\n"
        "    vault.remember('The user likes short answers', kind='preference')\n"
    )
    run_killed(root, code, kill_after=1)
    vault = Vault.open(root, agent="other")
    vault.remember("A later write")  # takes the lock: the interrupted write comes first
    memory = (root / "MEMORY.md").read_text()
    user = (root / "USER.md").read_text()
    assert "The deploy window is Tuesday" in memory and "short answers" in user
    history = log(root)
    assert history[1].startswith("crashy|"), history[:3]  # the agent's, not "edit: ..."
    assert not any(line.split("|", 1)[1].startswith("edit:") for line in history)
    assert not vault.admin.store.git.dirty_paths()
    body = vault.admin.store.git.run("log", "-1", "--skip=1", "--format=%B")
    assert "Recovered: interrupted write" in body
    assert vault.recall("deploy window").items


@pytest.mark.parametrize("kill_after", [1])
def test_an_ingest_killed_before_its_commit_is_one_ingest_commit(
    tmp_path: Path, kill_after: int
) -> None:
    root = tmp_path / "v"
    Vault.init(root, agent="setup").close()
    doc = tmp_path / "guide.md"
    doc.write_text("# Install\n\nRun it.\n\n# Usage\n\nDaily.\n")
    run_killed(root, f"vault.library.ingest({str(doc)!r})[0]", kill_after=kill_after)
    vault = Vault.open(root, agent="crashy")
    again = vault.library.ingest(doc)[0]  # the re-run: finds the document whole, writes nothing
    assert not again.written and len(again.chunks) == 2
    history = log(root)
    assert history[0].startswith("crashy|ingest document: guide"), history[:3]
    # The next version of the source is not mistaken for hand edits.
    doc.write_text("# Install\n\nRun it twice.\n\n# Usage\n\nDaily.\n")
    third = vault.library.ingest(doc)[0]
    assert third.written and len(third.changed) == 1 and not third.kept_edits
