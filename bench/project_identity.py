"""What a project identity costs a hook: ``resolve_policy`` now against a baseline commit's.

Usage: python bench/project_identity.py [--baseline REV] [--runs 300]

Every hook resolves its policy before anything else, inside the prompt hook's
latency budget. This times ``resolve_policy(cwd)`` in three temporary
repositories — one with a remote, one without a remote whose id is already
recorded, one with a confirmed ``.mdmem.toml`` — for this checkout and for
``mdmem/hookkit/policy.py`` as it was at ``--baseline`` (default
5264261, main before identities; the old module derived ``project:<name>``).
It also times the first
call in a fresh remote-less repository, which records the id with one
``git config`` process. Medians in microseconds, the ratio to the baseline,
and the load average beside them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _baseline(rev: str) -> ModuleType:
    text = subprocess.run(
        ["git", "show", f"{rev}:mdmem/hookkit/policy.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_projectpolicy.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_projectpolicy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _repo(root: Path, name: str, remote: str | None) -> Path:
    path = root / name
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def _median_us(call: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="5264261", help="commit of the baseline policy")
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp())
    os.environ["MDMEM_CONFIG_HOME"] = str(work / "config")
    from mdmem.hookkit.policy import resolve_policy
    from mdmem.projects import trust

    old = _baseline(args.baseline)
    remote = _repo(work, "api", "git@github.com:acme/api.git")
    plain = _repo(work, "app", None)
    resolve_policy(str(plain))  # records the id once
    confirmed = _repo(work, "tool", "https://example.org/o/tool.git")
    (confirmed / ".mdmem.toml").write_text('scope = "project:tools"\ncapture = "everything"\n')
    trust.confirm(confirmed / ".mdmem.toml", (confirmed / ".mdmem.toml").read_bytes())

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'case':<28}{'baseline us':>12}{'now us':>10}{'ratio':>8}")
    for label, path in (
        ("remote", remote),
        ("no remote, id recorded", plain),
        ("confirmed .mdmem.toml", confirmed),
    ):
        before = _median_us(lambda p=path: old.resolve_policy(str(p)), args.runs)
        after = _median_us(lambda p=path: resolve_policy(str(p)), args.runs)
        print(f"{label:<28}{before:>12.0f}{after:>10.0f}{after / before:>8.2f}")
    firsts = []
    for i in range(10):
        fresh = _repo(work, f"fresh-{i}", None)
        started = time.perf_counter()
        resolve_policy(str(fresh))
        firsts.append(time.perf_counter() - started)
    base = _median_us(lambda: old.resolve_policy(str(plain)), args.runs)
    first = statistics.median(firsts) * 1e6
    print(f"{'first use, records the id':<28}{base:>12.0f}{first:>10.0f}{first / base:>8.2f}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
