"""Writers contending for one vault, and writers killed mid-write.

    .venv/bin/python bench/contention.py [--procs 4] [--seconds 30] [--kills 0] [--json]

Fairness: ``--procs`` processes open the same vault and call ``remember`` in
a loop for ``--seconds``. The table gives each process's number of writes and
its slowest and median write (the time one ``remember`` took, the wait for the
vault lock included), plus the longest stretch in which a process that wanted
to write wrote nothing. A fair lock gives every process about the same count
and keeps the slowest write near ``procs`` times a single write.

Kills (``--kills N``): N times, a writer is started in its own process group
and, after a random delay, as soon as git holds ``.git/index.lock``, the
whole group (the Python process and the git it started) is killed with
SIGKILL, as a crash or an OOM kill would. After
each kill a fresh process must write within ``--wedge-after`` seconds; a kill
after which it cannot is counted as wedged. The table also gives how many
kills left a git lock file behind and the slowest first write after a kill.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir

ROOT = str(Path(__file__).resolve().parent.parent)

# One contending writer: writes until the deadline, prints one JSON line.
_WRITER = textwrap.dedent(
    """
    import json, sys, time
    from mdmem import Vault
    root, agent, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
    vault = Vault.open(root, agent=agent)
    latencies, errors = [], []
    while time.time() < deadline:
        start = time.time()
        try:
            vault.remember(f"{agent} wrote fact {len(latencies)} at {start}")
        except Exception as exc:  # the bench reports what a user would see
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        latencies.append((start, time.time() - start))
    print(json.dumps({"agent": agent, "writes": latencies, "errors": errors}))
    """
)

# A writer that is killed: says when it is open, then writes forever.
_VICTIM = textwrap.dedent(
    """
    import sys
    from mdmem import Vault
    vault = Vault.open(sys.argv[1], agent=sys.argv[2])
    print("ready", flush=True)
    i = 0
    while True:
        vault.remember(f"{sys.argv[2]} fact {i}")
        i += 1
    """
)

# After a kill: one write, with the lock timeout bounded so a wedge shows.
_SURVIVOR = textwrap.dedent(
    """
    import sys, time
    from mdmem import Vault
    vault = Vault.open(sys.argv[1], agent="survivor")
    start = time.time()
    vault.remember(f"written after kill {sys.argv[2]}")
    print(time.time() - start)
    """
)

_GIT_LOCKS = ("index.lock", "HEAD.lock", "packed-refs.lock", "refs/heads/main.lock")


def _env(lock_timeout: float) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "MDMEM_GIT_LOCK_TIMEOUT": str(lock_timeout),
    }


def contend(root: Path, procs: int, seconds: float, lock_timeout: float) -> dict[str, Any]:
    # Every process opens the vault first; the clock starts once all could have.
    deadline = time.time() + seconds + 3.0
    started = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(root), f"writer-{n}", str(deadline)],
            env=_env(lock_timeout),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(procs)
    ]
    results = []
    for proc in started:
        out, err = proc.communicate(timeout=seconds + lock_timeout + 120)
        if proc.returncode != 0:
            raise SystemExit(f"writer failed: {err.decode()[-2000:]}")
        results.append(json.loads(out))
    begin = min((w[0] for r in results for w in r["writes"]), default=deadline)
    rows = []
    for r in results:
        times = [w[1] for w in r["writes"]]
        # The longest stretch without a finished write (from the common start).
        ends = sorted([begin] + [w[0] + w[1] for w in r["writes"]] + [deadline])
        starved = max(b - a for a, b in itertools.pairwise(ends))
        rows.append(
            {
                "process": r["agent"],
                "writes": len(times),
                "errors": len(r["errors"]),
                "first_error": r["errors"][0] if r["errors"] else "",
                "median_ms": median(times) * 1000 if times else float("nan"),
                "max_ms": max(times) * 1000 if times else float("nan"),
                "longest_gap_s": starved,
            }
        )
    return {"procs": procs, "seconds": seconds, "rows": rows}


def kill_loop(root: Path, kills: int, wedge_after: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    wedged, left_locks, first_write = 0, 0, []
    for n in range(kills):
        victim = subprocess.Popen(
            [sys.executable, "-c", _VICTIM, str(root), f"victim-{n}"],
            env=_env(120),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own group: the kill takes its git too
        )
        assert victim.stdout is not None
        victim.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.3))
        # Aim at the commit: kill as soon as git holds its index lock (a
        # plain random delay mostly lands outside the few ms git runs).
        index_lock = root / ".git" / "index.lock"
        give_up = time.monotonic() + 5
        while not index_lock.exists() and time.monotonic() < give_up:
            time.sleep(0.0005)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        victim.stdout.close()
        if any((root / ".git" / name).exists() for name in _GIT_LOCKS):
            left_locks += 1
        survivor = subprocess.run(
            [sys.executable, "-c", _SURVIVOR, str(root), str(n)],
            env=_env(wedge_after),
            capture_output=True,
            text=True,
            timeout=wedge_after + 120,
            check=False,
        )
        if survivor.returncode != 0:
            wedged += 1
            print(f"kill {n}: wedged: {survivor.stderr.strip().splitlines()[-1]}", file=sys.stderr)
            # Unwedge by hand, as a person had to, so the loop goes on.
            for name in _GIT_LOCKS:
                (root / ".git" / name).unlink(missing_ok=True)
        else:
            first_write.append(float(survivor.stdout.strip()))
    return {
        "kills": kills,
        "wedged": wedged,
        "left_git_lock": left_locks,
        "max_first_write_s": max(first_write, default=float("nan")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--kills", type=int, default=0, help="kill-loop rounds (0: skip)")
    parser.add_argument("--wedge-after", type=float, default=20.0)
    parser.add_argument("--lock-timeout", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = scratch_dir("mdmem-contention-")
    os.environ["PYTHONPATH"] = ROOT
    from mdmem import Vault

    report: dict[str, Any] = {}
    if args.procs > 0 and args.seconds > 0:
        root = base / "contend"
        Vault.init(root, agent="bench")
        report["fairness"] = contend(root, args.procs, args.seconds, args.lock_timeout)
    if args.kills > 0:
        root = base / "kills"
        Vault.init(root, agent="bench")
        report["kills"] = kill_loop(root, args.kills, args.wedge_after, args.seed)

    if args.json:
        emit_json(report)
        return
    if "fairness" in report:
        fair = report["fairness"]
        print_table(
            f"{fair['procs']} processes writing to one vault for {fair['seconds']:g} s",
            ["process", "writes", "errors", "median ms", "max ms", "longest gap s"],
            [
                [r["process"], r["writes"], r["errors"], r["median_ms"], r["max_ms"],
                 r["longest_gap_s"]]
                for r in fair["rows"]
            ],
        )  # fmt: skip
        for r in fair["rows"]:
            if r["first_error"]:
                print(f"{r['process']}: {r['first_error']}")
    if "kills" in report:
        k = report["kills"]
        print_table(
            "writers killed (SIGKILL to the process group) mid-write",
            ["kills", "left a git lock", "wedged", "slowest next write s"],
            [[k["kills"], k["left_git_lock"], k["wedged"], k["max_first_write_s"]]],
        )
    print(json.dumps({"command": " ".join(sys.argv)}))


if __name__ == "__main__":
    main()
