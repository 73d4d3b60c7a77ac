"""Purge benchmark: the time of one purge on a vault with a long history, before/after.

Usage: python bench/purge_content.py [--commits 5000] [--memories 200] [--base REV] [--json]

A synthetic vault: --memories memories through the API, then --commits
commits of a person editing 50 notes (one line each, via git fast-import),
then the memory to purge, quoted in one note line and one commit body. The
same purge is timed on two copies of that vault: with the code of --base
(default: the commit this branch started from, extracted with ``git
archive``; the baseline) and with this tree's code. Each purge runs in a
fresh process that opens the vault first (the index is warm); only the
purge call is timed. The load average is printed beside the times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

REPO = Path(__file__).resolve().parent.parent
SECRET = "Remember that the Harrowby safe code is 7741-Quorn."
WORDS = [
    *("garden", "invoice", "harbour", "meeting", "lantern", "copper", "river", "parcel"),
    *("ledger", "orchard", "window", "kettle", "bridge", "morning", "summit", "letter"),
    *("engine", "canvas", "market", "violet"),
]

_PURGE = """
import json, sys, time
# The editable install's finder would win over PYTHONPATH: the code under test decides.
sys.meta_path = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "")]
sys.path.insert(0, sys.argv[3])
import mdmem
assert mdmem.__file__.startswith(sys.argv[3]), mdmem.__file__
from mdmem import Vault
from mdmem.errors import PurgeIncompleteError
vault = Vault.open(sys.argv[1], agent="bench")
vault.recall("warm up")
started = time.perf_counter()
try:
    result = vault.git.purge(sys.argv[2], confirm=True)
    ok, cleaned = True, len(getattr(result, "cleaned", ()))
except PurgeIncompleteError as exc:
    ok, cleaned = False, str(exc)[:200]
print(json.dumps({"seconds": time.perf_counter() - started, "ok": ok, "cleaned": cleaned}))
"""


def _git(root: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, input=data, capture_output=True, check=True
    ).stdout.decode()


def _line(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(9))


def build(root: Path, commits: int, memories: int) -> str:
    """The vault, and the id of the memory to purge."""
    from mdmem import Vault

    rng = random.Random(7)
    vault = Vault.init(root, agent="bench")
    for n in range(memories):
        vault.remember(f"Memory {n}: {_line(rng)}")
    secret = vault.remember(SECRET).id
    vault.close()
    head = _git(root, "rev-parse", "HEAD").strip()
    notes: dict[str, list[str]] = {}
    stream = BytesIO()
    for n in range(commits):
        path = f"notes/journal-{n % 50:02d}.md"
        lines = notes.setdefault(path, [f"# Journal {n % 50}\n\n"])
        text = _line(rng)
        message = f"journal {n}"
        if n == commits // 2:
            text = f"{text} and {SECRET.lower()} then {_line(rng)}"
        if n == commits // 3:
            message += f"\n\nBody: {SECRET}"
        lines.append(text + "\n")
        blob = "".join(lines).encode()
        msg = message.encode()
        stream.write(b"commit refs/heads/main\n")
        stream.write(b"committer Ada <ada@example.org> %d +0000\n" % (1_700_000_000 + n))
        stream.write(b"data %d\n%s\n" % (len(msg), msg))
        if n == 0:
            stream.write(b"from %s\n" % head.encode())
        stream.write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(blob), blob))
    _git(root, "fast-import", "--quiet", data=stream.getvalue())
    _git(root, "reset", "-q", "--hard", "main")
    _git(root, "gc", "-q")
    reopened = Vault.open(root, agent="bench")  # indexes the notes
    reopened.close()
    return secret


def base_tree(rev: str, into: Path) -> Path:
    """The package as it was at ``rev`` (``git archive``), for the baseline."""
    data = subprocess.run(
        ["git", "archive", rev, "mdmem"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def timed(root: Path, memory_id: str, code: Path, state: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(code), "MDMEM_STATE_DIR": str(state)}
    out = subprocess.run(
        [sys.executable, "-c", _PURGE, str(root), memory_id, str(code)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    result["load"] = round(os.getloadavg()[0], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--base", default="5264261")
    parser.add_argument("--rounds", type=int, default=1, help="before/after pairs, alternated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    # The purge is timed, not the embedder: a deterministic one unless told otherwise.
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
    work = scratch_dir("mdmem-bench-purge-")
    started = time.perf_counter()
    secret = build(work / "vault", args.commits, args.memories)
    built = time.perf_counter() - started
    base = base_tree(args.base, Path(tempfile.mkdtemp(prefix="mdmem-base-")))
    runs: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
    for n in range(args.rounds):
        for name, code in (("before", base), ("after", REPO)):
            copy = work / f"vault-{name}-{n}"
            shutil.copytree(work / "vault", copy, symlinks=True)
            runs[name].append(timed(copy, secret, code, work / f"state-{name}-{n}"))
            shutil.rmtree(copy, ignore_errors=True)
    # Each side's median run (by time) stands for it.
    rows = {k: sorted(v, key=lambda r: float(r["seconds"]))[len(v) // 2] for k, v in runs.items()}  # type: ignore[arg-type]
    ratio = float(rows["after"]["seconds"]) / float(rows["before"]["seconds"])  # type: ignore[arg-type]
    data = {
        "commits": args.commits,
        "memories": args.memories,
        "built_seconds": round(built, 1),
        "before": rows["before"],
        "after": rows["after"],
        "after_over_before": round(ratio, 2),
        "runs": runs,
    }
    if args.json:
        emit_json(data)
    else:
        print_table(
            f"purge on a {args.commits}-commit vault (built in {built:.0f}s)",
            ["code", "seconds", "ok", "cleaned", "load avg"],
            [
                [name, r["seconds"], r["ok"], r["cleaned"], r["load"]]
                for name, r in rows.items()
            ],
        )
        print(f"after / before: {ratio:.2f}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
