"""Which recalled memories are worth injecting into a prompt: the relevance cut.

Recall ranks; it does not say when to stop. A prompt hook that injects its
top k whatever they score fills the model's context with chit-chat, and
injects memories even when the vault knows nothing about what is asked (a
question about people the vault has never met). The cut keeps, of the hits
recall returned, best first:

* nothing at all unless the best hit scores at least
  :attr:`RelevanceCut.gate`: a question the vault can answer has one memory
  that matches it well, one about something else only weak matches (on the
  dev sets the best score of a question about other people is below the
  best of nine in ten questions about the vault's own people);
* then the hits whose score is at least :attr:`RelevanceCut.floor` and at
  least :attr:`RelevanceCut.ratio` of the best hit's score,
* at most :attr:`RelevanceCut.max_items` of them.

Scores are recall's final scores (the fitted re-ranker's) without their
recency part: refit the cut when the weights are refitted. :data:`FITTED` is
fitted by ``python bench/inject.py --calibrate`` on LoCoMo dev and the
REALTALK dev chats (evidence that reaches the context, items injected, and
questions about other people that inject nothing; see that script);
:data:`DEFAULT`, what the hook applies, is no cut yet (see why below).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mdmem.models import Hit

__all__ = ["DEFAULT", "FITTED", "RelevanceCut", "relevant"]


@dataclass(frozen=True)
class RelevanceCut:
    gate: float = 0.0
    floor: float = 0.0
    ratio: float = 0.0
    max_items: int = 20


# Fitted by `python bench/inject.py --calibrate --only conv-26,conv-30,
# realtalk-Chat_1_Emi_Elise,realtalk-Chat_3_Kevin_Paola` (two conversations of
# each dev set, 339 questions about their own people, 120 about others),
# simulated packing: evidence injected LoCoMo 0.75 / REALTALK 0.62, median
# items 6 / 8, questions about other people injecting nothing 0.98 / 0.93
# (no cut: evidence 0.81 / 0.72 with 13 / 12 items, and 0.03 / 0.00 of the
# questions about other people inject nothing). The grid's best caps at 13
# items (REALTALK evidence 0.64); 10 keeps a margin under the median of 8.
FITTED = RelevanceCut(gate=0.65, floor=0.0, ratio=0.7, max_items=10)
# What the hook applies on top of recall's relevance gate (mdmem.recall.gate,
# which decides "nothing relevant" and how many items are worth reading, for
# recall, prompt_context and the hooks alike): no further cut. FITTED, a cut
# of scores alone, was not switched on because,
# measured through the hook (`bench/inject.py --cut none|fitted --only conv-30,
# realtalk-Chat_3_Kevin_Paola`), it buys its items (13 -> 6, 11 -> 8.5) and its
# silence on other people (0.00 -> 1.00) with evidence (0.77 -> 0.70 LoCoMo,
# 0.78 -> 0.68 REALTALK; 15 of 141 real questions inject nothing), and its gate
# lives on the scale of those dev vaults (MiniLM, hundreds of turns): in a
# vault of a few memories a real question's best match scores 0.49-0.60 and
# nothing would be injected, while an unrelated prompt there already gets
# nothing from recall's floor. Turning it on needs a relevance signal whose
# scale doesn't move with the vault's size and that keeps the evidence.
DEFAULT = RelevanceCut()


def relevant(
    hits: Sequence[Hit], cut: RelevanceCut | None = None, *, recency_weight: float = 0.0
) -> list[Hit]:
    """The hits worth injecting, best first (see the module doc); ``hits`` are
    recall's, in its order; ``cut`` defaults to :data:`DEFAULT` as it is when called.

    ``recency_weight``: the ``[recall]`` setting the hits were scored with.
    Their recency part is taken out of the scores the cut compares: how new a
    memory is orders the hits, it doesn't make one relevant (and the cut is
    fitted on conversations months old, whose recency is close to 0).
    """
    cut = cut if cut is not None else DEFAULT
    if not hits:
        return []
    scored = [(h, h.score - recency_weight * h.scores.get("recency", 0.0)) for h in hits]
    best = scored[0][1]
    if best < cut.gate:
        return []
    bar = max(cut.floor, cut.ratio * best)
    return [h for h, score in scored if score >= bar][: cut.max_items]
