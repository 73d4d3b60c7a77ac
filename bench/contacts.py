"""What keeping a contact's profile costs a recorded chat turn.

Usage: python bench/contacts.py [--turns 60] [--json]

Records --turns chat turns (hash embedder, auto-consolidation off) in three
sessions: without a contact; with a linked contact, turns a minute apart on
one day (the profile note is written once); and with turns a day apart (the
note is rewritten on every turn, the worst case). Prints p50/p90 ms per turn
and the ratio to the session without a contact.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, percentile, print_table, scratch_dir

os.environ.setdefault("MDMEM_EMBEDDER_PROVIDER", "hash")

from mdmem import Vault


def run(contact: str | None, step: timedelta, turns: int) -> list[float]:
    root = scratch_dir("contacts-")
    os.environ["MDMEM_STATE_DIR"] = str(root / "state")
    vault = Vault.init(root / "v", consolidation={"auto": False})
    if contact:
        vault.contacts.link(contact, "user:alice")
    session = vault.session("s1", source="telegram", contact=contact)
    start = datetime(2026, 1, 1, 8, tzinfo=UTC)
    times = []
    for i in range(turns):
        t0 = time.perf_counter()
        session.record("user", f"message {i} about topic {i % 7}", when=start + step * i)
        times.append((time.perf_counter() - t0) * 1000)
    vault.close()
    return times[5:]  # the first turns create files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = {
        "no contact": run(None, timedelta(minutes=1), args.turns),
        "linked contact, same day": run("telegram:123", timedelta(minutes=1), args.turns),
        "linked contact, new day each turn": run("telegram:123", timedelta(days=1), args.turns),
    }
    base = median(cases["no contact"])
    rows = [[name, median(t), percentile(t, 90), median(t) / base] for name, t in cases.items()]
    if args.json:
        emit_json([dict(zip(["case", "p50_ms", "p90_ms", "ratio"], r, strict=True)) for r in rows])
    else:
        print_table("Session.record per turn", ["case", "p50 ms", "p90 ms", "× no contact"], rows)


if __name__ == "__main__":
    main()
