"""Build ``shortchat.json`` (LoCoMo format) from ``shortchat.txt``.

Usage: python bench/data/build_shortchat.py [--check]

The text file is the source (written by hand for this benchmark; see
README.md here); the JSON is what ``bench/locomo.py --data`` reads. Turns get
dia ids ``D<session>:<n>`` in order; a question names its evidence by the
``{label}`` of each turn, so the ids can never drift from the text. The build
refuses unknown or duplicate labels, unreadable session dates and questions
without evidence. ``--check`` verifies that the committed JSON is up to date.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from locomo_data import parse_session_datetime  # noqa: E402

SOURCE = HERE / "shortchat.txt"
TARGET = HERE / "shortchat.json"
_TURN = re.compile(r"^([^:{}]+?): (.*?)(?: \{([\w-]+)\})?$")


def build(text: str) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    conv: dict[str, Any] = {}
    labels: dict[str, str] = {}
    speakers: list[str] = []
    session = turn_no = 0

    def fail(n: int, why: str) -> None:
        raise SystemExit(f"{SOURCE.name}:{n}: {why}")

    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("=== "):
            sample_id, _, names = line[4:].partition(" | ")
            speakers = [s.strip() for s in names.split(",") if s.strip()]
            if len(speakers) < 2:
                fail(n, "a conversation needs at least two speakers")
            conv = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
            samples.append({"sample_id": sample_id.strip(), "conversation": conv, "qa": []})
            labels, session = {}, 0
            continue
        if not samples:
            fail(n, "text before the first '=== ' line")
        if line.startswith("--- "):
            when = line[4:].strip()
            if parse_session_datetime(when) is None:
                fail(n, f"unreadable session date {when!r}")
            session += 1
            turn_no = 0
            conv[f"session_{session}_date_time"] = when
            conv[f"session_{session}"] = []
            continue
        if line.startswith("? "):
            parts = [p.strip() for p in line[2:].split(" | ")]
            if len(parts) != 4:
                fail(n, "a question is '? <category> | <question> | <answer> | <labels>'")
            category, question, answer, refs = parts
            evidence = []
            for ref in (r.strip() for r in refs.split(",")):
                if ref not in labels:
                    fail(n, f"unknown evidence label {ref!r}")
                evidence.append(labels[ref])
            if not evidence:
                fail(n, "a question needs evidence")
            samples[-1]["qa"].append(
                {
                    "question": question,
                    "answer": answer,
                    "evidence": evidence,
                    "category": int(category),
                }
            )
            continue
        m = _TURN.match(line)
        if m is None or session == 0:
            fail(n, "expected a turn 'Speaker: text {label}' inside a session")
        assert m is not None
        speaker, said, label = m.groups()
        if speaker not in speakers:
            fail(n, f"{speaker!r} is not among this conversation's speakers")
        turn_no += 1
        dia_id = f"D{session}:{turn_no}"
        if label:
            if label in labels:
                fail(n, f"duplicate label {label!r}")
            labels[label] = dia_id
        conv[f"session_{session}"].append({"speaker": speaker, "dia_id": dia_id, "text": said})
    return samples


def render(samples: list[dict[str, Any]]) -> str:
    return json.dumps(samples, ensure_ascii=False, indent=1) + "\n"


def main() -> None:
    out = render(build(SOURCE.read_text(encoding="utf-8")))
    if "--check" in sys.argv[1:]:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != out:
            raise SystemExit(f"{TARGET.name} is out of date: run {Path(__file__).name}")
        return
    TARGET.write_text(out, encoding="utf-8")
    samples = json.loads(out)
    turns = sum(
        len(v) for s in samples for k, v in s["conversation"].items() if isinstance(v, list)
    )
    print(
        f"{TARGET.name}: {len(samples)} conversations, {turns} turns, "
        f"{sum(len(s['qa']) for s in samples)} questions"
    )


if __name__ == "__main__":
    main()
