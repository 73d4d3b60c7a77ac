"""The one write path and what it guards: :class:`~mdmem.store.memories.MemoryStore`
and its :class:`~mdmem.store.writer.Writer` (atomic, serialised across processes, merged
with a person's edits, one commit per write), the secret guard, ids, locks, the git
wrapper, derived-copy links and the visibility rule every read applies.
"""
