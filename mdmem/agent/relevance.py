"""Which recalled memories are worth injecting into a prompt: the relevance cut.

Recall ranks; it does not say when to stop. A prompt hook that injects its
top k whatever they score fills the model's context with chit-chat, and
injects memories even when the vault knows nothing about what is asked (a
question about people the vault has never met). The cut keeps, of the hits
recall returned, best first:

* nothing at all unless the best cosine with the prompt among the hits
  (``scores["vector"]``) reaches :attr:`RelevanceCut.gate`: with no memory
  close in meaning, the keyword side alone (whose best match always scores
  1 after normalisation) is not evidence of relevance;
* then the hits whose score is at least :attr:`RelevanceCut.floor` and at
  least :attr:`RelevanceCut.ratio` of the best hit's score,
* at most :attr:`RelevanceCut.max_items` of them.

Hits without a cosine (keyword-only recall, a degraded answer) are judged by
their scores alone. The constants of :data:`DEFAULT` are fitted by
``python bench/inject.py --calibrate`` on LoCoMo dev and the REALTALK dev
chats (evidence that reaches the context, items injected, and questions
about other people that inject nothing; see that script).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mdmem.models import Hit

__all__ = ["DEFAULT", "RelevanceCut", "relevant"]


@dataclass(frozen=True)
class RelevanceCut:
    gate: float = 0.0
    floor: float = 0.0
    ratio: float = 0.0
    max_items: int = 20


DEFAULT = RelevanceCut(gate=0.0, floor=0.0, ratio=0.0, max_items=20)


def relevant(hits: Sequence[Hit], cut: RelevanceCut | None = None) -> list[Hit]:
    """The hits worth injecting, best first (see the module doc); ``hits`` are
    recall's, in its order; ``cut`` defaults to :data:`DEFAULT` as it is when called."""
    cut = cut if cut is not None else DEFAULT
    if not hits:
        return []
    cosines = [h.scores["vector"] for h in hits if "vector" in h.scores]
    if cosines and max(cosines) < cut.gate:
        return []
    bar = max(cut.floor, cut.ratio * hits[0].score)
    return [h for h in hits if h.score >= bar][: cut.max_items]
