"""Turning short-term entries into durable memory and keeping it
true: episodes and facts (:mod:`~mdmem.memory.consolidation.consolidate`), auto-resolve,
the contradiction judge and retention (:mod:`~mdmem.memory.consolidation.lifecycle`), the
same-subject rule, cleanup, session summaries, reflect, and
:mod:`~mdmem.memory.consolidation.regenerate`, which writes derived copies again from what
is left of their sources after a purge or retention.
"""
