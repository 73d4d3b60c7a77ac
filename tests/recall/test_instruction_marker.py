"""The instruction-like marker is a hint; the fence is the guarantee (issue #33, item 5).

Every string of ``bench/data/injections.json`` (paraphrases, other languages,
look-alike letters, zero-width characters, base64, split sentences, and a
held-out part the rules were not written from) is injected fenced, under its
provenance label, whether the marker names it or not. The marker's recall on
the part its rules were written from, and its silence on the benign controls,
are checked too; ``python bench/instructions.py --set`` prints the table.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.recall.asdata import DATA_NOTE, render_recalled
from mdmem.recall.instructions import instruction_cues

SET = json.loads(
    (Path(__file__).parents[2] / "bench" / "data" / "injections.json").read_text(encoding="utf-8")
)
INJECTIONS = [case["text"] for case in SET["injections"]]
TUNED = [case["text"] for case in SET["injections"] if case["form"] != "held-out"]
SPLIT = [part for case in SET["split"] for part in case["parts"]]


def test_the_set_is_varied_and_large_enough() -> None:
    forms = {case["form"].split(":")[0] for case in SET["injections"]}
    languages = {case["form"] for case in SET["injections"] if case["form"].startswith("language")}
    assert len(INJECTIONS) + len(SET["split"]) >= 100
    assert {"paraphrase", "look-alike letters", "zero-width characters", "base64"} <= forms
    assert len(languages) >= 6


def test_the_marker_finds_most_of_what_its_rules_were_written_from() -> None:
    found = sum(bool(instruction_cues(text)) for text in TUNED)
    assert found / len(TUNED) >= 0.8, found


@pytest.mark.parametrize("text", SET["benign"])
def test_the_marker_leaves_ordinary_notes_alone(text: str) -> None:
    assert instruction_cues(text) == ()


def test_every_injection_is_fenced_with_its_provenance_whatever_the_marker_says(
    vault: Vault,
) -> None:
    texts = INJECTIONS + SPLIT
    with vault.batch():
        # secrets="off": a base64 injection is key material to the secrets guard.
        ids = {vault.remember(text, secrets="off").id: text for text in texts}
    for memory_id, text in ids.items():
        # Every item rendered, whatever the relevance gate says: the fence is the
        # renderer's guarantee, not the gate's.
        hits = dataclasses.replace(
            vault.recall(text, k=50), relevance=None, nothing_relevant=False
        )
        block = render_recalled(hits, 20_000)
        lines = block.splitlines()
        assert DATA_NOTE in lines
        opening = lines.index(DATA_NOTE) + 1
        fence = lines[opening][: lines[opening].index("memory")]
        assert set(fence) == {"`"} and len(fence) >= 3
        closing = len(lines) - 1 - lines[::-1].index(fence)
        mine = [i for i, line in enumerate(lines) if f"[^{memory_id} ·" in line]
        assert mine, text
        for i in mine:
            assert opening < i < closing, text  # inside the fence
            assert lines[i].startswith(f"- [^{memory_id} · ")  # its provenance first
            assert "by caller" in lines[i].split("]", 1)[0]
