"""Importance (OAK): how much a memory matters, 1-10, kept as an inline field.

``[importance:: 7]`` sits on the memory's line like any Dataview field, so a
person can change it in their editor (the edit is committed as theirs, and
recall reads the new value). The writer sets it (``remember(...,
importance=7)``), consolidation sets it from the kind of fact; either way the
memory's *origin* caps it: memories made in a planning or investigation
session describe passing state ("this file is too long"), so OAK caps them at
5 (:data:`ORIGIN_CAPS`). The origin is the caller's (``origin=``) or, for
consolidation, computed from the session's tool calls (:func:`origin_of_tools`),
never read from the text. It is kept as ``[origin_type:: …]`` (``origin``
is the compaction flush's own field).

What importance does, and nothing more: recall multiplies a hit's score by
``1 + weight * (importance - 5) / 5`` (``[recall] importance_weight``, 0.1: at
most +10 % for a 10, -8 % for a 1; no field, no change), and retention keeps
a retired memory of importance >= :data:`KEEP_LONGER` twice as long before
redacting it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mdmem.errors import InvalidInputError
from mdmem.models import Block

__all__ = [
    "DEFAULT_IMPORTANCE",
    "KEEP_LONGER",
    "ORIGINS",
    "ORIGIN_CAPS",
    "check_importance",
    "check_origin",
    "importance_factor",
    "importance_of",
    "kind_importance",
    "origin_of_tools",
]

DEFAULT_IMPORTANCE = 5  # the neutral value: what a memory without the field counts as
KEEP_LONGER = 8
ORIGINS: tuple[str, ...] = ("planning", "investigation", "implementation", "mixed")
ORIGIN_CAPS: dict[str, int] = {"planning": 5, "investigation": 5}

# What consolidation gives a memory it extracts, by kind: decisions and
# lessons outlive the session; a plain fact sits in the middle.
_KIND_IMPORTANCE = {
    "decision": 7,
    "gotcha": 7,
    "bug_fix": 7,
    "trade_off": 6,
    "preference": 6,
    "learning": 6,
    "discovery": 5,
    "fact": 5,
    "world": 5,
}
_READ_TOOL = re.compile(r"read|grep|glob|search|find|view|list|ls\b|cat\b|fetch|open", re.I)
_EDIT_TOOL = re.compile(r"edit|write|patch|apply|create|replace|delete|move|rename", re.I)


def check_importance(value: object, origin: str | None = None) -> int | None:
    """``value`` as an importance 1-10 (None stays None), capped by ``origin``."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
        raise InvalidInputError(f"importance must be an integer from 1 to 10, got {value!r}")
    cap = ORIGIN_CAPS.get(check_origin(origin) or "")
    return min(value, cap) if cap is not None else value


def check_origin(origin: object) -> str | None:
    if origin is None:
        return None
    if origin not in ORIGINS:
        raise InvalidInputError(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
    return str(origin)


def importance_of(block: Block) -> int | None:
    """The block's importance field, or None (no field, or a hand edit that is not 1-10)."""
    raw = block.field("importance")
    if raw is None:
        return None
    try:
        return check_importance(raw.strip())
    except InvalidInputError:
        return None


def importance_factor(importance: int | None, weight: float) -> float:
    """What recall multiplies a hit's score by (1.0 without a field or weight)."""
    if importance is None or weight <= 0:
        return 1.0
    return 1.0 + weight * (importance - DEFAULT_IMPORTANCE) / DEFAULT_IMPORTANCE


def kind_importance(kind: str, origin: str | None) -> int:
    """What consolidation gives an extracted memory of ``kind`` from a session of ``origin``."""
    value = check_importance(_KIND_IMPORTANCE.get(kind, DEFAULT_IMPORTANCE), origin)
    return DEFAULT_IMPORTANCE if value is None else value


def origin_of_tools(tools: Iterable[str]) -> str:
    """A session's origin from its tool calls, deterministically (OAK: read/edit ratio).

    No tool calls: ``mixed`` (a conversation). Reads and no edits:
    ``investigation``. Edits under a fifth of the calls: ``planning``. Edits at
    least half: ``implementation``. Otherwise ``mixed``.
    """
    reads = edits = 0
    for name in tools:
        if _EDIT_TOOL.search(name):
            edits += 1
        elif _READ_TOOL.search(name):
            reads += 1
    if reads + edits == 0:
        return "mixed"
    if edits == 0:
        return "investigation"
    share = edits / (reads + edits)
    if share < 0.2:
        return "planning"
    return "implementation" if share >= 0.5 else "mixed"
