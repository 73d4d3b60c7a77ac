"""Hostile inputs against import and ingest: peak memory, time, what came out.

Usage: python bench/import_bounds.py [--baseline PATH] [--export-mb 110] [--json]

Makes a 1 MB zip holding 1 GiB (a zip bomb), a plain ``conversations.json``
of ``--export-mb`` MB (1,600 conversations whose messages are all hidden, so
the run measures reading, not writing), a 64 KB PDF whose one page inflates
to 2.4 MB of text, and a 1,000-page PDF sharing one content stream. Each is
imported or ingested into a fresh vault in a fresh process of each checkout
(this one, and ``--baseline`` in the same run: load drifts weigh on both),
which reports its outcome, its peak RSS (``VmHWM``: ``ru_maxrss`` would keep
a parent's peak across fork and exec), the seconds and, for documents, the
chunks made. A probe's address space is capped at 3 GiB so a baseline that
reads a bomb whole fails instead of swapping the machine. Hash embeddings.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, print_table, scratch_dir

from tests.memory.hostile import inflating_pdf, zip_bomb

_CAP = 3 * 1024**3
_PROBE = r"""
import json, os, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[4]), int(sys.argv[4])))
from mdmem import Vault
vault = Vault.init(sys.argv[1], agent="bench")
library = getattr(vault, "library", None)  # a checkout before the desks has the old verbs
start = time.perf_counter()
out = {"chunks": None}
try:
    if sys.argv[3] == "ingest":
        result = library.ingest(sys.argv[2])[0] if library else vault.ingest(sys.argv[2])
        out["chunks"] = len(result.chunks)
        out["outcome"] = "ingested" + (f" ({result.cut})" if getattr(result, "cut", None) else "")
    else:
        report = (library or vault).import_(sys.argv[2], format=sys.argv[3])
        out["outcome"] = f"{report.conversations} conversations, {report.refused} refused"
except MemoryError:
    out["outcome"] = "MemoryError at the address-space cap"
except Exception as exc:
    out["outcome"] = f"{type(exc).__name__}: {exc}"
out["seconds"] = round(time.perf_counter() - start, 2)
status = open("/proc/self/status").read()
out["rss_mb"] = int(status.split("VmHWM:")[1].split()[0]) // 1024
print(json.dumps(out))
"""


def _plain_export(path: Path, megabytes: int) -> Path:
    hidden = {"is_visually_hidden_from_conversation": True}

    def node(i: int) -> dict[str, object]:
        message = {
            "id": f"n{i}",
            "author": {"role": "system"},
            "create_time": 1.0,
            "content": {"content_type": "text", "parts": ["hidden context " * 60]},
            "metadata": hidden,
        }
        return {"id": f"n{i}", "message": message, "parent": None, "children": []}

    mapping = {f"n{i}": node(i) for i in range(60)}
    one = len(json.dumps({"title": "c", "mapping": mapping}))
    count = max(1, megabytes * 1_000_000 // one)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for c in range(count):
            out.write("," if c else "")
            conversation = {"title": f"c{c}", "conversation_id": f"c{c}", "mapping": mapping}
            out.write(json.dumps(conversation))
        out.write("]")
    return path


def _probe(tree: Path, work: Path, target: Path, how: str) -> dict[str, object]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "MDMEM_STATE_DIR": str(work / "state"),
        "MDMEM_EMBEDDER_PROVIDER": "hash",
    }
    vault = work / f"vault-{len(list(work.glob('vault-*')))}"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(vault), str(target), how, str(_CAP)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,  # `python -c` puts the working directory ahead of PYTHONPATH
        timeout=1800,
    )
    if done.returncode != 0 or not done.stdout.strip():
        return {"outcome": f"probe failed: {done.stderr.strip()[-200:]}", "rss_mb": None}
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--export-mb", type=int, default=110)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    base = scratch_dir("mdmem-bounds-")
    inputs = base / "inputs"
    inputs.mkdir()
    cases = [
        ("zip bomb: 1 MB holding 1 GiB", zip_bomb(inputs / "bomb.zip"), "chatgpt"),
        (
            f"plain conversations.json, {args.export_mb} MB",
            _plain_export(inputs / "conversations.json", args.export_mb),
            "chatgpt",
        ),
    ]
    for name, data in (
        ("64 KB PDF, one page of 2.4 MB text", inflating_pdf()),
        ("PDF, 1,000 pages sharing a stream", inflating_pdf(text_bytes=2000, pages=1000)),
    ):
        pdf = inputs / f"{len(cases)}.pdf"
        pdf.write_bytes(data)
        cases.append((name, pdf, "ingest"))
    trees = [("this", Path(__file__).resolve().parent.parent)]
    if args.baseline is not None:
        trees.append(("baseline", args.baseline.resolve()))
    rows = []
    for name, target, how in cases:
        for label, tree in trees:  # interleaved: load drifts weigh on both checkouts
            work = base / f"{label}-{target.stem}"
            work.mkdir(exist_ok=True)
            result = _probe(tree, work, target, how)
            rows.append(
                {
                    "input": name,
                    "bytes": target.stat().st_size,
                    "checkout": label,
                    **result,
                }
            )
    if args.json:
        emit_json(rows)
        return
    print_table(
        "import and ingest bounds (peak RSS of a fresh process)",
        ["input", "bytes", "checkout", "peak RSS MB", "s", "chunks", "outcome"],
        [
            [
                r["input"],
                f"{r['bytes']:,}",
                r["checkout"],
                r.get("rss_mb"),
                r.get("seconds"),
                r.get("chunks") if r.get("chunks") is not None else "",
                str(r["outcome"])[:90],
            ]
            for r in rows
        ],
    )


if __name__ == "__main__":
    main()
