"""The recall pipeline, one for live and past (``as_of``) vaults: query expansion,
keyword and vector search, fusion, the visibility stage, re-ranking (learned weights, an
optional cross-encoder or LLM), multi-hop and neighbours, usefulness feedback, and
rendering recalled memories as fenced data with their provenance (:mod:`~mdmem.recall.
asdata`).
"""
