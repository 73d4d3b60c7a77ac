"""What keeping commit records adds to a ``remember``, against the git floor, in one run.

Usage: python bench/write_records.py [--memories 2000] [--samples 40] [--embedder hash]

On a vault of ``--memories`` memories, interleaved: one ``git commit`` of a
one-line file in the same repository (the floor), a ``remember`` with the
commit record kept, and one with it skipped; each timed write follows an
untimed one, so neither pays for noticing the floor's commit.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from _common import median, print_table, scratch_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    base = scratch_dir("mdmem-write-records-")
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", args.embedder)
    from mdmem import Vault
    from mdmem.store import commitrecords

    vault = Vault.init(base / "vault", agent="bench")
    with vault.batch("seed"):
        for i in range(args.memories):
            vault.remember(f"Seed memory {i}: the user mentioned topic {i % 97} on day {i % 31}.")
    floor_file = vault.root / "floor.md"
    floor_file.write_text("- 0\n")
    git = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsync=committed"]
    subprocess.run([*git, "add", "floor.md"], cwd=vault.root, check=True)
    keep = commitrecords.keep_record
    floor, kept, skipped = [], [], []

    def timed(text: str) -> float:
        start = time.perf_counter()
        vault.remember(text)
        return (time.perf_counter() - start) * 1000

    for i in range(args.samples):
        floor_file.write_text(f"- {i}\n")
        start = time.perf_counter()
        subprocess.run(
            [*git, "commit", "-q", "--no-verify", "-m", f"f{i}", "--", "floor.md"],
            cwd=vault.root,
            check=True,
            capture_output=True,
        )
        floor.append((time.perf_counter() - start) * 1000)
        vault.remember(f"Untimed memory {i} after the floor commit.")
        order = (True, False) if i % 2 else (False, True)
        for with_record in order:
            commitrecords.keep_record = keep if with_record else (lambda *a: None)
            (kept if with_record else skipped).append(timed(f"Memory {i} {with_record} {i % 13}."))
        commitrecords.keep_record = keep
    vault.close()
    f = median(floor)
    print_table(
        f"remember on {args.memories:,} memories, {args.samples} samples each "
        f"(load {os.getloadavg()[0]:.2f})",
        ["measure", "p50 ms", "/ git floor"],
        [
            ["git commit of a one-line change (floor)", f, 1.0],
            ["remember, commit record kept", median(kept), median(kept) / f],
            ["remember, commit record skipped", median(skipped), median(skipped) / f],
        ],
    )


if __name__ == "__main__":
    main()
