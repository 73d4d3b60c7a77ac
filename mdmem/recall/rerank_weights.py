"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` (ListNet over recall's candidates).

Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the
first stage's score; all zero is the first stage alone. Regenerate with
``python bench/rerank_fit.py --write`` (LoCoMo dev and the REALTALK dev chats).
Fitted on locomo-dev.json, realtalk-dev.json, memories rows; held-out
(leave-one-conversation-out) R@5, MRR when fitted:
{'memories': (0.682, 0.621)}.
"""

RERANK_WEIGHTS: dict[str, float] = {
    "keyword": -0.322,
    "vector": 0.134,
    "keyword_rr": 0.082,
    "vector_rr": -0.019,
    "thread": -0.415,
    "people": 0.178,
    "date": 0.317,
    "when": 0.176,
    "second": 0.082,
    "neighbour": 0.078,
    "coverage": 0.159,
}
