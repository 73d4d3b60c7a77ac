"""What giving a person's typed lines their ids costs a write (issue 35).

Each write now commits a person's edits and gives ids to the list items they
typed into profile files. Times ``vault.remember`` in one vault, alternating
two arms write by write: the writer as shipped, and the same writer with the
id step switched off (the baseline, measured in the same run). A third arm
types a line into USER.md before each write (the step's real work).

    python bench/typed_ids.py [--writes 60]
"""

from __future__ import annotations

import argparse
import os
import time

from _common import median, print_table, scratch_dir

import mdmem.store.writer as writer_module
from mdmem import Vault


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=60)
    args = parser.parse_args()
    os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")
    shipped = writer_module.give_ids
    vault = Vault.init(scratch_dir("typed-ids") / "v", agent="bench")
    for i in range(50):
        vault.remember(f"Warm-up fact number {i} about the garden.")
    user_md = vault.root / "USER.md"
    arms: dict[str, list[float]] = {"baseline (no id step)": [], "shipped": [], "typed": []}
    for i in range(args.writes):
        for arm, times in arms.items():
            writer_module.give_ids = (lambda *a, **k: []) if arm.startswith("base") else shipped
            if arm == "typed":
                with user_md.open("a", encoding="utf-8") as fh:
                    fh.write(f"- I typed line {i} by hand\n")
            started = time.perf_counter()
            vault.remember(f"{arm} fact {i}: the shed door sticks in winter.")
            times.append((time.perf_counter() - started) * 1000)
    writer_module.give_ids = shipped
    base = median(arms["baseline (no id step)"])
    rows = [[arm, f"{median(t):.1f}", f"{median(t) / base:.2f}"] for arm, t in arms.items()]
    print_table(
        f"remember, {args.writes} writes per arm (load {os.getloadavg()[0]:.2f})",
        ["arm", "median ms", "ratio to baseline"],
        rows,
    )
    vault.close()


if __name__ == "__main__":
    main()
