"""What the team tier costs the prompt hook: the hook with and without a team folder.

Usage: python bench/team_tier.py [--lines 300] [--runs 30] [--json]

Builds a vault with a few hundred memories and a git repository whose
``.mdmem/team/`` holds ``--lines`` accepted lines (trusted), then times the
``prompt-submit`` hook (Claude Code payload, in-process ``run_event``, keyword
recall as a cold hook process uses) with the host working in

* a repository without a team folder (the baseline),
* the same repository with the team folder, its index warm (a stat per file),
* the same after each run changes one team file (a pull: hash and re-parse it),

and ``team_context`` alone in the warm case. Timings are medians, reported
as ratios to the baseline measured in the same run, with the load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import emit_json, median, print_table, scratch_dir

from mdmem import Vault
from mdmem.hookkit.runner import run_event
from mdmem.team import TeamFolder, team_context

WORDS = [
    "payments",
    "cart",
    "ledger",
    "deploy",
    "migrations",
    "cache",
    "queue",
    "worker",
    "billing",
    "invoice",
    "search",
    "auth",
    "session",
    "token",
    "refund",
    "webhook",
    "retry",
    "timeout",
    "schema",
    "index",
    "replica",
    "backup",
]


def _git(cwd: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _repo(path: Path, state: Path, team_lines: int) -> Path:
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.name", "Bench")
    _git(path, "config", "user.email", "bench@example.org")
    if team_lines:
        TeamFolder.at(path).init(state)
        per_file = team_lines // 3
        for n, name in enumerate(("decisions.md", "conventions.md", "gotchas.md")):
            rows = []
            for i in range(per_file):
                a, b, c = (WORDS[(n * 7 + i * k) % len(WORDS)] for k in (1, 3, 5))
                rows.append(
                    f"- The {a} service calls {b} with {c.upper()}_{i}=1 before the {c} job. "
                    f"[kind:: gotcha] [proposed_by:: Ada] [proposed:: 2026-11-01] "
                    f"[accepted_by:: Bob] [accepted:: 2026-11-02] ^m-{n:02d}{i:012d}\n"
                )
            target = path / ".mdmem" / "team" / name
            target.write_text(target.read_text() + "".join(rows))
    return path


def _time(func: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = scratch_dir("mdmem-team-bench-")
    os.environ.setdefault("MDMEM_STATE_DIR", str(work / "state"))
    os.environ.setdefault("MDMEM_CONFIG_HOME", str(work / "config"))
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
    state = Path(os.environ["MDMEM_STATE_DIR"])
    vault = Vault.init(work / "vault", agent="bench")
    with vault.batch():
        for i in range(300):
            a, b = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]
            vault.remember(f"Note {i}: the {a} module talks to {b} over the queue.")
    plain = _repo(work / "plain", state, 0)
    team = _repo(work / "team", state, args.lines)
    prompt = "Why does the payments service fail before the ledger job? Check LEDGER_3."

    def hook(cwd: Path) -> str:
        payload = {
            "session_id": "bench",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
        return run_event(vault, "claude-code", "prompt-submit", payload, warm=False)

    assert "Team memory" in hook(team), "the team tier was not injected"
    gotchas = team / ".mdmem" / "team" / "gotchas.md"
    counter = [0]

    def pulled() -> str:
        counter[0] += 1
        with gotchas.open("a") as handle:  # what a pull that adds a line does to the file
            handle.write(
                f"- Pulled line {counter[0]} about billing. [accepted_by:: Bob] "
                f"^m-99{counter[0]:012d}\n"
            )
        return hook(team)

    state_dir = vault.admin.state_dir
    base = _time(lambda: hook(plain), args.runs)
    warm = _time(lambda: hook(team), args.runs)
    edit = _time(pulled, args.runs)
    alone = _time(lambda: team_context(team, prompt, state_dir), args.runs)
    load = os.getloadavg()[0]
    rows = [
        ["hook, no team folder (baseline)", base, 1.0],
        [f"hook, team folder of {args.lines} lines, index warm", warm, warm / base],
        ["hook, after a pull changed one team file", edit, edit / base],
        ["team_context alone, index warm", alone, alone / base],
    ]
    vault.close()
    if args.json:
        emit_json({"rows": rows, "load": load, "lines": args.lines, "runs": args.runs})
        return
    print_table(
        f"prompt-submit hook cost of the team tier (median of {args.runs}; load {load:.2f})",
        ["case", "ms", "ratio to baseline"],
        rows,
    )


if __name__ == "__main__":
    main()
