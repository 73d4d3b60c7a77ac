"""Short-term memory as it arrives: session turns
(:mod:`~mdmem.memory.capture.sessions`), gotchas and fixes from tool calls, pending
messages, action-scoped notes, the flush reminder, and the text heuristics that work
without a model (:mod:`~mdmem.memory.capture.extractive`).
"""
