"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` (leave-one-conversation-out on LoCoMo dev).

Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the
first stage's score; all zero is the first stage alone. Regenerate with
``python bench/rerank_fit.py --data ../shared/bench-data/locomo-dev.json --write``.
"""

RERANK_WEIGHTS: dict[str, float] = {
    "keyword": 0.0,
    "vector": 0.0,
    "keyword_rr": 0.0,
    "vector_rr": 0.0,
    "thread": 0.0,
    "people": 0.0,
    "date": 0.0,
    "when": 0.0,
    "second": 0.0,
}
