"""Re-ranking weights, fitted by ``bench/rerank_fit.py`` (leave-one-conversation-out on LoCoMo dev).

Each weight scales one feature of :mod:`mdmem.recall.signals`, added to the
first stage's score; all zero is the first stage alone. Regenerate with
``python bench/rerank_fit.py --data ../shared/bench-data/locomo-dev.json --write``.
Fitted on the session recording way (LoCoMo dev, 5 conversations); held-out
leave-one-conversation-out R@5 0.744 (first stage alone 0.708), MRR 0.649 (0.609).
"""

RERANK_WEIGHTS: dict[str, float] = {
    "keyword": -0.1,
    "vector": -0.05,
    "keyword_rr": -0.02,
    "vector_rr": 0.0,
    "thread": -0.02,
    "people": 0.2,
    "date": 0.5,
    "when": 0.05,
    "second": 0.05,
}
