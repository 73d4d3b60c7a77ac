"""Recall's top hits in the order a re-ranker model gives (``[recall] reranker``).

A reranker is any provider of the ``mdmem.rerankers`` entry point group
(:mod:`mdmem.providers.registry`): an object with ``rerank(query, texts) ->
scores``, such as the built-in cross-encoder (:mod:`mdmem.providers.crossencoder`).
With ``[recall] reranker`` set, the top ``reranker_top`` hits of a recall are
scored by it and put in its order (each hit's ``scores["reranker"]`` says
its score, ``Recall.reranked`` that it happened); the hits below stay as
they were. A reranker that fails, or answers with the wrong number of scores,
leaves the order as it was: recall never fails for its sake (the failure is
logged). It runs before the optional LLM re-rank (:mod:`mdmem.recall.llm_rerank`),
as the pipeline's ``model_rerank`` stage (:mod:`mdmem.recall.pipeline`).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace
from typing import Any

from mdmem.config import Settings
from mdmem.errors import MdmemError
from mdmem.models import Recall

__all__ = ["Reranking", "rerank"]

log = logging.getLogger("mdmem")


def rerank(reranker: Any, result: Recall, *, top: int) -> Recall:
    """``result`` with its first ``top`` hits in ``reranker``'s order, or as it was."""
    head = result.items[:top]
    if len(head) < 2:
        return result
    started = time.perf_counter()
    try:
        scores = [float(s) for s in reranker.rerank(result.query, [h.text for h in head])]
    except Exception as exc:  # a provider from another package may raise anything
        log.warning("reranker skipped: %s: %s", type(exc).__name__, exc)
        return result
    if len(scores) != len(head) or not all(math.isfinite(s) for s in scores):
        log.warning("reranker skipped: %d scores for %d hits", len(scores), len(head))
        return result
    order = sorted(range(len(head)), key=lambda i: -scores[i])  # stable: ties keep recall's order
    ranked = [
        replace(head[i], scores={**head[i].scores, "reranker": round(scores[i], 6)}) for i in order
    ]
    took = result.took_ms + (time.perf_counter() - started) * 1000
    return replace(result, items=ranked + result.items[top:], reranked=True, took_ms=took)


class Reranking:
    """The reranker ``settings`` name (``[recall] reranker``), built on first use.

    A reranker that can't be built (an unknown name, a missing model folder, a
    missing optional package) is logged once and left out: recall goes on in
    its own order.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._made: tuple[Any | None] | None = None

    @property
    def reranker(self) -> Any | None:
        name = self.settings.recall.reranker.strip()
        if not name:
            return None
        if self._made is None:
            from mdmem.providers import registry

            try:
                self._made = (registry.build("reranker", name, settings=self.settings),)
            except MdmemError as exc:
                log.warning("reranker %r not used: %s", name, exc)
                self._made = (None,)
        return self._made[0]
