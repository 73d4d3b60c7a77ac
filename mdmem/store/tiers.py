"""Tiered text of a block (operator_use, openviking): L0 abstract, L1 overview, L2 full.

Long blocks are stored with their shorter tiers, written by code when the
block is written (extractive; no model needed):

* an episode: frontmatter ``abstract`` (one line) and ``overview`` (a few
  central sentences), written by consolidation; L2 is the summary block;
* a large tool output: ``[abstract:: …]`` on its session entry; L1 is the
  preview the entry holds, L2 the whole output (``read_tool_output``);
* any other block: an ``[abstract:: …]`` / ``[overview:: …]`` field when a
  writer set one.

Where nothing is stored, :func:`tier_text` cuts the text itself (the first
line, the first sentences), so ``tier`` works on every hit. Recall's
``tier`` argument (0, 1, 2 = full, the default) picks what a hit's ``text``
holds; the id opens the full text (``get``, ``read_tool_output``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mdmem.errors import InvalidInputError
from mdmem.models import Block

__all__ = [
    "ABSTRACT_CHARS",
    "FULL",
    "OVERVIEW_CHARS",
    "TIERS",
    "abstract_of",
    "check_tier",
    "overview_of",
    "tier_text",
]

TIERS = (0, 1, 2)
FULL = 2
ABSTRACT_CHARS = 160
OVERVIEW_CHARS = 600
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# What an inline field value can't hold (it would end the field or the line).
_FIELD_BREAKERS = re.compile(r"[\[\]()\r\n]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def check_tier(tier: object) -> int:
    if isinstance(tier, bool) or not isinstance(tier, int) or tier not in TIERS:
        raise InvalidInputError(
            f"tier must be 0 (abstract), 1 (overview) or 2 (full), got {tier!r}"
        )
    return tier


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return (cut if len(cut) >= limit // 2 else flat[: limit - 1]).rstrip(" ,;:") + "…"


def abstract_of(text: str, limit: int = ABSTRACT_CHARS) -> str:
    """One line for ``text``: its first line with words (code fences skipped),
    cut at a word within ``limit``; safe as an inline field value."""
    for line in text.splitlines():
        if _FENCE.match(line) or not re.search(r"\w", line):
            continue
        return _cut(_FIELD_BREAKERS.sub(" ", line).strip(" -*>#"), limit)
    return ""


def overview_of(text: str, limit: int = OVERVIEW_CHARS) -> str:
    """The first sentences of ``text`` within ``limit`` characters (fences dropped)."""
    kept = [ln for ln in text.splitlines() if not _FENCE.match(ln)]
    flat = " ".join(" ".join(kept).split())
    if len(flat) <= limit:
        return flat
    out = ""
    for sentence in _SENTENCE_END.split(flat):
        if out and len(out) + 1 + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    return out if len(out) <= limit else _cut(out, limit)


def tier_text(block: Block, tier: int, frontmatter: Mapping[str, Any] | None = None) -> str:
    """The text of ``block`` at ``tier``: what was stored for it, else a cut of its text."""
    if tier >= FULL:
        return block.text
    key = "abstract" if tier == 0 else "overview"
    stored = block.field(key)
    if not stored and frontmatter and block.kind == "episode":
        value = frontmatter.get(key)
        stored = str(value) if isinstance(value, str) else None
    if stored:
        return stored
    if tier == 1 and block.kind == "tool_output":
        return block.text  # the entry is the preview of the output: the overview
    return abstract_of(block.text) if tier == 0 else overview_of(block.text)
