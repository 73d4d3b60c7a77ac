"""CLI latency from process start: the warm server against a cold process, and a baseline.

Usage: python bench/cli.py [--runs 15] [--memories 300] [--baseline PATH] [--json]

Each row is the wall time of a whole ``python -m mdmem ...`` process (start,
imports, work, exit), ``--runs`` times, as p50/p95. Rows:

* ``import mdmem`` and ``mdmem --help``;
* ``mdmem recall`` / ``mdmem context`` cold (no server: ``MDMEM_NO_SERVER=1``)
  and warm (``mdmem serve --daemon`` running);
* ``mdmem hook prompt-submit`` (a Claude Code ``UserPromptSubmit`` payload on
  stdin) warm and cold, when the checkout has the hook kit's cold path
  (``mdmem/hookkit/cold.py``, earlier ``mdmem/hookmain.py``); otherwise the row says so;
* ``mdmem hooks doctor`` over a project whose Claude Code hooks each checkout
  installed, and how many commits it left in the vault's history.

``--baseline PATH`` measures another checkout in the same run (e.g. the
previous main: ``git worktree add /tmp/base-e f0758d0``), interleaved run by
run with this one so a busy machine weighs on both alike. The vault (with
``--memories`` memories, the default embedder) is the same; each checkout has
its own state dir. Targets (issue 17): warm ``recall`` and ``hook
prompt-submit`` p50 <= 150 ms; cold no slower than the baseline.

Besides wall time, each row gives the CPU time of the process (user + sys,
from its rusage) and, for warm rows, the server's CPU time for the request
(from /proc): on a machine shared with other work, wall time is these plus
the time spent waiting for a core, so CPU is the part that is the CLI's own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir

HERE = Path(__file__).resolve().parent.parent
QUERIES = [
    "when is the launch",
    "which region do we deploy to",
    "what does the user prefer for units",
    "who is the contact at the bank",
    "how long does the build take",
    "where did the team offsite happen",
    "what broke in the last release",
    "which database does the shop use",
]
FACTS = [
    "The launch of the shop is on May {n}.",
    "We deploy the shop service to eu-west-{n}.",
    "The user prefers metric units and 24-hour times (note {n}).",
    "Dana at the bank handles account {n}.",
    "The full build takes {n} minutes on CI.",
    "The team offsite {n} was in Lisbon.",
    "Release {n} broke the login page for Safari users.",
    "The shop uses Postgres {n} with a read replica.",
    "Standup notes {n}: the pipeline is green, the cache is warm.",
    "Gotcha {n}: the staging bucket needs a trailing slash.",
]


def _any_file(root: Path, *paths: str) -> bool:
    return any((root / p).is_file() for p in paths)


class Tree:
    """One checkout to measure: its path and its process environment."""

    def __init__(self, name: str, path: Path, base: Path) -> None:
        self.name = name
        self.path = path
        self.env = {
            **os.environ,
            "PYTHONPATH": str(path),
            "MDMEM_STATE_DIR": str(base / f"state-{name}"),
            "MDMEM_RUNTIME_DIR": str(base / "rt"),
        }
        # Where each lived in the checkout's version (a baseline may be older).
        self.has_hooks = _any_file(path, "mdmem/hookkit/cold.py", "mdmem/hookmain.py")
        self.has_server = _any_file(path, "mdmem/warm/server.py", "mdmem/agent/warm_server.py")

        self.cpu: list[float] = []  # CPU ms of each run, in order
        self.server_cpu: list[float] = []
        self.server_pid: int | None = None

    def run(
        self, args: list[str], *, stdin: bytes | None = None, extra: dict[str, str] | None = None
    ) -> float:
        """Milliseconds for one process, start to exit; a failure stops the benchmark."""
        env = {**self.env, **(extra or {})}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_before = _cpu_ms_of(self.server_pid)
        start = time.perf_counter()
        # In the checkout's own directory: `python -c`/`-m` put the working
        # directory first on sys.path, ahead of PYTHONPATH, so from another
        # directory a baseline would import whichever mdmem lives there.
        done = subprocess.run(
            [sys.executable, *args],
            input=stdin,
            capture_output=True,
            env=env,
            timeout=600,
            cwd=self.path,
        )
        took = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(
            (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
        )
        server_after = _cpu_ms_of(self.server_pid)
        if server_before is not None and server_after is not None:
            self.server_cpu.append(server_after - server_before)
        if done.returncode != 0:
            raise SystemExit(
                f"{self.name}: {' '.join(args)} failed ({done.returncode}): "
                f"{done.stderr.decode(errors='replace')[-2000:]}"
            )
        return took


def _cpu_ms_of(pid: int | None) -> float | None:
    """user + sys CPU ms of a running process (Linux /proc), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _commits(vault: Path) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=vault, capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0)


