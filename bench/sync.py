"""Benchmark mdmem sync and purge on real git repositories in a temp folder.

    .venv/bin/python bench/sync.py [--memories 1000] [--rounds 3] [--commits 1000] [--json]

Sync: clone A writes N memories in one batch (one commit) and syncs (push
side); clone B syncs (pull side: fetch, rebase, catalog refresh, timed on its
own too). Then both clones write N memories into MEMORY.md concurrently and
sync, so B's pull has to merge the two ledgers block by block. Baseline: the
same kind of commit pushed / pulled (``git pull --rebase``) with plain git on
a separate pair of clones in the same run. Medians over ``--rounds``.

Purge: a vault with ``--commits`` commits (one memory each); one memory from
the middle of history is purged (fast-export/fast-import rewrite, reflog
expiry, gc); baseline: ``git gc --prune=now`` on the same repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mdmem import Vault


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.org",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.org",
    }
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def write_batch(vault: Vault, n: int, tag: str) -> None:
    with vault.batch(subject=f"bench {tag}"):
        for i in range(n):
            vault.remember(f"Bench fact {tag} number {i}: the widget ratio is {i * 7 % 97}")


def bench_sync(root: Path, n: int, rounds: int) -> dict[str, list[float]]:
    remote = root / "remote.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(remote))
    a = Vault.init(root / "a", agent="bench-a")
    git(a.root, "remote", "add", "origin", str(remote))
    a.sync()
    git(root, "clone", "-q", str(remote), str(root / "b"))
    b = Vault.open(root / "b", agent="bench-b")

    refresh_times: list[float] = []
    original_refresh = b.refresh

    def timed_refresh() -> list[str]:
        seconds, value = timed(original_refresh)
        refresh_times.append(seconds)
        return value

    b.refresh = timed_refresh  # type: ignore[method-assign]

    # plain-git baseline pair
    base_remote = root / "base.git"
    git(root, "init", "-q", "--bare", "-b", "main", str(base_remote))
    git(root, "clone", "-q", str(base_remote), str(root / "pa"))
    (root / "pa" / "MEMORY.md").write_text("# Memory\n\n")
    git(root / "pa", "add", "-A")
    git(root / "pa", "commit", "-qm", "init")
    git(root / "pa", "push", "-q", "origin", "HEAD:main")
    git(root, "clone", "-q", str(base_remote), str(root / "pb"))

    out: dict[str, list[float]] = {
        key: []
        for key in (
            "push",
            "pull",
            "pull_refresh",
            "merge_push",
            "merge_pull",
            "merge_refresh",
            "git_push",
            "git_pull",
            "git_merge_pull",
        )
    }
    for r in range(rounds):
        write_batch(a, n, f"a{r}")
        seconds, result = timed(lambda: a.sync())
        assert result.ok and result.pushed == 1
        out["push"].append(seconds)
        refresh_times.clear()
        seconds, result = timed(lambda: b.sync())
        assert result.ok and result.pulled == 1
        out["pull"].append(seconds)
        out["pull_refresh"].append(sum(refresh_times))

        # both sides wrote: B's pull rebases its batch onto A's (ledger block merge)
        write_batch(a, n, f"ma{r}")
        write_batch(b, n, f"mb{r}")
        seconds, result = timed(lambda: a.sync())
        assert result.ok
        out["merge_push"].append(seconds)
        refresh_times.clear()
        seconds, result = timed(lambda: b.sync())
        assert result.ok and result.pulled == 1 and result.pushed == 1, result.conflicts
        out["merge_pull"].append(seconds)
        out["merge_refresh"].append(sum(refresh_times))
        a.sync()

        lines = "".join(f"- Bench fact {r} {i} ^m-{r:04d}{i:08d}\n" for i in range(n))
        with (root / "pa" / "MEMORY.md").open("a") as handle:
            handle.write(lines)
        git(root / "pa", "commit", "-qam", f"round {r}")
        seconds, _ = timed(lambda: git(root / "pa", "push", "-q", "origin", "HEAD:main"))
        out["git_push"].append(seconds)
        seconds, _ = timed(lambda: git(root / "pb", "pull", "-q", "--rebase", "origin", "main"))
        out["git_pull"].append(seconds)
        # concurrent appends with plain git conflict: time fetch + a union-style merge instead
        with (root / "pa" / "MEMORY.md").open("a") as handle:
            handle.write(lines.replace("Bench fact", "A fact").replace("^m-", "^m-a"))
        git(root / "pa", "commit", "-qam", f"a {r}")
        git(root / "pa", "push", "-q", "origin", "HEAD:main")
        with (root / "pb" / "MEMORY.md").open("a") as handle:
            handle.write(lines.replace("Bench fact", "B fact").replace("^m-", "^m-b"))
        git(root / "pb", "commit", "-qam", f"b {r}")
        seconds, _ = timed(
            lambda: git(
                root / "pb",
                "-c",
                "merge.union.driver=true",
                "-c",
                "core.attributesFile=/dev/null",
                "pull",
                "-q",
                "--rebase",
                "-X",
                "theirs",
                "origin",
                "main",
            )
        )
        out["git_merge_pull"].append(seconds)
        git(root / "pb", "push", "-q", "origin", "HEAD:main")
        git(root / "pa", "pull", "-q", "--rebase", "origin", "main")
    return out


def bench_purge(root: Path, commits: int) -> dict[str, float]:
    vault = Vault.init(root / "p", agent="bench-p")
    target = None
    for i in range(commits - 1):
        memory = vault.remember(f"Purge bench fact {i}: reading {i * 13 % 101}")
        if i == commits // 2:
            target = memory
        if i and i % 200 == 0:
            print(f"  purge setup: {i} commits", file=sys.stderr)
    assert target is not None
    total = int(git(vault.root, "rev-list", "--count", "HEAD"))
    gc_seconds, _ = timed(lambda: git(vault.root, "gc", "--prune=now", "--quiet"))
    seconds, result = timed(lambda: vault.git.purge(target.id, confirm=True))
    return {
        "commits": float(total),
        "commits_rewritten": float(result.commits_rewritten),
        "purge": seconds,
        "git_gc": gc_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mdmem-bench-sync-") as tmp:
        root = Path(tmp)
        os.environ["MDMEM_STATE_DIR"] = str(root / "_state")
        os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
        times = bench_sync(root, args.memories, args.rounds)
        purged = bench_purge(root, args.commits)

    med = {key: statistics.median(values) for key, values in times.items()}
    rows = [
        ("push side: sync A (1 batch commit)", med["push"], med["git_push"], "git push"),
        (
            "pull side: sync B (fetch+rebase+refresh)",
            med["pull"],
            med["git_pull"],
            "git pull --rebase",
        ),
        ("  of which catalog refresh + index update", med["pull_refresh"], None, ""),
        ("both wrote: sync A (push)", med["merge_push"], med["git_push"], "git push"),
        (
            "both wrote: sync B (block merge + push)",
            med["merge_pull"],
            med["git_merge_pull"],
            "git pull --rebase -X theirs",
        ),
        ("  of which catalog refresh + index update", med["merge_refresh"], None, ""),
        (
            "purge 1 memory (incl. full reindex)",
            purged["purge"],
            purged["git_gc"],
            "git gc --prune=now",
        ),
    ]
    if args.json:
        print(
            json.dumps(
                {
                    "memories": args.memories,
                    "rounds": args.rounds,
                    "median_seconds": med,
                    "purge": purged,
                    "rows": [
                        {"what": w, "seconds": s, "baseline_seconds": b, "baseline": name}
                        for w, s, b, name in rows
                    ],
                },
                indent=2,
            )
        )
        return
    print(
        f"mdmem sync: {args.memories} memories per batch, median of {args.rounds} rounds; "
        f"purge on {int(purged['commits'])} commits ({int(purged['commits_rewritten'])} rewritten)"
    )
    print(f"{'step':<46}{'seconds':>9}{'baseline':>10}{'ratio':>8}  baseline")
    for what, seconds, baseline, name in rows:
        ratio = f"{seconds / baseline:7.1f}x" if baseline else ""
        base_text = f"{baseline:10.3f}" if baseline else " " * 10
        print(f"{what:<46}{seconds:9.3f}{base_text}{ratio:>8}  {name}")


if __name__ == "__main__":
    main()
