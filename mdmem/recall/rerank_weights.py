"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` (ListNet over recall's candidates).

Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the
first stage's score; all zero is the first stage alone. Regenerate with
``python bench/rerank_fit.py --write`` (LoCoMo dev and bench/data/shortchat.json).
Fitted on locomo-dev.json, shortchat.json, both recording ways; held-out
(leave-one-conversation-out) R@5, MRR when fitted:
{'memories': (0.77, 0.683), 'session': (0.77, 0.683)}.
"""

RERANK_WEIGHTS: dict[str, float] = {
    "keyword": -0.326,
    "vector": -0.081,
    "keyword_rr": 0.061,
    "vector_rr": -0.013,
    "thread": -0.337,
    "people": 0.138,
    "date": 0.384,
    "when": 0.229,
    "second": 0.121,
    "neighbour": 0.24,
    "coverage": 0.247,
}
