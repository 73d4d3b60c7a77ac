"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` (ListNet over recall's candidates).

Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the
first stage's score; all zero is the first stage alone. Regenerate with
``python bench/rerank_fit.py --write`` (LoCoMo dev and bench/data/shortchat.json).
Fitted on locomo-dev.json, shortchat.json, both recording ways; held-out
(leave-one-conversation-out) R@5, MRR when fitted:
{'memories': (0.772, 0.686), 'session': (0.772, 0.685)}.
"""

RERANK_WEIGHTS: dict[str, float] = {
    "keyword": -0.351,
    "vector": -0.139,
    "keyword_rr": 0.081,
    "vector_rr": 0.0,
    "thread": -0.377,
    "people": 0.138,
    "date": 0.388,
    "when": 0.216,
    "second": 0.122,
    "neighbour": 0.188,
    "coverage": 0.198,
}
