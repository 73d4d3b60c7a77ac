"""Import benchmark: messages a second through `vault.library.import_`, commits, and a re-import.

Usage: python bench/importer.py [--messages 2000] [--conversations 4] [--json]

Writes a JSONL of --messages chat turns spread over --conversations
conversations (made-up text, one Unix timestamp a minute), imports it into a
fresh vault, then imports it again (which must add nothing), and prints the
time per message, the commits made and the re-import's time. The embedder is
the vault's default unless MDMEM_EMBEDDER_PROVIDER says otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

_WORDS = [
    "harbour",
    "ferry",
    "launch",
    "budget",
    "lisbon",
    "piano",
    "recital",
    "standup",
    "deploy",
    "postgres",
    "tea",
    "flowers",
    "invoice",
    "roadmap",
    "kernel",
    "garden",
    "offsite",
    "sprint",
]


def write_messages(path: Path, messages: int, conversations: int) -> None:
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as out:
        for i in range(messages):
            row = {
                "id": f"msg-{i}",
                "conversation_id": f"conv-{i % conversations}",
                "role": ("user", "assistant")[i % 2],
                "speaker": ("Ana", "Bot")[i % 2],
                "content": " ".join(rng.choice(_WORDS) for _ in range(14)) + f" (turn {i})",
                "timestamp": 1_684_300_000 + 60 * i,
            }
            out.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from mdmem import Vault

    scratch = scratch_dir("mdmem-bench-import-")
    source = scratch / "messages.jsonl"
    write_messages(source, args.messages, args.conversations)
    vault = Vault.init(scratch / "vault", agent="bench")
    started = time.perf_counter()
    report = vault.library.import_(source)
    first = time.perf_counter() - started
    started = time.perf_counter()
    again = vault.library.import_(source)
    second = time.perf_counter() - started
    vault.close()
    result = {
        "messages": args.messages,
        "added": report.added,
        "commits": report.commits,
        "import_s": round(first, 2),
        "ms_per_message": round(1000 * first / max(1, report.added), 2),
        "reimport_added": again.added,
        "reimport_s": round(second, 2),
    }
    if args.json:
        emit_json(result)
        return
    print_table(
        "import (JSONL of chat turns)",
        [
            "messages",
            "added",
            "commits",
            "import s",
            "ms/message",
            "re-import added",
            "re-import s",
        ],
        [list(result.values())],
    )


if __name__ == "__main__":
    main()
