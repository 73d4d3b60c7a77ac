"""The relevance gate's fitted constants (mdmem.recall.gate), in one place.

Refit with ``python bench/abstain.py --fit`` (LoCoMo dev, the REALTALK dev
chats and bench/data/coding-dev.json); it prints the held-out table and the
constants to paste here. How they were fitted: see :data:`GATE`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GATE", "GateConstants"]


@dataclass(frozen=True)
class GateConstants:
    weights: dict[str, float] = field(default_factory=dict)  # logistic model, "bias" included
    threshold: float = 0.5  # below it: nothing relevant
    ratio: float = 0.0  # each next item scores at least this share of the best
    most: int = 20  # at most this many items are worth reading
    exact_most: int = 3  # a token held exactly by at most this many blocks lifts them
    exact_vault: int = 200  # ...an ordinary-looking word only in a vault of this many blocks


# Placeholder until fitted (a gate that lets everything through).
GATE = GateConstants(weights={"bias": 10.0})