def seed(root: Path, memories: int) -> None:
    from mdmem import Vault

    vault = Vault.init(root, agent="bench")
    with vault.batch("seed"):
        for i in range(memories):
            vault.remember(FACTS[i % len(FACTS)].format(n=i))
    vault.close()


def sample(runs: int, fn: Callable[[int], float]) -> list[float]:
    return [fn(i) for i in range(runs)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = scratch_dir("mdmem-bench-cli-")
    vault = base / "vault"
    seed(vault, args.memories)
    project = base / "project"  # the hook's cwd: a repository without .mdmem.toml
    project.mkdir()
    trees = [Tree("this", HERE, base)]
    if args.baseline is not None:
        trees.append(Tree("baseline", args.baseline.resolve(), base))
    v = ["-m", "mdmem", "--vault", str(vault)]
    cold = {"MDMEM_NO_SERVER": "1"}
    for tree in trees:  # build each checkout's indexes (not timed)
        tree.run([*v, "recall", "warm up", "--json"], extra=cold)

    rows: list[dict[str, object]] = []

    def row(command: str, server: str, times: dict[str, list[float]], target: str = "") -> None:
        for name, values in times.items():
            tree = next(t for t in trees if t.name == name)
            cpu = tree.cpu[-len(values) :]
            server_cpu = tree.server_cpu[-len(values) :] if server == "warm" else []
            rows.append(
                {
                    "command": command,
                    "checkout": name,
                    "server": server,
                    "p50_ms": median(values),
                    "p95_ms": percentile(values, 95),
                    "cpu_p50_ms": median(cpu),
                    "server_cpu_p50_ms": median(server_cpu) if server_cpu else None,
                    "runs": len(values),
                    "target": target,
                }
            )

    def paired(argv: Callable[[int], list[str]], **kw: object) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {t.name: [] for t in trees}
        for i in range(args.runs):
            for tree in trees:  # interleaved: load drifts weigh on both checkouts
                out[tree.name].append(tree.run(argv(i), **kw))  # type: ignore[arg-type]
        return out

    this = trees[0]
    row("python -c pass (interpreter floor)", "-", {"this": sample(
        args.runs, lambda i: this.run(["-c", "pass"]))})
    row("python -c 'import mdmem'", "-", paired(lambda i: ["-c", "import mdmem"]))
    row("mdmem --help", "-", paired(lambda i: ["-m", "mdmem", "--help"]))
    row(
        "mdmem recall Q --json",
        "none (cold)",
        paired(lambda i: [*v, "recall", QUERIES[i % len(QUERIES)], "--json"], extra=cold),
    )
    row(
        "mdmem context Q",
        "none (cold)",
        paired(lambda i: [*v, "context", QUERIES[i % len(QUERIES)]], extra=cold),
    )

    def hook_payload(i: int) -> bytes:
        return json.dumps(
            {
                "session_id": "bench-session",
                "transcript_path": str(base / "transcript.jsonl"),
                "cwd": str(project),
                "permission_mode": "default",
                "hook_event_name": "UserPromptSubmit",
                "prompt": QUERIES[i % len(QUERIES)],
            }
        ).encode()

    hook = [*v, "hook", "prompt-submit", "--host", "claude-code"]
    if this.has_hooks:
        # No server, and none started by the hook for the next call (it would be warm).
        cold_hook = {"MDMEM_RUNTIME_DIR": str(base / "no-server"), "MDMEM_SERVER": "off"}
        row(
            "mdmem hook prompt-submit",
            "none (cold)",
            {"this": [this.run(hook, stdin=hook_payload(i), extra=cold_hook)
                      for i in range(args.runs)]},
        )

    # `hooks doctor` over a project with the Claude Code hooks installed by each
    # checkout (cold: no server), and the commits it leaves in the vault's history.
    doctor_commits: dict[str, int] = {}
    doctor_times: dict[str, list[float]] = {}
    for tree in trees:
        where = base / f"doctor-{tree.name}"
        where.mkdir()
        quiet = {**cold, "MDMEM_SERVER": "off"}
        tree.run([*v, "hooks", "install", "claude-code", "--dir", str(where)], extra=quiet)
        before = _commits(vault)
        doctor_times[tree.name] = [
            tree.run([*v, "hooks", "doctor", "--dir", str(where)], extra=quiet)
            for _ in range(min(args.runs, 3))
        ]
        doctor_commits[tree.name] = _commits(vault) - before
    row("mdmem hooks doctor (claude-code hooks)", "none (cold)", doctor_times)

    start = time.perf_counter()
    this.run([*v, "serve", "--daemon", "--idle", "600"])
    start_ms = (time.perf_counter() - start) * 1000
    from mdmem.warm.client import request

    # Ask it for its pid as the CLI would (the socket is keyed by the state dir).
    os.environ.update({k: this.env[k] for k in ("MDMEM_STATE_DIR", "MDMEM_RUNTIME_DIR")})
    this.server_pid = int(request(vault, "ping", timeout=10)["pid"])
    try:
        row(
            "mdmem recall Q --json",
            "warm",
            {"this": sample(args.runs, lambda i: this.run(
                [*v, "recall", QUERIES[i % len(QUERIES)], "--json"]))},
            "p50 <= 150",
        )
        row(
            "mdmem context Q",
            "warm",
            {"this": sample(args.runs, lambda i: this.run(
                [*v, "context", QUERIES[i % len(QUERIES)]]))},
        )
        if this.has_hooks:
            row(
                "mdmem hook prompt-submit",
                "warm",
                {"this": [this.run(hook, stdin=hook_payload(i)) for i in range(args.runs)]},
                "p50 <= 150",
            )
    finally:
        this.run([*v, "server", "stop"])

    if args.json:
        emit_json(
            {
                "rows": rows,
                "server_start_ms": start_ms,
                "hook_kit": this.has_hooks,
                "doctor_commits": doctor_commits,
            }
        )
        return
    table = [
        [
            r["command"],
            r["checkout"],
            r["server"],
            r["p50_ms"],
            r["p95_ms"],
            r["cpu_p50_ms"],
            "-" if r["server_cpu_p50_ms"] is None else r["server_cpu_p50_ms"],
            r["target"],
        ]
        for r in rows
    ]
    if not this.has_hooks:
        table.append(["mdmem hook prompt-submit", "this", "-", "n/a", "n/a", "n/a", "n/a",
                      "hook kit (w3c) not in this checkout"])
    print_table(
        f"CLI wall time from process start ({args.runs} runs, {args.memories} memories, "
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)",
        ["command", "checkout", "server", "p50 ms", "p95 ms", "CPU p50 ms",
         "server CPU p50 ms", "target"],
        table,
    )
    print(f"\nserve --daemon until the server answered: {start_ms:,.0f} ms")
    runs = min(args.runs, 3)
    for name, added in doctor_commits.items():
        print(f"hooks doctor ({name}, {runs} runs): {added} commit(s) added to the vault's history")


if __name__ == "__main__":
    main()
