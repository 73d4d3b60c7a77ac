"""What happens to memories between the write and the read, in four rooms:
:mod:`~mdmem.memory.capture` (session turns, tool calls and outputs, pending messages,
action notes, extractive text heuristics), :mod:`~mdmem.memory.consolidation` (episodes and
facts, auto-resolve and the lifecycle, cleanup, summaries, reflect, and regenerating derived
copies after a purge), :mod:`~mdmem.memory.library` (documents, chat imports, restore,
export, browsing) and :mod:`~mdmem.memory.desks` (the vault's desks over all of these,
and the reading view).
"""
