"""Dates from git history: the one pass, the cache, incremental updates.

Usage: python bench/gitdates.py [--notes 2000] [--commits 5000] [--json]

A vault of --notes undated notes (no frontmatter date, not daily notes) is
written with --commits commits by ``git fast-import``: the first commits add
the notes one by one, the rest edit a random note, and one commit in fifty
renames one. Then, on that vault:

* the first pass (``GitDates.update`` with no cache: one ``git log``);
* opening the cache again in a new process's place (HEAD unchanged);
* a no-op update (HEAD unchanged: what every scan pays);
* incremental updates after 1 and after 50 new commits;
* a catalog's first scan (every file parsed) and a re-scan after one commit,
  each without dating (the baseline, as before this change) and with it.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir

_START = 1_577_836_800  # 2020-01-01
_STEP = 20_000  # seconds between commits: 5000 commits span about three years
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _note(i: int, edits: int) -> bytes:
    lines = [f"# Note {i}\n", "\n", f"Thoughts about topic {i % 97} and project {i % 13}.\n"]
    lines += [f"\n## Edit {e}\n\nMore about item {i}-{e}.\n" for e in range(edits)]
    return "".join(lines).encode()


def _data(payload: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(payload), payload)


def build_history(root: Path, notes: int, commits: int, *, start: int = 0, seed: int = 7) -> None:
    """Append ``commits`` commits to ``root``'s main (a new repo when start == 0)."""
    rng = random.Random(seed + start)
    env = {**os.environ, **_GIT_ENV}
    if start == 0:
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    paths = sorted(
        subprocess.run(
            ["git", "ls-files"], cwd=root, capture_output=True, text=True, env=env
        ).stdout.split()
    )
    edits: dict[str, int] = {p: 1 for p in paths}
    stream: list[bytes] = []
    for c in range(start, start + commits):
        stamp = _START + c * _STEP
        who = f"Bench <bench@example.org> {stamp} +0000".encode()
        stream.append(b"commit refs/heads/main\nauthor %s\ncommitter %s\n" % (who, who))
        stream.append(_data(f"commit {c}".encode()))
        if c == start and start > 0:
            stream.append(b"from refs/heads/main^0\n")
        if len(paths) < notes:
            path = f"notes/{len(paths) // 100:02d}/note-{len(paths)}.md"
            paths.append(path)
            edits[path] = 0
        elif c % 50 == 0:
            old = rng.choice(paths)
            new = old.replace(".md", f"-r{c}.md")
            paths[paths.index(old)] = new
            edits[new] = edits.pop(old)
            stream.append(f'R "{old}" "{new}"\n'.encode())
            continue
        else:
            path = rng.choice(paths)
            edits[path] += 1
        found = re.search(r"note-(\d+)", path)
        index = int(found.group(1)) if found else 0
        stream.append(f"M 100644 inline {path}\n".encode())
        stream.append(_data(_note(index, edits[path])))
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=root,
        input=b"".join(stream),
        check=True,
        env=env,
    )
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True, env=env)


def _timed(fn: object) -> tuple[float, object]:
    begin = time.perf_counter()
    result = fn()  # type: ignore[operator]
    return (time.perf_counter() - begin) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from mdmem.files.catalog import Catalog
    from mdmem.store.gitdates import CACHE_NAME, GitDates
    from mdmem.store.gitstore import GitStore

    base = scratch_dir("mdmem-bench-gitdates-")
    root, state = base / "vault", base / "state"
    state.mkdir(parents=True)
    ms_build, _ = _timed(lambda: build_history(root, args.notes, args.commits))
    git = GitStore(root)
    rows: list[tuple[str, float, str]] = []

    dates = GitDates(git, state)
    ms, _ = _timed(dates.update)
    dated = sum(1 for p in git.tracked() if dates.date_of(p))
    rows.append(("first pass (no cache): one git log", ms, f"{dated} files dated"))
    size = (state / CACHE_NAME).stat().st_size
    ms, _ = _timed(GitDates(git, state).update)
    rows.append(("cache opened, HEAD unchanged", ms, f"{size / 1024:.0f} KiB cache"))
    runs = 1000
    ms, _ = _timed(lambda: [dates.update() for _ in range(runs)])
    rows.append(("no-op update (per scan), HEAD unchanged", ms / runs, f"mean of {runs}"))
    for n in (1, 50):
        count = int(git.run("rev-list", "--count", "HEAD"))
        build_history(root, args.notes, n, start=count)
        ms, changed = _timed(dates.update)
        rows.append((f"incremental update, {n} new commit(s)", ms, f"{len(changed or ())} redated"))

    # The catalog: baseline (no dating, as before this change) and with dating,
    # each first scan the median of three fresh catalogs (the box is shared).
    def first_scan(dating: bool, cache: bool) -> tuple[float, Catalog]:
        times, catalog = [], Catalog(root)
        for _ in range(3):
            if not cache:
                (state / CACHE_NAME).unlink(missing_ok=True)
            catalog = Catalog(root)
            if dating:
                catalog.dating = GitDates(git, state)
            times.append(_timed(catalog.scan)[0])
        return median(times), catalog

    ms, plain = first_scan(False, False)
    rows.append(("catalog first scan, no dating (baseline)", ms, f"{len(plain.files)} files"))
    ms, _ = first_scan(True, False)
    rows.append(("catalog first scan, dating, no cache", ms, "the git pass included"))
    ms, cached = first_scan(True, True)
    rows.append(("catalog first scan, dating, cache", ms, ""))
    for label, catalog in (("no dating", plain), ("dating", cached)):
        ms = median([_timed(catalog.scan)[0] for _ in range(5)])
        rows.append((f"catalog re-scan, nothing changed, {label}", ms, "median of 5"))
    count = int(git.run("rev-list", "--count", "HEAD"))
    build_history(root, args.notes, 1, start=count)
    for label, catalog in (("no dating", plain), ("dating", cached)):
        ms, _ = _timed(catalog.scan)
        rows.append((f"catalog re-scan after 1 commit, {label}", ms, ""))

    title = (
        f"Dates from git history: {args.notes} notes, {args.commits} commits "
        f"(history built in {ms_build / 1000:.1f} s)"
    )
    if args.json:
        emit_json({"notes": args.notes, "commits": args.commits, "rows": rows})
    else:
        print_table(title, ["what", "ms", "note"], rows)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
