"""The warm server: one long-lived process per vault that keeps the indexes and the
embedder loaded and answers CLI reads and hook events over a private unix socket
(:mod:`~mdmem.warm.server`), and the standard-library client a fresh process uses to reach
it (:mod:`~mdmem.warm.client`).
"""
