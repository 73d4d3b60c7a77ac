"""``changes`` since the last session, behind long histories and a large MEMORY.md.

What the session-start hook asks first: what changed since this agent last
looked. The vault is built with ``git fast-import`` (seconds even for 20,000
commits): ``--older`` commits of small daily-log edits and one that writes a
``MEMORY.md`` of ``--memories`` memories, then the agent marks what it has
seen and ``--new`` commits arrive. Three ways they arrive, timed separately:

* ``agent``: the agent's own ``remember`` calls (the writer records each
  commit's memory changes);
* ``person``: a person's commits, each editing one memory line of MEMORY.md
  (no record: diffed, touched files only);
* ``pulled``: agent commits made on another clone and fetched (no record here).

Each row times ``vault.git.changes("last-session")`` (first call, then the
p50 of ``--repeat`` calls) and, in the same run and process, the same call
through the whole-range diff it replaced (``records=False``), and a floor:
one ``git log -1`` through the same git wrapper, with the load average
beside them (on a loaded machine, read the ratios).

    .venv/bin/python bench/changes.py --older 1000 20000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import median, print_table, scratch_dir

os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")

from mdmem import Vault
from mdmem.git import history
from mdmem.git.history import Changes
from mdmem.git.seen import last_seen

AGENT = ("orc", "orc@agents.mdmem")
HUMAN = ("Sam Rivera", "sam@example.com")
_T0 = 1_600_000_000


def _git(root: Path, *args: str, data: bytes | None = None) -> str:
    out = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=root,
        input=data,
        capture_output=True,
        check=True,
    )
    return out.stdout.decode()


def _blob(data: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(data), data)


def _commit(ref: str, who: tuple[str, str], when: int, message: str, parent: str | None) -> bytes:
    name, email = who
    head = f"commit {ref}\ncommitter {name} <{email}> {when} +0000\n".encode()
    out = head + _blob(message.encode())
    if parent:
        out += f"from {parent}\n".encode()
    return out


def memory_file(n: int) -> tuple[bytes, list[str]]:
    ids = [f"m-0old{i:010d}" for i in range(n)]
    lines = ["# Memory", ""]
    lines += [
        f"- Old fact number {i} about topic {i % 97} and more words ^{ids[i]}" for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode(), ids


def build(root: Path, older: int, memories: int) -> list[str]:
    """A vault with ``older`` commits behind HEAD and a MEMORY.md of ``memories``."""
    Vault.init(root, agent="orc").close()
    ref = _git(root, "symbolic-ref", "HEAD").strip()
    parent = _git(root, "rev-parse", "HEAD").strip()
    data, ids = memory_file(memories)
    stream = bytearray()
    for i in range(older):
        when = _T0 + i * 600
        message = f"log: entry {i}\n\nKind: log\nScope: root\nOp: log\n"
        stream += _commit(ref, AGENT, when, message, parent if i == 0 else None)
        if i == older // 2:
            stream += b"M 100644 inline MEMORY.md\n" + _blob(data)
        day = f"daily/2020-{1 + i % 12:02d}-{1 + i % 28:02d}.md"
        stream += f"M 100644 inline {day}\n".encode() + _blob(f"- entry {i}\n".encode())
        stream += b"\n"
    stream += b"done\n"
    _git(root, "fast-import", "--quiet", "--done", "--force", data=bytes(stream))
    _git(root, "reset", "-q", "--hard")
    return ids


def time_changes(vault: Vault, repeat: int) -> tuple[list[float], list[float], int]:
    """([first, p50] ms with records, [first, p50] ms by diffing, commits).

    With records: the public call. By diffing: the same range through the
    one ``git log -p`` the call made before commit records. Both after a
    refresh (the catalog catching up with new files is reindexing, not this
    question's cost), their repeats interleaved so load drifts hit both.
    """
    store = vault.admin.store
    store.refresh()
    mark = last_seen(store, "orc")
    base = mark.commit if mark else None

    def timed(record: bool) -> tuple[float, Changes]:
        start = time.perf_counter()
        if record:
            result = vault.git.changes("last-session")
        else:
            result = history.changes_after(store, base, "orc's last session", records=False)
        return (time.perf_counter() - start) * 1000, result

    first_rec, result = timed(True)
    first_diff, plain = timed(False)
    assert plain.remembered == result.remembered and plain.human_edits == result.human_edits
    rec, diff, floor = [], [], []
    for _ in range(repeat):
        rec.append(timed(True)[0])
        diff.append(timed(False)[0])
        start = time.perf_counter()
        store.git.run("log", "-1", "--format=%H")
        floor.append((time.perf_counter() - start) * 1000)
    return [first_rec, median(rec), median(floor)], [first_diff, median(diff)], result.commits


def person_commits(root: Path, ids: list[str], n: int) -> None:
    path = root / "MEMORY.md"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": HUMAN[0],
        "GIT_AUTHOR_EMAIL": HUMAN[1],
        "GIT_COMMITTER_NAME": HUMAN[0],
        "GIT_COMMITTER_EMAIL": HUMAN[1],
    }
    for i in range(n):
        text = path.read_text()
        path.write_text(text.replace(f"^{ids[i * 7]}", f"(edited {i}) ^{ids[i * 7]}", 1))
        subprocess.run(["git", "commit", "-qam", f"fix {i}"], cwd=root, env=env, check=True)


def one(base: Path, older: int, memories: int, new: int, repeat: int, how: str) -> list[object]:
    root = base / f"v-{older}-{how}"
    ids = build(root, older, memories)
    if how == "pulled":
        clone = base / f"clone-{older}"
        _git(base, "clone", "-q", str(root), str(clone))
        other = Vault.open(clone, agent="orc")
    vault = Vault.open(root, agent="orc")
    vault.git.mark_seen()
    if how == "agent":
        for i in range(new):
            vault.remember(f"New fact {i} for the next session")
    elif how == "person":
        person_commits(root, ids, new)
    else:
        for i in range(new):
            other.remember(f"New fact {i} from the other clone")
        other.close()
        _git(root, "pull", "-q", "--ff-only", str(clone), "HEAD")
    after, before, commits = time_changes(vault, repeat)
    vault.close()
    load = os.getloadavg()[0]
    ratios = [before[1] / after[1], after[1] / after[2]]
    return [older, how, commits, *before, *after, *ratios, f"{load:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--older", type=int, nargs="+", default=[1000, 20000])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--new", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--how", nargs="+", default=["agent", "person", "pulled"])
    args = parser.parse_args()
    base = scratch_dir("mdmem-changes-")
    rows = []
    for older in args.older:
        for how in args.how:
            rows.append(one(base, older, args.memories, args.new, args.repeat, how))
            print(rows[-1], file=sys.stderr, flush=True)
    print_table(
        f"changes('last-session'): MEMORY.md of {args.memories} memories, {args.new} new commits",
        [
            "older commits",
            "new commits by",
            "commits",
            "diff first ms",
            "diff p50 ms",
            "record first ms",
            "record p50 ms",
            "floor ms",
            "speed-up",
            "record / floor",
            "load",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
